package eth

import (
	"encoding/json"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/rpc"
)

// logTopic is the topic logDeploy's init code emits.
var logTopic = common.HexToHash("0x00000000000000000000000000000000000000000000000000000000000f11e5")

// logDeploy signs a contract creation (dev account 0, nonce n) whose init
// code emits LOG1(logTopic) and deploys nothing.
func (d *devPendingNode) logDeploy(t *testing.T, n uint64) *types.Transaction {
	t.Helper()
	code := append(append([]byte{0x7f}, logTopic.Bytes()...), 0x60, 0x00, 0x60, 0x00, 0xa1, 0x00)
	tx, err := types.SignNewTx(d.accs[0].Key, types.LatestSigner(d.g.Config), &types.DynamicFeeTx{
		ChainID: d.g.Config.ChainID, Nonce: n, GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(10 * params.GWei),
		Gas: 100_000, Data: code,
	})
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

// filterClock is a manual clock for the filters.
type filterClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *filterClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *filterClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newFilterID_(t *testing.T, r rpcResp) string {
	t.Helper()
	var id string
	wantResult(t, r, &id)
	if !strings.HasPrefix(id, "0x") || len(id) != 34 {
		t.Fatalf("filter id %q", id)
	}
	return id
}

// pollUntil polls a filter until it returns something (feeds run on their
// own goroutines), or fails after a while.
func pollUntil(t *testing.T, url, id string, dst any) {
	t.Helper()
	for i := 0; i < 2000; i++ {
		r := callRPC(t, url, "eth_getFilterChanges", id)
		if r.Error != nil {
			t.Fatalf("eth_getFilterChanges: %d %s", r.Error.Code, r.Error.Message)
		}
		if string(r.Result) != "[]" {
			if err := json.Unmarshal(r.Result, dst); err != nil {
				t.Fatal(err)
			}
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("filter %s: nothing arrived", id)
}

func wantEmptyChanges(t *testing.T, url, id string) {
	t.Helper()
	r := callRPC(t, url, "eth_getFilterChanges", id)
	if r.Error != nil || string(r.Result) != "[]" {
		t.Fatalf("filter %s: %s %+v, want []", id, r.Result, r.Error)
	}
}

func (d *devPendingNode) preconfirm(t *testing.T, txs ...*types.Transaction) {
	t.Helper()
	for _, tx := range txs {
		if err := d.pool.Add(tx); err != nil {
			t.Fatal(err)
		}
	}
	d.clock.Advance(d.seqCfg.PreconfInterval)
	d.seq.Sync()
}

func (d *devPendingNode) seal() {
	d.clock.Advance(d.seqCfg.BlockTime)
	d.seq.Sync()
}

func TestFilterBlocksAndPendingTxs(t *testing.T) {
	d := newDevPendingNode(t, true)
	blocks := newFilterID_(t, callRPC(t, d.url, "eth_newBlockFilter"))
	txs := newFilterID_(t, callRPC(t, d.url, "eth_newPendingTransactionFilter"))
	wantEmptyChanges(t, d.url, blocks)
	tx := d.signedTransfer(t, 0)
	d.preconfirm(t, tx)
	var hashes []common.Hash
	pollUntil(t, d.url, txs, &hashes)
	if len(hashes) != 1 || hashes[0] != tx.Hash() {
		t.Fatalf("pending tx filter: %v, want [%s]", hashes, tx.Hash())
	}
	d.seal()
	d.seal()
	var got []common.Hash
	for len(got) < 2 {
		var more []common.Hash
		pollUntil(t, d.url, blocks, &more)
		got = append(got, more...)
	}
	for i, h := range got {
		var b struct {
			Hash common.Hash `json:"hash"`
		}
		wantResult(t, callRPC(t, d.url, "eth_getBlockByNumber", hexU64(i+1), false), &b)
		if h != b.Hash {
			t.Fatalf("block filter item %d = %s, block %d is %s", i, h, i+1, b.Hash)
		}
	}
	wantEmptyChanges(t, d.url, blocks)
	wantEmptyChanges(t, d.url, txs)
}

// TestFilterLogsPending: a log filter reaching pending gets a log at its
// pre-confirmation and not again at the seal; one ending at latest gets
// it at the seal with the block's hash.
func TestFilterLogsPending(t *testing.T) {
	d := newDevPendingNode(t, true)
	crit := map[string]any{"topics": []any{logTopic}}
	pend := newFilterID_(t, callRPC(t, d.url, "eth_newFilter", map[string]any{"toBlock": "pending", "topics": []any{logTopic}}))
	latest := newFilterID_(t, callRPC(t, d.url, "eth_newFilter", crit))
	other := newFilterID_(t, callRPC(t, d.url, "eth_newFilter", map[string]any{"toBlock": "pending", "topics": []any{common.Hash{1}}}))
	tx := d.logDeploy(t, 0)
	d.preconfirm(t, tx)
	var logs []types.Log
	pollUntil(t, d.url, pend, &logs)
	if len(logs) != 1 || logs[0].TxHash != tx.Hash() || logs[0].BlockHash != (common.Hash{}) || logs[0].BlockNumber != 1 {
		t.Fatalf("pre-confirmed logs %+v", logs)
	}
	wantEmptyChanges(t, d.url, latest)
	d.seal()
	pollUntil(t, d.url, latest, &logs)
	if len(logs) != 1 || logs[0].TxHash != tx.Hash() || logs[0].BlockHash == (common.Hash{}) {
		t.Fatalf("sealed logs %+v", logs)
	}
	// The pending filter got the sealed block too (its feed ran): nothing
	// repeated.
	time.Sleep(50 * time.Millisecond)
	wantEmptyChanges(t, d.url, pend)
	wantEmptyChanges(t, d.url, other)
	// eth_getFilterLogs: the query, as eth_getLogs.
	var all []types.Log
	wantResult(t, callRPC(t, d.url, "eth_getFilterLogs", latest), &all)
	if len(all) != 1 || all[0].TxHash != tx.Hash() { // fromBlock/toBlock absent: latest, block 1
		t.Fatalf("eth_getFilterLogs %+v", all)
	}
	wantCode(t, callRPC(t, d.url, "eth_getFilterLogs", newFilterID_(t, callRPC(t, d.url, "eth_newBlockFilter"))), rpc.CodeServerError)
	wantCode(t, callRPC(t, d.url, "eth_newFilter", map[string]any{"fromBlock": "0x5", "toBlock": "0x2"}), rpc.CodeInvalidParams)
	wantCode(t, callRPC(t, d.url, "eth_newFilter", map[string]any{"blockHash": common.Hash{1}}), rpc.CodeInvalidParams)
}

// TestFilterExpiryAndLimits: a filter not polled for FilterTimeout is gone
// (without being polled: at the next event), uninstall answers true then
// false, and the per-client limit refuses one more.
func TestFilterExpiryAndLimits(t *testing.T) {
	d := newDevPendingNode(t, true)
	clk := &filterClock{now: time.Unix(1_700_000_000, 0)}
	d.api.now = clk.Now
	d.api.cfg.FilterMaxPerClient = 2
	a := newFilterID_(t, callRPC(t, d.url, "eth_newBlockFilter"))
	b := newFilterID_(t, callRPC(t, d.url, "eth_newBlockFilter"))
	wantCode(t, callRPC(t, d.url, "eth_newBlockFilter"), rpc.CodeLimitExceeded)
	clk.Advance(4 * time.Minute)
	wantEmptyChanges(t, d.url, a) // a polled, b not
	clk.Advance(time.Minute + time.Second)
	d.seal() // an event: b expires without any call
	for i := 0; d.api.FilterCount() != 1; i++ {
		if i > 2000 {
			t.Fatalf("%d filters, want 1 (b expired)", d.api.FilterCount())
		}
		time.Sleep(time.Millisecond)
	}
	wantCode(t, callRPC(t, d.url, "eth_getFilterChanges", b), rpc.CodeServerError)
	var ok bool
	wantResult(t, callRPC(t, d.url, "eth_uninstallFilter", a), &ok)
	if !ok {
		t.Fatal("uninstall a: false")
	}
	wantResult(t, callRPC(t, d.url, "eth_uninstallFilter", a), &ok)
	if ok {
		t.Fatal("second uninstall: true")
	}
	// A filter expires at a call too (no event).
	c := newFilterID_(t, callRPC(t, d.url, "eth_newBlockFilter"))
	clk.Advance(5*time.Minute + time.Second)
	wantCode(t, callRPC(t, d.url, "eth_getFilterChanges", c), rpc.CodeServerError)
	if n := d.api.FilterCount(); n != 0 {
		t.Fatalf("%d filters left", n)
	}
}

// TestFilterBufferBound: a filter keeps at most FilterMaxBuffered items.
func TestFilterBufferBound(t *testing.T) {
	d := newDevPendingNode(t, true)
	d.api.cfg.FilterMaxBuffered = 2
	id := newFilterID_(t, callRPC(t, d.url, "eth_newPendingTransactionFilter"))
	var sent []*types.Transaction
	for n := uint64(0); n < 4; n++ {
		tx := d.signedTransfer(t, n)
		sent = append(sent, tx)
		if err := d.pool.Add(tx); err != nil {
			t.Fatal(err)
		}
	}
	var got []common.Hash
	pollUntil(t, d.url, id, &got)
	if len(got) != 2 || got[0] != sent[2].Hash() || got[1] != sent[3].Hash() {
		t.Fatalf("buffered %v, want the last two", got)
	}
}
