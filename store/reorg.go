package store

import (
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
)

// Reorg replaces the canonical blocks above ancestor with blocks (the new
// branch, ascending: blocks[0] is the child of the canonical block at
// ancestor) in ONE batch: everything the removed blocks wrote is deleted
// (as UnwindTo), the new blocks are written (as WriteBlock), the pending
// journal is dropped, latest moves to the last new block, safe and
// finalized above ancestor move down to it, and then each block's Tags move
// to that block. A reader (a View) sees the old chain or the new one, never
// a mix.
//
// The batch is indexed: a storage wipe of a new block reads the live slots
// at its parent height through the batch, so it sees the removals and the
// new blocks staged before it, not the committed old branch.
func (db *DB) Reorg(ancestor uint64, blocks []*BlockWrite) error {
	fail := func(err error) error { return fmt.Errorf("reorg onto %d: %w", ancestor, err) }
	if len(blocks) == 0 {
		return fail(fmt.Errorf("%w: no blocks (use UnwindTo)", ErrInvalidWrite))
	}
	for i, w := range blocks {
		if w == nil || w.Block == nil {
			return fail(fmt.Errorf("%w: nil block", ErrInvalidWrite))
		}
		if n := w.Block.NumberU64(); n != ancestor+1+uint64(i) {
			return fail(fmt.Errorf("%w: block %d at position %d, want %d", ErrNotContiguous, n, i, ancestor+1+uint64(i)))
		}
		if i > 0 && w.Block.ParentHash() != blocks[i-1].Block.Hash() {
			return fail(fmt.Errorf("%w: block %d does not extend block %d", ErrNotContiguous, w.Block.NumberU64(), w.Block.NumberU64()-1))
		}
		for _, tag := range w.Tags {
			if tag != TagLatest && tag != TagSafe && tag != TagFinalized {
				return fail(fmt.Errorf("%w: cannot move tag %q", ErrInvalidWrite, tag))
			}
		}
	}
	if a := db.Anchor().State; ancestor < a {
		return fail(fmt.Errorf("%w: the store starts at block %d", ErrBelowAnchor, a))
	}
	done, err := db.beginWrite()
	if err != nil {
		return fail(err)
	}
	defer done()
	if err := db.checkSchema(); err != nil {
		return fail(err)
	}
	latest, err := db.writeBase()
	if err != nil {
		return fail(err)
	}
	if ancestor > latest {
		return fail(fmt.Errorf("%w: ancestor above latest %d", ErrNotFound, latest))
	}
	ancestorHash, found, err := getCopy(db.pdb, canonicalKey(ancestor))
	if err != nil {
		return fail(err)
	}
	if !found {
		return fail(fmt.Errorf("%w: canonical hash of block %d missing", ErrCorrupt, ancestor))
	}
	if first := blocks[0].Block; first.ParentHash() != common.BytesToHash(ancestorHash) {
		return fail(fmt.Errorf("%w: block %d has parent %s, canonical block %d is %s",
			ErrNotContiguous, first.NumberU64(), first.ParentHash(), ancestor, common.BytesToHash(ancestorHash)))
	}
	b := db.pdb.NewIndexedBatch()
	// Removals first (they read the committed old branch), then the new
	// blocks (their wipes read through the batch).
	for n := latest; n > ancestor; n-- {
		if err := db.stageUnwindBlock(b, n); err != nil {
			return fail(errors.Join(fmt.Errorf("unwind block %d: %w", n, err), b.Close()))
		}
	}
	rebuild, err := db.stageTrieBelowBase(b, ancestor)
	if err == nil {
		err = stageClearPending(b)
	}
	var (
		tries []*TrieUpdate
		meta  *trieMeta
	)
	for _, w := range blocks {
		if err != nil {
			break
		}
		if err = db.stageBlock(b, w, true, nil); err == nil && !rebuild {
			var upd *TrieUpdate
			var m *trieMeta
			if upd, m, err = db.stageBlockTrie(b, w, ancestor, tries); upd != nil {
				tries = append(tries, upd)
			}
			if m != nil {
				meta = m
			}
		}
		if err != nil {
			err = fmt.Errorf("block %d: %w", w.Block.NumberU64(), err)
		}
	}
	last := blocks[len(blocks)-1].Block
	if err == nil {
		err = b.Set(tagKey(TagLatest), be8(last.NumberU64()), nil)
	}
	for _, tag := range []Tag{TagSafe, TagFinalized} {
		if err != nil {
			break
		}
		var at uint64
		if at, err = readTag(db.pdb, tag); err == nil && at > ancestor {
			err = b.Set(tagKey(tag), be8(ancestor), nil)
		}
	}
	for _, w := range blocks {
		for _, tag := range w.Tags {
			err = errors.Join(err, b.Set(tagKey(tag), be8(w.Block.NumberU64()), nil))
		}
	}
	var epoch uint64
	if err == nil {
		epoch, err = db.stageEpochBump(b)
	}
	if err != nil {
		return fail(errors.Join(err, b.Close()))
	}
	db.state.beginWrite()
	if err := db.commit(b, fmt.Sprintf("reorg %d..%d -> %d..%d", ancestor+1, latest, ancestor+1, last.NumberU64())); err != nil {
		db.state.abortWrite()
		return err
	}
	db.state.reset(epoch, last.NumberU64())
	if latest > ancestor {
		db.log.Info().Uint64("ancestor", ancestor).Uint64("removed", latest-ancestor).Int("added", len(blocks)).
			Str("head", last.Hash().Hex()).Msg("reorg")
	}
	db.trieWritten(meta, tries...)
	return db.rebuildAfter(rebuild)
}
