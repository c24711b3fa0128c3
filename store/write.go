package store

import (
	"github.com/tipnode/tipnode/store/chaintypes"

	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"
)

// beginWrite enters a write: store open, writable, enough free space
// (Config.MinFreeBytes), and the single writer. Call the returned function
// when done.
func (db *DB) beginWrite() (func(), error) {
	if err := db.acquire(); err != nil {
		return nil, err
	}
	if db.cfg.ReadOnly {
		db.mu.RUnlock()
		return nil, ErrReadOnly
	}
	if err := db.guard.check(); err != nil {
		db.mu.RUnlock()
		return nil, err
	}
	db.writeMu.Lock()
	return func() {
		db.writeMu.Unlock()
		db.mu.RUnlock()
	}, nil
}

// beginTypedWrite is beginWrite for the typed API: the store must also be
// at FormatCurrent (migrations use beginWrite alone).
func (db *DB) beginTypedWrite() (func(), error) {
	done, err := db.beginWrite()
	if err != nil {
		return nil, err
	}
	if err := db.checkSchema(); err != nil {
		done()
		return nil, err
	}
	return done, nil
}

// commit applies b atomically with the configured sync policy and closes it.
func (db *DB) commit(b *pebble.Batch, what string) error {
	if err := b.Commit(db.writeOpts()); err != nil {
		return fmt.Errorf("commit %s: %w", what, errors.Join(err, b.Close()))
	}
	if err := b.Close(); err != nil {
		return fmt.Errorf("commit %s: %w", what, err)
	}
	return nil
}

// WriteGenesis writes block 0, its state, the three tags, the genesis spec
// and the format version (FormatCurrent) in one batch. An existing genesis
// with the same hash makes it a no-op; a different one fails with
// ErrGenesisMismatch.
func (db *DB) WriteGenesis(w *BlockWrite, spec, config []byte) error {
	if w == nil || w.Block == nil {
		return fmt.Errorf("write genesis: %w: nil block", ErrInvalidWrite)
	}
	if n := w.Block.NumberU64(); n != 0 {
		return fmt.Errorf("write genesis: %w: block number %d, want 0", ErrInvalidWrite, n)
	}
	done, err := db.beginWrite()
	if err != nil {
		return fmt.Errorf("write genesis: %w", err)
	}
	defer done()
	hash := w.Block.Hash()
	stored, found, err := getCopy(db.pdb, canonicalKey(0))
	if err != nil {
		return fmt.Errorf("write genesis: %w", err)
	}
	if found {
		if common.BytesToHash(stored) != hash {
			return fmt.Errorf("%w: store has genesis %s, given %s",
				ErrGenesisMismatch, common.BytesToHash(stored), hash)
		}
		return nil
	}
	if err := db.checkSchema(); err != nil {
		return fmt.Errorf("write genesis: %w", err)
	}
	b := db.pdb.NewBatch()
	err = db.stageBlock(b, w, false, nil)
	var upd *TrieUpdate
	if err == nil && db.keepsTrie() {
		// Block 0's trie: its whole state on the empty trie, in its batch.
		if upd, err = db.updateTrie(db.pdb, 0, nil, w.Diff, nil); err == nil {
			if root := w.Block.Root(); root != (common.Hash{}) && root != upd.Root {
				err = fmt.Errorf("%w: the genesis state has root %s, its header says %s", ErrInvalidWrite, upd.Root, root)
			}
		}
		if err == nil {
			err = errors.Join(stageTrie(b, 0, upd), b.Delete(trieListKey(0), nil), b.Set(keyTrie, be8(0), nil))
		}
	}
	if err == nil {
		for _, tag := range []Tag{TagLatest, TagSafe, TagFinalized} {
			err = errors.Join(err, b.Set(tagKey(tag), be8(0), nil))
		}
		err = errors.Join(err,
			stageGenesisSpec(b, spec),
			b.Set(keyChainConfig, config, nil),
			b.Set(keySchemaVersion, be8(uint64(FormatCurrent)), nil))
	}
	if err != nil {
		return fmt.Errorf("write genesis %s: %w", hash, errors.Join(err, b.Close()))
	}
	// Pebble commits a batch above half a memtable as its own L0 tables.
	large := uint64(b.Len()) >= db.cfg.MemtableBytes/2
	if err := db.commit(b, "genesis "+hash.Hex()); err != nil {
		return err
	}
	db.schema.Store(uint64(FormatCurrent))
	if upd != nil {
		db.trie.Store(&trieMeta{kept: true})
		db.cacheTrie(upd)
	}
	if large {
		db.settleGenesis()
	}
	db.log.Info().Str("hash", hash.Hex()).Msg("genesis written")
	return nil
}

// settleGenesis moves a large genesis (a big alloc, the genesis spec) from
// L0 down the LSM right after it was written (Pebble rewrites the tables
// into the lower level: init pays for it). Left in L0, Pebble's automatic
// L0 compaction does the same rewrite during the first import or run,
// competing with block execution (about a tenth of the CPU of importing
// 300 blocks on a genesis of a million slots). A failure is logged, not
// returned: the genesis is committed and correct either way.
func (db *DB) settleGenesis() {
	if err := db.pdb.Compact(context.Background(), []byte{0}, []byte{0xff}, false); err != nil {
		db.log.Warn().Err(err).Msg("compact the genesis (the first writes compact it instead)")
	}
}

// WriteBlock appends w.Block on top of the latest block in one batch.
func (db *DB) WriteBlock(w *BlockWrite) error { return db.WriteBlockYielding(w, nil) }

// WriteBlockYielding is WriteBlock calling yield (when not nil) between its
// parts: after staging the block's data, after staging its state, and
// after committing the batch, before the state cache takes the block's
// versions. A writer on one CPU passes a
// yield to the network, so that requests are served between the parts
// (each a fraction of a millisecond for a block of a few hundred
// transactions) instead of after all of them.
func (db *DB) WriteBlockYielding(w *BlockWrite, yield func()) error {
	if yield == nil {
		yield = func() {}
	}
	if w == nil || w.Block == nil {
		return fmt.Errorf("write block: %w: nil block", ErrInvalidWrite)
	}
	num, hash := w.Block.NumberU64(), w.Block.Hash()
	fail := func(err error) error { return fmt.Errorf("write block %d %s: %w", num, hash, err) }
	for _, tag := range w.Tags {
		if tag != TagLatest && tag != TagSafe && tag != TagFinalized {
			return fail(fmt.Errorf("%w: cannot move tag %q", ErrInvalidWrite, tag))
		}
	}
	done, err := db.beginTypedWrite()
	if err != nil {
		return fail(err)
	}
	defer done()
	latest, err := db.writeBase()
	if err != nil {
		return fail(err)
	}
	latestHash, found, err := getCopy(db.pdb, canonicalKey(latest))
	if err != nil {
		return fail(err)
	}
	if !found {
		return fail(fmt.Errorf("%w: canonical hash of latest block %d missing", ErrCorrupt, latest))
	}
	if num != latest+1 || w.Block.ParentHash() != common.BytesToHash(latestHash) {
		return fail(fmt.Errorf("%w: parent %s, latest is %d %s",
			ErrNotContiguous, w.Block.ParentHash(), latest, common.BytesToHash(latestHash)))
	}
	b := db.pdb.NewBatch()
	sw := new(stateWrites)
	err = stageBlockData(b, w)
	if err == nil {
		yield()
		err = db.stageDiff(b, w.Diff, num, true, sw)
	}
	if err == nil {
		// The block supersedes any pending journal (its own pending block,
		// now sealed, or one of a branch this block replaces).
		err = stageClearPending(b)
	}
	// A fork's fetched state rides along as versions at the fork block.
	fetched, fetchedCodes, ferr := db.stageFetched(b)
	err = errors.Join(err, ferr)
	var (
		upd  *TrieUpdate
		meta *trieMeta
	)
	if err == nil {
		upd, meta, err = db.stageBlockTrie(b, w, latest, nil)
	}
	if err == nil {
		err = b.Set(tagKey(TagLatest), be8(num), nil)
		for _, tag := range w.Tags {
			err = errors.Join(err, b.Set(tagKey(tag), be8(num), nil))
		}
	}
	if err != nil {
		return fail(errors.Join(err, b.Close()))
	}
	yield()
	// The state cache takes no fill from readers from here until it has
	// the block's versions (doc.go, "State cache").
	db.state.beginWrite()
	if err := db.commit(b, fmt.Sprintf("block %d %s", num, hash)); err != nil {
		db.state.abortWrite()
		return err
	}
	yield()
	db.state.applyBlock(num, sw)
	db.dropFetched(fetched, fetchedCodes)
	db.trieWritten(meta, upd)
	if upd != nil {
		upd.written, upd.writtenHash = num, hash
	}
	return nil
}

// keepsTrie reports whether blocks written now carry their trie: not with
// Config.NoTrie, and never on a fork (its state is partial).
func (db *DB) keepsTrie() bool {
	return !db.cfg.NoTrie && db.fork.Load() == nil
}

// stageBlockTrie adds block w's trie to b, on the trie at parent: w.Trie,
// or the update the store computes; then prunes what the window W lets
// go. A store keeping no trie writes none; one configured with NoTrie
// drops the trie it held. It returns the update staged and the trie's new
// extent (nil: unchanged).
func (db *DB) stageBlockTrie(b *pebble.Batch, w *BlockWrite, parent uint64, under []*TrieUpdate) (*TrieUpdate, *trieMeta, error) {
	tm := db.trie.Load()
	if !tm.kept {
		return nil, nil, nil
	}
	if !db.keepsTrie() {
		db.log.Warn().Msg("the store kept a state trie; dropped (blocks are written without one)")
		return nil, &trieMeta{}, stageDropTrie(b)
	}
	num := w.Block.NumberU64()
	upd := w.Trie
	if upd == nil {
		var err error
		if upd, err = db.updateTrie(db.pdb, parent, under, w.Diff, nil); err != nil {
			return nil, nil, err
		}
	} else if err := db.checkTrieBase(upd, parent, under); err != nil {
		return nil, nil, fmt.Errorf("%w: the trie update of block %d: %v", ErrInvalidWrite, num, err)
	}
	if err := stageTrie(b, num, upd); err != nil {
		return nil, nil, err
	}
	if len(under) > 0 {
		return upd, nil, nil // a reorg's block: the next block write prunes
	}
	meta, err := db.stagePrune(b, tm, num)
	return upd, meta, err
}

// checkTrieBase checks that upd was computed on the trie the block is
// written on: the trie at parent with under above it (a reorg's earlier
// new blocks), or on an older height with the blocks since above it, each
// written since (a pending block sealed on pending parents that were
// written meanwhile).
func (db *DB) checkTrieBase(upd *TrieUpdate, parent uint64, under []*TrieUpdate) error {
	if len(under) > 0 {
		if upd.Parent != parent || len(upd.under) != len(under) {
			return fmt.Errorf("applies on %d with %d blocks above, the reorg's branch on %d with %d", upd.Parent, len(upd.under), parent, len(under))
		}
		for i := range under {
			if upd.under[i] != under[i] {
				return fmt.Errorf("computed on another branch than the reorg's")
			}
		}
		return nil
	}
	if upd.Parent+uint64(len(upd.under)) != parent {
		return fmt.Errorf("applies on %d with %d blocks above, the block's parent is %d", upd.Parent, len(upd.under), parent)
	}
	for i, u := range upd.under {
		n := upd.Parent + 1 + uint64(i)
		hash, found, err := getCopy(db.pdb, canonicalKey(n))
		if err != nil {
			return err
		}
		if !found || u.written != n || common.BytesToHash(hash) != u.writtenHash {
			return fmt.Errorf("the update of block %d it was computed on is not the canonical block's", n)
		}
	}
	return nil
}

// maxPrunePerBlock bounds the blocks one write prunes (a window shrunk at
// restart is caught up over the next blocks).
const maxPrunePerBlock = 4

// stagePrune prunes the blocks the window lets go once block num is the
// latest (Config.TrieWindow) and returns the new extent (nil: unchanged).
func (db *DB) stagePrune(b *pebble.Batch, tm *trieMeta, num uint64) (*trieMeta, error) {
	W := db.cfg.TrieWindow
	if W == 0 || num <= tm.base+W {
		return nil, nil
	}
	it, err := db.pdb.NewIter(nil)
	if err != nil {
		return nil, err
	}
	base := tm.base
	for p := tm.base + 1; p+W <= num && p <= tm.base+maxPrunePerBlock; p++ {
		if err := db.stagePruneTrie(b, it, p); err != nil {
			return nil, errors.Join(fmt.Errorf("prune trie of block %d: %w", p, err), it.Close())
		}
		base = p
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	return &trieMeta{kept: true, base: base}, b.Set(keyTrie, be8(base), nil)
}

// trieWritten records the trie's new extent and caches the new nodes
// after a commit.
func (db *DB) trieWritten(meta *trieMeta, upd ...*TrieUpdate) {
	if meta != nil {
		db.trie.Store(meta)
	}
	for _, u := range upd {
		db.cacheTrie(u)
	}
}

// stageBlock adds the block data, its lookups and its state diff to b.
// wipe enables the storage wipe of StateDiff.Wiped (read at the parent
// height); it is false for the genesis, which has no parent state.
// The block's state versions are collected in sw when it is not nil.
func (db *DB) stageBlock(b *pebble.Batch, w *BlockWrite, wipe bool, sw *stateWrites) error {
	if err := stageBlockData(b, w); err != nil {
		return err
	}
	return db.stageDiff(b, w.Diff, w.Block.NumberU64(), wipe, sw)
}

// stageBlockData adds the block's header, body, receipts, canonical
// entries and transaction lookups to b: stageBlock without the state.
func stageBlockData(b *pebble.Batch, w *BlockWrite) error {
	block := w.Block
	num, hash := block.NumberU64(), block.Hash()
	txs := block.Transactions()
	if len(w.Receipts) != len(txs) {
		return fmt.Errorf("%w: %d receipts for %d transactions", ErrInvalidWrite, len(w.Receipts), len(txs))
	}
	header, err := rlp.EncodeToBytes(block.Header())
	if err != nil {
		return fmt.Errorf("encode header: %w", err)
	}
	body, err := rlp.EncodeToBytes(block.Body())
	if err != nil {
		return fmt.Errorf("encode body: %w", err)
	}
	rcpts, err := chaintypes.EncodeStored(w.Receipts)
	if err != nil {
		return fmt.Errorf("encode receipts: %w", err)
	}
	err = errors.Join(
		b.Set(headerKey(num, hash), header, nil),
		b.Set(bodyKey(num, hash), body, nil),
		b.Set(receiptsKey(num, hash), rcpts, nil),
		b.Set(canonicalKey(num), hash[:], nil),
		b.Set(hashToNumKey(hash), be8(num), nil),
	)
	for i, tx := range txs {
		l := TxLookup{BlockHash: hash, BlockNumber: num, Index: uint64(i)}
		err = errors.Join(err, b.Set(txLookupKey(tx.Hash()), encodeTxLookup(l), nil))
	}
	return err
}

// stageDiff adds the state versions of diff at block num, the change list of
// the block and new code to b. Apply order follows StateDiff: wipe, accounts,
// storage. Entities are written in sorted order so batches are
// deterministic. Every staged state version (entity key and stored value)
// and new code is also added to sw (when not nil).
func (db *DB) stageDiff(b *pebble.Batch, diff *StateDiff, num uint64, wipe bool, sw *stateWrites) error {
	if diff == nil {
		diff = NewStateDiff()
	}
	cl := &changeList{}
	var err error
	if wipe && num > 0 {
		for _, addr := range sortedKeys(diff.Wiped, compareAddr) {
			set := diff.Storage[addr]
			werr := db.liveSlots(b, addr, num-1, func(slot common.Hash) error {
				if _, ok := set[slot]; ok {
					return nil // the diff writes this slot itself
				}
				cl.slots = append(cl.slots, slotRef{addr, slot})
				sw.add(storageEntity(addr, slot), nil)
				return b.Set(storageKey(addr, slot, num), nil, nil)
			})
			if werr != nil {
				return fmt.Errorf("wipe storage of %s: %w", addr, werr)
			}
		}
	}
	for _, addr := range sortedKeys(diff.Accounts, compareAddr) {
		val := []byte{deletedMarker}
		if acc := diff.Accounts[addr]; acc != nil {
			val = encodeAccount(acc)
		}
		cl.accounts = append(cl.accounts, addr)
		key := accountKey(addr, num)
		sw.add(key[:accountEntityLen], val)
		err = errors.Join(err, b.Set(key, val, nil))
	}
	for _, addr := range sortedKeys(diff.Storage, compareAddr) {
		slots := diff.Storage[addr]
		for _, slot := range sortedKeys(slots, compareHash) {
			cl.slots = append(cl.slots, slotRef{addr, slot})
			key, val := storageKey(addr, slot, num), trimValue(slots[slot])
			sw.add(key[:storageEntityLen], val)
			err = errors.Join(err, b.Set(key, val, nil))
		}
	}
	for hash, code := range diff.Codes {
		if hash != types.EmptyCodeHash {
			sw.addCode(codeKey(hash), code)
			err = errors.Join(err, b.Set(codeKey(hash), code, nil))
		}
	}
	if num == 0 {
		// Block 0 is never unwound, and its list is the whole genesis
		// alloc: as one value, one huge sstable block that every read
		// landing beside it decompressed whole.
		return err
	}
	return errors.Join(err, b.Set(changeListKey(num), encodeChangeList(cl), nil))
}

// liveSlots calls fn with every slot of addr that is non-zero at height,
// read from the committed store (the caller holds the write lock), or
// through b when it is an indexed batch (then what b stages counts too).
func (db *DB) liveSlots(b *pebble.Batch, addr common.Address, height uint64, fn func(slot common.Hash) error) error {
	prefix := storageAddrPrefix(addr)
	opts := &pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)}
	newIter := db.pdb.NewIter
	if b.Indexed() {
		newIter = b.NewIter
	}
	it, err := newIter(opts)
	if err != nil {
		return err
	}
	err = scanNewest(it, prefix, height, func(key, val []byte) error {
		if len(val) == 0 {
			return nil
		}
		return fn(common.BytesToHash(key[storageAddrLen:storageEntityLen]))
	})
	return errors.Join(err, it.Error(), it.Close())
}

// writeBase reads the latest tag a write builds on: ErrNoGenesis when the
// store has none yet.
func (db *DB) writeBase() (uint64, error) {
	latest, err := readTag(db.pdb, TagLatest)
	if isNotFound(err) {
		return 0, ErrNoGenesis
	}
	return latest, err
}

// SetTag moves safe or finalized to a canonical block at or below latest.
// Latest itself only moves with WriteBlock and UnwindTo; setting it to its
// current value is accepted as a no-op.
func (db *DB) SetTag(tag Tag, number uint64) error {
	fail := func(err error) error { return fmt.Errorf("set tag %s to %d: %w", tag, number, err) }
	if tag != TagSafe && tag != TagFinalized && tag != TagLatest {
		return fail(fmt.Errorf("%w: unknown or immovable tag", ErrInvalidWrite))
	}
	done, err := db.beginTypedWrite()
	if err != nil {
		return fail(err)
	}
	defer done()
	latest, err := db.writeBase()
	if err != nil {
		return fail(err)
	}
	if number > latest {
		return fail(fmt.Errorf("%w: above latest %d", ErrNotFound, latest))
	}
	if tag == TagLatest {
		if number != latest {
			return fail(fmt.Errorf("%w: latest moves only with WriteBlock/UnwindTo", ErrInvalidWrite))
		}
		return nil
	}
	b := db.pdb.NewBatch()
	if err := b.Set(tagKey(tag), be8(number), nil); err != nil {
		return fail(errors.Join(err, b.Close()))
	}
	return db.commit(b, "tag "+string(tag))
}

// UnwindTo removes every block above number with its state versions and
// lookups, and moves tags above number down to it, in one batch. Code stays
// (content addressed). Unwinding to or above latest is a no-op.
func (db *DB) UnwindTo(number uint64) error {
	fail := func(err error) error { return fmt.Errorf("unwind to %d: %w", number, err) }
	done, err := db.beginTypedWrite()
	if err != nil {
		return fail(err)
	}
	defer done()
	latest, err := db.writeBase()
	if err != nil {
		return fail(err)
	}
	if number >= latest {
		return nil
	}
	if a := db.Anchor().State; number < a {
		return fail(fmt.Errorf("%w: the store starts at block %d", ErrBelowAnchor, a))
	}
	b := db.pdb.NewBatch()
	for n := latest; n > number; n-- {
		if err := db.stageUnwindBlock(b, n); err != nil {
			return fail(errors.Join(fmt.Errorf("block %d: %w", n, err), b.Close()))
		}
	}
	rebuild, err := db.stageTrieBelowBase(b, number)
	if err != nil {
		return fail(errors.Join(err, b.Close()))
	}
	if err := stageClearPending(b); err != nil {
		return fail(errors.Join(err, b.Close()))
	}
	for _, tag := range []Tag{TagLatest, TagSafe, TagFinalized} {
		at, err := readTag(db.pdb, tag)
		if err == nil && at > number {
			err = b.Set(tagKey(tag), be8(number), nil)
		}
		if err != nil {
			return fail(errors.Join(err, b.Close()))
		}
	}
	epoch, err := db.stageEpochBump(b)
	if err != nil {
		return fail(errors.Join(err, b.Close()))
	}
	db.state.beginWrite()
	if err := db.commit(b, fmt.Sprintf("unwind %d..%d", number+1, latest)); err != nil {
		db.state.abortWrite()
		return err
	}
	db.state.reset(epoch, number)
	db.log.Info().Uint64("from", latest).Uint64("to", number).Msg("unwound")
	return db.rebuildAfter(rebuild)
}

// stageTrieBelowBase handles an unwind or reorg onto number below the
// trie's base (deeper than the window W, or below where the trie was
// built): the trie cannot be read there, so the batch drops it, and
// rebuild says the caller builds it again after the commit.
func (db *DB) stageTrieBelowBase(b *pebble.Batch, number uint64) (rebuild bool, err error) {
	tm := db.trie.Load()
	if !tm.kept || number >= tm.base {
		return false, nil
	}
	db.log.Warn().Uint64("to", number).Uint64("trieBase", tm.base).
		Msg("unwinding below the state trie's window: the trie is rebuilt from the flat state")
	return true, stageDropTrie(b)
}

// rebuildAfter rebuilds the trie dropped by stageTrieBelowBase once its
// batch committed (the write lock held). A failed rebuild leaves no trie
// (BuildTrie builds it later); the unwind itself stands.
func (db *DB) rebuildAfter(rebuild bool) error {
	if !rebuild {
		return nil
	}
	db.trie.Store(&trieMeta{})
	if !db.keepsTrie() {
		return nil
	}
	_, err := db.buildTrieLocked(nil)
	return err
}

// stageEpochBump adds to b the next chain epoch (keyChainEpoch): every
// batch that removes blocks (UnwindTo, Reorg) moves to a new epoch, so state
// cached for the old branch is never used by views of the new one.
func (db *DB) stageEpochBump(b *pebble.Batch) (uint64, error) {
	epoch, err := readEpoch(db.pdb)
	if err != nil {
		return 0, err
	}
	epoch++
	return epoch, b.Set(keyChainEpoch, be8(epoch), nil)
}

// stageUnwindBlock adds to b the deletion of everything block n wrote.
func (db *DB) stageUnwindBlock(b *pebble.Batch, n uint64) error {
	hashBytes, found, err := getCopy(db.pdb, canonicalKey(n))
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("%w: canonical hash missing", ErrCorrupt)
	}
	hash := common.BytesToHash(hashBytes)
	clBytes, found, err := getCopy(db.pdb, changeListKey(n))
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("%w: change list missing", ErrCorrupt)
	}
	cl, err := decodeChangeList(clBytes)
	if err != nil {
		return err
	}
	for _, addr := range cl.accounts {
		err = errors.Join(err, b.Delete(accountKey(addr, n), nil))
	}
	for _, s := range cl.slots {
		err = errors.Join(err, b.Delete(storageKey(s.addr, s.slot, n), nil))
	}
	bodyBytes, found, berr := getCopy(db.pdb, bodyKey(n, hash))
	if berr != nil {
		return berr
	}
	if found {
		body := new(chaintypes.Body)
		if derr := rlp.DecodeBytes(bodyBytes, body); derr != nil {
			return fmt.Errorf("%w: body: %w", ErrCorrupt, derr)
		}
		for _, tx := range body.Transactions {
			err = errors.Join(err, b.Delete(txLookupKey(tx.Hash()), nil))
		}
	}
	return errors.Join(err, db.stageUnwindTrie(b, n),
		b.Delete(headerKey(n, hash), nil),
		b.Delete(bodyKey(n, hash), nil),
		b.Delete(receiptsKey(n, hash), nil),
		b.Delete(canonicalKey(n), nil),
		b.Delete(hashToNumKey(hash), nil),
		b.Delete(changeListKey(n), nil),
	)
}

func compareAddr(a, b common.Address) int { return bytes.Compare(a[:], b[:]) }
func compareHash(a, b common.Hash) int    { return bytes.Compare(a[:], b[:]) }

// sortedKeys returns the keys of m sorted with cmp.
func sortedKeys[K comparable, V any](m map[K]V, cmp func(a, b K) int) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmp)
	return keys
}
