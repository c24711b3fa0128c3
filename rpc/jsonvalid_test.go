package rpc

import (
	"bytes"
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

// stringRunBytewise is StringRun a byte at a time: the oracle.
func stringRunBytewise(d []byte, i int) int {
	for ; i < len(d); i++ {
		if c := d[i]; c < 0x20 || c == '"' || c == '\\' {
			return i
		}
	}
	return len(d)
}

// TestStringRun: every stopping byte (and its neighbours that must not
// stop) at every offset of a word and across words, behind bytes that
// borrow (0x20, 0x21, '"'+1, '\\'+1) and bytes with the high bit set.
func TestStringRun(t *testing.T) {
	fill := []byte{'0', 0x20, 0x21, '"' + 1, '\\' + 1, 0x7f, 0x80, 0xa2, 0xdc, 0xff}
	stops := []byte{'"', '\\', 0x00, 0x01, 0x1f}
	notStops := []byte{0x20, '"' - 1, '"' + 1, '\\' - 1, '\\' + 1, 0x80 | '"', 0x80 | '\\', 0x80, 0x9f}
	stopped := 0
	for _, f := range fill {
		for n := 0; n <= 20; n++ {
			for pos := 0; pos <= n; pos++ {
				for _, c := range append(append([]byte{}, stops...), notStops...) {
					d := bytes.Repeat([]byte{f}, n)
					if pos < n {
						d[pos] = c
					}
					for start := 0; start <= min(n, 9); start++ {
						got, want := StringRun(d, start), stringRunBytewise(d, start)
						if got != want {
							t.Fatalf("%x from %d: %d, want %d", d, start, got, want)
						}
						if want < len(d) {
							stopped++
						}
					}
				}
			}
		}
	}
	if stopped == 0 {
		t.Fatal("no case stopped")
	}
}

// FuzzStringRun: StringRun agrees with the byte loop on every input.
func FuzzStringRun(f *testing.F) {
	f.Add([]byte(`0x70a08231000000000000000000000000"`), 0)
	f.Add([]byte("abc\\\"def\x01ghijklmnop"), 2)
	f.Fuzz(func(t *testing.T, d []byte, start int) {
		if start < 0 || start > len(d) {
			return
		}
		if got, want := StringRun(d, start), stringRunBytewise(d, start); got != want {
			t.Fatalf("%q from %d: %d, want %d", d, start, got, want)
		}
	})
}
