package eth

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
)

// callArgsCases are call objects the fast decoder handles (fast true) or
// leaves to encoding/json (fast false); both paths must give what
// encoding/json gives.
var callArgsCases = []struct {
	name string
	in   string
	fast bool
}{
	{"empty", `{}`, true},
	{"empty spaced", " \n{ \t}\r ", true},
	{"balanceOf", `{"to":"0x7e57000000000000000000000000000000000001","input":"0x70a08231000000000000000000000000000000000000000000000000000000000000aaaa"}`, true},
	{"all scalars", `{"from":"0x00000000000000000000000000000000000000bb","to":"0x00000000000000000000000000000000000000aa","gas":"0x5208","gasPrice":"0x1","value":"0x1","nonce":"0x2","data":"0x12","input":"0x12","type":"0x0","chainId":"0x539"}`, true},
	{"fee fields", `{"maxFeePerGas":"0x10","maxPriorityFeePerGas":"0x1","maxFeePerBlobGas":"0x3"}`, true},
	{"nulls", `{"to":null,"input":null,"accessList":null,"blobVersionedHashes":null,"authorizationList":null}`, true},
	{"duplicate key, last wins", `{"gas":"0x1","gas":"0x2"}`, true},
	{"duplicate key, null last", `{"gas":"0x1","gas":null}`, true},
	{"spaces everywhere", ` { "to" : "0x00000000000000000000000000000000000000aa" , "gas" : "0x1" } `, true},
	{"empty input", `{"input":"0x"}`, true},
	{"data input mismatch", `{"data":"0x12","input":"0x34"}`, true},

	{"null object", `null`, false},
	{"case-insensitive key", `{"TO":"0x00000000000000000000000000000000000000aa"}`, false},
	{"unknown key", `{"foo":"bar","to":"0x00000000000000000000000000000000000000aa"}`, false},
	{"access list", `{"accessList":[{"address":"0x00000000000000000000000000000000000000aa","storageKeys":["0x0000000000000000000000000000000000000000000000000000000000000001"]}]}`, false},
	{"number gas", `{"gas":1}`, false},
	{"escaped key", `{"\u0074o":"0x00000000000000000000000000000000000000aa"}`, false},
	{"escaped value", `{"gas":"0x\u0031"}`, false},
	{"bad hex", `{"gas":"0xzz"}`, false},
	{"no prefix", `{"value":"12"}`, false},
	{"leading zero", `{"gas":"0x01"}`, false},
	{"value too big", `{"value":"0x10000000000000000000000000000000000000000000000000000000000000000"}`, false},
	{"short address", `{"to":"0x12"}`, false},
	{"odd bytes", `{"input":"0x123"}`, false},
	{"list given a string", `{"accessList":"0x"}`, false},
	{"trailing comma", `{"gas":"0x1",}`, false},
	{"trailing garbage", `{"gas":"0x1"} x`, false},
	{"unterminated", `{"gas":"0x1"`, false},
	{"array", `[]`, false},
	{"string", `"0x1"`, false},
	{"truncated null", `{"gas":nul}`, false},
	{"nully", `{"gas":nullx}`, false},
}

// decodeBoth decodes in with UnmarshalJSON and with encoding/json (the
// decoder before the fast path) and fails unless they agree.
func decodeBoth(t *testing.T, in []byte) (CallArgs, error) {
	t.Helper()
	var got, want CallArgs
	gotErr := got.UnmarshalJSON(in)
	var wantErr error
	if json.Valid(in) {
		wantErr = want.unmarshalJSONReflect(in)
	} else {
		wantErr = json.Unmarshal(in, &want) // the syntax error encoding/json reports
	}
	if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && json.Valid(in) && gotErr.Error() != wantErr.Error()) {
		t.Fatalf("%q: error %v, encoding/json %v", in, gotErr, wantErr)
	}
	if gotErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: decoded %+v, encoding/json %+v", in, got, want)
	}
	return got, gotErr
}

func TestCallArgsDecoders(t *testing.T) {
	for _, tc := range callArgsCases {
		t.Run(tc.name, func(t *testing.T) {
			var a CallArgs
			if fast := decodeCallArgsFast([]byte(tc.in), &a); fast != tc.fast {
				t.Fatalf("fast path taken: %v, want %v", fast, tc.fast)
			}
			decodeBoth(t, []byte(tc.in))
		})
	}
	// The values themselves, on the hot shape.
	a, err := decodeBoth(t, []byte(callArgsCases[3].in))
	if err != nil {
		t.Fatal(err)
	}
	if *a.From != common.HexToAddress("0xbb") || uint64(*a.Gas) != 0x5208 || a.ChainID.ToInt().Int64() != 1337 ||
		!reflect.DeepEqual(a.Data(), []byte{0x12}) || uint64(*a.Nonce) != 2 {
		t.Fatalf("decoded %+v", a)
	}
	// The mismatch error is the documented sentinel.
	if _, err := decodeBoth(t, []byte(`{"data":"0x12","input":"0x34"}`)); err != ErrDataInputMismatch {
		t.Fatalf("mismatch: %v", err)
	}
}

// FuzzCallArgsDecoders: the fast call-object decoder and encoding/json
// agree on every input (result, or the error text on valid JSON), and the
// fast path never accepts invalid JSON.
func FuzzCallArgsDecoders(f *testing.F) {
	for _, tc := range callArgsCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var a CallArgs
		if decodeCallArgsFast(data, &a) && !json.Valid(data) {
			t.Fatalf("fast path accepted invalid JSON %q", data)
		}
		decodeBoth(t, data)
	})
}

// BenchmarkDecodeCallArgs: a multicall of 50 balanceOf's call object (8 KB
// of input) with the fast decoder and with encoding/json.
func BenchmarkDecodeCallArgs(b *testing.B) {
	in := []byte(`{"from":"0x00000000000000000000000000000000000000bb","to":"0xca11000000000000000000000000000000000001","input":"` +
		hexutil.Encode([]byte(strings.Repeat("\x70\xa0\x82\x31abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ01234567890abcdefghijklmnopqrstuvwxyz0123456789", 50))) + `"}`)
	for _, bc := range []struct {
		name string
		dec  func(*CallArgs, []byte) error
	}{{"fast", (*CallArgs).UnmarshalJSON}, {"encoding-json", (*CallArgs).unmarshalJSONReflect}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				var a CallArgs
				if err := bc.dec(&a, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
