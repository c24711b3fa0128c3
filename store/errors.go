package store

import "errors"

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
)
