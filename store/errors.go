package store

import (
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
)

// Sentinel errors. Every error returned by the store wraps one of these (or a
// Pebble / RLP error) with context; test with errors.Is.
var (
	// ErrNotFound: the requested block, receipt, lookup, tag or height is not
	// in the store (or not in the view).
	ErrNotFound = errors.New("not found")
	// ErrGenesisMismatch: WriteGenesis was given a block 0 whose hash differs
	// from the stored genesis.
	ErrGenesisMismatch = errors.New("genesis mismatch")
	// ErrNoGenesis: a write that needs a chain was attempted on a store
	// without a genesis block.
	ErrNoGenesis = errors.New("no genesis in store")
	// ErrNotContiguous: WriteBlock was given a block that is not the child of
	// the latest block (wrong number or parent hash).
	ErrNotContiguous = errors.New("block not contiguous with latest")
	// ErrInvalidWrite: a write request is malformed (nil block, receipts not
	// matching transactions, unknown or immovable tag, tag above latest...).
	ErrInvalidWrite = errors.New("invalid write")
	// ErrSchemaTooNew: the store records a format version above
	// FormatCurrent: it was written by a newer tipnode whose format this
	// binary does not understand.
	ErrSchemaTooNew = errors.New("store schema is newer than this binary")
	// ErrSchemaTooOld: the store records a format version below
	// FormatMinSupported: this binary can no longer migrate it (upgrade it
	// with an older tipnode first, or re-import).
	ErrSchemaTooOld = errors.New("store schema is older than this binary supports")
	// ErrSchemaOutdated: the store records a supported format version below
	// FormatCurrent; run the migrations before reading or writing it.
	ErrSchemaOutdated = errors.New("store schema is outdated, migrations required")
	// ErrCorrupt: a stored value cannot be decoded.
	ErrCorrupt = errors.New("corrupt store value")
	// ErrReadOnly: a write was attempted on a store opened read-only.
	ErrReadOnly = errors.New("store is read-only")
	// ErrDiskFull: the filesystem holding the store has less free space
	// than Config.MinFreeBytes (the write was refused before it started,
	// nothing of it is written), or it is out of space at Open. Reads are
	// unaffected.
	ErrDiskFull = errors.New("store: disk full")
	// ErrClosed: the DB or View has been closed.
	ErrClosed = errors.New("store closed")
	// ErrLocked: another process (another tipnode) has the store open; a
	// store has one process at a time.
	ErrLocked = errors.New("another process holds the store")
	// ErrNoStore: Config.MustExist is set and the directory holds no store
	// (or does not exist); nothing was created.
	ErrNoStore = errors.New("no store in the directory")
	// ErrInvalidConfig: Config.Validate failed.
	ErrInvalidConfig = errors.New("invalid store config")
	// ErrPrunedHistory: the body or receipts of a block below the store's
	// history anchor (Anchor.History) were asked for: a store initialised
	// from a state dump never had them (go-ethereum's pruned history).
	ErrPrunedHistory = errors.New("pruned history unavailable")
	// ErrPrunedState: state below the store's state anchor (Anchor.State)
	// was read; *PrunedStateError carries the heights.
	ErrPrunedState = errors.New("state below the store's anchor")
	// ErrBelowAnchor: a write would remove the anchor block or go below it
	// (an unwind or reorg onto a block under Anchor.State).
	ErrBelowAnchor = errors.New("below the store's anchor block")
	// ErrNotEmpty: a state import was started on a store that already
	// holds a chain.
	ErrNotEmpty = errors.New("store is not empty")
	// ErrUpstream: a forked store could not read state it does not hold
	// from its upstream (the error names the upstream and the entity).
	ErrUpstream = errors.New("fork upstream")
	// ErrNoTrie: the store keeps no state trie (Config.NoTrie, a forked
	// store, or one whose trie is not built yet: DB.BuildTrie).
	ErrNoTrie = errors.New("the store keeps no state trie")
	// ErrTrieWindow: the state trie was asked for at a height it cannot
	// read (*TrieWindowError names the heights it can).
	ErrTrieWindow = errors.New("height outside the state trie's window")
)

// TrieWindowError is the error of a state trie asked for at a height
// outside Base..Latest (Base: the trie's oldest readable height, which the
// window W moves up as blocks arrive).
type TrieWindowError struct {
	Height, Base, Latest uint64
}

func (e *TrieWindowError) Error() string {
	return fmt.Sprintf("%v: block %d, the state trie holds blocks %d to %d", ErrTrieWindow, e.Height, e.Base, e.Latest)
}

func (e *TrieWindowError) Unwrap() error { return ErrTrieWindow }

// PrunedStateError is the error of every read of state below the store's
// state anchor (it wraps ErrPrunedState). Its text follows go-ethereum's
// answer for state it does not hold ("missing trie node <root> ...") and
// names the anchor.
type PrunedStateError struct {
	Number uint64      // the height read
	Root   common.Hash // that block's state root (zero when its header is not held)
	Anchor uint64      // the store's state anchor
}

func (e *PrunedStateError) Error() string {
	return fmt.Sprintf("missing trie node %x (path ) state of block %d is not available: this node's state starts at block %d (initialised from a state dump)",
		e.Root[:], e.Number, e.Anchor)
}

func (e *PrunedStateError) Unwrap() error { return ErrPrunedState }
