package eth

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/tipnode/tipnode/rpc"
)

func TestWord(t *testing.T) {
	full := "0x" + strings.Repeat("ab", 32)
	tests := []struct {
		in, want, err string
	}{
		{`"0x0"`, "0x" + strings.Repeat("0", 64), ""},
		{`"0x1"`, "0x" + strings.Repeat("0", 63) + "1", ""},
		{`"0x01"`, "0x" + strings.Repeat("0", 63) + "1", ""},
		{`"0xabc"`, "0x" + strings.Repeat("0", 61) + "abc", ""},
		{`"0XABC"`, "0x" + strings.Repeat("0", 61) + "abc", ""},
		{`"abc"`, "0x" + strings.Repeat("0", 61) + "abc", ""},
		{`"` + full + `"`, full, ""},
		{`"0x"`, "", `invalid 32-byte word "0x": empty hex`},
		{`""`, "", `invalid 32-byte word "": empty hex`},
		{`"0xzz"`, "", `invalid hex in 32-byte word "0xzz"`},
		{`"0x` + strings.Repeat("0", 65) + `"`, "", `32-byte word too long (want at most 64 hex digits): "0x` + strings.Repeat("0", 65) + `"`},
		{`1`, "", `32-byte word must be a hex string, got "1"`},
		{`null`, "", `32-byte word must be a hex string, got "null"`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var w Word
			err := json.Unmarshal([]byte(tt.in), &w)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if w.String() != tt.want {
				t.Errorf("got %s want %s", w, tt.want)
			}
			b, _ := json.Marshal(w)
			if string(b) != `"`+tt.want+`"` {
				t.Errorf("marshal %s", b)
			}
		})
	}
	// Long bad input is truncated in the message.
	_, err := ParseWord("0x" + strings.Repeat("g", 10000))
	if err == nil || len(err.Error()) > 200 {
		t.Errorf("long input error: %v", err)
	}
}

func TestParamsDecode(t *testing.T) {
	p := rpc.NewParams(json.RawMessage(`"0xzz"`), json.RawMessage(`null`), json.RawMessage(`"0x1"`), json.RawMessage(`7`))
	var w Word
	err := p.Decode(0, "slot", &w)
	var e *rpc.Error
	if !errors.As(err, &e) || e.Code != rpc.CodeInvalidParams || e.Message != `invalid argument 0 (slot): invalid hex in 32-byte word "0xzz"` {
		t.Errorf("Decode bad: %v", err)
	}
	if err := p.Decode(1, "block", &w); err == nil || err.Error() != "missing value for required argument 1 (block)" {
		t.Errorf("Decode null: %v", err)
	}
	if err := p.Decode(9, "x", &w); err == nil || err.Error() != "missing value for required argument 9 (x)" {
		t.Errorf("Decode absent: %v", err)
	}
	if present, err := p.DecodeOptional(1, "block", &w); present || err != nil {
		t.Errorf("DecodeOptional null: %v %v", present, err)
	}
	if present, err := p.DecodeOptional(2, "v", &w); !present || err != nil || w.Big().Uint64() != 1 {
		t.Errorf("DecodeOptional: %v %v %s", present, err, w)
	}
	var s string
	if err := p.Decode(3, "name", &s); err == nil || err.Error() != "invalid argument 3 (name): cannot unmarshal number into string" {
		t.Errorf("type mismatch: %v", err)
	}
	var a common.Address
	if err := rpc.ParamsOf("0x12").Decode(0, "address", &a); err == nil || !strings.HasPrefix(err.Error(), "invalid argument 0 (address): hex string has length 2, want 40") {
		t.Errorf("address: %v", err)
	}
	if err := p.AtMost(3); err == nil || err.Error() != "too many arguments, want at most 3" {
		t.Errorf("AtMost: %v", err)
	}
	if p.AtMost(4) != nil || p.Rest(2).Len() != 2 || p.Rest(9).Len() != 0 || p.Raw(9) != nil {
		t.Error("AtMost/Rest/Raw")
	}
}

func selU64(n uint64) *uint64 { return &n }

func TestBlockSelector(t *testing.T) {
	h := common.HexToHash("0x" + strings.Repeat("11", 32))
	tests := []struct {
		in   string
		want BlockSelector
		err  bool
	}{
		{`"latest"`, BlockSelector{Tag: TagLatest}, false},
		{`"pending"`, BlockSelector{Tag: TagPending}, false},
		{`"safe"`, BlockSelector{Tag: TagSafe}, false},
		{`"finalized"`, BlockSelector{Tag: TagFinalized}, false},
		{`"earliest"`, BlockSelector{Tag: TagEarliest}, false},
		{`"0x0"`, BlockSelector{Number: selU64(0)}, false},
		{`"0x1b4"`, BlockSelector{Number: selU64(0x1b4)}, false},
		{`"0x7fffffffffffffff"`, BlockSelector{Number: selU64(1<<63 - 1)}, false},
		{`"` + h.Hex() + `"`, BlockSelector{Hash: &h}, false},
		{`{"blockHash":"` + h.Hex() + `"}`, BlockSelector{Hash: &h}, false},
		{`{"blockHash":"` + h.Hex() + `","requireCanonical":true}`, BlockSelector{Hash: &h, RequireCanonical: true}, false},
		{`{"blockNumber":"0x10"}`, BlockSelector{Number: selU64(16)}, false},
		{`{"blockNumber":"safe"}`, BlockSelector{Tag: TagSafe}, false},
		{`{"blockNumber":"0x1","blockHash":"` + h.Hex() + `"}`, BlockSelector{}, true},
		{`{"blockNumber":"0x1","requireCanonical":true}`, BlockSelector{}, true},
		{`{}`, BlockSelector{}, true},
		{`{"blockHash":"0x12"}`, BlockSelector{}, true},
		{`"0x01"`, BlockSelector{}, true}, // leading zero, like go-ethereum
		{`"0x"`, BlockSelector{}, true},
		{`"1"`, BlockSelector{}, true},
		{`"0x8000000000000000"`, BlockSelector{}, true},
		{`"0x10000000000000000"`, BlockSelector{}, true},
		{`"Latest"`, BlockSelector{}, true},
		{`1`, BlockSelector{}, true},
		{`[]`, BlockSelector{}, true},
		{`null`, BlockSelector{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var s BlockSelector
			err := json.Unmarshal([]byte(tt.in), &s)
			if tt.err {
				if err == nil {
					t.Fatalf("want error, got %v", s)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.String() != tt.want.String() || s.Tag != tt.want.Tag || s.RequireCanonical != tt.want.RequireCanonical ||
				(s.Number == nil) != (tt.want.Number == nil) || (s.Hash == nil) != (tt.want.Hash == nil) {
				t.Errorf("got %+v (%s) want %+v (%s)", s, s, tt.want, tt.want)
			}
		})
	}
	// Absent / null argument means latest.
	for _, p := range []rpc.Params{rpc.NewParams(), rpc.ParamsOf(nil)} {
		s, err := DecodeSelector(p, 0, "block")
		if err != nil || s.Tag != TagLatest {
			t.Errorf("DecodeSelector default: %v %v", s, err)
		}
	}
	_, err := DecodeSelector(rpc.ParamsOf("nope"), 0, "block")
	var e *rpc.Error
	if !errors.As(err, &e) || e.Code != rpc.CodeInvalidParams || !strings.Contains(e.Message, "argument 0 (block)") {
		t.Errorf("DecodeSelector bad: %v", err)
	}
}

func TestCallArgs(t *testing.T) {
	tests := []struct {
		name, in string
		data     string // hex of Data(), "-" for nil
		err      string
	}{
		{"input", `{"to":"0x00000000000000000000000000000000000000aa","input":"0x1234"}`, "0x1234", ""},
		{"data", `{"data":"0xabcd"}`, "0xabcd", ""},
		{"both equal", `{"data":"0xab","input":"0xab"}`, "0xab", ""},
		{"both differ", `{"data":"0xab","input":"0xcd"}`, "", "data"},
		{"none", `{}`, "-", ""},
		{"unknown fields accepted", `{"foo":1,"blobs":[]}`, "-", ""},
		{"all fields", `{"from":"0x00000000000000000000000000000000000000bb","to":"0x00000000000000000000000000000000000000aa","gas":"0x5208","gasPrice":"0x1","maxFeePerGas":"0x2","maxPriorityFeePerGas":"0x1","maxFeePerBlobGas":"0x3","value":"0xde0b6b3a7640000","nonce":"0x0","accessList":[{"address":"0x00000000000000000000000000000000000000aa","storageKeys":["0x0000000000000000000000000000000000000000000000000000000000000001"]}],"type":"0x4","chainId":"0x1","blobVersionedHashes":["0x0100000000000000000000000000000000000000000000000000000000000000"],"authorizationList":[{"chainId":"0x1","address":"0x00000000000000000000000000000000000000aa","nonce":"0x0","yParity":"0x0","r":"0x1","s":"0x1"}]}`, "-", ""},
		{"odd hex data", `{"data":"0x123"}`, "", "odd"},
		{"gas not hex", `{"gas":21000}`, "", "gas"},
		{"value overflow", `{"value":"0x1` + strings.Repeat("0", 64) + `"}`, "", "256"},
		{"bad address", `{"to":"0x12"}`, "", "length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a CallArgs
			err := rpc.ParamsOf(json.RawMessage(tt.in)).Decode(0, "call", &a)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "invalid argument 0 (call)") {
					t.Fatalf("err %v, want containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.data == "-" {
				if a.Data() != nil {
					t.Errorf("Data() = %x, want nil", a.Data())
				}
			} else if got := "0x" + common.Bytes2Hex(a.Data()); got != tt.data {
				t.Errorf("Data() = %s want %s", got, tt.data)
			}
		})
	}
	var a CallArgs
	if err := json.Unmarshal([]byte(`{"from":"0x00000000000000000000000000000000000000bb","gas":"0x5208","type":"0x4","accessList":[{"address":"0x00000000000000000000000000000000000000aa","storageKeys":[]}],"authorizationList":[{"chainId":"0x1","address":"0x00000000000000000000000000000000000000aa","nonce":"0x0","yParity":"0x0","r":"0x1","s":"0x1"}]}`), &a); err != nil {
		t.Fatal(err)
	}
	if a.From == nil || uint64(*a.Gas) != 21000 || uint64(*a.Type) != 4 || len(*a.AccessList) != 1 || len(a.AuthorizationList) != 1 || a.To != nil {
		t.Errorf("fields: %+v", a)
	}
}

func TestStateOverride(t *testing.T) {
	addr := "0x00000000000000000000000000000000000000aa"
	tests := []struct {
		name, in, err string
		check         func(t *testing.T, o StateOverride)
	}{
		{"empty", `{}`, "", func(t *testing.T, o StateOverride) {
			if o == nil || len(o) != 0 {
				t.Errorf("%v", o)
			}
		}},
		{"empty account", `{"` + addr + `":{}}`, "", func(t *testing.T, o StateOverride) {
			if acc, ok := o[common.HexToAddress(addr)]; !ok || acc.State != nil || acc.StateDiff != nil {
				t.Errorf("%+v", o)
			}
		}},
		{"full", `{"` + addr + `":{"nonce":"0x5","code":"0x6001","balance":"0x10","stateDiff":{"0x1":"0x2","0x00000000000000000000000000000000000000000000000000000000000000ff":"0x0"},"movePrecompileToAddress":"0x0000000000000000000000000000000000000001"}}`, "", func(t *testing.T, o StateOverride) {
			acc := o[common.HexToAddress(addr)]
			if uint64(*acc.Nonce) != 5 || len(*acc.Code) != 2 || acc.Balance.ToInt().Int64() != 16 || acc.MovePrecompileTo == nil {
				t.Errorf("%+v", acc)
			}
			var k1, v2, kff Word
			k1[31], v2[31], kff[31] = 1, 2, 0xff
			if acc.StateDiff[k1] != v2 || len(acc.StateDiff) != 2 {
				t.Errorf("stateDiff %v", acc.StateDiff)
			}
			if _, ok := acc.StateDiff[kff]; !ok {
				t.Errorf("stateDiff %v", acc.StateDiff)
			}
		}},
		{"empty state clears", `{"` + addr + `":{"state":{}}}`, "", func(t *testing.T, o StateOverride) {
			if acc := o[common.HexToAddress(addr)]; acc.State == nil || len(acc.State) != 0 {
				t.Errorf("%+v", acc)
			}
		}},
		{"null", `null`, "", func(t *testing.T, o StateOverride) {
			if o != nil {
				t.Errorf("%v", o)
			}
		}},
		{"state and stateDiff", `{"` + addr + `":{"state":{},"stateDiff":{}}}`, "account 0x00000000000000000000000000000000000000AA has both 'state' and 'stateDiff'", nil},
		{"bad slot", `{"` + addr + `":{"state":{"0xzz":"0x1"}}}`, `0xzz`, nil},
		{"slot too long", `{"` + addr + `":{"stateDiff":{"0x1":"0x` + strings.Repeat("1", 65) + `"}}}`, "too long", nil},
		{"bad address", `{"0x12":{}}`, "state override", nil},
		{"bad balance", `{"` + addr + `":{"balance":"12"}}`, "0x00000000000000000000000000000000000000AA", nil},
		{"not an object", `[]`, "state override", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o StateOverride
			err := json.Unmarshal([]byte(tt.in), &o)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, o)
		})
	}
}

func TestBlockOverrides(t *testing.T) {
	var b BlockOverrides
	in := `{"number":"0x10","time":"0x20","gasLimit":"0x1c9c380","feeRecipient":"0x00000000000000000000000000000000000000aa","prevRandao":"0x1","baseFeePerGas":"0x7","blobBaseFee":"0x1","withdrawals":[{"index":"0x0","validatorIndex":"0x1","address":"0x00000000000000000000000000000000000000aa","amount":"0x2"}],"unknown":1}`
	if err := json.Unmarshal([]byte(in), &b); err != nil {
		t.Fatal(err)
	}
	if uint64(*b.Number) != 16 || uint64(*b.Time) != 32 || b.PrevRandao.Big().Int64() != 1 || b.BaseFeePerGas.ToInt().Int64() != 7 || len(*b.Withdrawals) != 1 || b.FeeRecipient == nil {
		t.Errorf("%+v", b)
	}
	for _, bad := range []string{`{"prevRandao":"0xzz"}`, `{"number":"16"}`, `{"time":-1}`, `{"withdrawals":{}}`} {
		if err := json.Unmarshal([]byte(bad), &b); err == nil {
			t.Errorf("%s: want error", bad)
		}
	}
}
