package eth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/chain/devnet"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/store"
)

// gatedView is a store view whose state trie reads wait while a gate is
// set: a deferred state root computed through it is as slow as the test
// wants; and fail with errTrieRead while fail is set (a store read error
// under the pending block's trie).
type gatedView struct {
	store.View
	gate atomic.Pointer[chan struct{}]
	fail atomic.Bool
}

// errTrieRead is the failure gatedView injects.
var errTrieRead = errors.New("injected trie read failure")

func (v *gatedView) StateTrie(n uint64) (*store.StateTrie, error) {
	if g := v.gate.Load(); g != nil {
		<-*g
	}
	if v.fail.Load() {
		return nil, errTrieRead
	}
	return v.View.StateTrie(n)
}

// deferredRig is a replica's pending side for the newFlashblocks tests: a
// Manager served by an API, and a builder deferring its roots, reading its
// state trie through a gated view, with an open block (index 0, not
// published). hold makes the roots' computation wait until release.
type deferredRig struct {
	api     *API
	url     string
	mgr     *pending.Manager
	b       *pending.Builder
	gv      *gatedView
	s0      *pending.Snapshot
	clock   *pending.ManualClock
	blocks  chan json.RawMessage
	sub     interface{ Unsubscribe() }
	sign    func(nonce uint64) *types.Transaction
	gate    chan struct{}
	release func()
}

func newDeferredRig(t *testing.T) *deferredRig {
	t.Helper()
	accs, err := devnet.Accounts(devnet.Mnemonic, 1)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := devnet.Genesis(devnet.GenesisConfig{ChainID: 1337, Accounts: []common.Address{accs[0].Address}, Timestamp: 1_700_000_000})
	if err != nil {
		t.Fatal(err)
	}
	_, g, w := chaintest.InitStore(t, spec)
	r := &deferredRig{clock: pending.NewManualClock(time.Unix(1_700_000_010, 0))}
	r.mgr = pending.NewManager(w, g.Config, pending.HeaderParams{}, r.clock, nil)
	cfg := DefaultAPIConfig()
	cfg.Preconfirmations = true
	r.api, r.url = startAPI(t, cfg, g, r.mgr, w, nil)

	c := (&devPendingNode{url: r.url}).wsClient(t)
	r.blocks = make(chan json.RawMessage, 256)
	sub, err := c.EthSubscribe(context.Background(), r.blocks, "newFlashblocks")
	if err != nil {
		t.Fatal(err)
	}
	r.sub = sub
	t.Cleanup(sub.Unsubscribe)

	// A replica's builder: roots deferred, read through the gated view.
	r.b = pending.NewBuilder(r.api.Executor())
	r.b.DeferRoots()
	head, view, err := w.OpenHead()
	if err != nil {
		t.Fatal(err)
	}
	r.gv = &gatedView{View: view}
	r.gate = make(chan struct{})
	released := false
	r.release = func() {
		if !released {
			released = true
			close(r.gate)
		}
	}
	t.Cleanup(func() { r.release(); r.b.Close() })
	now := r.clock.Now()
	if r.s0, err = r.b.Open(head, r.gv, pending.NextHeader(g.Config, head.Header(), now, pending.HeaderParams{}), now); err != nil {
		t.Fatal(err)
	}
	r.sign = func(nonce uint64) *types.Transaction {
		tx, err := types.SignNewTx(accs[0].Key, types.LatestSigner(g.Config), &types.DynamicFeeTx{
			ChainID: g.Config.ChainID, Nonce: nonce, GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(10 * params.GWei),
			Gas: 21_000, To: &common.Address{0xb0, 0xb0}, Value: big.NewInt(1),
		})
		if err != nil {
			t.Fatal(err)
		}
		return tx
	}
	return r
}

// hold makes every state root computed from now on wait for release.
func (r *deferredRig) hold() { r.gv.gate.Store(&r.gate) }

// publish publishes s as the replica's driver does, failing if Publish
// does not return at once (it waited for a root).
func (r *deferredRig) publish(t *testing.T, s *pending.Snapshot, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		r.mgr.Publish(s)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		r.release() // let the test end
		<-done
		t.Fatalf("%s: Publish waited for the state root (the subscription computed it on the driver's goroutine)", what)
	}
}

// cut adds the transaction of nonce and cuts.
func (r *deferredRig) cut(t *testing.T, nonce uint64) *pending.Snapshot {
	t.Helper()
	if _, err := r.b.Add(r.sign(nonce)); err != nil {
		t.Fatal(err)
	}
	s := r.b.Cut(r.clock.Now())
	if s == nil {
		t.Fatal("no cut")
	}
	return s
}

// expect reads the next notification and checks it is s's block, with
// s's own state root, as eth_getBlockByNumber("pending", true) answers it
// for s.
func (r *deferredRig) expect(t *testing.T, s *pending.Snapshot, what string) {
	t.Helper()
	m := next(t, r.blocks)
	var got struct {
		Number       hexutil.Uint64    `json:"number"`
		StateRoot    common.Hash       `json:"stateRoot"`
		Transactions []json.RawMessage `json:"transactions"`
	}
	if err := json.Unmarshal(m, &got); err != nil {
		t.Fatal(err)
	}
	root, ok := s.StateRoot()
	if !ok || root == (common.Hash{}) || got.StateRoot != root || uint64(got.Number) != s.Number() || len(got.Transactions) != len(s.Transactions()) {
		t.Fatalf("%s: block %d, %d transactions, state root %s; snapshot %d, %d transactions, root %s (%v)",
			what, got.Number, len(got.Transactions), got.StateRoot, s.Number(), len(s.Transactions()), root, ok)
	}
	want, err := json.Marshal(marshalPendingBlock(pendingBlock(s), true, r.api.genesis.Config, s.Receipts()))
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(t, m, string(want)) {
		t.Fatalf("%s: %s\nwant %s", what, m, want)
	}
}

// TestFlashblocksDeferredRoots: on a replica (a builder deferring its
// state roots: pending.Builder.DeferRoots), newFlashblocks never makes the
// publishing driver compute a root: with the roots' computation held,
// Publish returns at once for one snapshot and the next, nothing is sent
// while their roots are unknown (no notification without its root), and
// once the roots can be computed both notifications arrive, in order,
// each with its snapshot's own state root and as
// eth_getBlockByNumber("pending", true) would have answered it then.
// (Before the encoder moved off the publishing goroutine, the first
// Publish waited for the root.)
func TestFlashblocksDeferredRoots(t *testing.T) {
	r := newDeferredRig(t)
	r.hold()
	r.publish(t, r.s0, "index 0")
	s1 := r.cut(t, 0)
	r.publish(t, s1, "index 1")
	if r.s0.RootReady() || s1.RootReady() {
		t.Fatal("a root was computed while its computation was held")
	}
	// Nothing is sent before its root is known.
	select {
	case m := <-r.blocks:
		t.Fatalf("notification sent before its state root was computed: %s", m)
	case <-time.After(100 * time.Millisecond):
	}
	r.release()
	r.expect(t, r.s0, "notification 0")
	r.expect(t, s1, "notification 1")
	noMore(t, r.blocks)
}

// TestFlashblocksBacklog: while the encoder waits for a root, at most
// maxFlashBacklog snapshots wait for it; beyond, the oldest waiting are
// skipped, so the subscriber gets the one being encoded and then the
// newest maxFlashBacklog, in order, each with its own root. When the last
// subscription ends the encoder stops and leaves the feed.
func TestFlashblocksBacklog(t *testing.T) {
	r := newDeferredRig(t)
	r.hold()
	r.publish(t, r.s0, "index 0")
	w := r.api.flashBlocks.w
	// The encoder took index 0 and waits for its root.
	for deadline := time.Now().Add(5 * time.Second); ; {
		w.mu.Lock()
		n := len(w.queue)
		w.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the encoder did not take index 0")
		}
		time.Sleep(time.Millisecond)
	}
	const extra = 10
	var snaps []*pending.Snapshot
	for i := range maxFlashBacklog + extra {
		s := r.cut(t, uint64(i))
		r.publish(t, s, fmt.Sprintf("index %d", i+1))
		snaps = append(snaps, s)
	}
	w.mu.Lock()
	n := len(w.queue)
	w.mu.Unlock()
	if n != maxFlashBacklog {
		t.Fatalf("%d snapshots wait for the encoder, want the bound %d", n, maxFlashBacklog)
	}
	r.release()
	r.expect(t, r.s0, "index 0")
	for i, s := range snaps[extra:] {
		r.expect(t, s, fmt.Sprintf("index %d", extra+i+1))
	}
	noMore(t, r.blocks)

	// The last subscription ends: the encoder stops and leaves the feed.
	r.sub.Unsubscribe()
	for deadline := time.Now().Add(5 * time.Second); ; {
		r.api.flashBlocks.mu.Lock()
		running := r.api.flashBlocks.w != nil
		r.api.flashBlocks.mu.Unlock()
		if !running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the encoder still runs without a subscription")
		}
		time.Sleep(time.Millisecond)
	}
	r.publish(t, r.cut(t, maxFlashBacklog+extra), "after the last subscription")
	w.mu.Lock()
	n = len(w.queue)
	w.mu.Unlock()
	if n != 0 {
		t.Fatalf("the stopped encoder queued %d snapshots", n)
	}
}
