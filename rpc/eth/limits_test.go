package eth

import (
	"context"
	"fmt"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/chain/devnet"
	"github.com/tipnode/tipnode/rpc"
)

// Every EVM execution method goes through the execution limiter; cheap
// methods never do. With the only slot taken and no queue, the four
// executions are refused with -32005 while reads answer; once the slot is
// free they run.
func TestExecutionLimiter(t *testing.T) {
	addr := common.HexToAddress("0x00000000000000000000000000000000000000aa")
	spec, err := devnet.Genesis(devnet.GenesisConfig{ChainID: 1337, Accounts: []common.Address{addr}, Timestamp: 1_700_000_000})
	if err != nil {
		t.Fatal(err)
	}
	db, g, w := chaintest.InitStore(t, spec)
	w.Stop()
	cfg := DefaultAPIConfig()
	cfg.MaxExecutions, cfg.ExecutionQueue = 1, 0
	api, url := startNodeCfg(t, cfg, db, g, nil)

	call := fmt.Sprintf(`{"from":%q,"to":%q}`, addr, addr)
	execs := []struct{ method, params string }{
		{"eth_call", `[` + call + `,"latest"]`},
		{"eth_estimateGas", `[` + call + `]`},
		{"eth_createAccessList", `[` + call + `]`},
		{"eth_simulateV1", `[{"blockStateCalls":[{"calls":[` + call + `]}]},"latest"]`},
	}
	cheap := []struct{ method, params string }{
		{"eth_blockNumber", `[]`},
		{"eth_getBalance", fmt.Sprintf(`[%q,"latest"]`, addr)},
		{"eth_chainId", `[]`},
	}
	request := func(method, params string) rpcResp {
		_, b := post(t, url, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params))
		return parseResp(t, b)
	}

	release, rerr := api.Executions().Acquire(context.Background())
	if rerr != nil {
		t.Fatal(rerr)
	}
	for _, e := range execs {
		r := request(e.method, e.params)
		if r.Error == nil || r.Error.Code != rpc.CodeLimitExceeded || r.Error.Message != "too many concurrent executions (1 running, 0 queued), try again later" {
			t.Errorf("%s with the slot taken: %+v %s", e.method, r.Error, r.Result)
		}
	}
	for _, c := range cheap {
		if r := request(c.method, c.params); r.Error != nil {
			t.Errorf("%s with the slot taken: %+v", c.method, r.Error)
		}
	}
	release()
	for _, e := range execs {
		if r := request(e.method, e.params); r.Error != nil {
			t.Errorf("%s with the slot free: %+v", e.method, r.Error)
		}
	}
	if st := api.Executions().Stats(); st.QueueFull != 4 || st.Admitted != 5 || st.Running != 0 {
		t.Errorf("limiter stats %+v", st)
	}
}

func TestAPIConfigExecutionLimits(t *testing.T) {
	d := DefaultAPIConfig()
	if d.MaxExecutions < 1 || d.ExecutionQueue != 64 || d.ExecutionWait.Seconds() != 2 {
		t.Errorf("defaults %+v", d)
	}
	for _, mod := range []func(*APIConfig){
		func(c *APIConfig) { c.MaxExecutions = 0 },
		func(c *APIConfig) { c.ExecutionQueue = -1 },
		func(c *APIConfig) { c.ExecutionWait = 0 },
	} {
		c := DefaultAPIConfig()
		mod(&c)
		if c.Validate() == nil {
			t.Errorf("%+v: want error", c)
		}
	}
}
