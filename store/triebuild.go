package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/ethereum/go-ethereum/trie"

	"github.com/tipnode/tipnode/store/extsort"
)

// TrieBuildStats is the progress and result of a trie build (or of a root
// recomputed from the flat state, StateRootFromFlat).
type TrieBuildStats struct {
	Height   uint64
	Accounts int64
	Slots    int64
	Nodes    int64 // node versions written (0 when only computing)
	Root     common.Hash
	Duration time.Duration
}

// trieBuildMem bounds the memory of a build's sorts before they spill.
const trieBuildMem = 64 << 20

// bigStorage is the number of slots of one account above which a build
// sorts them externally instead of in memory.
const bigStorage = 1 << 20

// flatTrie walks the flat state at height in one pass and feeds
// go-ethereum's StackTrie with hashed keys in order: every account's slots
// (sorted by hashed slot) into its storage trie, then the accounts (sorted
// by hashed address, externally) into the account trie. node, when not nil,
// gets every node the tries commit. progress is called every interval.
func (db *DB) flatTrie(r reader, height uint64, node func(owner, hash common.Hash, path []byte, blob []byte) error,
	progress func(TrieBuildStats)) (TrieBuildStats, error) {
	start := time.Now()
	stats := TrieBuildStats{Height: height}
	tmp, err := os.MkdirTemp("", "tipnode-trie-")
	if err != nil {
		return stats, err
	}
	defer os.RemoveAll(tmp)
	sorter, err := extsort.New(tmp+"/accounts", trieBuildMem)
	if err != nil {
		return stats, err
	}
	defer sorter.Close()
	last := time.Now()
	report := func() {
		if progress != nil && time.Since(last) >= 10*time.Second {
			last = time.Now()
			stats.Duration = time.Since(start)
			progress(stats)
		}
	}
	var nodeErr error
	onNode := func(owner common.Hash) trie.OnTrieNode {
		if node == nil {
			return nil
		}
		return func(path []byte, hash common.Hash, blob []byte) {
			if nodeErr == nil {
				nodeErr = node(owner, hash, path, blob)
				stats.Nodes++
			}
		}
	}
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixAccount}, UpperBound: []byte{prefixAccount + 1}})
	if err != nil {
		return stats, err
	}
	err = scanNewest(it, []byte{prefixAccount}, height, func(key, val []byte) error {
		acc, err := decodeAccount(val)
		if err != nil || acc == nil {
			return err
		}
		addr := common.BytesToAddress(key[1:accountEntityLen])
		root, n, err := db.flatStorageRoot(r, height, addr, tmp, onNode(crypto.Keccak256Hash(addr[:])))
		if err != nil {
			return fmt.Errorf("storage of %s: %w", addr, err)
		}
		if nodeErr != nil {
			return nodeErr
		}
		stats.Accounts++
		stats.Slots += n
		enc, err := rlp.EncodeToBytes(&types.StateAccount{Nonce: acc.Nonce, Balance: acc.Balance, Root: root, CodeHash: acc.CodeHash.Bytes()})
		if err != nil {
			return err
		}
		report()
		return sorter.Add(crypto.Keccak256(addr[:]), enc)
	})
	if err = errors.Join(err, it.Error(), it.Close()); err != nil {
		return stats, err
	}
	st := trie.NewStackTrie(onNode(common.Hash{}))
	if err := sorter.Merge(func(key, value []byte) error {
		return st.Update(key, value)
	}); err != nil {
		return stats, err
	}
	stats.Root = st.Hash()
	if nodeErr != nil {
		return stats, nodeErr
	}
	stats.Duration = time.Since(start)
	return stats, nil
}

// flatStorageRoot computes addr's storage root at height from the flat
// state, feeding node with its trie's nodes; it returns the slot count.
func (db *DB) flatStorageRoot(r reader, height uint64, addr common.Address, tmp string, node trie.OnTrieNode) (common.Hash, int64, error) {
	prefix := storageAddrPrefix(addr)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return common.Hash{}, 0, err
	}
	type leaf struct{ key, val []byte }
	var (
		leaves []leaf
		sorter *extsort.Sorter
		n      int64
	)
	defer func() {
		if sorter != nil {
			sorter.Close()
			os.RemoveAll(tmp + "/storage")
		}
	}()
	err = scanNewest(it, prefix, height, func(key, val []byte) error {
		if len(val) == 0 {
			return nil
		}
		n++
		k := crypto.Keccak256(key[storageAddrLen:storageEntityLen])
		v, err := rlp.EncodeToBytes(val)
		if err != nil {
			return err
		}
		if sorter != nil {
			return sorter.Add(k, v)
		}
		leaves = append(leaves, leaf{k, v})
		if len(leaves) < bigStorage {
			return nil
		}
		if sorter, err = extsort.New(tmp+"/storage", trieBuildMem); err != nil {
			return err
		}
		for _, l := range leaves {
			if err := sorter.Add(l.key, l.val); err != nil {
				return err
			}
		}
		leaves = nil
		return nil
	})
	if err = errors.Join(err, it.Error(), it.Close()); err != nil {
		return common.Hash{}, 0, err
	}
	if n == 0 {
		return types.EmptyRootHash, 0, nil
	}
	st := trie.NewStackTrie(node)
	if sorter != nil {
		err = sorter.Merge(func(k, v []byte) error { return st.Update(k, v) })
	} else {
		slices.SortFunc(leaves, func(a, b leaf) int { return bytes.Compare(a.key, b.key) })
		for _, l := range leaves {
			if err = st.Update(l.key, l.val); err != nil {
				break
			}
		}
	}
	return st.Hash(), n, err
}

// StateRootFromFlat recomputes the state root at height from the flat state
// alone (every account and slot, O(state)), writing nothing: what `tipnode
// verify` compares with the trie and the header.
func (db *DB) StateRootFromFlat(height uint64, progress func(TrieBuildStats)) (TrieBuildStats, error) {
	if err := db.acquire(); err != nil {
		return TrieBuildStats{}, err
	}
	defer db.mu.RUnlock()
	snap := db.pdb.NewSnapshot()
	defer snap.Close()
	return db.flatTrie(snap, height, nil, progress)
}

// BuildTrie builds the state trie at the latest block from the flat state
// (one pass, StackTrie, nodes written at the latest block's version) and
// records its base there: a store without a trie (written before the trie
// existed, with Config.NoTrie, after an unwind deeper than the window, or
// one whose build was interrupted) gets one. Whatever trie the store held
// is dropped first. The root must equal the latest header's state root
// when that header has one (a store sealed before roots existed has zero
// roots): a mismatch fails with ErrCorrupt and leaves no trie. Readers
// keep reading the flat state meanwhile; proofs wait for the build.
func (db *DB) BuildTrie(progress func(TrieBuildStats)) (TrieBuildStats, error) {
	done, err := db.beginWrite()
	if err != nil {
		return TrieBuildStats{}, err
	}
	defer done()
	return db.buildTrieLocked(progress)
}

// KeepsTrie reports whether the store writes blocks with their state
// trie: not with Config.NoTrie, never on a fork (whose state is partial).
func (db *DB) KeepsTrie() bool { return db.keepsTrie() }

// TrieBase returns the lowest height the state trie can be read at; ok is
// false when the store holds no trie (not built yet, or not kept).
func (db *DB) TrieBase() (base uint64, ok bool) {
	tm := db.trie.Load()
	return tm.base, tm.kept
}

// buildTrieLocked is BuildTrie for a caller holding the write lock.
func (db *DB) buildTrieLocked(progress func(TrieBuildStats)) (TrieBuildStats, error) {
	fail := func(err error) (TrieBuildStats, error) {
		return TrieBuildStats{}, fmt.Errorf("build state trie: %w", err)
	}
	if db.fork.Load() != nil {
		return fail(fmt.Errorf("%w: a forked store holds part of the state only", ErrNoTrie))
	}
	latest, err := db.writeBase()
	if err != nil {
		return fail(err)
	}
	b := db.pdb.NewBatch()
	if err := stageDropTrie(b); err != nil {
		return fail(errors.Join(err, b.Close()))
	}
	if err := db.commit(b, "drop state trie"); err != nil {
		return fail(err)
	}
	db.trie.Store(&trieMeta{})
	db.log.Info().Uint64("height", latest).Msg("building the state trie from the flat state")
	b = db.pdb.NewBatch()
	key := make([]byte, 0, trieKeyLen)
	stats, err := db.flatTrie(db.pdb, latest, func(owner, hash common.Hash, path, blob []byte) error {
		// The clean cache starts warm with the nodes built (as many as
		// it holds: the last ones, the upper levels of the account trie).
		db.nodes.set(hash, blob)
		key = appendVersion(appendTrieEntity(key[:0], owner, path), latest)
		if err := b.Set(key, blob, nil); err != nil {
			return err
		}
		if b.Len() < trieBatchBytes {
			return nil
		}
		if err := b.Commit(pebble.NoSync); err != nil {
			return err
		}
		b.Reset()
		return nil
	}, func(s TrieBuildStats) {
		db.log.Info().Uint64("height", s.Height).Int64("accounts", s.Accounts).Int64("slots", s.Slots).
			Int64("nodes", s.Nodes).Dur("elapsed", s.Duration).Msg("building the state trie")
		if progress != nil {
			progress(s)
		}
	})
	if err != nil {
		return fail(errors.Join(err, b.Close()))
	}
	if want, err := db.headerRoot(latest); err != nil {
		return fail(errors.Join(err, b.Close()))
	} else if want != (common.Hash{}) && want != stats.Root {
		return fail(errors.Join(fmt.Errorf("%w: the flat state at block %d has root %s, its header says %s",
			ErrCorrupt, latest, stats.Root, want), b.Close()))
	}
	if err := b.Set(keyTrie, be8(latest), nil); err != nil {
		return fail(errors.Join(err, b.Close()))
	}
	if err := db.commit(b, "state trie"); err != nil {
		return fail(err)
	}
	db.trie.Store(&trieMeta{kept: true, base: latest})
	db.log.Info().Uint64("height", latest).Str("root", stats.Root.Hex()).Int64("accounts", stats.Accounts).
		Int64("slots", stats.Slots).Int64("nodes", stats.Nodes).Dur("elapsed", stats.Duration).Msg("state trie built")
	return stats, nil
}

// headerRoot returns the state root in the canonical header at num.
func (db *DB) headerRoot(num uint64) (common.Hash, error) {
	hash, found, err := getCopy(db.pdb, canonicalKey(num))
	if err != nil {
		return common.Hash{}, err
	}
	if !found {
		return common.Hash{}, fmt.Errorf("%w: canonical hash of block %d", ErrNotFound, num)
	}
	enc, found, err := getCopy(db.pdb, headerKey(num, common.BytesToHash(hash)))
	if err != nil {
		return common.Hash{}, err
	}
	if !found {
		return common.Hash{}, fmt.Errorf("%w: header of block %d", ErrNotFound, num)
	}
	h := new(types.Header)
	if err := rlp.DecodeBytes(enc, h); err != nil {
		return common.Hash{}, fmt.Errorf("%w: header of block %d: %v", ErrCorrupt, num, err)
	}
	return h.Root, nil
}

// SetTrieWindow sets the window W (Config.TrieWindow) from the next block
// write on: a command that learns the chain's kind only once the store is
// open picks its default then.
func (db *DB) SetTrieWindow(w uint64) {
	db.writeMu.Lock()
	defer db.writeMu.Unlock()
	db.cfg.TrieWindow = w
}

// TrieWindow returns the window W in force (0: every version kept).
func (db *DB) TrieWindow() uint64 {
	db.writeMu.Lock()
	defer db.writeMu.Unlock()
	return db.cfg.TrieWindow
}
