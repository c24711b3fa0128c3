package store

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// newTestPollSyncer returns a pollSyncer, skipping when the kernel refuses AIO.
func newTestPollSyncer(t testing.TB) *pollSyncer {
	t.Helper()
	s, err := newPollSyncer()
	if err != nil {
		t.Skipf("Linux AIO unavailable here (%v): syncs stay plain", err)
	}
	t.Cleanup(s.close)
	return s
}

// TestPollSyncWaitsInPoller checks the point of the pollSyncer: while the
// kernel syncs, the waiting goroutine is parked in the network poller ("IO
// wait"), not in a system call holding its P. With GOMAXPROCS 1 the test's
// own goroutine observes it, which it could not do if the sync held the
// only P.
func TestPollSyncWaitsInPoller(t *testing.T) {
	s := newTestPollSyncer(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	dir := t.TempDir()
	for attempt, size := 0, 16<<20; attempt < 4; attempt, size = attempt+1, size*2 {
		f, err := os.Create(filepath.Join(dir, "data"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(bytes.Repeat([]byte{byte(attempt + 1)}, size)); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- s.sync(f.Fd(), true) }()
		seen := map[string]bool{} // the syncing goroutine's states, as observed
	watch:
		for {
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("sync: %v", err)
				}
				break watch
			default:
			}
			if st := syncState(); st != "" {
				seen[st] = true
			}
			runtime.Gosched()
		}
		_ = f.Close()
		if seen["IO wait"] {
			return
		}
		if seen["syscall"] {
			t.Fatalf("syncing %d MiB: the syncing goroutine was seen in a system call (states %v), never waiting in the poller", size>>20, seen)
		}
	}
	t.Skip("every sync finished before the test could look at it")
}

// syncState returns the scheduling state of the goroutine running
// pollSyncer.sync, or "" when none does.
func syncState() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !strings.Contains(g, "store.(*pollSyncer).sync(") {
			continue
		}
		head := g[:strings.IndexByte(g, '\n')] // goroutine N [state, N minutes]:
		st := head[strings.IndexByte(head, '[')+1 : strings.IndexByte(head, ']')]
		if i := strings.IndexByte(st, ','); i >= 0 {
			st = st[:i]
		}
		return st
	}
	return ""
}

// TestPollSyncConcurrent runs syncs of many files at once: each waiter
// gets its own result (reaped by whichever waiter read the ring), and the
// eventfds are reused afterwards.
func TestPollSyncConcurrent(t *testing.T) {
	s := newTestPollSyncer(t)
	dir := t.TempDir()
	const files, rounds = 16, 20
	var wg sync.WaitGroup
	errs := make(chan error, files*rounds)
	for i := range files {
		wg.Go(func() {
			f, err := os.Create(filepath.Join(dir, strings.Repeat("f", i+1)))
			if err != nil {
				errs <- err
				return
			}
			defer f.Close()
			for r := range rounds {
				if _, err := f.Write([]byte{byte(r)}); err != nil {
					errs <- err
					return
				}
				errs <- s.sync(f.Fd(), r%2 == 0)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(s.done) != 0 {
		t.Errorf("%d reaped results never taken", len(s.done))
	}
	if len(s.idle) == 0 || len(s.idle) > files {
		t.Errorf("%d idle eventfds after %d concurrent waiters", len(s.idle), files)
	}
}

// TestPollSyncFallsBack: a sync the kernel refuses to submit (a closed
// descriptor; after close) says so with errNoPollSync, and the file's own
// Sync then reports the error.
func TestPollSyncFallsBack(t *testing.T) {
	s := newTestPollSyncer(t)
	f, err := os.Create(filepath.Join(t.TempDir(), "x"))
	if err != nil {
		t.Fatal(err)
	}
	fd := f.Fd()
	if err := s.sync(fd, false); err != nil {
		t.Fatalf("open file: %v", err)
	}
	_ = f.Close()
	if err := s.sync(fd, false); err != errNoPollSync {
		t.Fatalf("closed descriptor: %v, want errNoPollSync", err)
	}
	s.close()
	g, err := os.Create(filepath.Join(t.TempDir(), "y"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := s.sync(g.Fd(), false); err != errNoPollSync {
		t.Fatalf("after close: %v, want errNoPollSync", err)
	}
}

// TestOpenSyncsThroughPoller: a writable store on the operating system's
// filesystem with synced writes gets the pollSyncFS, and its synced commits
// go through it.
func TestOpenSyncsThroughPoller(t *testing.T) {
	newTestPollSyncer(t) // skips without AIO
	cfg := DefaultConfig(t.TempDir())
	cfg.CacheBytes, cfg.MemtableBytes = 8<<20, 1<<20
	db, err := Open(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.syncer == nil {
		t.Fatal("no pollSyncer on a synced store")
	}
	if _, ok := db.opts.FS.(pollSyncFS); !ok {
		t.Fatalf("Pebble's filesystem is %T", db.opts.FS)
	}
	before := db.syncer.next
	if err := db.Sync(); err != nil {
		t.Fatal(err)
	}
	if db.syncer.next == before {
		t.Fatal("a synced commit did not sync through the poller")
	}
}

// BenchmarkSync compares a plain fdatasync with one through the poller on
// the same file (one byte appended before each).
func BenchmarkSync(b *testing.B) {
	for _, poll := range []bool{false, true} {
		name := "plain"
		if poll {
			name = "poller"
		}
		b.Run(name, func(b *testing.B) {
			var s *pollSyncer
			if poll {
				s = newTestPollSyncer(b)
			}
			f, err := os.Create(filepath.Join(b.TempDir(), "x"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			for b.Loop() {
				if _, err := f.Write([]byte{1}); err != nil {
					b.Fatal(err)
				}
				if poll {
					err = s.sync(f.Fd(), true)
				} else {
					err = unix.Fdatasync(int(f.Fd()))
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
