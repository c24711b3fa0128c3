package pending

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/store"
)

// liveTrie is a pending block's state trie as of one snapshot: the trie
// updates of the block's pre-confirmations so far, above its pending
// parents' updates (under), above the anchor's trie at height at. Each cut
// computes the update of its own diff (the layer it pushes) on the trie of
// the cut before it (StateTrie.On(updates...).Update), so a cut costs what
// it changed, not the block; the seal squashes the cuts' updates and the
// tail's into the block's update (store.SquashTrieUpdates).
//
// A liveTrie never changes once a snapshot holds it: a cut makes a new one.
// Its cuts are kept as the layers are (pushLayer): a new update is squashed
// into the one below while that one is at most twice its size, so a read
// walks O(log n) updates and every node is copied O(log n) times over a
// block.
type liveTrie struct {
	at    uint64
	under []*store.TrieUpdate
	// cuts[i] was computed on under ++ cuts[:i].
	cuts []*store.TrieUpdate
	// last is the newest cut's own update (the storage roots it watched).
	last *store.TrieUpdate
}

// updates are the updates above the trie at the height at, oldest first.
func (l *liveTrie) updates() []*store.TrieUpdate {
	return append(slices.Clip(l.under), l.cuts...)
}

// Root is the state root as of the snapshot.
func (l *liveTrie) Root() common.Hash { return l.last.Root }

// push returns l with u, the update of the next cut (computed on
// l.updates()), on top.
func (l *liveTrie) push(u *store.TrieUpdate) (*liveTrie, error) {
	cuts := append(slices.Clip(l.cuts), u)
	for n := len(cuts); n >= 2 && cuts[n-2].Nodes() <= 2*cuts[n-1].Nodes(); n = len(cuts) {
		m, err := store.SquashTrieUpdates(cuts[n-2:]...)
		if err != nil {
			return nil, err
		}
		cuts = append(cuts[:n-2:n-2], m)
	}
	return &liveTrie{at: l.at, under: l.under, cuts: cuts, last: u}, nil
}

// cutTrie is the state trie of one cut of the open block: its live trie
// and its header completed with the root (and an OP block's withdrawals
// root from Isthmus). An eager builder computes it at the cut (done); a
// deferring one (Builder.DeferRoots) records what it needs (the previous
// cut's, the cut's diff, the header to complete, the builder's view) and
// computes it on first need: resolve, by whoever asks first (the driver
// when it is idle, a reader of the root, the next seal, the builder before
// it releases its view), the others waiting under mu. A cut's computation
// resolves the cuts before it first (their locks taken newest to oldest:
// no cycle). The result never changes once done; a failure is kept (the
// snapshot then has no state root and reports the failure, ErrStateRoot,
// as after an eager builder's failure; its header's state-derived roots
// are zero, never the template's).
type cutTrie struct {
	mu   sync.Mutex
	done bool
	live *liveTrie     // nil: failed (err)
	hdr  *types.Header // the cut's header, completed with the root once done
	err  error
	// What a deferred computation needs; dropped once done.
	prev *cutTrie
	diff *store.StateDiff
	view store.View
	exec *chain.Executor
	// count is the builder's count of cut trie updates (CutTries).
	count *atomic.Uint64
}

// resolve computes c if not done yet and returns its live trie and
// completed header (an error when it failed, then or earlier).
func (c *cutTrie) resolve() (*liveTrie, *types.Header, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.done {
		c.live, c.hdr, c.err = c.compute()
		c.done = true
		c.prev, c.diff, c.view, c.exec, c.count = nil, nil, nil, nil, nil
	}
	return c.live, c.hdr, c.err
}

func (c *cutTrie) compute() (*liveTrie, *types.Header, error) {
	l, _, err := c.prev.resolve()
	if err != nil {
		return nil, rootless(c.exec, types.CopyHeader(c.hdr)), err
	}
	h := types.CopyHeader(c.hdr)
	c.count.Add(1)
	next, _, err := applyTrie(c.exec, c.view, l, c.diff, h)
	if err != nil {
		return nil, rootless(c.exec, types.CopyHeader(c.hdr)), rootErr(h, err)
	}
	return next, h, nil
}

// rootErr is the failure of block h's state trie update (ErrStateRoot).
func rootErr(h *types.Header, err error) error {
	return fmt.Errorf("%w: block %d: %w", ErrStateRoot, h.Number, err)
}

// rootless clears h's state-derived roots, for a pending header without a
// state trie (the store keeps none, SkipCutRoots, or its update failed):
// the state root, and on an OP chain from Isthmus the withdrawals root (a
// storage root of the state), are zero, as a fork's sealed headers carry
// them; never the template's (the empty list's root would be a wrong
// answer). It returns h.
func rootless(exec *chain.Executor, h *types.Header) *types.Header {
	h.Root = common.Hash{}
	if h.WithdrawalsHash != nil && len(exec.TrieWatch(h)) > 0 {
		h.WithdrawalsHash = new(common.Hash)
	}
	return h
}

// ready reports whether c is computed (never waits).
func (c *cutTrie) ready() bool {
	if !c.mu.TryLock() {
		return false
	}
	defer c.mu.Unlock()
	return c.done
}

// resolvedTrie is a computed cutTrie.
func resolvedTrie(l *liveTrie, h *types.Header) *cutTrie {
	return &cutTrie{done: true, live: l, hdr: h}
}

// openTrie starts the live trie of the block the builder opens (nil when
// the store keeps no trie: a fork's headers keep a zero root).
func (b *Builder) openTrie(view store.View, at uint64, under []*store.TrieUpdate) (*cutTrie, error) {
	if _, err := view.StateTrie(at); errors.Is(err, store.ErrNoTrie) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return resolvedTrie(&liveTrie{at: at, under: under}, nil), nil
}

// advanceTrie applies diff, the state written since the previous cut, to
// the open block's live trie and completes h, that cut's header, with the
// state root (and what else the chain derives from it: an OP block's
// withdrawals root from Isthmus). Without a live trie it does nothing. A
// failure leaves the block without one from here on (its snapshots carry
// no root and report the failure, trieErr, wrapping ErrStateRoot; the seal
// computes the block's update from its whole diff, as without pending
// roots).
//
// A deferring builder (DeferRoots) computes nothing here: the cut's trie
// is computed on first need (cutTrie), h stays as it is (the snapshot's
// Header completes a copy), and a failure shows then.
func (b *Builder) advanceTrie(diff *store.StateDiff, h *types.Header) {
	if b.live == nil {
		return
	}
	if b.deferRoots {
		b.live = &cutTrie{prev: b.live, diff: diff, hdr: h, view: b.view, exec: b.exec, count: b.cutTries}
		return
	}
	l, _, err := b.live.resolve() // computed at its cut
	if err == nil {
		b.cutTries.Add(1)
		l, _, err = applyTrie(b.exec, b.view, l, diff, h)
	}
	if err != nil {
		b.live, b.trieErr = nil, rootErr(h, err)
		rootless(b.exec, h)
		return
	}
	b.live = resolvedTrie(l, h)
}

// settleTrie computes the open block's deferred cut tries, if any, before
// the builder releases the view they read through: every snapshot of the
// block has its root from then on, whoever holds it.
func (b *Builder) settleTrie() {
	if b.live != nil {
		b.live.resolve()
	}
}

// applyTrie is l with diff's update on top (read through view), and h
// completed with its root.
func applyTrie(exec *chain.Executor, view store.View, l *liveTrie, diff *store.StateDiff, h *types.Header) (*liveTrie, *store.TrieUpdate, error) {
	tr, err := view.StateTrie(l.at)
	if err != nil {
		return nil, nil, err
	}
	u, err := tr.On(l.updates()...).Update(diff, exec.TrieWatch(h)...)
	if err != nil {
		return nil, nil, err
	}
	next, err := l.push(u)
	if err != nil {
		return nil, nil, err
	}
	if err := exec.SealHeader(h, nil, u); err != nil {
		return nil, nil, err
	}
	return next, u, nil
}

// sealTrie is the block's trie update at the seal: the tail (the state
// written since the last cut: transactions not cut yet, the post-block
// system calls) on the live trie, squashed with the cuts' updates. nil,
// false when the block has no live trie (or its deferred cuts failed).
func (b *Builder) sealTrie(tail *store.StateDiff, h *types.Header) (*store.TrieUpdate, bool, error) {
	if b.live == nil {
		return nil, false, nil
	}
	live, _, err := b.live.resolve()
	if err != nil {
		b.live, b.trieErr = nil, err
		return nil, false, nil
	}
	l, _, err := applyTrie(b.exec, b.view, live, tail, types.CopyHeader(h))
	if err != nil {
		return nil, true, err
	}
	upd, err := store.SquashTrieUpdates(l.cuts...)
	if err != nil {
		return nil, true, err
	}
	// The squash's watched roots are the tail's (the last update's).
	return upd, true, nil
}

// rooted is s's live trie and header with its state root: a deferred
// cut's computed (waiting for it, or computing it, the first time), else
// s's own. The live trie is nil when s has none; err (ErrStateRoot) says
// why when its update failed (the header's state-derived roots are then
// zero).
func (s *Snapshot) rooted() (*liveTrie, *types.Header, error) {
	if s.cut == nil {
		return s.trie, s.header, s.rootErr
	}
	return s.cut.resolve()
}

// RootErr is why s has no state root when its state trie update failed
// (an error wrapping ErrStateRoot and the cause: a store read error, a
// corrupt trie node), nil when s has its root or keeps none by design
// (the store keeps no trie, SkipCutRoots). Like StateRoot it waits for a
// deferred root (or computes it). A reader that presents the root
// (eth_getBlockByNumber("pending"), eth_getProof at pending, the
// newFlashblocks notification) must check it: the zero root s then
// reports is not an answer.
func (s *Snapshot) RootErr() error {
	_, _, err := s.rooted()
	return err
}

// RootReady reports whether s's state root is computed (a deferring
// builder's snapshot may be published before it is; StateRoot, Header,
// BlockHash and StateTrie wait for it or compute it). It never waits.
func (s *Snapshot) RootReady() bool { return s.cut == nil || s.cut.ready() }

// StateRoot is the pending block's state root as of s (its header's Root:
// the state after s's transactions), ok false when s has none (the store
// keeps no trie: a fork's pending headers keep a zero root; SkipCutRoots;
// or its update failed: RootErr).
func (s *Snapshot) StateRoot() (root common.Hash, ok bool) {
	l, h, _ := s.rooted()
	if l == nil {
		return common.Hash{}, false
	}
	return h.Root, true
}

// BlockHash is the hash of the block s's header would seal as, with
// exactly s's transactions: its header with s's state root, transactions
// and receipts roots (a final snapshot's: Hash). The seal's post-block
// system calls run after the last cut: on an OP chain they change nothing;
// on an L1 chain from Prague they can (an EIP-7002/7251 request queue that
// is not empty), and the sealed block's hash then differs. Zero when s has
// no state root (RootErr says whether that is a failure).
func (s *Snapshot) BlockHash() common.Hash {
	if s.Final() {
		return s.hash
	}
	l, rh, _ := s.rooted()
	if l == nil {
		return common.Hash{}
	}
	h := types.CopyHeader(rh)
	h.TxHash, h.ReceiptHash, h.UncleHash = s.TxRoot(), s.ReceiptsRoot(), types.EmptyUncleHash
	return h.Hash()
}

// StateTrie is the pending block's state trie as of s, read through view
// (a view of the store at or above s's anchor: Read.View): what
// eth_getProof at pending proves against (its root is s's StateRoot). It
// fails with ErrNoStateTrie when s has none by design, with RootErr's
// error (ErrStateRoot) when its update failed.
func (s *Snapshot) StateTrie(view store.View) (*store.StateTrie, error) {
	l, _, err := s.rooted()
	if err != nil {
		return nil, err
	}
	if l == nil {
		return nil, fmt.Errorf("pending block %d: %w", s.Number(), ErrNoStateTrie)
	}
	tr, err := view.StateTrie(l.at)
	if err != nil {
		return nil, err
	}
	return tr.On(l.updates()...), nil
}
