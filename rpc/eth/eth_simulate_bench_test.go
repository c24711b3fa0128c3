package eth

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/rpc"
)

// benchSimulate runs eth_simulateV1 with the given params (JSON array) on
// the conformance chain b.N times through the handler, including the JSON
// encoding of the result (no HTTP).
func benchSimulate(b *testing.B, params string) {
	db, g := chaintest.ImportedStore(b)
	w := chaintest.StartWriter(b, db, g)
	mgr := pending.NewManager(w, g.Config, pending.HeaderParams{}, nil, nil)
	api, err := NewAPI(DefaultAPIConfig(), g, chain.NewExecutor(g.Config), mgr, w, nil, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal([]byte(params), &raw); err != nil {
		b.Fatal(err)
	}
	p := rpc.NewParams(raw...)
	ctx := context.Background()
	run := func() []byte {
		res, err := api.simulateV1(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		out, err := encodeLikeServer(res)
		if err != nil {
			b.Fatal(err)
		}
		return out
	}
	// Every call of the benchmark must succeed, or it measures a failure.
	var blocks []struct {
		Calls []struct {
			Status string `json:"status"`
		} `json:"calls"`
	}
	if err := json.Unmarshal(run(), &blocks); err != nil {
		b.Fatal(err)
	}
	for i, blk := range blocks {
		for j, c := range blk.Calls {
			if c.Status != "0x1" {
				b.Fatalf("block %d call %d failed", i, j)
			}
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		run()
	}
}

// encodeLikeServer encodes a handler's result as rpc.Server does.
func encodeLikeServer(res any) ([]byte, error) {
	if raw, ok := res.(rpc.RawResult); ok {
		return raw, nil
	}
	return json.Marshal(res)
}

// BenchmarkSimulateTransfer: one block with one ETH transfer.
func BenchmarkSimulateTransfer(b *testing.B) {
	benchSimulate(b, `[{"blockStateCalls":[{"stateOverrides":{"0xc000000000000000000000000000000000000000":{"balance":"0x3e8"}},
		"calls":[{"from":"0xc000000000000000000000000000000000000000","to":"0xc100000000000000000000000000000000000000","value":"0x3e8"}]}]},"latest"]`)
}

// BenchmarkSimulate10Calls3Blocks: three blocks, ten calls in all (value
// transfers, a contract writing storage and emitting a log, reads of what
// earlier blocks wrote), with transfer tracing and validation.
func BenchmarkSimulate10Calls3Blocks(b *testing.B) {
	// Contract: with calldata, stores calldata[0:32] in slot 0 and logs it
	// (LOG1); without, returns slot 0.
	const code = "0x36600f57600054600052602060" + "00f35b" + "600035806000556000" + "6000a100"
	from := `"from":"0xc000000000000000000000000000000000000000"`
	transfer := `{` + from + `,"to":"0xc100000000000000000000000000000000000000","value":"0x1","maxFeePerGas":"0x3b9aca00"}`
	write := `{` + from + `,"to":"0xc200000000000000000000000000000000000000","input":"0x00000000000000000000000000000000000000000000000000000000000000aa","maxFeePerGas":"0x3b9aca00"}`
	read := `{` + from + `,"to":"0xc200000000000000000000000000000000000000","maxFeePerGas":"0x3b9aca00"}`
	benchSimulate(b, `[{"traceTransfers":true,"validation":true,"blockStateCalls":[
		{"stateOverrides":{"0xc000000000000000000000000000000000000000":{"balance":"0xde0b6b3a7640000"},"0xc200000000000000000000000000000000000000":{"code":"`+code+`"}},
		 "calls":[`+transfer+`,`+write+`,`+read+`,`+transfer+`]},
		{"calls":[`+read+`,`+transfer+`,`+write+`]},
		{"calls":[`+read+`,`+transfer+`,`+read+`]}]},"latest"]`)
}
