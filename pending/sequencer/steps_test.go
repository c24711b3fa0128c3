package sequencer

import (
	"crypto/ecdsa"
	"errors"
	"math/big"
	"slices"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/trie"

	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/store"
)

// stepTxs signs transfers for the keys of a seqRig.
type stepTxs struct {
	t    *testing.T
	rig  *seqRig
	keys []*ecdsa.PrivateKey
}

func newStepRig(t *testing.T, cfg Config, n int, open bool) *stepTxs {
	t.Helper()
	keys := make([]*ecdsa.PrivateKey, n)
	addrs := make([]common.Address, n)
	for i := range keys {
		keys[i], _ = crypto.GenerateKey()
		addrs[i] = crypto.PubkeyToAddress(keys[i].PublicKey)
	}
	return &stepTxs{t: t, rig: newSeqRigCfg(t, cfg, addrs, nil, open), keys: keys}
}

// transfer signs a transfer of key k with nonce, tip and fee cap (gwei).
func (s *stepTxs) transfer(k int, nonce uint64, tip, feeCap int64) *types.Transaction {
	g := s.rig.g
	tx, _ := types.SignNewTx(s.keys[k], types.LatestSigner(g.Config), &types.DynamicFeeTx{ChainID: g.Config.ChainID, Nonce: nonce,
		GasTipCap: big.NewInt(tip * params.GWei), GasFeeCap: big.NewInt(feeCap * params.GWei), Gas: 21000, To: &common.Address{0xbb}, Value: big.NewInt(1)})
	return tx
}

// add pools a transfer of key k with nonce and tip (gwei; fee cap 100
// gwei) and returns it.
func (s *stepTxs) add(k int, nonce uint64, tip int64) *types.Transaction {
	s.t.Helper()
	tx := s.transfer(k, nonce, tip, 100)
	if err := s.rig.pool.Add(tx); err != nil {
		s.t.Fatal(err)
	}
	return tx
}

func hashes(txs []*types.Transaction) []common.Hash {
	out := make([]common.Hash, len(txs))
	for i, tx := range txs {
		out[i] = tx.Hash()
	}
	return out
}

func published(snap *pending.Snapshot) []common.Hash {
	var out []common.Hash
	for _, tx := range snap.Transactions() {
		out = append(out, tx.Hash())
	}
	return out
}

// start starts the sequencer's loop, stopped when the test ends.
func (s *stepTxs) start() {
	s.t.Helper()
	if err := s.rig.seq.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { _ = s.rig.seq.Stop() })
}

// TestStepsExecuteBeforePublishing: a step executes what is pooled into
// the pending block without publishing it (the transactions stay in the
// pool, the published snapshot does not change); a later step goes on from
// there (the sender's executed transactions are not stale); the next
// pre-confirmation publishes all of it in execution order, which is tip
// order per step only; a step with nothing admitted since does nothing.
func TestStepsExecuteBeforePublishing(t *testing.T) {
	r := newStepRig(t, DefaultConfig(), 2, true)
	seq, mgr, pool := r.rig.seq, r.rig.mgr, r.rig.pool
	before := mgr.Current()

	a0 := r.add(0, 0, 1)
	if err := seq.step(); err != nil {
		t.Fatal(err)
	}
	a1 := r.add(0, 1, 1)
	if err := seq.step(); err != nil {
		t.Fatal(err)
	}
	if seq.b.Len() != 2 || len(seq.unpublished) != 2 {
		t.Fatalf("after two steps: %d transactions in the block, %d unpublished; want 2 and 2", seq.b.Len(), len(seq.unpublished))
	}
	if mgr.Current() != before {
		t.Fatalf("a step published snapshot %d", mgr.Current().Index())
	}
	if pool.Get(a0.Hash()) == nil || pool.Get(a1.Hash()) == nil {
		t.Fatal("a step removed an executed transaction from the pool before it was published")
	}
	// A replacement of an executed transaction comes too late: refused,
	// not accepted and then dropped as stale.
	if err := pool.Add(r.transfer(0, 1, 10, 200)); !errors.Is(err, ErrNonceTooLow) {
		t.Fatalf("replacing a transaction a step executed: %v, want %v", err, ErrNonceTooLow)
	}
	if err := seq.step(); err != nil { // nothing admitted since
		t.Fatal(err)
	}
	if seq.b.Len() != 2 {
		t.Fatalf("an idle step changed the block to %d transactions", seq.b.Len())
	}

	// B's tip is higher, but A's transactions were executed by earlier
	// steps: B follows them.
	b0 := r.add(1, 0, 50)
	if err := seq.preconfirm(); err != nil {
		t.Fatal(err)
	}
	snap := mgr.Current()
	if want := hashes([]*types.Transaction{a0, a1, b0}); !slices.Equal(published(snap), want) {
		t.Fatalf("published %v, want %v", published(snap), want)
	}
	if snap.Index() != 1 || pool.Len() != 0 || len(seq.unpublished) != 0 {
		t.Fatalf("after publishing: index %d, pool %d, unpublished %d; want 1, 0, 0",
			snap.Index(), pool.Len(), len(seq.unpublished))
	}
	j, err := r.rig.w.PendingJournal()
	if err != nil || j == nil || len(j.Txs) != 3 {
		t.Fatalf("journal %+v (%v), want the 3 published transactions", j, err)
	}

	// Pooled together (Steps 1, or one step): tip order.
	c1 := r.add(0, 2, 1)
	c2 := r.add(1, 1, 50)
	if err := seq.preconfirm(); err != nil {
		t.Fatal(err)
	}
	if want := hashes([]*types.Transaction{a0, a1, b0, c2, c1}); !slices.Equal(published(mgr.Current()), want) {
		t.Fatalf("published %v, want %v", published(mgr.Current()), want)
	}
}

// TestStepTicks drives the loop with a manual clock: ticks within an
// interval are steps (executed, not published), the first of the next
// interval pre-confirms, and blocks are sealed every BlockTime as before.
func TestStepTicks(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Steps = 4 // a tick every 50 ms
	r := newStepRig(t, cfg, 1, false)
	seq, mgr, clock := r.rig.seq, r.rig.mgr, r.rig.clock
	r.start()

	tx := r.add(0, 0, 1)
	clock.Advance(50 * time.Millisecond)
	seq.Sync()
	if seq.b.Len() != 1 || mgr.Current().Index() != 0 {
		t.Fatalf("after one step: %d transactions in the block, snapshot %d; want 1 executed, 0 published", seq.b.Len(), mgr.Current().Index())
	}
	clock.Advance(100 * time.Millisecond)
	seq.Sync()
	if mgr.Current().Index() != 0 {
		t.Fatalf("published at 150 ms (snapshot %d), want at 200 ms", mgr.Current().Index())
	}
	clock.Advance(50 * time.Millisecond)
	seq.Sync()
	if snap := mgr.Current(); snap.Index() != 1 || !slices.Equal(published(snap), []common.Hash{tx.Hash()}) {
		t.Fatalf("at 200 ms: snapshot %d with %v, want 1 with the transaction", snap.Index(), published(snap))
	}
	if n := r.rig.w.Head().Number(); n != 0 {
		t.Fatalf("sealed block %d before the block time", n)
	}
	clock.Advance(cfg.BlockTime - 200*time.Millisecond)
	seq.Sync()
	if n := r.rig.w.Head().Number(); n != 1 {
		t.Fatalf("head %d after the block time, want 1", n)
	}
}

// TestStepsPublishedBeforeDevOperation: a dev operation first publishes
// what steps executed, so it applies (and journals) after them.
func TestStepsPublishedBeforeDevOperation(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Dev = true
	r := newStepRig(t, cfg, 1, false)
	seq, mgr, clock := r.rig.seq, r.rig.mgr, r.rig.clock
	r.start()

	tx := r.add(0, 0, 1)
	clock.Advance(20 * time.Millisecond) // one step
	seq.Sync()
	if seq.b.Len() != 1 || mgr.Current().Index() != 0 {
		t.Fatalf("after one step: %d transactions, snapshot %d; want 1 executed, 0 published", seq.b.Len(), mgr.Current().Index())
	}
	if err := seq.Override(store.PendingOverride{Kind: store.OverrideBalance, Address: common.Address{0xcc}, Balance: big.NewInt(7)}); err != nil {
		t.Fatal(err)
	}
	snap := mgr.Current()
	if !slices.Equal(published(snap), []common.Hash{tx.Hash()}) || r.rig.pool.Len() != 0 {
		t.Fatalf("after the override: published %v, pool %d; want the transaction, 0", published(snap), r.rig.pool.Len())
	}
	j, err := r.rig.w.PendingJournal()
	if err != nil || j == nil || len(j.Txs) != 1 || len(j.Overrides) != 1 || j.Overrides[0].At != 1 {
		t.Fatalf("journal %+v (%v): want the transaction, then the override at 1", j, err)
	}
}

func TestStepsConfig(t *testing.T) {
	for _, c := range []struct {
		steps    int
		interval time.Duration
		ok       bool
	}{
		{0, 200 * time.Millisecond, true},
		{1, 200 * time.Millisecond, true},
		{7, 210 * time.Millisecond, true},
		{-1, 200 * time.Millisecond, false},
		{3, 200 * time.Millisecond, false}, // 66.66… ms
		{0, 15, false},                     // 1.5 ns
	} {
		cfg := DefaultConfig()
		cfg.Steps, cfg.PreconfInterval, cfg.BlockTime = c.steps, c.interval, c.interval
		err := cfg.Validate()
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrConfig)) {
			t.Errorf("steps %d interval %s: %v, want ok=%v", c.steps, c.interval, err, c.ok)
		}
	}
}

// TestStepDerivesRoots: the step after a pre-confirmation derives the
// published snapshot's transactions and receipts roots (the block's
// incremental tries then hold all its transactions), so that the seal
// derives only what the last pre-confirmation added; the roots are those
// of DeriveSha, and the sealed block's are too.
func TestStepDerivesRoots(t *testing.T) {
	r := newStepRig(t, DefaultConfig(), 2, true)
	seq, mgr := r.rig.seq, r.rig.mgr
	r.add(0, 0, 1)
	r.add(1, 0, 2)
	if err := seq.preconfirm(); err != nil {
		t.Fatal(err)
	}
	snap := mgr.Current()
	if nt, nr := snap.RootTries(); nt+nr != 0 {
		n := nt + nr
		t.Fatalf("%d items in the roots' tries before any step (nothing asked yet)", n)
	}
	if err := seq.step(); err != nil {
		t.Fatal(err)
	}
	if nt, nr := snap.RootTries(); nt != 2 || nr != 2 {
		t.Fatalf("after a step the tries hold %d transactions and %d receipts, want 2 and 2", nt, nr)
	}
	if got, want := snap.TxRoot(), types.DeriveSha(snap.Transactions(), trie.NewStackTrie(nil)); got != want {
		t.Fatalf("transactions root %x, want %x", got, want)
	}
	if got, want := snap.ReceiptsRoot(), types.DeriveSha(snap.Receipts(), trie.NewStackTrie(nil)); got != want {
		t.Fatalf("receipts root %x, want %x", got, want)
	}
	r.add(0, 1, 1)
	if err := seq.preconfirm(); err != nil {
		t.Fatal(err)
	}
	sealed, err := seq.b.Seal()
	if err != nil {
		t.Fatal(err)
	}
	blk := sealed.Block
	if got, want := blk.Header().TxHash, types.DeriveSha(blk.Transactions(), trie.NewStackTrie(nil)); got != want || blk.Transactions().Len() != 3 {
		t.Fatalf("sealed transactions root %x over %d, want %x over 3", got, blk.Transactions().Len(), want)
	}
	if got, want := blk.Header().ReceiptHash, types.DeriveSha(sealed.Receipts, trie.NewStackTrie(nil)); got != want {
		t.Fatalf("sealed receipts root %x, want %x", got, want)
	}
}
