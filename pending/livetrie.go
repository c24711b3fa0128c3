package pending

import (
	"errors"
	"fmt"
	"slices"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

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

// openTrie starts the live trie of the block the builder opens (nil when
// the store keeps no trie: a fork's headers keep a zero root).
func (b *Builder) openTrie(view store.View, at uint64, under []*store.TrieUpdate) (*liveTrie, error) {
	if _, err := view.StateTrie(at); errors.Is(err, store.ErrNoTrie) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return &liveTrie{at: at, under: under}, nil
}

// advanceTrie applies diff, the state written since the previous cut, to
// the open block's live trie and completes h, that cut's header, with the
// state root (and what else the chain derives from it: an OP block's
// withdrawals root from Isthmus). Without a live trie it does nothing. A
// failure leaves the block without one from here on (its next snapshots
// carry no root; the seal computes the block's update from its whole diff,
// as without pending roots) and is kept in trieErr.
func (b *Builder) advanceTrie(diff *store.StateDiff, h *types.Header) {
	if b.live == nil {
		return
	}
	l, _, err := b.applyTrie(b.live, diff, h)
	if err != nil {
		b.live, b.trieErr = nil, fmt.Errorf("pending block %d: state trie: %w", h.Number, err)
		return
	}
	b.live = l
}

// applyTrie is l with diff's update on top, and h completed with its root.
func (b *Builder) applyTrie(l *liveTrie, diff *store.StateDiff, h *types.Header) (*liveTrie, *store.TrieUpdate, error) {
	tr, err := b.view.StateTrie(l.at)
	if err != nil {
		return nil, nil, err
	}
	u, err := tr.On(l.updates()...).Update(diff, b.exec.TrieWatch(h)...)
	if err != nil {
		return nil, nil, err
	}
	next, err := l.push(u)
	if err != nil {
		return nil, nil, err
	}
	if err := b.exec.SealHeader(h, nil, u); err != nil {
		return nil, nil, err
	}
	return next, u, nil
}

// sealTrie is the block's trie update at the seal: the tail (the state
// written since the last cut: transactions not cut yet, the post-block
// system calls) on the live trie, squashed with the cuts' updates. nil,
// false when the block has no live trie.
func (b *Builder) sealTrie(tail *store.StateDiff, h *types.Header) (*store.TrieUpdate, bool, error) {
	if b.live == nil {
		return nil, false, nil
	}
	l, _, err := b.applyTrie(b.live, tail, types.CopyHeader(h))
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

// StateRoot is the pending block's state root as of s (its header's Root:
// the state after s's transactions), ok false when s has none (the store
// keeps no trie: a fork's pending headers keep a zero root).
func (s *Snapshot) StateRoot() (root common.Hash, ok bool) {
	if s.trie == nil {
		return common.Hash{}, false
	}
	return s.header.Root, true
}

// BlockHash is the hash of the block s's header would seal as, with
// exactly s's transactions: its header with s's state root, transactions
// and receipts roots (a final snapshot's: Hash). The seal's post-block
// system calls run after the last cut: on an OP chain they change nothing;
// on an L1 chain from Prague they can (an EIP-7002/7251 request queue that
// is not empty), and the sealed block's hash then differs. Zero when s has
// no state root.
func (s *Snapshot) BlockHash() common.Hash {
	if s.Final() {
		return s.hash
	}
	if s.trie == nil {
		return common.Hash{}
	}
	h := types.CopyHeader(s.header)
	h.TxHash, h.ReceiptHash, h.UncleHash = s.TxRoot(), s.ReceiptsRoot(), types.EmptyUncleHash
	return h.Hash()
}

// StateTrie is the pending block's state trie as of s, read through view
// (a view of the store at or above s's anchor: Read.View): what
// eth_getProof at pending proves against (its root is s's StateRoot). It
// fails with ErrNoStateTrie when s has none.
func (s *Snapshot) StateTrie(view store.View) (*store.StateTrie, error) {
	if s.trie == nil {
		return nil, fmt.Errorf("pending block %d: %w", s.Number(), ErrNoStateTrie)
	}
	tr, err := view.StateTrie(s.trie.at)
	if err != nil {
		return nil, err
	}
	return tr.On(s.trie.updates()...), nil
}
