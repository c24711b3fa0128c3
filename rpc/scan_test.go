package rpc

import (
	"bytes"
	"encoding/json"
	"testing"
)

// scanCases are valid JSON objects and arrays the envelope scanners must
// split exactly as encoding/json does.
var scanCases = []string{
	`{}`, `[]`, ` { "a" : 1 , "b":[1,2,{"c":"]}"}] } `,
	`{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":"0x01","input":"0xff"},"latest"]}`,
	`{"s":"a\"b\\","t":"\\\\\"","u":"\u0041}"}`,
	`{"a":1,"a":2}`, `{"n":null,"t":true,"f":false,"x":-1.5e+3}`,
	`[1, "two" ,{"three":[3]}, null,true,false, -0.1 ,[[]] ]`,
	"{\"a\":\t[ 1 ,\n 2 ]\r}",
	`{"id":1,"id":"x","method":"a","extra":{"method":"c"},"method":"b","params":[1],"jsonrpc":"2.0"}`,
	`{"params":null,"id":null, "ID":2, "Method":"m"}`,
}

// TestScannersMatchEncodingJSON: scanEnvelope and splitArray split valid
// JSON as encoding/json's map[string]json.RawMessage and []json.RawMessage do
// (for the envelope: its four members).
func TestScannersMatchEncodingJSON(t *testing.T) {
	for _, c := range scanCases {
		checkScan(t, []byte(c))
	}
}

func FuzzScanners(f *testing.F) {
	for _, c := range scanCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if json.Valid(data) {
			checkScan(t, data)
		}
	})
}

func checkScan(t *testing.T, data []byte) {
	t.Helper()
	data = bytes.TrimLeft(data, " \t\r\n")
	switch data[0] {
	case '{':
		got, ok := scanEnvelope(data)
		var want map[string]json.RawMessage
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if !ok {
			if !plainName(data) {
				return // an escape or non-ASCII byte somewhere: refusing is allowed
			}
			t.Fatalf("%s: refused with plain names", data)
			return
		}
		for k, v := range map[string]json.RawMessage{"id": got.id, "jsonrpc": got.jsonrpc, "method": got.method, "params": got.params} {
			if w, present := want[k]; !bytes.Equal(v, w) || present != (v != nil) {
				t.Fatalf("%s: member %q = %s, encoding/json %s (present %v)", data, k, v, w, present)
			}
		}
	case '[':
		got := splitArray(data)
		var want []json.RawMessage
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d elements, encoding/json %d", data, len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("%s: element %d = %s, encoding/json %s", data, i, got[i], want[i])
			}
		}
	}
}
