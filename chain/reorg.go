package chain

import (
	"github.com/tipnode/tipnode/store/chaintypes"

	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tipnode/tipnode/store"
)

// Reorg replaces the canonical blocks above ancestor with blocks, a new
// branch whose first block is the child of the canonical block at ancestor,
// as ONE step: it verifies and executes the new blocks in order on the
// ancestor's state with the earlier new blocks' state diffs stacked in
// memory (nothing is written while it does), then commits the unwind and
// the new blocks in one store batch (store.DB.Reorg), publishes one Head,
// runs opts.Rebase and sends one HeadEvent with Removed (the old blocks,
// newest first), RemovedLogs (their logs, read before the write) and Added.
// A reader sees the old chain or the new one, never a mix.
//
// opts.Tags move to the last new block; safe and finalized above ancestor
// move down to it. A block that fails verification returns an error
// wrapping ErrInvalidBlock and nothing is written (the old chain stays).
// ancestor may be the head (then it is an atomic multi-block import).
//
// An ancestor below the state trie's base (a reorg deeper than the trie
// window W) has no trie to verify the branch on: the last new block's
// state root (and OP withdrawals root) is then computed from scratch over
// the flat state at ancestor plus the branch's diffs (O(state) time; in
// bounded memory, StateRootBounded: sorted runs spill to a temporary
// directory), the
// earlier blocks are checked by execution only (receipts, gas, bloom), and
// the store drops the trie and rebuilds it from the flat state after the
// write. A warning says so.
func (w *Writer) Reorg(ancestor uint64, blocks []*chaintypes.Block, opts ImportOptions) error {
	return w.do(func() error {
		h := w.head.Load()
		if len(blocks) == 0 {
			return fmt.Errorf("%w: reorg onto %d without blocks", ErrInvalidReorg, ancestor)
		}
		if ancestor > h.Number() {
			return fmt.Errorf("%w: ancestor %d is above the head %d", ErrInvalidReorg, ancestor, h.Number())
		}
		view := h.view.v
		canon := ViewHeaders{Head: h, View: view}
		parent, err := canon.HeaderByNumber(ancestor)
		if err != nil {
			return fmt.Errorf("reorg: ancestor %d: %w", ancestor, err)
		}
		var removed []*types.Header
		for n := h.Number(); n > ancestor; n-- {
			hdr, err := canon.HeaderByNumber(n)
			if err != nil {
				return fmt.Errorf("reorg: header %d: %w", n, err)
			}
			removed = append(removed, hdr)
		}
		logs, err := removedLogs(view, removed)
		if err != nil {
			return fmt.Errorf("reorg: %w", err)
		}
		base, err := view.StateAt(ancestor)
		if err != nil {
			return fmt.Errorf("reorg: state at %d: %w", ancestor, err)
		}
		state := &diffStack{base: base}
		headers := &branchHeaders{canon: canon, ancestor: ancestor, byHash: make(map[common.Hash]*types.Header)}
		writes := make([]*store.BlockWrite, 0, len(blocks))
		tr, err := stateTrie(view, ancestor)
		deep := errors.Is(err, store.ErrTrieWindow)
		if deep {
			// Below the trie's base (deeper than the window W): no trie
			// to verify on. The last block's roots are computed from the
			// flat state instead, and the store drops the trie and
			// rebuilds it after the write (store.DB.Reorg).
			w.log.Warn().Uint64("ancestor", ancestor).Uint64("head", h.Number()).Err(err).
				Msg("reorg deeper than the state trie window: the new head's state root is computed from the flat state and the trie is rebuilt after the write")
		} else if err != nil {
			return fmt.Errorf("reorg: state trie at %d: %w", ancestor, err)
		}
		var tries []*store.TrieUpdate
		for i, b := range blocks {
			eb, err := w.exec.ExecuteBlockOn(b, parent, headers, state)
			if err != nil {
				return err
			}
			if deep && i == len(blocks)-1 {
				// Only the last block: each root costs a pass over the
				// whole state. The earlier blocks' receipts, gas and
				// bloom are checked by their execution.
				post := &diffStack{base: base, diffs: append(slices.Clip(state.diffs), eb.Diff)}
				start := time.Now()
				if err := w.exec.VerifyStateRootFlat(eb, post); err != nil {
					return err
				}
				w.log.Info().Uint64("block", b.NumberU64()).Str("root", b.Root().Hex()).Dur("elapsed", time.Since(start)).
					Msg("reorg: the new head's state root, computed from the flat state, matches its header")
			} else if tr != nil {
				if err := w.exec.VerifyStateRoot(eb, tr.On(tries...)); err != nil {
					return err
				}
				tries = append(tries, eb.Trie)
			}
			state.push(eb.Diff)
			headers.add(b.Header(), b.Uncles())
			writes = append(writes, eb.BlockWrite())
			parent = b.Header()
		}
		last := writes[len(writes)-1]
		last.Tags = append(last.Tags, opts.Tags...)
		if err := w.db.Reorg(ancestor, writes); err != nil {
			return fmt.Errorf("reorg onto %d: %w", ancestor, err)
		}
		if len(removed) > 0 {
			w.log.Info().Uint64("ancestor", ancestor).Int("removed", len(removed)).Int("added", len(blocks)).
				Str("oldHead", h.Hash().Hex()).Str("newHead", parent.Hash().Hex()).Msg("reorg")
		}
		return w.publishEvent(ancestor, &HeadEvent{Added: headers.added, Removed: removed, RemovedLogs: logs}, opts.Rebase)
	})
}

// SetTags moves safe and/or finalized to the canonical blocks with the
// given hashes (at or below the head) and publishes the new Head, unless
// nothing changes. Each tag is its own store write (a tag is one key).
func (w *Writer) SetTags(tags map[store.Tag]common.Hash) error {
	return w.do(func() error {
		for tag := range tags {
			if tag != store.TagSafe && tag != store.TagFinalized {
				return fmt.Errorf("%w: cannot set tag %q", store.ErrInvalidWrite, tag)
			}
		}
		h := w.head.Load()
		view := h.view.v
		changed := false
		for _, tag := range []store.Tag{store.TagSafe, store.TagFinalized} {
			hash, ok := tags[tag]
			if !ok {
				continue
			}
			cur := h.Safe()
			if tag == store.TagFinalized {
				cur = h.Finalized()
			}
			if cur.Hash() == hash {
				continue
			}
			n, err := view.NumberByHash(hash) // canonical blocks only
			if err != nil {
				return fmt.Errorf("set %s to %s: %w", tag, hash.Hex(), err)
			}
			if err := w.db.SetTag(tag, n); err != nil {
				return err
			}
			changed = true
		}
		if !changed {
			return nil
		}
		return w.publish(h.Number(), nil, nil, nil)
	})
}

// branchHeaders resolves headers of a branch being executed: the canonical
// chain up to ancestor, then the branch's own headers (blocks of the old
// branch above ancestor are not found).
type branchHeaders struct {
	canon    ViewHeaders
	ancestor uint64
	added    []*types.Header // ancestor+1, ancestor+2, ...
	byHash   map[common.Hash]*types.Header
	uncles   map[common.Hash][]*types.Header // of the branch's blocks
}

func (b *branchHeaders) add(h *types.Header, uncles []*types.Header) {
	b.added = append(b.added, h)
	b.byHash[h.Hash()] = h
	if len(uncles) > 0 {
		if b.uncles == nil {
			b.uncles = make(map[common.Hash][]*types.Header)
		}
		b.uncles[h.Hash()] = uncles
	}
}

// Uncles (UncleSource) serves the branch's blocks and the canonical ones up
// to the ancestor.
func (b *branchHeaders) Uncles(hash common.Hash, number uint64) ([]*types.Header, error) {
	if _, ok := b.byHash[hash]; ok {
		return b.uncles[hash], nil
	}
	if number > b.ancestor {
		return nil, fmt.Errorf("block %s is on the old branch: %w", hash.Hex(), store.ErrNotFound)
	}
	return b.canon.Uncles(hash, number)
}

func (b *branchHeaders) HeaderByNumber(n uint64) (*types.Header, error) {
	if n <= b.ancestor {
		return b.canon.HeaderByNumber(n)
	}
	if i := n - b.ancestor - 1; i < uint64(len(b.added)) {
		return b.added[i], nil
	}
	return nil, fmt.Errorf("header %d of the new branch: %w", n, store.ErrNotFound)
}

func (b *branchHeaders) HeaderByHash(hash common.Hash) (*types.Header, error) {
	if h, ok := b.byHash[hash]; ok {
		return h, nil
	}
	h, err := b.canon.HeaderByHash(hash)
	if err != nil {
		return nil, err
	}
	if h.Number.Uint64() > b.ancestor {
		return nil, fmt.Errorf("header %s is on the old branch: %w", hash.Hex(), store.ErrNotFound)
	}
	return h, nil
}

// removedLogs reads the logs of removed (newest first) from view: oldest
// block first, marked Removed, at most the newest HeadWindow blocks.
func removedLogs(view store.View, removed []*types.Header) ([]*types.Log, error) {
	var out []*types.Log
	for i := min(len(removed), HeadWindow) - 1; i >= 0; i-- {
		h := removed[i]
		num, hash := h.Number.Uint64(), h.Hash()
		receipts, err := view.Receipts(num, hash)
		if err != nil {
			return nil, fmt.Errorf("receipts of removed block %d: %w", num, err)
		}
		body, err := view.Body(num, hash)
		if err != nil {
			return nil, fmt.Errorf("body of removed block %d: %w", num, err)
		}
		for _, l := range BlockLogs(h, body.Transactions, receipts) {
			l.Removed = true
			out = append(out, l)
		}
	}
	return out, nil
}

// BlockLogs returns the logs of a stored block with their derived fields
// (block number, hash and time, transaction hash and index, log index) set,
// without the sender-recovering full receipt derivation: enough for log
// queries (rpc/eth) and the removed logs of a reorg. The logs are the
// receipts' own values.
func BlockLogs(h *types.Header, txs chaintypes.Txs, receipts chaintypes.Receipts) []*types.Log {
	var out []*types.Log
	hash, num := h.Hash(), h.Number.Uint64()
	idx := uint(0)
	for i, r := range receipts {
		var txHash common.Hash
		if i < len(txs) {
			txHash = txs[i].Hash()
		}
		for _, l := range r.Logs {
			l.BlockNumber, l.BlockHash, l.BlockTimestamp = num, hash, h.Time
			l.TxHash, l.TxIndex, l.Index = txHash, uint(i), idx
			idx++
			out = append(out, l)
		}
	}
	return out
}
