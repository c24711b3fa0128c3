package store

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Config configures a store. Build it with DefaultConfig(dir); zero sizes
// are replaced by their defaults (WithDefaults, applied by Open).
type Config struct {
	// Dir is the Pebble directory. Required.
	Dir string
	// CacheBytes is the size of the block cache shared by all levels.
	// Default DefaultCacheBytes (512 MiB). Pebble reserves the memory of
	// live memtables (up to memtablesInFlight of them) inside this cache,
	// so it must be at least memtablesInFlight * MemtableBytes or nothing
	// would stay cached.
	CacheBytes int64
	// MemtableBytes is the size of one memtable. Default DefaultMemtableBytes
	// (64 MiB).
	MemtableBytes uint64
	// SyncWrites fsyncs the WAL on every write batch (WriteBlock, SetTag,
	// UnwindTo...). Default true. Bulk import may disable it and call
	// DB.Sync at the end: batches stay atomic either way, only the
	// durability of the last blocks on power loss changes. Being a bool, its
	// default lives in DefaultConfig: start from DefaultConfig(dir).
	SyncWrites bool
	// BulkImport tunes Pebble for a bulk import (tipnode import): L0
	// compactions start at bulkL0CompactionThreshold sublevels instead of
	// l0CompactionThreshold, and writes stall at bulkL0StopWritesThreshold
	// instead of l0StopWritesThreshold. An import then merges its flushes
	// into the levels below in fewer, larger compactions (an L0 compaction
	// rewrites the overlapping tables below it, and new state and trie
	// node versions overlap nearly all of them), none at all for an import
	// of less than bulkL0CompactionThreshold memtables: what it leaves in
	// L0 is compacted by the next open (Pebble schedules the compaction
	// as it opens) in the background. A state trie update of a bulk
	// import also runs without its prefetcher (trieprefetch.go): the
	// import's pipeline keeps every core busy, so the prefetcher's second
	// walk of the update's keys would only add work. Default false.
	BulkImport bool
	// ReadOnly opens the store without write access (Pebble's ReadOnly:
	// nothing is created, locked or written, so a read-only filesystem
	// works). Writes fail with ErrReadOnly; the store must exist.
	ReadOnly bool
	// MinFreeBytes is the free space the filesystem holding Dir must keep:
	// a write that finds less is refused with ErrDiskFull before it
	// starts (nothing of it is written; reads go on), and Open refuses a
	// writable store with ErrDiskFull. 0 disables the guard; filesystems
	// that cannot report their usage (in-memory ones) are not guarded.
	// Default DefaultMinFreeBytes (512 MiB), set by DefaultConfig.
	MinFreeBytes uint64
	// MustExist opens only an existing store: when the directory holds
	// none (or does not exist) Open fails with ErrNoStore and creates
	// nothing, not even the directory. Default false (a new store is
	// created).
	MustExist bool
	// StateCacheBytes bounds the in-memory state cache (accounts, slots and
	// code in front of Pebble, see "State cache" in doc.go). 0 disables it.
	// Default DefaultStateCacheBytes (256 MiB), set by DefaultConfig. The
	// memory is taken as entries arrive, not at open; below 32 MiB the
	// cache still uses up to 32 MiB (its 512 buckets of one 64 KiB chunk).
	StateCacheBytes int64
	// NoTrie keeps no state trie (--verify.stateroot=off): blocks are
	// written without their trie nodes, a trie the store held is dropped
	// by the first such write, and no root or proof can be read. Default
	// false: every block's trie nodes are written with it, in its batch.
	NoTrie bool
	// TrieWindow is W, the number of blocks below the latest whose state
	// trie stays readable (proofs at those heights, unwinds that deep
	// without a rebuild): node versions superseded before latest-W are
	// pruned as blocks arrive. 0 keeps every version. Default
	// DefaultTrieWindow, set by DefaultConfig.
	TrieWindow uint64
	// TrieCacheBytes bounds the clean trie node cache (blobs by hash, in
	// front of Pebble). 0 disables it. Default DefaultTrieCacheBytes, set
	// by DefaultConfig.
	TrieCacheBytes int64
	// FS is the filesystem Pebble uses. Default nil: the operating
	// system's. Tests pass an in-memory, crashable one (vfs.NewCrashableMem)
	// to check what survives a crash.
	FS vfs.FS
}

// Defaults.
const (
	DefaultCacheBytes    int64  = 512 << 20
	DefaultMemtableBytes uint64 = 64 << 20
	// DefaultMinFreeBytes leaves room for Pebble's own flushes and
	// compactions (memtables of DefaultMemtableBytes, compaction outputs)
	// once writes stop.
	DefaultMinFreeBytes uint64 = 512 << 20
	// DefaultStateCacheBytes holds the hot state of a busy chain (a slot
	// entry is about 70 bytes: some 3 million slots).
	DefaultStateCacheBytes int64 = 256 << 20
	// DefaultTrieWindow is OP's withdrawal-proof window on a chain of 2 s
	// blocks: 7 days.
	DefaultTrieWindow uint64 = 7 * 24 * 3600 / 2
	// DefaultTrieCacheBytes holds the upper levels of the state and
	// storage tries of a busy chain.
	DefaultTrieCacheBytes int64  = 128 << 20
	minCacheBytes         int64  = 1 << 20
	minMemtableBytes      uint64 = 1 << 20
	maxMemtableBytes      uint64 = 4 << 30 // Pebble's limit
	// l0CompactionThreshold and l0StopWritesThreshold are the L0 sublevel
	// counts at which Pebble starts compacting L0 and stalls writes;
	// the bulk ones apply with Config.BulkImport.
	l0CompactionThreshold     = 4
	l0StopWritesThreshold     = 24
	bulkL0CompactionThreshold = 16
	bulkL0StopWritesThreshold = 64
	// memtablesInFlight is Pebble's MemTableStopWritesThreshold: at most this
	// many memtables exist (and are reserved in the block cache) at once.
	memtablesInFlight = 4
)

// DefaultConfig returns the default configuration for dir (SyncWrites true,
// MinFreeBytes DefaultMinFreeBytes).
func DefaultConfig(dir string) Config {
	return Config{
		Dir:           dir,
		CacheBytes:    DefaultCacheBytes,
		MemtableBytes: DefaultMemtableBytes,
		SyncWrites:    true,
		MinFreeBytes:  DefaultMinFreeBytes,

		StateCacheBytes: DefaultStateCacheBytes,
		TrieWindow:      DefaultTrieWindow,
		TrieCacheBytes:  DefaultTrieCacheBytes,
	}
}

// WithDefaults returns c with zero sizes replaced by their defaults.
// SyncWrites and MinFreeBytes (where 0 disables the guard) are taken as
// given: start from DefaultConfig.
func (c Config) WithDefaults() Config {
	if c.CacheBytes == 0 {
		c.CacheBytes = DefaultCacheBytes
	}
	if c.MemtableBytes == 0 {
		c.MemtableBytes = DefaultMemtableBytes
	}
	return c
}

// Validate checks c after defaults have been applied.
func (c Config) Validate() error {
	c = c.WithDefaults()
	switch {
	case c.Dir == "":
		return fmt.Errorf("%w: Dir is required", ErrInvalidConfig)
	case c.CacheBytes < minCacheBytes:
		return fmt.Errorf("%w: CacheBytes %d below minimum %d", ErrInvalidConfig, c.CacheBytes, minCacheBytes)
	case c.TrieCacheBytes < 0:
		return fmt.Errorf("%w: TrieCacheBytes %d is negative (0 disables the cache)", ErrInvalidConfig, c.TrieCacheBytes)
	case c.StateCacheBytes < 0:
		return fmt.Errorf("%w: StateCacheBytes %d is negative (0 disables the cache)", ErrInvalidConfig, c.StateCacheBytes)
	case c.MemtableBytes < minMemtableBytes || c.MemtableBytes >= maxMemtableBytes:
		return fmt.Errorf("%w: MemtableBytes %d outside [%d, %d)", ErrInvalidConfig, c.MemtableBytes, minMemtableBytes, maxMemtableBytes)
	case uint64(c.CacheBytes) < memtablesInFlight*c.MemtableBytes:
		return fmt.Errorf("%w: CacheBytes %d below %d x MemtableBytes %d (memtables are reserved from the cache)",
			ErrInvalidConfig, c.CacheBytes, memtablesInFlight, c.MemtableBytes)
	}
	return nil
}
