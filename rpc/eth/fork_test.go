package eth

import (
	"encoding/json"
	"testing"

	"github.com/tipnode/tipnode/rpc"
)

// The fork's decoders of outside input: the upstream's answer to a lookup
// (is its block at or below the fork block) and a client's eth_getLogs
// range. Table cases, then fuzzed for panics.
func TestForkDecoders(t *testing.T) {
	f := &forkUpstream{block: 10}
	for _, tc := range []struct {
		raw  string
		want bool
	}{
		{`{"number":"0xa"}`, true},
		{`{"number":"0xb"}`, false},
		{`{"blockNumber":"0x1"}`, false}, // member is "number"
		{`null`, false},
		{`[]`, false},
		{`{"number":12}`, false},
	} {
		if got := f.atOrBelowFork(rpc.RawResult(tc.raw), "number"); got != tc.want {
			t.Errorf("atOrBelowFork(%s) = %v", tc.raw, got)
		}
	}
	for _, tc := range []struct {
		crit string
		ok   bool
	}{
		{`{"fromBlock":"0x0","toBlock":"0xa"}`, true},
		{`{"fromBlock":"0x0","toBlock":"0xb"}`, false},
		{`{"fromBlock":"0x0"}`, false},
		{`{"fromBlock":"0x0","toBlock":"latest"}`, false},
		{`{"blockHash":"0x01"}`, true},
		{`"junk"`, true}, // the local decoder answers it
	} {
		err := f.checkLogsRange(rpc.NewParams(json.RawMessage(tc.crit)))
		if (err == nil) != tc.ok {
			t.Errorf("checkLogsRange(%s) = %v", tc.crit, err)
		}
	}
}

func FuzzForkDecoders(f *testing.F) {
	f.Add([]byte(`{"number":"0xa","fromBlock":"0x0","toBlock":"0xa"}`))
	f.Add([]byte(`null`))
	fu := &forkUpstream{block: 10}
	f.Fuzz(func(t *testing.T, b []byte) {
		fu.atOrBelowFork(rpc.RawResult(b), "number")
		fu.checkLogsRange(rpc.NewParams(json.RawMessage(b)))
	})
}
