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
	bad := func(what string, got, want common.Hash) error {
		return fmt.Errorf("%w %d (%s): %s %s, header says %s (the block's state diverges from its header)",
			ErrInvalidBlock, h.Number, eb.Block.Hash().Hex(), what, got.Hex(), want.Hex())
	}
	if upd.Root != h.Root {
		return bad("state root", upd.Root, h.Root)
	}
	if e.op != nil && e.op.cfg.IsIsthmus(h.Time) {
		root, _ := upd.StorageRoot(op.L2ToL1MessagePasser)
		if h.WithdrawalsHash == nil {
			return bad("withdrawals root (the message passer's storage root)", root, common.Hash{})
		}
		if root != *h.WithdrawalsHash {
			return bad("withdrawals root (the message passer's storage root)", root, *h.WithdrawalsHash)
		}
	}
	eb.Trie = upd
	return nil
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
