package rpc

import (
	"encoding/json"
	"strings"
	"testing"
)

var validJSONCases = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `1.5e+10`, `-12.0E-3`, `true`, `false`, `null`, ` {"a" : [1, "x", {"b":null}] } `,
	`{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":"0x7e57","input":"0x70a08231"},"latest"]}`,
	`"\u00e9\n\t\"\\\/\b\f\r"`, "\"\xff\xfe invalid utf-8 is accepted\"", `[1,2,]`, `{"a":1,}`, `{"a"}`, `{"a":}`, `{1:2}`,
	`01`, `1.`, `.5`, `1e`, `1e+`, `-`, `+1`, `tru`, `nul`, `nulll`, `"\x"`, `"\u12"`, `"\u12G4"`, "\"a\x01\"", `"abc`,
	`[`, `]`, `{`, `}`, ``, ` `, `1 2`, `{} x`, `[1 2]`, `{"a":1 "b":2}`, "\x00", `[-]`, `[01]`, `NaN`,
	strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth),
	strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1),
	strings.Repeat(`{"a":`, maxJSONDepth) + "1" + strings.Repeat("}", maxJSONDepth),
	strings.Repeat(`{"a":`, maxJSONDepth+1) + "1" + strings.Repeat("}", maxJSONDepth+1),
}

// TestValidJSON: the validator's verdict is encoding/json's.
func TestValidJSON(t *testing.T) {
	for _, in := range validJSONCases {
		if got, want := validJSON([]byte(in)), json.Valid([]byte(in)); got != want {
			t.Errorf("%.80q: %v, encoding/json %v", in, got, want)
		}
	}
	// Both verdicts occur (the table is not one-sided).
	if !validJSON([]byte(validJSONCases[0])) || validJSON([]byte(`[1,2,]`)) {
		t.Fatal("table verdicts")
	}
}

// FuzzValidJSON: validJSON and encoding/json.Valid agree on every input.
func FuzzValidJSON(f *testing.F) {
	for _, in := range validJSONCases[:len(validJSONCases)-4] {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := validJSON(data), json.Valid(data); got != want {
			t.Fatalf("%q: %v, encoding/json %v", data, got, want)
		}
	})
}

// BenchmarkValidJSON: an eth_call of a 50-call multicall (11 KB, mostly
// one hex string).
func BenchmarkValidJSON(b *testing.B) {
	in := []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":"0xca11000000000000000000000000000000000001","input":"0x` +
		strings.Repeat("70a08231000000000000000000000000", 340) + `"},"latest"]}`)
	for _, bc := range []struct {
		name string
		fn   func([]byte) bool
	}{{"validJSON", validJSON}, {"encoding-json", json.Valid}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				if !bc.fn(in) {
					b.Fatal("invalid")
				}
			}
		})
	}
}
