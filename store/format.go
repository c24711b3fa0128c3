package store

import "fmt"

// FormatVersion numbers the on-disk format of a store: the key layouts of
// schema.go and the value encodings they name. The store records its
// version under keySchemaVersion (BE8). Versions only grow, one at a time,
// each through one migration (package migrations); a number, once released,
// keeps its meaning forever and is never reused.
//
// To change the format: add the next constant below with a doc comment
// saying what it introduced, point FormatCurrent at it, update schema.go to
// the new layouts, describe the layouts it replaced under "Old key layouts"
// below, and append the migration to migrations.All.
type FormatVersion uint64

// FormatNone is what a store records before any format: a new, empty store
// (no genesis written and no migration run). It is not a format; WriteGenesis
// and the migrations record a real one.
const FormatNone FormatVersion = 0

// Format versions, oldest first.
const (
	// FormatInitial (1) is the first format; it introduced every layout that
	// schema.go lists: blocks, receipts, canonical and hash->number indexes,
	// transaction lookups, tags, code, store metadata, per-block change lists,
	// migration cursors, and versioned flat state (account and storage
	// versions keyed entity + ^number, accounts encoded with
	// accountEncodingV1, deleted accounts as deletedMarker, zero slots as
	// empty values).
	FormatInitial FormatVersion = 1
	// FormatPendingJournal (2) added the pending journal: the header of the
	// open pending block ('P') and its pre-confirmed transactions ('Q'),
	// written durably before a pre-confirmation is published and deleted in
	// the batch that writes that block. It changed no existing layout; the
	// migration only records the version.
	FormatPendingJournal FormatVersion = 2
	// FormatChainConfig (3) keeps the chain config (keyChainConfig) beside
	// the genesis spec in every store, so opening a store reads the config
	// and block 0's header and never parses the genesis alloc. Stores
	// initialised before held only the spec; the migration copies the
	// spec's "config" object. No layout changed.
	FormatChainConfig FormatVersion = 3
	// FormatGenesisChunks (4) keeps no value of the size of the genesis
	// alloc: the genesis spec is stored in chunks of 64 KiB ('G' + chunk
	// index) instead of one value under a meta key, and block 0 has no
	// change list (it is never unwound). Each was one sstable block (140
	// MB and 52 MB for 1M slots) that every read of a key beside it
	// decompressed whole: the meta keys and the last header of a level,
	// read at every open. The migration rewrites the spec in chunks,
	// deletes both old keys and compacts their ranges so the old blocks
	// are gone.
	FormatGenesisChunks FormatVersion = 4
	// FormatAnchor (5) added the anchor of a store initialised from a
	// state dump at a block N ('m' + "anchor": state and history below N
	// are not held, and canonical headers exist only from N-256 and for
	// block 0). An older binary would read such a store's missing state
	// as empty accounts, hence the version. Stores from genesis have no
	// anchor key; the migration only records the version.
	FormatAnchor FormatVersion = 5
	// FormatFork (6) added forked stores (`tipnode dev --fork`): an
	// anchored store whose 'm' + "fork" key names an upstream that holds
	// the state the store does not, fetched on first read and kept as
	// versions at the anchor block. An older binary would read the
	// missing state as empty accounts, hence the version. Other stores
	// have no fork key; the migration only records the version.
	FormatFork FormatVersion = 6
	// FormatTrie (7) added the state trie beside the flat state: trie
	// nodes versioned by block like the state ('T' + owner + path +
	// ^number), each block's list of the node versions it wrote ('U' +
	// number) and the trie's base height ('m' + "trie"). An older binary
	// would write blocks without their nodes, leaving the trie behind the
	// state, hence the version. The migration builds the trie of the
	// latest block from the flat state in one pass (DB.BuildTrie).
	FormatTrie FormatVersion = 7
)

const (
	// FormatCurrent is the format this binary writes, and the only one it
	// reads and writes through the typed API. A store recording a version
	// between FormatMinSupported and FormatCurrent opens, but only the
	// migrations may touch it (ErrSchemaOutdated) until they bring it to
	// FormatCurrent.
	FormatCurrent = FormatTrie
	// FormatMinSupported is the oldest recorded format this binary opens and
	// migrates. Open refuses an older one (ErrSchemaTooOld); such a store
	// must be upgraded by an older tipnode first, or re-imported. Raise it
	// only together with dropping the ability to migrate from below it.
	FormatMinSupported = FormatInitial
)

// Old key layouts.
//
// schema.go lists the layouts of FormatCurrent only. When a version changes
// a layout, schema.go is updated to the new layout and the layout it
// replaced is described here, in a section named after the version that
// replaced it, one commented line per replaced key in schema.go's notation
// and a note of where its data went:
//
//	FormatX (N), replacing layouts of FormatW (N-1):
//	  'p' + ...  -> ...   (old layout; now 'q' + ..., moved by migration N)
//
// Sections are never removed, even once FormatMinSupported passes their
// version: they say what an old store holds and why it is refused.
//
// FormatPendingJournal only added two layouts, FormatChainConfig made an
// optional key always present, FormatAnchor added one meta key and
// FormatTrie added three layouts; they have no section.
//
//	FormatGenesisChunks (4), replacing layouts of FormatChainConfig (3):
//	  'm' + "genesis-spec" -> opaque genesis spec bytes (genesis JSON), one value
//	                          (now 'G' + chunk index BE4, moved by migration 4)
//	  'l' + 0 BE8           -> block 0's change list (no longer written; deleted by migration 4)

// checkFormat reports whether a store recording version v can be opened by a
// binary supporting the formats min..current: FormatNone (a new store) and
// min <= v <= current are accepted; anything else fails with ErrSchemaTooOld
// or ErrSchemaTooNew naming v and the supported bound.
func checkFormat(v, min, current FormatVersion) error {
	switch {
	case v == FormatNone:
		return nil
	case v > current:
		return fmt.Errorf("%w: store has format version %d, this binary supports up to %d", ErrSchemaTooNew, v, current)
	case v < min:
		return fmt.Errorf("%w: store has format version %d, this binary supports from %d (up to %d)", ErrSchemaTooOld, v, min, current)
	}
	return nil
}
