package eth

import (
	"io"
	"math/big"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/devnet"
	"github.com/tipnode/tipnode/store"
)

// devPendingNode is a dev chain with a pool, a manual clock and a sequencer
// (not started), served over HTTP.
type devPendingNode struct {
	accs   []devnet.Account
	g      *chain.Genesis
	api    *API
	url    string
	pool   *pending.Pool
	clock  *pending.ManualClock
	mgr    *pending.Manager
	heads  *hookHeads
	seqCfg pending.Config
	seq    *pending.Sequencer
}

// hookHeads is the writer as reads see it, with a hook run (once armed)
// right after a read opened its head and before it is handed out.
type hookHeads struct {
	*chain.Writer
	mu   sync.Mutex
	hook func()
}

func (h *hookHeads) OpenHead() (*chain.Head, store.View, error) {
	head, view, err := h.Writer.OpenHead()
	h.mu.Lock()
	f := h.hook
	h.hook = nil
	h.mu.Unlock()
	if f != nil {
		f()
	}
	return head, view, err
}

func newDevPendingNode(t *testing.T, install bool) *devPendingNode {
	t.Helper()
	accs, err := devnet.Accounts(devnet.Mnemonic, 2)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := devnet.Genesis(devnet.GenesisConfig{ChainID: 1337, Accounts: []common.Address{accs[0].Address, accs[1].Address}, Timestamp: 1_700_000_000})
	if err != nil {
		t.Fatal(err)
	}
	_, g, w := chaintest.InitStore(t, spec)
	log := zerolog.New(io.Discard)
	d := &devPendingNode{accs: accs, g: g, seqCfg: pending.DefaultConfig(), heads: &hookHeads{Writer: w}}
	d.clock = pending.NewManualClock(time.Unix(1_700_000_010, 0))
	d.mgr = pending.NewManager(d.heads, g.Config, d.seqCfg.HeaderParams(), d.clock, nil)
	if d.pool, err = pending.NewPool(pending.DefaultPoolConfig(), g.Config, d.mgr, d.clock, nil, log); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultAPIConfig()
	cfg.Preconfirmations = true
	d.api, d.url = startAPI(t, cfg, g, d.mgr, w, d.pool)
	if d.seq, err = pending.New(d.seqCfg, w, d.api.Executor(), d.pool, d.mgr, d.clock, nil, log); err != nil {
		t.Fatal(err)
	}
	if install {
		d.start(t)
	}
	return d
}

// start starts the sequencer.
func (d *devPendingNode) start(t *testing.T) {
	t.Helper()
	if err := d.seq.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.seq.Stop(); err != nil {
			t.Errorf("sequencer: %v", err)
		}
	})
}

// TestPendingSealBetweenViewAndSnapshot: a seal landing while a request
// resolves `pending` (right after its head was opened: the worst moment for
// a reader that would load the snapshot after the head) must not make it
// read an older block than pending (a snapshot anchored past the head it
// opened would be stale, and the read would fall back to the old head).
func TestPendingSealBetweenViewAndSnapshot(t *testing.T) {
	d := newDevPendingNode(t, true)
	recipient := common.HexToAddress("0x00000000000000000000000000000000000b0b02")
	tx, err := types.SignNewTx(d.accs[0].Key, types.LatestSigner(d.g.Config), &types.DynamicFeeTx{
		ChainID: d.g.Config.ChainID, Nonce: 0, GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(10 * params.GWei),
		Gas: 21_000, To: &recipient, Value: big.NewInt(params.Ether),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.pool.Add(tx); err != nil {
		t.Fatal(err)
	}
	d.clock.Advance(d.seqCfg.PreconfInterval)
	d.seq.Sync()
	if snap := d.mgr.Current(); snap == nil || len(snap.Transactions()) != 1 || snap.Anchor().Number.Uint64() != 0 {
		t.Fatal("transfer not pre-confirmed on top of genesis")
	}
	d.heads.mu.Lock()
	d.heads.hook = func() {
		d.clock.Advance(d.seqCfg.BlockTime)
		d.seq.Sync()
	}
	d.heads.mu.Unlock()
	var bal hexBig
	wantResult(t, callRPC(t, d.url, "eth_getBalance", recipient, "pending"), &bal)
	if bal.ToInt().Cmp(big.NewInt(params.Ether)) != 0 {
		t.Fatalf("pending balance across a seal = %v, want 1 ether", bal.ToInt())
	}
	if n := d.mgr.Current().Anchor().Number.Uint64(); n != 1 {
		t.Fatalf("anchor after the seal = %d, want 1", n)
	}
}

// The pending block shows the transactions and receipts roots its
// pre-confirmed transactions will have, and the sealed block has them.
func TestPendingBlockRoots(t *testing.T) {
	d := newDevPendingNode(t, true)
	for nonce := uint64(0); nonce < 3; nonce++ {
		to := common.Address{0xb0, byte(nonce)}
		tx, err := types.SignNewTx(d.accs[0].Key, types.LatestSigner(d.g.Config), &types.DynamicFeeTx{
			ChainID: d.g.Config.ChainID, Nonce: nonce, GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(10 * params.GWei),
			Gas: 21_000, To: &to, Value: big.NewInt(1),
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.pool.Add(tx); err != nil {
			t.Fatal(err)
		}
	}
	d.clock.Advance(d.seqCfg.PreconfInterval)
	d.seq.Sync()
	type roots struct {
		Number       hexU64        `json:"number"`
		TxRoot       common.Hash   `json:"transactionsRoot"`
		ReceiptsRoot common.Hash   `json:"receiptsRoot"`
		Transactions []common.Hash `json:"transactions"`
	}
	var pend roots
	wantResult(t, callRPC(t, d.url, "eth_getBlockByNumber", "pending", false), &pend)
	if len(pend.Transactions) != 3 || pend.TxRoot == types.EmptyTxsHash || pend.ReceiptsRoot == types.EmptyReceiptsHash {
		t.Fatalf("pending block: %d txs, roots %s / %s", len(pend.Transactions), pend.TxRoot, pend.ReceiptsRoot)
	}
	d.clock.Advance(d.seqCfg.BlockTime)
	d.seq.Sync()
	var sealed roots
	wantResult(t, callRPC(t, d.url, "eth_getBlockByNumber", hexU64(pend.Number), false), &sealed)
	if sealed.TxRoot != pend.TxRoot || sealed.ReceiptsRoot != pend.ReceiptsRoot {
		t.Fatalf("sealed roots %s / %s, pending showed %s / %s", sealed.TxRoot, sealed.ReceiptsRoot, pend.TxRoot, pend.ReceiptsRoot)
	}
}
