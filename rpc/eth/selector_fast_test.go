package eth

import (
	"encoding/json"
	"testing"
)

var plainStringCases = []struct {
	in string
	ok bool
}{
	{`"latest"`, true}, {`"0x1b4"`, true}, {`""`, true}, {`"a b/c"`, true},
	{`"la\u0074est"`, false}, {`"a\"b"`, false}, {"\"\xc3\xa9\"", false}, {"\"\xff\"", false}, {"\"a\tb\"", false},
	{`"`, false}, {`latest`, false}, {`"a"b"`, false}, {`1`, false}, {``, false},
}

// TestPlainJSONString: the fast path takes exactly printable ASCII without
// escapes, and then gives encoding/json's string.
func TestPlainJSONString(t *testing.T) {
	for _, tc := range plainStringCases {
		got, ok := plainJSONString([]byte(tc.in))
		if ok != tc.ok {
			t.Errorf("%q: ok %v, want %v", tc.in, ok, tc.ok)
			continue
		}
		var want string
		if ok && (json.Unmarshal([]byte(tc.in), &want) != nil || got != want) {
			t.Errorf("%q: %q, encoding/json %q", tc.in, got, want)
		}
	}
}

// FuzzPlainJSONString: whatever the fast path accepts, encoding/json
// decodes to the same string.
func FuzzPlainJSONString(f *testing.F) {
	for _, tc := range plainStringCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := plainJSONString(data)
		if !ok {
			return
		}
		var want string
		if err := json.Unmarshal(data, &want); err != nil || got != want {
			t.Fatalf("%q: %q, encoding/json %q (%v)", data, got, want, err)
		}
	})
}

// BenchmarkSelectorLatest: BlockSelector.UnmarshalJSON of "latest", and
// the encoding/json string decoding it replaced.
func BenchmarkSelectorLatest(b *testing.B) {
	in := []byte(`"latest"`)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var s BlockSelector
			if err := s.UnmarshalJSON(in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var str string
			var s BlockSelector
			if err := json.Unmarshal(in, &str); err != nil || s.fromString(str, true) != nil {
				b.Fatal(err)
			}
		}
	})
}
