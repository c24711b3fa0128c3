package eth

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/eth/tracers"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"

	"github.com/tipnode/tipnode/chain"
)

// FuzzBlockSelector: never panics; a decoded selector has exactly one form
// and survives a marshal/unmarshal round trip.
func FuzzBlockSelector(f *testing.F) {
	for _, s := range []string{`"latest"`, `"pending"`, `"safe"`, `"finalized"`, `"earliest"`, `"0x0"`, `"0x1b4"`, `"0x01"`,
		`"0xffffffffffffffffff"`, `{"blockHash":"0x1111111111111111111111111111111111111111111111111111111111111111","requireCanonical":true}`,
		`{"blockNumber":"0x5"}`, `{"blockNumber":"latest","blockHash":"0x00"}`, `{}`, `null`, `1`, `"0x1111111111111111111111111111111111111111111111111111111111111111"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var s BlockSelector
		if err := json.Unmarshal(data, &s); err != nil {
			return
		}
		forms := 0
		if s.Tag != TagNone {
			forms++
		}
		if s.Number != nil {
			forms++
		}
		if s.Hash != nil {
			forms++
		}
		if forms != 1 {
			t.Fatalf("selector with %d forms: %+v", forms, s)
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back BlockSelector
		if err := json.Unmarshal(b, &back); err != nil || back.String() != s.String() {
			t.Fatalf("round trip %s: %v %s != %s", b, err, back, s)
		}
	})
}

// FuzzStateOverride: never panics; accepted overrides never have both state
// and stateDiff.
func FuzzStateOverride(f *testing.F) {
	for _, s := range []string{`{}`, `null`, `[]`,
		`{"0x00000000000000000000000000000000000000aa":{"nonce":"0x1","code":"0x60","balance":"0x10","state":{"0x1":"0x2"}}}`,
		`{"0x00000000000000000000000000000000000000aa":{"stateDiff":{"0x0":"0x` + "ff" + `"},"movePrecompileToAddress":"0x0000000000000000000000000000000000000001"}}`,
		`{"0x00000000000000000000000000000000000000aa":{"state":{},"stateDiff":{}}}`,
		`{"0x00000000000000000000000000000000000000aa":{"state":{"0xzz":"0x"}}}`,
		`{"0xaa":{}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var o StateOverride
		if err := json.Unmarshal(data, &o); err != nil {
			return
		}
		for addr, acc := range o {
			if acc.State != nil && acc.StateDiff != nil {
				t.Fatalf("%s has state and stateDiff", addr)
			}
		}
		var b BlockOverrides
		_ = json.Unmarshal(data, &b)
	})
}

// FuzzCallArgs: never panics; accepted args never have differing data/input.
func FuzzCallArgs(f *testing.F) {
	for _, s := range []string{`{}`, `null`, `{"data":"0x12","input":"0x12"}`, `{"data":"0x12","input":"0x34"}`,
		`{"from":"0x00000000000000000000000000000000000000bb","to":"0x00000000000000000000000000000000000000aa","gas":"0x5208","value":"0x1","input":"0x"}`,
		`{"accessList":[{"address":"0x00000000000000000000000000000000000000aa","storageKeys":["0x01"]}]}`,
		`{"authorizationList":[{"chainId":"0x1","address":"0x00000000000000000000000000000000000000aa","nonce":"0x0","yParity":"0x0","r":"0x1","s":"0x1"}]}`,
		`{"value":"0x10000000000000000000000000000000000000000000000000000000000000000"}`, `{"gas":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var a CallArgs
		if err := json.Unmarshal(data, &a); err != nil {
			return
		}
		if a.Input != nil && a.DataField != nil && !bytes.Equal(*a.Input, *a.DataField) {
			t.Fatal("differing data and input accepted")
		}
		_ = a.Data()
		var w Word
		_ = json.Unmarshal(data, &w)
	})
}

// FuzzTypedData: decoding EIP-712 typed data (eth_signTypedData_v4's
// argument, object or JSON string) and hashing it never panics, and the
// two forms of one input decode to the same hash.
func FuzzTypedData(f *testing.F) {
	for _, s := range []string{
		`{"types":{"EIP712Domain":[{"name":"chainId","type":"uint256"}],"V":[{"name":"v","type":"uint256"}]},"primaryType":"V","domain":{"chainId":1},"message":{"v":1}}`,
		`{"types":{"EIP712Domain":[],"M":[{"name":"a","type":"bytes32[]"},{"name":"b","type":"M2"}],"M2":[{"name":"s","type":"string"}]},"primaryType":"M","domain":{},"message":{"a":["0x01"],"b":{"s":"x"}}}`,
		`{"types":{},"primaryType":"X","message":{}}`, `"{}"`, `{}`, `[]`, `null`, `{"types":{"V":[]},"primaryType":"V","message":{"v":1e400}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		td, err := decodeTypedData(data)
		if err != nil {
			return
		}
		h1, _, err1 := apitypes.TypedDataAndHash(*td)
		quoted, _ := json.Marshal(string(data))
		td2, err := decodeTypedData(quoted)
		if err != nil {
			t.Fatalf("object decodes, its JSON string does not: %v", err)
		}
		h2, _, err2 := apitypes.TypedDataAndHash(*td2)
		if (err1 == nil) != (err2 == nil) || !bytes.Equal(h1, h2) {
			t.Fatalf("object and string forms differ: %x %v / %x %v", h1, err1, h2, err2)
		}
	})
}

// FuzzDevNum: the dev methods' number decoder never panics, accepts only
// non-negative integers of at most 78 digits (or 64 hex digits), and what
// it accepts equals the number its hex re-encoding decodes to.
func FuzzDevNum(f *testing.F) {
	for _, s := range []string{`"0x0"`, `"0x1"`, `"0xde0b6b3a7640000"`, `1000`, `"1000"`, `-1`, `"-1"`, `"0x"`, `"0xzz"`, `1.5`, `1e3`, `null`, `true`, `""`,
		`"0x` + "f" + `ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var n devNum
		if err := json.Unmarshal(data, &n); err != nil {
			return
		}
		if n.Sign() < 0 || n.BitLen() > 260 {
			t.Fatalf("accepted %s as %v", data, &n.Int)
		}
		var back devNum
		if err := json.Unmarshal([]byte(`"0x`+n.Text(16)+`"`), &back); err != nil || back.Cmp(&n.Int) != 0 {
			t.Fatalf("%v does not round-trip through hex: %v, %v", &n.Int, &back.Int, err)
		}
	})
}

// FuzzTxSyncTimeout: eth_sendRawTransactionSync's timeout decoder never
// panics; a decimal number and the same value as a hex quantity agree.
func FuzzTxSyncTimeout(f *testing.F) {
	for _, s := range []string{`0`, `1`, `5000`, `"0x1388"`, `"0x"`, `-1`, `1.5`, `1e3`, `"5000"`, `null`, `18446744073709551615`, `18446744073709551616`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m millis
		if err := json.Unmarshal(data, &m); err != nil {
			return
		}
		var hex millis
		if err := json.Unmarshal([]byte(`"`+hexutil.EncodeUint64(uint64(m))+`"`), &hex); err != nil || hex != m {
			t.Fatalf("%s decoded to %d, its hex form to %d (%v)", data, m, hex, err)
		}
	})
}

// FuzzCallBundleArgs: eth_callBundle's argument decoder never panics.
func FuzzCallBundleArgs(f *testing.F) {
	for _, s := range []string{`{"txs":["0x01"],"blockNumber":"0x1","stateBlockNumber":"pending"}`, `{"txs":[],"blockNumber":"0x1","timestamp":"0x5","coinbase":"0x0000000000000000000000000000000000000001","gasLimit":"0x1","baseFee":"0x1","difficulty":"0x0"}`, `{}`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var a callBundleArgs
		_ = json.Unmarshal(data, &a)
	})
}

// FuzzTraceConfig: a debug_trace* config (and debug_traceCall's) never
// panics the decoder, the timeout parser or the tracer's construction;
// without JSTracers no JavaScript tracer is ever built, and an accepted
// timeout is positive and at most the EVM timeout.
func FuzzTraceConfig(f *testing.F) {
	for _, s := range []string{`{}`, `null`, `{"tracer":"callTracer","tracerConfig":{"withLog":true}}`,
		`{"tracer":"prestateTracer","tracerConfig":{"diffMode":true,"includeEmpty":true}}`,
		`{"tracer":"4byteTracer","timeout":"1s"}`, `{"enableMemory":true,"limit":10,"timeout":"-1s"}`,
		`{"tracer":"unigramTracer"}`, `{"tracer":"{step: function() {}}"}`, `{"tracer":"callTracer","tracerConfig":[1]}`,
		`{"stateOverrides":{"0x00000000000000000000000000000000000000aa":{"balance":"0x1"}},"blockOverrides":{"number":"0x5"},"txIndex":"0x1"}`} {
		f.Add([]byte(s))
	}
	api := &API{cfg: DefaultAPIConfig(), exec: chain.NewExecutor(params.MergedTestChainConfig)}
	f.Fuzz(func(t *testing.T, data []byte) {
		var cfg traceCallConfig
		if err := json.Unmarshal(data, &cfg); err != nil {
			return
		}
		d, err := api.traceTimeout(&cfg.traceConfig)
		if err == nil && (d <= 0 || d > api.cfg.EVMTimeout) {
			t.Fatalf("timeout %v accepted", d)
		}
		tr, err := api.newTracer(&cfg.traceConfig, new(tracers.Context), 1<<20)
		if err != nil {
			return
		}
		if cfg.Tracer != nil && tracers.DefaultDirectory.IsJS(*cfg.Tracer) {
			t.Fatalf("JavaScript tracer %q built with JSTracers off", *cfg.Tracer)
		}
		if tr.Hooks == nil || tr.GetResult == nil {
			t.Fatal("tracer without hooks or result")
		}
	})
}
