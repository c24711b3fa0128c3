package store

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"
)

// diskGuard implements Config.MinFreeBytes: a write is refused with
// ErrDiskFull before it starts when the filesystem holding the store has
// less free space than the minimum, so a writer stops cleanly (nothing
// half-written, reads unaffected) instead of running Pebble into ENOSPC,
// where a failed WAL write is fatal and a failed flush retries forever.
type diskGuard struct {
	fs  vfs.FS
	dir string
	min uint64

	unsupported atomic.Bool // the filesystem cannot report its free space
	refused     atomic.Uint64
	last        atomic.Pointer[error] // the refusal of the latest write, nil once one passes
}

// free returns the bytes available to the store (unprivileged).
func (g *diskGuard) free() (uint64, error) {
	u, err := g.fs.GetDiskUsage(g.dir)
	if err != nil {
		return 0, err
	}
	return u.AvailBytes, nil
}

// check refuses a write when free space is below the minimum. A filesystem
// that cannot report its usage (an in-memory one) is not guarded.
func (g *diskGuard) check() error {
	if g.min == 0 || g.unsupported.Load() {
		return nil
	}
	free, err := g.free()
	if errors.Is(err, vfs.ErrUnsupported) {
		g.unsupported.Store(true)
		return nil
	}
	if err != nil {
		return fmt.Errorf("free space of %s: %w", g.dir, err)
	}
	if free < g.min {
		g.refused.Add(1)
		err := fmt.Errorf("%w: %s free on the filesystem of %s, below the minimum %s: writes stopped (reads go on)",
			ErrDiskFull, mib(free), g.dir, mib(g.min))
		g.last.Store(&err)
		return err
	}
	g.last.Store(nil)
	return nil
}

func mib(n uint64) string { return fmt.Sprintf("%d MiB", n>>20) }

// DiskFull returns the ErrDiskFull refusal of the latest write, or nil when
// the latest write passed the free-space guard (or none was refused).
func (db *DB) DiskFull() error {
	if p := db.guard.last.Load(); p != nil {
		return *p
	}
	return nil
}

// WritesRefused counts writes refused by the free-space guard.
func (db *DB) WritesRefused() uint64 { return db.guard.refused.Load() }

// FreeBytes returns the free space of the filesystem holding the store
// (vfs.ErrUnsupported for an in-memory one).
func (db *DB) FreeBytes() (uint64, error) { return db.guard.free() }

// MinFreeBytes returns the configured minimum free space (0: not guarded).
func (db *DB) MinFreeBytes() uint64 { return db.guard.min }

// checkOpenSpace refuses to open a store for writing on a filesystem with
// less free space than the minimum: Pebble writes at open (a new WAL, the
// manifest, a flush of the replayed WAL) and would hang retrying on a full
// disk. dir may not exist yet: its nearest existing parent is checked.
func checkOpenSpace(fs vfs.FS, dir string, min uint64) error {
	if min == 0 {
		return nil
	}
	path := dir
	for {
		if _, err := fs.Stat(path); err == nil {
			break
		}
		parent := fs.PathDir(path)
		if parent == path {
			return nil
		}
		path = parent
	}
	u, err := fs.GetDiskUsage(path)
	if errors.Is(err, vfs.ErrUnsupported) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("free space of %s: %w", path, err)
	}
	if u.AvailBytes < min {
		return fmt.Errorf("%w: %s free on the filesystem of %s, below the minimum %s: free space, lower the minimum, or open the store read-only",
			ErrDiskFull, mib(u.AvailBytes), dir, mib(min))
	}
	return nil
}

// isNoSpace reports whether err is the filesystem's "no space left".
func isNoSpace(err error) bool { return errors.Is(err, syscall.ENOSPC) }

// backgroundErrors receives Pebble's background errors (failed flushes and
// compactions). It logs them at most once a second (Pebble retries a failed
// flush without backoff), and while Open runs it turns a full disk into a
// fast failure of Open instead of Pebble's endless retry.
type backgroundErrors struct {
	log zerolog.Logger

	mu         sync.Mutex
	lastLog    time.Time
	suppressed int

	opening  atomic.Bool
	openFail chan error // buffered 1: the first ENOSPC while opening
	failOnce sync.Once
}

func newBackgroundErrors(log zerolog.Logger) *backgroundErrors {
	return &backgroundErrors{log: log, openFail: make(chan error, 1)}
}

// parked is never closed: a Pebble goroutine that hit ENOSPC during an
// abandoned Open waits here instead of retrying forever.
var parked = make(chan struct{})

func (b *backgroundErrors) handle(err error) {
	b.mu.Lock()
	now := time.Now()
	if now.Sub(b.lastLog) >= time.Second {
		b.log.Error().Err(err).Int("suppressed", b.suppressed).Msg("pebble background error")
		b.lastLog, b.suppressed = now, 0
	} else {
		b.suppressed++
	}
	b.mu.Unlock()
	if b.opening.Load() && isNoSpace(err) {
		b.failOnce.Do(func() { b.openFail <- err })
		// Open has given up on this instance; without this, its flush
		// would retry (and fail) in a tight loop for the life of the
		// process. The goroutine and the instance's memory are leaked:
		// the caller is expected to exit.
		<-parked
	}
}

func (b *backgroundErrors) listener() *pebble.EventListener {
	return &pebble.EventListener{BackgroundError: b.handle}
}

// openPebble opens Pebble and fails fast with ErrDiskFull when the disk is
// full: an ENOSPC from Open itself, or one from the flush of the replayed
// WAL that Open waits for (which Pebble would retry forever).
func openPebble(dir string, opts *pebble.Options, bg *backgroundErrors) (*pebble.DB, error) {
	type result struct {
		db  *pebble.DB
		err error
	}
	done := make(chan result, 1)
	bg.opening.Store(true)
	go func() {
		db, err := pebble.Open(dir, opts)
		done <- result{db, err}
	}()
	select {
	case r := <-done:
		bg.opening.Store(false)
		if r.err != nil && isNoSpace(r.err) {
			return nil, fmt.Errorf("%w: opening %s: %w", ErrDiskFull, dir, r.err)
		}
		return r.db, r.err
	case err := <-bg.openFail:
		return nil, fmt.Errorf("%w: opening %s: Pebble cannot flush its write-ahead log: %w", ErrDiskFull, dir, err)
	}
}
