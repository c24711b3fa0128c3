package store

import (
	"errors"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/ethereum/go-ethereum/common"
	"github.com/rs/zerolog"
)

// faultFS wraps a filesystem and, while on, fails every mutation with err
// (ENOSPC for a full disk, EROFS for a read-only filesystem); with sstOnly
// only the creation of and writes to sstables fail (Pebble's WAL and
// manifest work: the flush is what fails, as on a disk that filled up).
type faultFS struct {
	vfs.FS
	err     error
	sstOnly bool
	on      atomic.Bool
	faults  atomic.Int64
}

func (fs *faultFS) fail(name string) error {
	if !fs.on.Load() || (fs.sstOnly && !strings.HasSuffix(name, ".sst")) {
		return nil
	}
	fs.faults.Add(1)
	return &os.PathError{Op: "write", Path: name, Err: fs.err}
}

func (fs *faultFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if err := fs.fail(name); err != nil {
		return nil, err
	}
	f, err := fs.FS.Create(name, c)
	return fs.wrap(name, f), err
}

func (fs *faultFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	if err := fs.fail(name); err != nil {
		return nil, err
	}
	f, err := fs.FS.OpenReadWrite(name, c, opts...)
	return fs.wrap(name, f), err
}

func (fs *faultFS) ReuseForWrite(old, name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if err := fs.fail(name); err != nil {
		return nil, err
	}
	f, err := fs.FS.ReuseForWrite(old, name, c)
	return fs.wrap(name, f), err
}

func (fs *faultFS) MkdirAll(dir string, perm os.FileMode) error {
	if err := fs.fail(dir); err != nil {
		return err
	}
	return fs.FS.MkdirAll(dir, perm)
}

func (fs *faultFS) Link(old, name string) error {
	if err := fs.fail(name); err != nil {
		return err
	}
	return fs.FS.Link(old, name)
}

func (fs *faultFS) Rename(old, name string) error {
	if err := fs.fail(name); err != nil {
		return err
	}
	return fs.FS.Rename(old, name)
}

func (fs *faultFS) Remove(name string) error {
	if err := fs.fail(name); err != nil {
		return err
	}
	return fs.FS.Remove(name)
}

func (fs *faultFS) Lock(name string) (io.Closer, error) {
	if err := fs.fail(name); err != nil {
		return nil, err
	}
	return fs.FS.Lock(name)
}

func (fs *faultFS) wrap(name string, f vfs.File) vfs.File {
	if f == nil {
		return nil
	}
	return &faultFile{File: f, fs: fs, name: name}
}

type faultFile struct {
	vfs.File
	fs   *faultFS
	name string
}

func (f *faultFile) Write(p []byte) (int, error) {
	if err := f.fs.fail(f.name); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.fail(f.name); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}

func (f *faultFile) Sync() error {
	if err := f.fs.fail(f.name); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *faultFile) SyncData() error {
	if err := f.fs.fail(f.name); err != nil {
		return err
	}
	return f.File.SyncData()
}

func (f *faultFile) Preallocate(off, n int64) error {
	if err := f.fs.fail(f.name); err != nil {
		return err
	}
	return f.File.Preallocate(off, n)
}

// memConfig is a small store on fs.
func memConfig(fs vfs.FS) Config {
	cfg := DefaultConfig("/db")
	cfg.FS = fs
	cfg.CacheBytes = 32 << 20
	cfg.MemtableBytes = 8 << 20
	return cfg
}

// The free-space guard: a write that finds less than MinFreeBytes free is
// refused with ErrDiskFull before it starts (nothing of it is written),
// reads go on, DiskFull says why, and writes resume once space is back.
func TestDiskGuardRefusesWrites(t *testing.T) {
	mem := vfs.NewMem()
	mem.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 10 << 30, TotalBytes: 20 << 30})
	db, err := Open(memConfig(mem), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c := newTestChain(t, db, diffOf(map[common.Address]*Account{addr(1): acct(1, 100)}, nil))
	c.add(diffOf(map[common.Address]*Account{addr(1): acct(2, 90)}, nil))
	if db.DiskFull() != nil || db.WritesRefused() != 0 || db.MinFreeBytes() != DefaultMinFreeBytes {
		t.Fatalf("guard before: %v %d %d", db.DiskFull(), db.WritesRefused(), db.MinFreeBytes())
	}
	before := rawDump(t, db)

	mem.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 100 << 20, TotalBytes: 20 << 30})
	b, rcpts := c.makeBlock(2, 0)
	err = db.WriteBlock(&BlockWrite{Block: b, Receipts: rcpts, Diff: diffOf(map[common.Address]*Account{addr(1): acct(3, 80)}, nil)})
	if !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "100 MiB free") || !strings.Contains(err.Error(), "below the minimum 512 MiB") {
		t.Fatalf("write on a full disk: %v", err)
	}
	// A reorg (here onto block 1 with the same block 2) is a write like
	// the others.
	reorg := db.Reorg(1, []*BlockWrite{{Block: b, Receipts: rcpts, Diff: diffOf(map[common.Address]*Account{addr(1): acct(3, 80)}, nil)}})
	for _, w := range []error{db.SetTag(TagSafe, 1), db.UnwindTo(0), reorg} {
		if !errors.Is(w, ErrDiskFull) {
			t.Errorf("other write on a full disk: %v", w)
		}
	}
	if rb, err := db.NewRawBatch(); err != nil {
		t.Fatal(err)
	} else if err := rb.Commit(); !errors.Is(err, ErrDiskFull) {
		t.Errorf("raw batch on a full disk: %v", err)
	}
	if got := rawDump(t, db); got != before {
		t.Fatal("a refused write changed the store")
	}
	if n, err := db.Latest(); err != nil || n != 1 {
		t.Fatalf("read on a full disk: %d %v", n, err)
	}
	withView(t, db, func(v View) {
		if a, err := stateAt(t, v, 1).Account(addr(1)); err != nil || a.Nonce != 2 {
			t.Fatalf("state read on a full disk: %+v %v", a, err)
		}
	})
	if !errors.Is(db.DiskFull(), ErrDiskFull) || db.WritesRefused() != 5 {
		t.Errorf("guard state: %v, %d refused", db.DiskFull(), db.WritesRefused())
	}
	if free, err := db.FreeBytes(); err != nil || free != 100<<20 {
		t.Errorf("FreeBytes %d %v", free, err)
	}

	mem.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 10 << 30, TotalBytes: 20 << 30})
	c.write(b, rcpts, nil)
	if db.DiskFull() != nil {
		t.Errorf("DiskFull after a write passed: %v", db.DiskFull())
	}
}

// Open on a disk with less than MinFreeBytes free fails at once with
// ErrDiskFull; a read-only open works, and MinFreeBytes 0 disables the
// guard.
func TestOpenOnFullDisk(t *testing.T) {
	mem := vfs.NewMem()
	mem.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 10 << 30, TotalBytes: 20 << 30})
	cfg := memConfig(mem)
	db, err := Open(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	newTestChain(t, db, nil)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	mem.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 1 << 20, TotalBytes: 20 << 30})
	if _, err := Open(cfg, zerolog.Nop()); !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "open the store read-only") {
		t.Fatalf("open on a full disk: %v", err)
	}
	ro := cfg
	ro.ReadOnly = true
	db, err = Open(ro, zerolog.Nop())
	if err != nil {
		t.Fatalf("read-only open on a full disk: %v", err)
	}
	if n, err := db.Latest(); err != nil || n != 0 {
		t.Errorf("read-only latest %d %v", n, err)
	}
	db.Close()
	off := cfg
	off.MinFreeBytes = 0
	db, err = Open(off, zerolog.Nop())
	if err != nil {
		t.Fatalf("open with the guard off: %v", err)
	}
	db.Close()
}

// A disk that is really full (ENOSPC) at Open fails fast with ErrDiskFull
// instead of hanging in Pebble's flush retry loop, whether Open's own
// writes fail or only the flush of the replayed WAL does; the abandoned
// flush does not keep retrying.
func TestOpenENOSPCFailsFast(t *testing.T) {
	for _, sstOnly := range []bool{false, true} {
		name := "every write"
		if sstOnly {
			name = "flush only"
		}
		t.Run(name, func(t *testing.T) {
			fs := &faultFS{FS: vfs.NewMem(), err: syscall.ENOSPC, sstOnly: sstOnly}
			cfg := memConfig(fs) // the in-memory fs reports no usage: only ENOSPC tells
			db, err := Open(cfg, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			c := newTestChain(t, db, diffOf(map[common.Address]*Account{addr(1): acct(1, 1)}, nil))
			c.add(nil)
			if err := db.Close(); err != nil { // the WAL holds both blocks, unflushed
				t.Fatal(err)
			}
			fs.on.Store(true)
			start := time.Now()
			_, err = Open(cfg, zerolog.Nop())
			if !errors.Is(err, ErrDiskFull) || !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("open with ENOSPC: %v", err)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("open took %s", d)
			}
			n := fs.faults.Load()
			time.Sleep(200 * time.Millisecond)
			if more := fs.faults.Load() - n; more > 1 {
				t.Errorf("%d more failed writes after Open returned: the flush is still retrying", more)
			}
			t.Logf("failed after %s: %v", time.Since(start), err)
		})
	}
}

// A store on a read-only filesystem opens with ReadOnly (Pebble creates,
// locks and writes nothing) and serves reads; opening it writable fails
// with an error.
func TestReadOnlyFilesystem(t *testing.T) {
	fs := &faultFS{FS: vfs.NewMem(), err: syscall.EROFS}
	cfg := memConfig(fs)
	db, err := Open(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	c := newTestChain(t, db, diffOf(map[common.Address]*Account{addr(1): acct(1, 100)}, nil))
	c.add(diffOf(map[common.Address]*Account{addr(1): acct(2, 90)}, nil))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	fs.on.Store(true)
	if _, err := Open(cfg, zerolog.Nop()); err == nil {
		t.Fatal("writable open on a read-only filesystem succeeded")
	}
	fs.faults.Store(0)
	ro := cfg
	ro.ReadOnly = true
	db, err = Open(ro, zerolog.Nop())
	if err != nil {
		t.Fatalf("read-only open: %v", err)
	}
	defer db.Close()
	withView(t, db, func(v View) {
		if a, err := stateAt(t, v, 1).Account(addr(1)); err != nil || a.Nonce != 2 {
			t.Fatalf("state read: %+v %v", a, err)
		}
	})
	if err := db.WriteBlock(&BlockWrite{Block: c.makeBlockOnly()}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("write: %v", err)
	}
	if n := fs.faults.Load(); n != 0 {
		t.Errorf("the read-only store tried %d writes", n)
	}
}

// On the operating system's filesystem a read-only open changes nothing in
// the directory (Pebble's own lock would create and truncate LOCK): every
// file keeps its size and modification time, and no file appears.
func TestReadOnlyOpenWritesNothing(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultConfig(dir)
	cfg.CacheBytes, cfg.MemtableBytes = 32<<20, 8<<20
	db, err := Open(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	c := newTestChain(t, db, diffOf(map[common.Address]*Account{addr(1): acct(1, 100)}, nil))
	c.add(nil)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	listing := func() map[string]string {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		m := make(map[string]string)
		for _, e := range entries {
			info, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			m[e.Name()] = info.ModTime().String() + " " + info.Mode().String() + " " + strconv.FormatInt(info.Size(), 10)
		}
		return m
	}
	before := listing()
	time.Sleep(10 * time.Millisecond) // a rewrite would show in the modification times
	ro := cfg
	ro.ReadOnly = true
	db, err = Open(ro, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if n, err := db.Latest(); err != nil || n != 1 {
		t.Fatalf("latest %d %v", n, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if after := listing(); !reflect.DeepEqual(before, after) {
		t.Errorf("the read-only open changed the directory:\nbefore %v\nafter  %v", before, after)
	}
}
