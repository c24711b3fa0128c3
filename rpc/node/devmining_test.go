package node_test

import (
	"encoding/json"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/tipnode/tipnode/rpc"
)

func (e *env) blockNumber() uint64 {
	e.t.Helper()
	var n hexutil.Uint64
	if err := json.Unmarshal(e.call("eth_blockNumber"), &n); err != nil {
		e.t.Fatal(err)
	}
	return uint64(n)
}

func (e *env) txCountOf(tag string) int {
	e.t.Helper()
	var b struct {
		Transactions []json.RawMessage `json:"transactions"`
	}
	if err := json.Unmarshal(e.call("eth_getBlockByNumber", tag, false), &b); err != nil {
		e.t.Fatal(err)
	}
	return len(b.Transactions)
}

// TestDevMiningModes: manual mining keeps transactions in the pool until
// evm_mine puts them all in one block; automine seals each arrival at
// once; interval mining seals every N seconds; anvil_getAutomine follows.
func TestDevMiningModes(t *testing.T) {
	e := newEnvWith(t, envOptions{dev: true})
	if got := string(e.call("anvil_getAutomine")); got != "false" {
		t.Fatalf("anvil_getAutomine at start = %s", got)
	}
	// Manual: "several transactions in one block".
	if got := string(e.call("evm_setAutomine", false)); got != "null" {
		t.Fatalf("evm_setAutomine = %s", got)
	}
	var first common.Hash
	for i := range 3 {
		tx := e.Tx(0, &e.Accs[1].Address, nil, 21_000, nil)
		e.sendRaw(tx)
		if i == 0 {
			first = tx.Hash()
		}
	}
	e.Tick(3 * e.PerBlock())
	if n := e.blockNumber(); n != 0 {
		t.Fatalf("manual mining sealed %d blocks on its own", n)
	}
	if r := string(e.call("eth_getTransactionReceipt", first)); r != "null" {
		t.Fatalf("manual mining pre-confirmed: receipt %s", r)
	}
	e.call("evm_mine")
	if n, c := e.blockNumber(), e.txCountOf("latest"); n != 1 || c != 3 {
		t.Fatalf("evm_mine: block %d with %d txs, want block 1 with 3", n, c)
	}
	// Automine: every send is sealed at once.
	e.call("anvil_setAutomine", true)
	if got := string(e.call("hardhat_getAutomine")); got != "true" {
		t.Fatalf("getAutomine after setAutomine(true) = %s", got)
	}
	for i := range 2 {
		e.sendRaw(e.Tx(0, &e.Accs[1].Address, nil, 21_000, nil))
		e.Seq.Sync()
		if n, c := e.blockNumber(), e.txCountOf("latest"); n != uint64(2+i) || c != 1 {
			t.Fatalf("automine send %d: block %d with %d txs", i, n, c)
		}
	}
	// Interval mining: a block every 4 s (20 intervals of 200 ms).
	e.call("evm_setIntervalMining", 4)
	if got := string(e.call("anvil_getAutomine")); got != "false" {
		t.Fatalf("getAutomine after setIntervalMining = %s", got)
	}
	before := e.blockNumber()
	e.Tick(e.PerBlock()) // 2 s: the default block time is no longer the rule
	if n := e.blockNumber(); n != before {
		t.Fatalf("sealed after 2 s with a 4 s interval")
	}
	e.Tick(e.PerBlock())
	if n := e.blockNumber(); n != before+1 {
		t.Fatalf("no seal after 4 s: block %d, want %d", n, before+1)
	}
	e.call("evm_setIntervalMining", 0) // manual again
	e.Tick(4 * e.PerBlock())
	if n := e.blockNumber(); n != before+1 {
		t.Fatalf("interval 0 still seals")
	}
	if _, err := e.callErr("evm_setIntervalMining", "soon"); err == nil || err.Code != rpc.CodeInvalidParams {
		t.Fatalf("bad interval: %+v", err)
	}
}

// TestDevReset: anvil_reset goes back to genesis with an empty pool.
func TestDevReset(t *testing.T) {
	e := newEnvWith(t, envOptions{dev: true})
	e.sendRaw(e.Tx(0, &e.Accs[1].Address, nil, 21_000, nil))
	e.call("anvil_mine", 3)
	e.sendRaw(e.Tx(0, &e.Accs[1].Address, nil, 21_000, nil)) // pooled or pre-confirmed
	genesisBal := e.str("eth_getBalance", e.Accs[0].Address, "0x0")
	if got := string(e.call("anvil_reset")); got != "null" {
		t.Fatalf("anvil_reset = %s", got)
	}
	if n := e.blockNumber(); n != 0 {
		t.Fatalf("block %d after reset", n)
	}
	if got := e.str("eth_getBalance", e.Accs[0].Address, "pending"); got != genesisBal {
		t.Fatalf("pending balance %s after reset, genesis %s", got, genesisBal)
	}
	if got := e.str("eth_getTransactionCount", e.Accs[0].Address, "pending"); got != "0x0" {
		t.Fatalf("pending nonce %s after reset", got)
	}
	if _, err := e.callErr("anvil_reset", map[string]any{"forking": map[string]any{"jsonRpcUrl": "http://x"}}); err == nil || err.Code != rpc.CodeInvalidParams {
		t.Fatalf("forking reset: %+v", err)
	}
	// The chain goes on from genesis.
	e.SetNonce(0, 0)
	e.sendRaw(e.Tx(0, &e.Accs[1].Address, nil, 21_000, nil))
	e.call("evm_mine")
	if n, c := e.blockNumber(), e.txCountOf("latest"); n != 1 || c != 1 {
		t.Fatalf("after reset: block %d with %d txs", n, c)
	}
}
