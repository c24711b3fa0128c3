package chain

import (
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tipnode/tipnode/chain/op"
	"github.com/tipnode/tipnode/store"
)

// The state root seam: every block tipnode writes carries its state trie
// update (store.TrieUpdate), computed from the block's state diff on the
// parent's trie. An imported or followed block's header must name the
// update's root (and, on an OP chain from Isthmus, the message passer's
// storage root as its withdrawals root); a block tipnode seals gets them
// in its header (SealHeader). A store that keeps no trie (a fork, or
// --verify.stateroot=off) neither verifies nor computes roots.

// TrieWatch returns the accounts whose storage roots a block with header
// h needs beyond its state root (OP from Isthmus: the L2ToL1MessagePasser,
// whose storage root is the withdrawals root).
func (e *Executor) TrieWatch(h *types.Header) []common.Address {
	if e.op != nil && e.op.cfg.IsIsthmus(h.Time) {
		return []common.Address{op.L2ToL1MessagePasser}
	}
	return nil
}

// VerifyStateRoot computes eb's state trie update on tr (the trie of its
// parent's post-state) and checks the header's state root, and on an OP
// chain from Isthmus its withdrawals root, against it. A mismatch is a
// divergence: an error wrapping ErrInvalidBlock naming the block and both
// roots. On success eb.Trie holds the update for the block's write.
func (e *Executor) VerifyStateRoot(eb *ExecutedBlock, tr *store.StateTrie) error {
	h := eb.Block.Header()
	upd, err := tr.Update(eb.Diff, e.TrieWatch(h)...)
	if err != nil {
		return fmt.Errorf("%w: state trie of block %d: %v", ErrStateRead, h.Number, err)
	}
	err = e.checkRoots(eb, upd.Root, func() (common.Hash, error) {
		root, _ := upd.StorageRoot(op.L2ToL1MessagePasser)
		return root, nil
	})
	if err != nil {
		return err
	}
	eb.Trie = upd
	return nil
}

// VerifyStateRootFlat is VerifyStateRoot without a trie: it computes the
// roots from scratch over post, eb's post-state as a whole (O(state):
// every account and slot is hashed; in bounded memory, StateRootBounded:
// the sorted entries spill to a temporary directory). Writer.Reorg uses it for
// a branch whose ancestor is below the trie's base (deeper than the
// window W), where no trie can be read; eb.Trie stays nil (the store
// rebuilds the trie after the write).
func (e *Executor) VerifyStateRootFlat(eb *ExecutedBlock, post IterableBackend) error {
	root, err := StateRootBounded(post)
	if err != nil {
		return fmt.Errorf("%w: state root of block %d from the flat state: %v", ErrStateRead, eb.Block.NumberU64(), err)
	}
	return e.checkRoots(eb, root, func() (common.Hash, error) { return storageRootBounded(post, op.L2ToL1MessagePasser) })
}

// checkRoots checks the header of eb against its computed state root and,
// on an OP chain from Isthmus, the message passer's storage root (asked of
// withdrawals only then): a mismatch is an error wrapping ErrInvalidBlock
// naming the block and both roots.
func (e *Executor) checkRoots(eb *ExecutedBlock, root common.Hash, withdrawals func() (common.Hash, error)) error {
	h := eb.Block.Header()
	bad := func(what string, got, want common.Hash) error {
		return fmt.Errorf("%w %d (%s): %s %s, header says %s (the block's state diverges from its header)",
			ErrInvalidBlock, h.Number, eb.Block.Hash().Hex(), what, got.Hex(), want.Hex())
	}
	if root != h.Root {
		return bad("state root", root, h.Root)
	}
	if e.op != nil && e.op.cfg.IsIsthmus(h.Time) {
		wroot, err := withdrawals()
		if err != nil {
			return fmt.Errorf("%w: message passer storage root of block %d: %v", ErrStateRead, h.Number, err)
		}
		if h.WithdrawalsHash == nil {
			return bad("withdrawals root (the message passer's storage root)", wroot, common.Hash{})
		}
		if wroot != *h.WithdrawalsHash {
			return bad("withdrawals root (the message passer's storage root)", wroot, *h.WithdrawalsHash)
		}
	}
	return nil
}

// verifyStateRootAt is VerifyStateRoot on the state trie at number (eb's
// parent) in view; nothing when the store keeps no trie.
func (e *Executor) verifyStateRootAt(eb *ExecutedBlock, view store.View, number uint64) error {
	tr, err := stateTrie(view, number)
	if err != nil || tr == nil {
		return err
	}
	return e.VerifyStateRoot(eb, tr)
}

// stateTrie returns the state trie at number in view, nil when the store
// keeps none (nothing is then verified or computed).
func stateTrie(view store.View, number uint64) (*store.StateTrie, error) {
	tr, err := view.StateTrie(number)
	if errors.Is(err, store.ErrNoTrie) {
		return nil, nil
	}
	return tr, err
}
