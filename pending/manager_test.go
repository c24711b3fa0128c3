package pending

import (
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/chain/devnet"
	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// builderEnv is a dev chain with a started writer, a manager and a builder
// driven by hand (no sequencer).
type builderEnv struct {
	t       *testing.T
	db      *store.DB
	g       *chain.Genesis
	w       *chain.Writer
	mgr     *Manager
	metrics *Metrics
	b       *Builder
	acc     devnet.Account
	nonce   uint64
	now     time.Time
}

func newBuilderEnv(t *testing.T) *builderEnv {
	t.Helper()
	accs, err := devnet.Accounts(devnet.Mnemonic, 1)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := devnet.Genesis(devnet.GenesisConfig{ChainID: 1337, Accounts: []common.Address{accs[0].Address}, Timestamp: 1_700_000_000})
	if err != nil {
		t.Fatal(err)
	}
	db, g, w := chaintest.InitStore(t, spec)
	metrics := NewMetrics(prometheus.NewRegistry(), nil)
	e := &builderEnv{t: t, db: db, g: g, w: w, metrics: metrics, acc: accs[0], now: time.Unix(1_700_000_010, 0),
		mgr: NewManager(w, g.Config, HeaderParams{}, nil, metrics), b: NewBuilder(chain.NewExecutor(g.Config))}
	t.Cleanup(e.b.Close)
	return e
}

// open opens a pending block on the writer's head (extra distinguishes
// sibling blocks) and publishes its index-0 snapshot.
func (e *builderEnv) open(extra string) *Snapshot {
	e.t.Helper()
	h, view, err := e.w.OpenHead()
	if err != nil {
		e.t.Fatal(err)
	}
	e.now = e.now.Add(time.Second)
	snap, err := e.b.Open(h, view, NextHeader(e.g.Config, h.Header(), e.now, HeaderParams{Extra: []byte(extra)}), e.now)
	if err != nil {
		e.t.Fatal(err)
	}
	e.mgr.Publish(snap)
	return snap
}

// transfer pre-confirms one transfer and publishes the snapshot.
func (e *builderEnv) transfer() *Snapshot {
	e.t.Helper()
	tx, err := types.SignNewTx(e.acc.Key, types.LatestSigner(e.g.Config), &types.DynamicFeeTx{
		ChainID: e.g.Config.ChainID, Nonce: e.nonce, GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(10 * params.GWei),
		Gas: 21_000, To: &common.Address{0xbb}, Value: big.NewInt(1)})
	if err != nil {
		e.t.Fatal(err)
	}
	snap, err := e.b.Apply(chaintypes.Txs{tx}, e.now)
	if err != nil || snap == nil {
		e.t.Fatalf("apply: %v", err)
	}
	e.nonce++
	e.mgr.Publish(snap)
	return snap
}

func (e *builderEnv) seal() *chaintypes.Block {
	e.t.Helper()
	s, err := e.b.Seal()
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.w.Seal(s.Write, nil, nil); err != nil {
		e.t.Fatal(err)
	}
	return s.Block
}

// pendingNonce opens a read and returns (snapshot served?, the account's
// nonce in the state pending resolves to).
func (e *builderEnv) pendingNonce() (bool, uint64) {
	e.t.Helper()
	r, err := e.mgr.Open()
	if err != nil {
		e.t.Fatal(err)
	}
	defer r.Close()
	if r.Snapshot == nil {
		st, err := r.View.StateAt(r.Head.Number())
		if err != nil {
			e.t.Fatal(err)
		}
		acc, err := st.Account(e.acc.Address)
		if err != nil || acc == nil {
			e.t.Fatalf("account: %v", err)
		}
		return false, acc.Nonce
	}
	st, err := r.PendingState()
	if err != nil {
		e.t.Fatal(err)
	}
	acc, err := st.Account(e.acc.Address)
	if err != nil || acc == nil {
		e.t.Fatalf("account: %v", err)
	}
	return true, acc.Nonce
}

// TestOpenVerifiesAnchorByHash: a snapshot is served only while its anchor
// is canonical in the head the read sees. When the anchor is unwound the
// manager drops the snapshot with the new head (one step) and reads serve
// the canonical head; a driver publishing a snapshot built on a block that
// a sibling has replaced is refused. Both count as stale.
func TestOpenVerifiesAnchorByHash(t *testing.T) {
	e := newBuilderEnv(t)
	e.open("a")
	e.transfer()
	blockA := e.seal()
	// Sealing supersedes the snapshot without making it stale: pending is
	// never older than latest, so reads serve block 1 (the same state).
	if served, n := e.pendingNonce(); served || n != 1 {
		t.Fatalf("after seal: served %v nonce %d", served, n)
	}
	e.open("on a")
	snap := e.transfer()
	if snap.Anchor().Hash() != blockA.Hash() || snap.AnchorHash() != blockA.Hash() {
		t.Fatal("snapshot not anchored on block 1")
	}
	if served, n := e.pendingNonce(); !served || n != 2 {
		t.Fatalf("on block 1: served %v nonce %d", served, n)
	}
	stale := func() float64 {
		var m dto.Metric
		if err := e.metrics.staleReads.Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetCounter().GetValue()
	}
	if stale() != 0 {
		t.Fatalf("stale reads %v before any reorg", stale())
	}

	// Unwind block 1: the snapshot's anchor is gone.
	old := e.mgr.Current()
	if err := e.w.UnwindTo(0, nil); err != nil {
		t.Fatal(err)
	}
	if served, n := e.pendingNonce(); served || n != 0 {
		t.Fatalf("after unwind: served %v nonce %d", served, n)
	}
	if stale() != 1 || e.mgr.Current() != nil || e.mgr.Head().Number() != 0 {
		t.Fatalf("after unwind: stale %v, current %v, head %d", stale(), e.mgr.Current(), e.mgr.Head().Number())
	}

	// A sibling block 1 without the transfer: the anchor number exists
	// again, with another hash.
	b := NewBuilder(chain.NewExecutor(e.g.Config))
	defer b.Close()
	h, view, err := e.w.OpenHead()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Open(h, view, NextHeader(e.g.Config, h.Header(), e.now.Add(5*time.Second), HeaderParams{Extra: []byte("b")}), e.now); err != nil {
		t.Fatal(err)
	}
	sealed, err := b.Seal()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.w.Seal(sealed.Write, nil, nil); err != nil {
		t.Fatal(err)
	}
	if sealed.Block.Hash() == blockA.Hash() {
		t.Fatal("test setup: sibling equals block 1")
	}
	// A driver still holding the snapshot built on the old block 1
	// publishes it: refused.
	e.mgr.Publish(old)
	if e.mgr.Current() != nil {
		t.Fatal("a snapshot anchored on a replaced block became current")
	}
	if served, n := e.pendingNonce(); served || n != 0 {
		t.Fatalf("after sibling: served %v nonce %d", served, n)
	}
	if stale() != 2 {
		t.Fatalf("stale snapshots %v, want 2", stale())
	}
	// The pool's validation state follows the same rule.
	header, _, release, err := e.mgr.State()
	if err != nil {
		t.Fatal(err)
	}
	release()
	if header.ParentHash != sealed.Block.Hash() {
		t.Fatalf("pool validates on parent %s, want the canonical head %s", header.ParentHash.Hex(), sealed.Block.Hash().Hex())
	}
}

// TestBuilderRefusesHeaderNotOnHead: the builder opens blocks only on the
// head they extend; header policy is the driver's.
func TestBuilderRefusesHeaderNotOnHead(t *testing.T) {
	e := newBuilderEnv(t)
	h, view, err := e.w.OpenHead()
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	tmpl := NextHeader(e.g.Config, h.Header(), e.now, HeaderParams{})
	tmpl.ParentHash = common.Hash{1}
	if _, err := e.b.Open(h, view, tmpl, e.now); err == nil {
		t.Fatal("opened a block whose parent is not the head")
	}
	tmpl = NextHeader(e.g.Config, h.Header(), e.now, HeaderParams{})
	tmpl.Number = big.NewInt(5)
	if _, err := e.b.Open(h, view, tmpl, e.now); err == nil {
		t.Fatal("opened a block with a number that does not follow the head")
	}
}

// A seal landing while the pool opens its state (Manager.State, the
// pool's validation read; between loading the head/snapshot pair and
// acquiring the head's view: the old head's view is closed by then) must
// not give an older state than pending: an account funded by a
// pre-confirmed transfer can spend right across the seal. (The manager
// once opened the store view before loading the snapshot, found the new
// anchor missing from the view and fell back to the previous block, where
// the account is empty.)
func TestStateAcrossSeal(t *testing.T) {
	e := newBuilderEnv(t)
	key, _ := crypto.GenerateKey()
	funded := crypto.PubkeyToAddress(key.PublicKey)
	e.open("a")
	signer := types.LatestSigner(e.g.Config)
	deposit, _ := types.SignNewTx(e.acc.Key, signer, &types.DynamicFeeTx{ChainID: e.g.Config.ChainID, GasTipCap: big.NewInt(params.GWei),
		GasFeeCap: big.NewInt(10 * params.GWei), Gas: 21_000, To: &funded, Value: big.NewInt(params.Ether)})
	snap, err := e.b.Apply(chaintypes.Txs{deposit}, e.now)
	if err != nil {
		t.Fatal(err)
	}
	e.mgr.Publish(snap)
	sealed := false
	e.mgr.afterLoad = func() {
		e.mgr.afterLoad = nil
		e.seal()
		e.open("b")
		sealed = true
	}
	_, state, release, err := e.mgr.State()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	acc, err := state.Account(funded)
	if err != nil {
		t.Fatal(err)
	}
	if acc == nil || acc.Balance == nil || acc.Balance.ToBig().Cmp(big.NewInt(params.Ether)) != 0 {
		t.Fatalf("funded account across a seal: %+v, want a balance of 1 ether", acc)
	}
	if !sealed || e.w.Head().Number() != 1 {
		t.Fatal("the hook did not seal")
	}
}
