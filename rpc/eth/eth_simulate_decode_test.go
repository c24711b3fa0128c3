package eth

import (
	"encoding/json"
	"reflect"
	"testing"
)

// simPayloadCases are payloads for the decoder tests: fast = the fast path
// handles them (else encoding/json does).
var simPayloadCases = []struct {
	in   string
	fast bool
}{
	{`{"blockStateCalls":[{"stateOverrides":{"0xc000000000000000000000000000000000000000":{"balance":"0x3e8"}},"calls":[{"from":"0xc000000000000000000000000000000000000000","to":"0xc100000000000000000000000000000000000000","data":"0xa9059cbb","value":"0x1"},{"from":"0xc000000000000000000000000000000000000000","to":"0xc100000000000000000000000000000000000000"}]}],"traceTransfers":true}`, true},
	{` { "blockStateCalls" : [ { "blockOverrides" : { "number" : "0x10", "time":"0x20" } , "calls" : [ ] } , {"calls":[{"to":"0xc100000000000000000000000000000000000000"}]} ] , "validation" : false , "returnFullTransactions" : true } `, true},
	{`{"blockStateCalls":[]}`, true},
	{`{}`, true},
	{`{"blockStateCalls":[{}]}`, true},
	{`{"blockStateCalls":[{"stateOverrides":{"0xc000000000000000000000000000000000000000":{"code":"0x00","stateDiff":{"0x01":"0x02"}}}}]}`, true},
	// encoding/json's: other spellings, duplicates, nulls, unknown keys.
	{`{"BlockStateCalls":[]}`, false},
	{`{"blockStateCalls":[],"blockStateCalls":[{}]}`, false},
	{`{"blockStateCalls":null}`, false},
	{`{"blockStateCalls":[null]}`, false},
	{`{"blockStateCalls":[{"calls":null}]}`, false},
	{`{"blockStateCalls":[{"calls":[null]}]}`, false},
	{`{"blockStateCalls":[{"stateOverrides":null}]}`, false},
	{`{"blockStateCalls":[{"blockOverrides":null}]}`, false},
	{`{"traceTransfers":null}`, false},
	{`{"extra":1}`, false},
	{`null`, false},
	// errors (encoding/json's and the members' decoders').
	{`{"blockStateCalls":[{"calls":[{"to":"0x1"}]}]}`, false},
	{`{"blockStateCalls":[{"stateOverrides":{"0xc000000000000000000000000000000000000000":{"state":{},"stateDiff":{}}}}]}`, false},
	{`{"blockStateCalls":[{"blockOverrides":{"number":5}}]}`, false},
	{`{"blockStateCalls":{}}`, false},
	{`{"traceTransfers":1}`, false},
	{`{"blockStateCalls":[{"calls":[{"to":"0xc100000000000000000000000000000000000000"}]}]`, false},
	{`{"blockStateCalls":[{"calls":[{"to":"0xc100000000000000000000000000000000000000"}}]}`, false},
	{`{"blockStateCalls":[{"stateOverrides":{"a":"}"}}]}`, false},
}

// decodeSimBoth decodes data with UnmarshalJSON and with encoding/json and
// fails unless both give the same payload, or the same error.
func decodeSimBoth(t *testing.T, data []byte) {
	t.Helper()
	var fast, ref simPayload
	errFast := fast.UnmarshalJSON(data)
	errRef := ref.unmarshalJSONReflect(data)
	if !json.Valid(data) {
		return // the rpc layer only hands over valid JSON
	}
	if (errFast == nil) != (errRef == nil) || (errFast != nil && errFast.Error() != errRef.Error()) {
		t.Fatalf("%s: errors differ: %v vs %v", data, errFast, errRef)
	}
	if errRef == nil && !reflect.DeepEqual(fast, ref) {
		t.Fatalf("%s: decoded differently:\n%+v\n%+v", data, fast, ref)
	}
}

func TestSimPayloadDecoders(t *testing.T) {
	for _, tc := range simPayloadCases {
		var p simPayload
		if got := decodeSimPayloadFast([]byte(tc.in), &p); got != tc.fast {
			t.Errorf("%s: fast path handled = %v, want %v", tc.in, got, tc.fast)
		}
		decodeSimBoth(t, []byte(tc.in))
	}
}

// FuzzSimPayloadDecoders: the fast payload decoder and encoding/json agree
// on every valid input, and the fast path never accepts invalid JSON.
func FuzzSimPayloadDecoders(f *testing.F) {
	for _, tc := range simPayloadCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var p simPayload
		if decodeSimPayloadFast(data, &p) && !json.Valid(data) {
			t.Fatalf("fast path accepted invalid JSON %q", data)
		}
		decodeSimBoth(t, data)
	})
}
