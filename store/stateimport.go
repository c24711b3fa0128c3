package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"

	"github.com/tipnode/tipnode/store/chaintypes"
	"github.com/tipnode/tipnode/store/extsort"
)

// StateImport writes a store anchored at a block N from a stream of
// accounts, slots and code (a state dump), all or nothing: the entries are
// sorted in bounded memory (store/extsort, spilling to files in the import
// directory), written as sstables in key order and ingested into Pebble in
// ONE ingestion with the anchor's chain data and metadata. Until Commit's
// ingestion the store holds nothing of it; after it, everything.
//
// Use: DB.NewStateImport, Account / Storage / Code for every entry, then
// Commit; Close always (it removes the import directory's files).
type StateImport struct {
	db     *DB
	dir    string
	anchor uint64
	sorter *extsort.Sorter
	codes  map[common.Hash]struct{}
	stats  StateImportStats
	done   bool
	// spec is the genesis spec written through SpecWriter (nil: none).
	spec *specWriter
	// trieNodes counts the state trie's nodes given with TrieNode (0:
	// Commit builds the trie from the ingested flat state).
	trieNodes int64
	key       []byte
}

// StateImportStats counts what an import wrote.
type StateImportStats struct {
	Accounts, Slots, Codes int64
	Tables                 int   // sstables ingested
	Bytes                  int64 // their size
}

// AnchorWrite is the chain data of an anchored store (StateImport.Commit).
type AnchorWrite struct {
	// Genesis is block 0's header (the chain's identity: followers compare
	// it with their upstream's).
	Genesis *types.Header
	// Headers are canonical headers in ascending order, contiguous, ending
	// at the anchor block (BLOCKHASH reads up to 256 of them).
	Headers []*types.Header
	// Body and Receipts of the anchor block; nil Body means not known:
	// history then starts at the block after the anchor.
	Body     *chaintypes.Body
	Receipts chaintypes.Receipts
	// Spec and Config are the genesis spec and the chain config, as
	// WriteGenesis stores them. Spec is nil when the spec was streamed in
	// through StateImport.SpecWriter.
	Spec, Config []byte
	// Fork, when set, makes the store a fork of the upstream at this
	// JSON-RPC URL (Anchor.Fork): the imported state is what the fork
	// changed at the anchor block, the rest is read from the upstream.
	Fork string
}

// NewStateImport starts an import of the state at block anchor into an
// empty store (ErrNotEmpty otherwise). dir is a directory on the local
// filesystem for the sort's run files and the sstables (created; Close
// removes what the import put there). memBytes bounds the sort's buffer.
func (db *DB) NewStateImport(dir string, anchor uint64, memBytes int) (*StateImport, error) {
	fail := func(err error) error { return fmt.Errorf("state import: %w", err) }
	if err := db.acquire(); err != nil {
		return nil, fail(err)
	}
	defer db.mu.RUnlock()
	if db.cfg.ReadOnly {
		return nil, fail(ErrReadOnly)
	}
	if err := db.checkSchema(); err != nil {
		return nil, fail(err)
	}
	if _, err := readTag(db.pdb, TagLatest); !isNotFound(err) {
		if err == nil {
			err = fmt.Errorf("%w: it holds a chain", ErrNotEmpty)
		}
		return nil, fail(err)
	}
	sorter, err := extsort.New(filepath.Join(dir, "sort"), memBytes)
	if err != nil {
		return nil, fail(err)
	}
	return &StateImport{db: db, dir: dir, anchor: anchor, sorter: sorter, codes: make(map[common.Hash]struct{})}, nil
}

// Account adds addr's account at the anchor block.
func (si *StateImport) Account(addr common.Address, acc *Account) error {
	si.stats.Accounts++
	return si.sorter.Add(accountKey(addr, si.anchor), encodeAccount(acc))
}

// Storage adds a slot of addr at the anchor block; a zero value is no
// entry (absent slots read zero).
func (si *StateImport) Storage(addr common.Address, slot, value common.Hash) error {
	if value == (common.Hash{}) {
		return nil
	}
	si.stats.Slots++
	return si.sorter.Add(storageKey(addr, slot, si.anchor), trimValue(value))
}

// Code adds contract code under its hash (each hash once; repeats are
// skipped).
func (si *StateImport) Code(hash common.Hash, code []byte) error {
	if hash == types.EmptyCodeHash {
		return nil
	}
	if _, ok := si.codes[hash]; ok {
		return nil
	}
	si.codes[hash] = struct{}{}
	si.stats.Codes++
	return si.sorter.Add(codeKey(hash), code)
}

// TrieNode adds a node of the imported state's trie as go-ethereum's
// StackTrie hands it to its trie.OnTrieNode while the caller computes the
// state root in hashed order (owner: zero for the account trie, the
// account's hashed address for its storage trie). The nodes are sorted and
// ingested with the state, so the trie is built in the import's one pass;
// Commit then checks that the account trie's root node is the anchor
// header's state root (else it builds the trie from the flat state, as
// without nodes). A caller that gives nodes gives every node of every
// trie. A store that keeps no trie ignores them.
func (si *StateImport) TrieNode(owner common.Hash, path, blob []byte) error {
	if !si.db.keepsTrie() {
		return nil
	}
	si.trieNodes++
	si.key = appendVersion(appendTrieEntity(si.key[:0], owner, path), si.anchor)
	return si.sorter.Add(si.key, blob)
}

// SpecWriter returns a writer of the genesis spec: the bytes written are
// cut into the 'G' chunks as they arrive and added to the import's sort
// (spilled to disk with it), so a spec of any size is stored without
// being held in memory. Commit's AnchorWrite.Spec must then be nil. Every
// call returns the same writer.
func (si *StateImport) SpecWriter() io.Writer {
	if si.spec == nil {
		si.spec = newSpecWriter(si.sorter.Add)
	}
	return si.spec
}

// stageAnchor adds the chain data, tags and metadata of the anchored
// store to the sort.
func (si *StateImport) stageAnchor(a *AnchorWrite) error {
	if a == nil || a.Genesis == nil || len(a.Headers) == 0 {
		return fmt.Errorf("%w: anchor without genesis or headers", ErrInvalidWrite)
	}
	top := a.Headers[len(a.Headers)-1]
	if top.Number.Uint64() != si.anchor {
		return fmt.Errorf("%w: headers end at %d, the anchor is %d", ErrInvalidWrite, top.Number, si.anchor)
	}
	if a.Genesis.Number.Sign() != 0 {
		return fmt.Errorf("%w: genesis header has number %d", ErrInvalidWrite, a.Genesis.Number)
	}
	add := si.sorter.Add
	headers := a.Headers
	if headers[0].Number.Sign() != 0 {
		headers = append([]*types.Header{a.Genesis}, headers...)
	}
	for i, h := range headers {
		if i > 0 && h.Number.Sign() != 0 && headers[i-1].Number.Sign() != 0 &&
			(h.Number.Uint64() != headers[i-1].Number.Uint64()+1 || h.ParentHash != headers[i-1].Hash()) {
			return fmt.Errorf("%w: header %d does not extend header %d", ErrInvalidWrite, h.Number, headers[i-1].Number)
		}
		enc, err := rlp.EncodeToBytes(h)
		if err != nil {
			return err
		}
		num, hash := h.Number.Uint64(), h.Hash()
		if err := errors.Join(add(headerKey(num, hash), enc), add(canonicalKey(num), hash[:]), add(hashToNumKey(hash), be8(num))); err != nil {
			return err
		}
	}
	history := si.anchor + 1
	if a.Body != nil {
		history = si.anchor
		hash := top.Hash()
		if len(a.Receipts) != len(a.Body.Transactions) {
			return fmt.Errorf("%w: %d receipts for %d transactions", ErrInvalidWrite, len(a.Receipts), len(a.Body.Transactions))
		}
		body, err := rlp.EncodeToBytes(a.Body)
		if err != nil {
			return err
		}
		rcpts, err := chaintypes.EncodeStored(a.Receipts)
		if err != nil {
			return err
		}
		if err := errors.Join(add(bodyKey(si.anchor, hash), body), add(receiptsKey(si.anchor, hash), rcpts)); err != nil {
			return err
		}
		for i, tx := range a.Body.Transactions {
			l := TxLookup{BlockHash: hash, BlockNumber: si.anchor, Index: uint64(i)}
			if err := add(txLookupKey(tx.Hash()), encodeTxLookup(l)); err != nil {
				return err
			}
		}
	}
	for _, tag := range []Tag{TagLatest, TagSafe, TagFinalized} {
		if err := add(tagKey(tag), be8(si.anchor)); err != nil {
			return err
		}
	}
	if si.spec != nil && a.Spec != nil {
		return fmt.Errorf("%w: genesis spec given both streamed and in the anchor", ErrInvalidWrite)
	}
	spec := si.spec
	if spec == nil {
		spec = newSpecWriter(add)
		if _, err := spec.Write(a.Spec); err != nil {
			return err
		}
	}
	if err := spec.finish(); err != nil {
		return err
	}
	if a.Fork != "" {
		if err := add(keyFork, []byte(a.Fork)); err != nil {
			return err
		}
	}
	// A store anchored at block 0 with block 0's body (tipnode init
	// --genesis, streamed) has anchor 0, 0: what an absent key means. It
	// is then left out, and the store is the one WriteGenesis writes.
	if si.anchor != 0 || history != 0 || a.Fork != "" {
		if err := add(keyAnchor, append(be8(si.anchor), be8(history)...)); err != nil {
			return err
		}
	}
	return errors.Join(
		add(keyChainConfig, a.Config),
		add(keySchemaVersion, be8(uint64(FormatCurrent))),
	)
}

// tableTarget is the size at which the import starts a new sstable.
const tableTarget = 128 << 20

// Commit writes the sorted entries and a's chain data as sstables and
// ingests them in one atomic step. A duplicate account or slot (the same
// key twice) refuses the import (ErrInvalidWrite naming it); nothing is
// then in the store. ctx cancels the writing of the tables.
func (si *StateImport) Commit(ctx context.Context, a *AnchorWrite) (StateImportStats, error) {
	fail := func(err error) (StateImportStats, error) {
		return StateImportStats{}, fmt.Errorf("state import at block %d: %w", si.anchor, err)
	}
	if si.done {
		return fail(extsort.ErrClosed)
	}
	si.done = true
	if err := si.stageAnchor(a); err != nil {
		return fail(err)
	}
	if si.trieNodes > 0 {
		// The trie's extent, ingested with its nodes (ingest drops both
		// when the root node is not the header's).
		if err := si.sorter.Add(keyTrie, be8(si.anchor)); err != nil {
			return fail(err)
		}
	}
	db := si.db
	opts := db.opts.Clone()
	opts.EnsureDefaults()
	wopts := opts.MakeWriterOptions(len(opts.Levels)-1, db.pdb.TableFormat())
	tdir := filepath.Join(si.dir, "tables")
	if err := os.MkdirAll(tdir, 0o755); err != nil {
		return fail(err)
	}
	var (
		paths []string
		w     *sstable.Writer
		prev  []byte
	)
	finish := func() error {
		if w == nil {
			return nil
		}
		err := w.Close()
		w = nil
		return err
	}
	defer func() {
		if w != nil {
			w.Close()
		}
	}()
	err := si.sorter.Merge(func(key, value []byte) error {
		if prev != nil && bytes.Equal(prev, key) {
			if key[0] == prefixCode {
				return nil
			}
			return fmt.Errorf("%w: %s given twice", ErrInvalidWrite, describeKey(key))
		}
		prev = append(prev[:0], key...)
		if w != nil && w.Raw().EstimatedSize() >= tableTarget {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := finish(); err != nil {
				return err
			}
		}
		if w == nil {
			name := filepath.Join(tdir, fmt.Sprintf("%06d.sst", len(paths)))
			f, err := db.fs.Create(name, "")
			if err != nil {
				return err
			}
			paths = append(paths, name)
			w = sstable.NewWriter(objstorageprovider.NewFileWritable(f), wopts)
		}
		return w.Set(key, value)
	})
	if err == nil {
		err = finish()
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return fail(err)
	}
	stats := si.stats
	stats.Tables = len(paths)
	for _, p := range paths {
		if fi, err := db.fs.Stat(p); err == nil {
			stats.Bytes += fi.Size()
		}
	}
	if err := db.ingest(paths, si.anchor, si.trieNodes); err != nil {
		return fail(err)
	}
	return stats, nil
}

// ingest ingests the import's tables (one atomic version edit) under the
// write lock and moves the store's anchor and state cache to the new chain.
// trieNodes is the number of state trie nodes the tables hold (0: the
// trie is built from the ingested flat state).
func (db *DB) ingest(paths []string, anchor uint64, trieNodes int64) error {
	done, err := db.beginWrite()
	if err != nil {
		return err
	}
	defer done()
	if _, err := readTag(db.pdb, TagLatest); !isNotFound(err) {
		if err == nil {
			err = fmt.Errorf("%w: a chain was written meanwhile", ErrNotEmpty)
		}
		return err
	}
	db.state.beginWrite()
	if err := db.pdb.Ingest(context.Background(), paths); err != nil {
		db.state.abortWrite()
		return fmt.Errorf("ingest: %w", err)
	}
	if err := db.loadAnchor(); err != nil {
		db.state.abortWrite()
		return err
	}
	epoch, err := readEpoch(db.pdb)
	if err != nil {
		db.state.abortWrite()
		return err
	}
	db.schema.Store(uint64(FormatCurrent))
	db.state.reset(epoch, anchor)
	db.log.Info().Uint64("anchor", anchor).Int("tables", len(paths)).Msg("state import ingested")
	if !db.keepsTrie() {
		return nil
	}
	if trieNodes > 0 {
		// Built in the import's pass: its root node must be the header's
		// state root.
		root, err := db.importedTrieRoot(anchor)
		if err != nil {
			return err
		}
		want, err := db.headerRoot(anchor)
		if err != nil {
			return err
		}
		if root == want {
			db.trie.Store(&trieMeta{kept: true, base: anchor})
			db.log.Info().Uint64("height", anchor).Str("root", root.Hex()).Int64("nodes", trieNodes).
				Msg("state trie built in the import's pass")
			return nil
		}
		db.log.Warn().Uint64("height", anchor).Str("root", root.Hex()).Str("header", want.Hex()).
			Msg("the imported state trie's root is not the header's: building it from the flat state")
	}
	// The trie of the imported state, in one pass over it (the store holds
	// the state from here on; an interrupted build leaves no trie, built
	// again by BuildTrie).
	_, err = db.buildTrieLocked(nil)
	return err
}

// importedTrieRoot returns the hash of the account trie's root node
// written at anchor (zero: none).
func (db *DB) importedTrieRoot(anchor uint64) (common.Hash, error) {
	blob, found, err := getCopy(db.pdb, appendVersion(appendTrieEntity(nil, common.Hash{}, nil), anchor))
	if err != nil || !found {
		return common.Hash{}, err
	}
	return crypto.Keccak256Hash(blob), nil
}

// describeKey names the entity of a state or code key for error messages.
func describeKey(key []byte) string {
	switch {
	case isAccountKey(key):
		return "account " + common.BytesToAddress(key[1:accountEntityLen]).Hex()
	case isStorageKey(key):
		return fmt.Sprintf("slot %s of account %s", common.BytesToHash(key[storageAddrLen:storageEntityLen]).Hex(),
			common.BytesToAddress(key[1:storageAddrLen]).Hex())
	}
	return fmt.Sprintf("key %x", key)
}

// Close removes the import's files (sort runs and tables: once ingested,
// Pebble holds its own links to the tables).
func (si *StateImport) Close() error {
	err := si.sorter.Close()
	return errors.Join(err, os.RemoveAll(filepath.Join(si.dir, "sort")), si.db.fs.RemoveAll(filepath.Join(si.dir, "tables")))
}
