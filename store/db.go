package store

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"
)

// DB is a tipnode store. It is safe for concurrent use: reads go through
// Views (Pebble snapshots), writes are serialised by an internal mutex.
type DB struct {
	cfg Config
	log zerolog.Logger
	pdb *pebble.DB

	// writeMu serialises writers: each write reads the latest block and
	// then commits one batch, and nothing may commit in between.
	writeMu sync.Mutex

	// mu guards closed. Every operation holds it for reading so Close
	// (which takes it for writing) waits for in-flight operations.
	mu     sync.RWMutex
	closed bool

	// vmu guards views, the open Views that Close must release.
	vmu   sync.Mutex
	views map[*view]struct{}

	// schema caches the recorded FormatVersion (FormatNone = none recorded).
	schema atomic.Uint64

	// headers caches decoded headers by hash (see headercache.go).
	headers headerCache

	// state caches accounts, slots and code (statecache.go).
	state *stateCache
	// past serves reads below a view's latest block (pastcache.go).
	past *pastCache
	// canon caches canonical hashes and headers by number (canoncache.go).
	canon canonCache

	// trie is the state trie's extent (keyTrie), changed under writeMu;
	// nodes is the clean trie node cache (trie.go).
	trie  atomic.Pointer[trieMeta]
	nodes nodeCache

	// guard refuses writes when free space is low (Config.MinFreeBytes).
	guard *diskGuard

	// anchor is the store's Anchor (zero: initialised from genesis),
	// read at Open and set by a state import; it never changes after.
	anchor atomic.Pointer[Anchor]
	// fork is the fork side of a forked store (Anchor.Fork; nil
	// otherwise), fork.go; forkFetched counts its fetches.
	fork        atomic.Pointer[forkState]
	forkFetched atomic.Uint64
	// opts are the Pebble options the store was opened with (the state
	// import writes sstables with them); fs is their filesystem.
	opts *pebble.Options
	fs   vfs.FS
	// syncer runs the fsyncs of opts.FS through Linux AIO (pollsync_linux.go);
	// nil when they are plain system calls.
	syncer *pollSyncer
}

var _ Writer = (*DB)(nil)

// pebbleOptions returns the tuned Pebble options for cfg.
func pebbleOptions(cfg Config, log zerolog.Logger) *pebble.Options {
	opts := &pebble.Options{
		// Our comparer: versioned state keys split into entity + ^number so
		// prefix seeks use bloom filters. Persisted: never change silently.
		Comparer: newComparer(),
		// Block cache for uncompressed sstable blocks: the hot state (recent
		// versions of busy accounts/slots) and index/filter blocks live here.
		CacheSize: cfg.CacheBytes,
		// Large memtables absorb the write burst of each block (one batch of
		// a few hundred keys) and make flushes less frequent during import.
		MemTableSize: cfg.MemtableBytes,
		// Allow up to 4 memtables in flight before stalling writers, so a
		// slow flush does not stall block import immediately.
		MemTableStopWritesThreshold: memtablesInFlight,
		// Start compacting L0 after 4 sublevels (Pebble's default, keeps read
		// amplification of point seeks low) and stall writes only at 24 so
		// write bursts are throttled late rather than early (16 and 64 for
		// a bulk import, Config.BulkImport).
		L0CompactionThreshold: l0CompactionThreshold,
		L0StopWritesThreshold: l0StopWritesThreshold,
		// Lbase target size: 256 MiB keeps the LSM shallow for large state.
		LBaseMaxBytes: 256 << 20,
		// Plenty of file handles: a large store has many sstables and reopening
		// tables on cache misses costs a syscall plus index reads.
		MaxOpenFiles: 16384,
		// Sync sstables and the WAL in the background every 1 MiB so the OS
		// never has to write out a huge burst of dirty pages at once.
		BytesPerSync:    1 << 20,
		WALBytesPerSync: 1 << 20,
		// Newest on-disk format (columnar blocks) for new stores.
		FormatMajorVersion: pebble.FormatNewest,
		ReadOnly:           cfg.ReadOnly,
		Logger:             pebbleLogger{log},
	}
	if cfg.BulkImport {
		opts.L0CompactionThreshold = bulkL0CompactionThreshold
		opts.L0StopWritesThreshold = bulkL0StopWritesThreshold
	}
	// Compactions in parallel: up to half the CPUs, at least one.
	maxCompactions := max(1, runtime.GOMAXPROCS(0)/2)
	opts.CompactionConcurrencyRange = func() (int, int) { return 1, maxCompactions }
	for i := range opts.Levels {
		l := &opts.Levels[i]
		// Bloom filters (10 bits/key, ~1% false positives) on every level,
		// L0 included: they are built over the key prefix (the entity of
		// versioned keys, the whole key otherwise), so both point gets and
		// SeekPrefixGE state reads skip tables without the entity.
		l.FilterPolicy = bloom.FilterPolicy(10)
		// 16 KiB blocks: fewer index entries and better compression; point
		// reads still touch a single block.
		l.BlockSize = 16 << 10
	}
	opts.TargetFileSizes[0] = 8 << 20 // 8 MiB L0 files, doubling per level (Pebble default growth)
	return opts
}

// Open opens (creating if needed, unless ReadOnly) the store in cfg.Dir.
// It refuses a store whose recorded format version is above FormatCurrent
// (ErrSchemaTooNew) or below FormatMinSupported (ErrSchemaTooOld). A store
// with an older supported format opens, so that migrations.Run can upgrade
// it; until then Views and writes fail with ErrSchemaOutdated.
func Open(cfg Config, log zerolog.Logger) (*DB, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log = log.With().Str("component", "store").Logger()
	opts := pebbleOptions(cfg, log)
	if cfg.FS != nil {
		opts.FS = cfg.FS
	}
	fs := opts.FS
	if fs == nil {
		fs = vfs.Default
	}
	if cfg.MustExist {
		desc, err := pebble.Peek(cfg.Dir, fs)
		if errors.Is(err, os.ErrNotExist) || (err == nil && !desc.Exists) {
			return nil, fmt.Errorf("%w: %s", ErrNoStore, cfg.Dir)
		}
		if err != nil {
			return nil, fmt.Errorf("open store at %s: %w", cfg.Dir, err)
		}
	}
	if cfg.ReadOnly {
		opts.FS = readOnlyFS{fs}
	}
	guard := &diskGuard{fs: fs, dir: cfg.Dir}
	if !cfg.ReadOnly {
		guard.min = cfg.MinFreeBytes
		if err := checkOpenSpace(fs, cfg.Dir, cfg.MinFreeBytes); err != nil {
			return nil, fmt.Errorf("open store at %s: %w", cfg.Dir, err)
		}
	}
	var syncer *pollSyncer
	if !cfg.ReadOnly && cfg.FS == nil && cfg.SyncWrites {
		var serr error
		if syncer, serr = newPollSyncer(); serr != nil {
			syncer = nil
			log.Info().Err(serr).Msg("fsyncs are blocking system calls (readers on a one-CPU node wait for them)")
		} else {
			opts.FS = pollSyncFS{FS: fs, s: syncer}
		}
	}
	bg := newBackgroundErrors(log)
	opts.EventListener = bg.listener()
	pdb, err := openPebble(cfg.Dir, opts, bg)
	if err != nil && syncer != nil {
		syncer.close()
	}
	if isLockHeld(err) {
		return nil, fmt.Errorf("%w: %s (%v)", ErrLocked, cfg.Dir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open pebble at %s: %w", cfg.Dir, err)
	}
	db := &DB{cfg: cfg, log: log, pdb: pdb, views: make(map[*view]struct{}), guard: guard, opts: opts, fs: fs, syncer: syncer}
	v, err := db.readFormatVersion()
	if err == nil {
		err = db.loadAnchor()
	}
	if err == nil {
		err = checkFormat(v, FormatMinSupported, FormatCurrent)
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open store at %s: %w", cfg.Dir, err), db.closePebble())
	}
	db.schema.Store(uint64(v))
	epoch, latest, err := db.readCachePosition()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open store at %s: %w", cfg.Dir, err), db.closePebble())
	}
	db.state = newStateCache(cfg.StateCacheBytes, epoch, latest)
	tm, err := readTrieMeta(db.pdb)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open store at %s: %w", cfg.Dir, err), db.closePebble())
	}
	db.trie.Store(&tm)
	db.nodes = newNodeCache(cfg.TrieCacheBytes)
	db.past = newPastCache(db.state)
	if v != FormatNone && v < FormatCurrent {
		log.Warn().Uint64("stored", uint64(v)).Uint64("binary", uint64(FormatCurrent)).Msg("store format outdated; migrations required")
	}
	log.Info().Str("dir", cfg.Dir).Uint64("format", uint64(v)).Bool("readOnly", cfg.ReadOnly).
		Bool("syncWrites", cfg.SyncWrites).Bool("bulkImport", cfg.BulkImport).Bool("syncsInPoller", syncer != nil).Uint64("minFreeMiB", guard.min>>20).Msg("store opened")
	return db, nil
}

// isLockHeld reports whether Pebble refused to open because its directory
// lock is held: by another process (flock's EAGAIN / EWOULDBLOCK), or by
// this one (Pebble says so in words, without a sentinel).
func isLockHeld(err error) bool {
	return err != nil && (errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK) ||
		strings.Contains(err.Error(), "lock held by current process"))
}

// Close closes the store. Views still open are closed first (and logged:
// callers should close their views). Further calls fail with ErrClosed.
func (db *DB) Close() error {
	// The write side of mu waits for every in-flight operation, writes
	// included (they hold the read side around writeMu).
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return ErrClosed
	}
	db.closed = true
	var errs []error
	db.vmu.Lock()
	defer db.vmu.Unlock()
	if len(db.views) > 0 {
		db.log.Warn().Int("views", len(db.views)).Msg("closing store with open views")
		for v := range db.views {
			errs = append(errs, v.closeSnapshot())
		}
		db.views = nil
	}
	flushed := false
	if !db.cfg.ReadOnly {
		db.persistFetchedAtClose()
		flushed = db.flushAtClose()
	}
	errs = append(errs, db.closePebble())
	if flushed {
		db.removeRecycledWALs()
	}
	db.state.close()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close store: %w", err)
	}
	return nil
}

// SyncsInPoller reports whether the store's fsyncs wait in the Go
// runtime's poller (Linux AIO, pollsync_linux.go) instead of in a blocking
// system call that keeps the goroutine's P.
func (db *DB) SyncsInPoller() bool { return db.syncer != nil }

// closePebble closes Pebble, then the pollSyncer its files sync through.
func (db *DB) closePebble() error {
	err := db.pdb.Close()
	if db.syncer != nil {
		db.syncer.close()
	}
	return err
}

// acquire takes the read side of the close lock; the caller must call
// db.mu.RUnlock when it returns nil.
func (db *DB) acquire() error {
	db.mu.RLock()
	if db.closed {
		db.mu.RUnlock()
		return ErrClosed
	}
	return nil
}

// Sync makes every committed batch durable (fsyncs the WAL). Use it after a
// bulk import run with SyncWrites false.
func (db *DB) Sync() error {
	if err := db.acquire(); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	if db.cfg.ReadOnly {
		return nil
	}
	if err := db.pdb.LogData(nil, pebble.Sync); err != nil {
		return fmt.Errorf("sync store: %w", err)
	}
	return nil
}

// Flush writes the memtables out to sstables and waits for it. Committed
// batches are durable without it (they are in the WAL, which Open replays);
// it only spares the next Open that replay: Pebble keeps up to half a
// memtable (Config.MemtableBytes) of writes in WAL files only, and Open
// replays them, flushes them and waits for the compactions that flush
// starts before it returns. Bulk import calls it at the end; Close calls
// it on a writable store.
func (db *DB) Flush() error {
	if err := db.acquire(); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	if db.cfg.ReadOnly {
		return nil
	}
	if err := db.pdb.Flush(); err != nil {
		return fmt.Errorf("flush store: %w", err)
	}
	return nil
}

// flushAtClose flushes the memtables before a clean close (see Flush)
// only when the filesystem reports room for it: at least MinFreeBytes and
// two memtables free. A flush that hits ENOSPC is retried by Pebble
// forever, and Pebble's Close waits for it; a filesystem that cannot report
// its usage is not flushed. A failure is logged, not returned: nothing
// depends on the flush. It reports whether every write is in sstables
// afterwards, leaving one live write-ahead log (removeRecycledWALs).
func (db *DB) flushAtClose() bool {
	free, err := db.guard.free()
	if err != nil || free < max(db.guard.min, 2*db.cfg.MemtableBytes) {
		return false
	}
	if db.pdb.Metrics().WAL.Size != 0 { // else nothing written since the last flush
		if err := db.pdb.Flush(); err != nil {
			db.log.Warn().Err(err).Msg("flush at close (the next open replays the write-ahead log)")
			return false
		}
	}
	m := db.pdb.Metrics()
	return m.WAL.Files == 1 && m.WAL.Size == 0
}

// writeOpts returns the commit options implementing Config.SyncWrites.
func (db *DB) writeOpts() *pebble.WriteOptions {
	if db.cfg.SyncWrites {
		return pebble.Sync
	}
	return pebble.NoSync
}

// Latest returns the number of the latest block (ErrNotFound without genesis).
func (db *DB) Latest() (uint64, error) {
	if err := db.acquire(); err != nil {
		return 0, err
	}
	defer db.mu.RUnlock()
	return readTag(db.pdb, TagLatest)
}

// FormatVersion returns the format version recorded in the store;
// FormatNone means none is recorded yet (a new, empty store).
func (db *DB) FormatVersion() (FormatVersion, error) {
	if err := db.acquire(); err != nil {
		return 0, err
	}
	defer db.mu.RUnlock()
	return FormatVersion(db.schema.Load()), nil
}

// Anchor returns the store's anchor (the zero Anchor for a store
// initialised from genesis).
func (db *DB) Anchor() Anchor { return *db.anchor.Load() }

// loadAnchor reads the anchor key into db.anchor.
func (db *DB) loadAnchor() error {
	a := new(Anchor)
	val, found, err := getCopy(db.pdb, keyAnchor)
	if err != nil {
		return err
	}
	if found {
		if len(val) != 16 {
			return fmt.Errorf("%w: anchor has %d bytes", ErrCorrupt, len(val))
		}
		a.State, _ = decodeBE8(val[:8], "anchor")
		a.History, _ = decodeBE8(val[8:], "anchor")
	}
	fork, found, err := getCopy(db.pdb, keyFork)
	if err != nil {
		return err
	}
	if found {
		a.Fork = string(fork)
		if db.fork.Load() == nil {
			db.fork.Store(newForkState(a.State, a.Fork))
		}
	}
	db.anchor.Store(a)
	return nil
}

// readCachePosition reads the chain epoch and the latest block (0 without
// a chain) that the state cache starts at.
func (db *DB) readCachePosition() (epoch, latest uint64, err error) {
	if epoch, err = readEpoch(db.pdb); err != nil {
		return 0, 0, err
	}
	latest, err = readTag(db.pdb, TagLatest)
	if isNotFound(err) {
		return epoch, 0, nil
	}
	return epoch, latest, err
}

// readEpoch reads the chain epoch (keyChainEpoch; 0 when absent).
func readEpoch(r reader) (uint64, error) {
	val, found, err := getCopy(r, keyChainEpoch)
	if err != nil || !found {
		return 0, err
	}
	return decodeBE8(val, "chain epoch")
}

// readFormatVersion reads the recorded format version from disk.
func (db *DB) readFormatVersion() (FormatVersion, error) {
	val, found, err := getCopy(db.pdb, keySchemaVersion)
	if err != nil || !found {
		return FormatNone, err
	}
	v, err := decodeBE8(val, "format version")
	return FormatVersion(v), err
}

// checkSchema fails unless the store is at FormatCurrent or is new
// (FormatNone).
func (db *DB) checkSchema() error {
	if v := FormatVersion(db.schema.Load()); v != FormatNone && v != FormatCurrent {
		if v > FormatCurrent {
			return fmt.Errorf("%w: store format %d, binary %d", ErrSchemaTooNew, v, FormatCurrent)
		}
		return fmt.Errorf("%w: store format %d, binary %d", ErrSchemaOutdated, v, FormatCurrent)
	}
	return nil
}

// pebbleLogger routes Pebble's log output to zerolog.
type pebbleLogger struct{ log zerolog.Logger }

func (l pebbleLogger) Infof(format string, args ...any) {
	l.log.Debug().Msgf(format, args...)
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	l.log.Error().Msgf(format, args...)
}

func (l pebbleLogger) Fatalf(format string, args ...any) {
	l.log.Fatal().Msgf(format, args...)
}
