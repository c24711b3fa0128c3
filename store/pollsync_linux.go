package store

import (
	"errors"
	"os"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

// Linux AIO (io_setup(2), io_submit(2)): an fsync submitted as an iocb runs
// in a kernel worker and signals an eventfd when done.
const (
	aioCmdFsync  = 2      // IOCB_CMD_FSYNC
	aioCmdFdsync = 3      // IOCB_CMD_FDSYNC
	aioFlagResFD = 1 << 0 // IOCB_FLAG_RESFD: signal iocb.resfd on completion
	// aioMaxInFlight bounds the syncs waiting at once (the context's ring);
	// more fall back to a plain blocking sync.
	aioMaxInFlight = 64
)

// aioIocb is the kernel's struct iocb (linux/aio_abi.h) on little-endian
// 64-bit machines.
// Fields tipnode never sets are blank, named in their comments.
type aioIocb struct {
	data   uint64 // aio_data: returned in the event
	_      uint32 // aio_key
	_      int32  // aio_rw_flags
	opcode uint16 // aio_lio_opcode
	_      int16  // aio_reqprio
	fildes uint32 // aio_fildes
	_      uint64 // aio_buf
	_      uint64 // aio_nbytes
	_      int64  // aio_offset
	_      uint64 // aio_reserved2
	flags  uint32 // aio_flags
	resfd  uint32 // aio_resfd
}

// aioEvent is the kernel's struct io_event.
type aioEvent struct {
	data uint64 // the iocb's aio_data
	obj  uint64
	res  int64 // the fsync's result: 0 or -errno
	res2 int64
}

// pollSyncer runs fsyncs through Linux AIO so that the goroutine waiting
// for one waits in the Go runtime's network poller, not in a blocking
// system call. A goroutine in a system call keeps its P until the runtime's
// sysmon retakes it (up to 10 ms when sysmon is idle): on a node limited to
// one CPU (GOMAXPROCS 1) every read would wait for the disk behind a
// synced commit. Waiting on the eventfd through the poller releases the P
// at once. Safe for concurrent use; each wait takes an eventfd of its own
// (kept for the next one).
type pollSyncer struct {
	ctx uint64 // aio_context_t

	mu     sync.Mutex
	next   uint64           // the next request's id
	done   map[uint64]int64 // results reaped from the ring, not yet taken by their waiter
	idle   []*os.File       // eventfds free for the next wait
	closed bool
}

// newPollSyncer sets up an AIO context; an error means the kernel (or a
// seccomp filter) refuses AIO and syncs stay plain.
func newPollSyncer() (*pollSyncer, error) {
	s := &pollSyncer{done: make(map[uint64]int64)}
	if _, _, e := unix.Syscall(unix.SYS_IO_SETUP, aioMaxInFlight, uintptr(unsafe.Pointer(&s.ctx)), 0); e != 0 {
		return nil, e
	}
	return s, nil
}

// errNoPollSync says a sync could not be submitted (context full, the
// file's filesystem without AIO fsync, closed): the caller syncs plainly.
var errNoPollSync = errors.New("store: fsync not submitted through AIO")

// sync makes fd's written data durable like fsync (or fdatasync when
// dataOnly), waiting in the poller. errNoPollSync means nothing was
// submitted and the caller must sync itself.
func (s *pollSyncer) sync(fd uintptr, dataOnly bool) error {
	ev, id, err := s.begin()
	if err != nil {
		return err
	}
	cb := &aioIocb{data: id, opcode: aioCmdFsync, fildes: uint32(fd), flags: aioFlagResFD, resfd: uint32(ev.Fd())}
	if dataOnly {
		cb.opcode = aioCmdFdsync
	}
	n, _, e := unix.Syscall(unix.SYS_IO_SUBMIT, uintptr(s.ctx), 1, uintptr(unsafe.Pointer(&cb)))
	runtime.KeepAlive(cb)
	if e != 0 || n != 1 {
		s.release(ev)
		return errNoPollSync
	}
	var buf [8]byte
	_, rerr := ev.Read(buf[:]) // parks in the poller until the kernel signals completion
	res := s.take(id)
	s.release(ev)
	if rerr != nil {
		// The eventfd failed (it cannot in practice): the submitted
		// sync's result is unknown, so report the failure.
		return rerr
	}
	if res < 0 {
		return syscall.Errno(-res)
	}
	return nil
}

// begin takes an idle eventfd (or opens one) and a request id.
func (s *pollSyncer) begin() (*os.File, uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, 0, errNoPollSync
	}
	s.next++
	if n := len(s.idle); n > 0 {
		ev := s.idle[n-1]
		s.idle = s.idle[:n-1]
		return ev, s.next, nil
	}
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, 0, errNoPollSync
	}
	return os.NewFile(uintptr(fd), "store-fsync-eventfd"), s.next, nil // non-blocking: os registers it with the poller
}

// release returns an eventfd for the next wait.
func (s *pollSyncer) release(ev *os.File) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = ev.Close()
		return
	}
	s.idle = append(s.idle, ev)
}

// take returns the result of request id, reaping the ring's completed
// events (its own among them: the kernel fills the event before it signals
// the eventfd) and keeping the others' for their waiters.
func (s *pollSyncer) take(id uint64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if res, ok := s.done[id]; ok {
			delete(s.done, id)
			return res
		}
		var evs [aioMaxInFlight]aioEvent
		var zero unix.Timespec // do not wait: the event is there
		n, _, e := unix.Syscall6(unix.SYS_IO_GETEVENTS, uintptr(s.ctx), 0, uintptr(len(evs)),
			uintptr(unsafe.Pointer(&evs[0])), uintptr(unsafe.Pointer(&zero)), 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 || n == 0 {
			return -int64(syscall.EIO) // the kernel lost the event it signalled: treat the sync as failed
		}
		for _, ev := range evs[:n] {
			s.done[ev.data] = ev.res
		}
	}
}

// close releases the context and the eventfds; syncs after it fall back to
// plain ones. Call it once no sync is in flight (after Pebble closed).
func (s *pollSyncer) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	for _, ev := range s.idle {
		_ = ev.Close()
	}
	s.idle = nil
	_, _, _ = unix.Syscall(unix.SYS_IO_DESTROY, uintptr(s.ctx), 0, 0)
}

var _ vfs.FS = pollSyncFS{}

// pollSyncFS is a vfs.FS whose files (and directories) sync through a
// pollSyncer, falling back to their own Sync when it cannot submit.
type pollSyncFS struct {
	vfs.FS
	s *pollSyncer
}

func (fs pollSyncFS) wrap(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return f, err
	}
	return pollSyncFile{File: f, s: fs.s}, nil
}

func (fs pollSyncFS) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.wrap(fs.FS.Create(name, cat))
}

func (fs pollSyncFS) ReuseForWrite(oldname, newname string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.wrap(fs.FS.ReuseForWrite(oldname, newname, cat))
}

func (fs pollSyncFS) OpenReadWrite(name string, cat vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	return fs.wrap(fs.FS.OpenReadWrite(name, cat, opts...))
}

func (fs pollSyncFS) OpenDir(name string) (vfs.File, error) { return fs.wrap(fs.FS.OpenDir(name)) }

// Unwrap returns the wrapped filesystem (Pebble looks through wrappers
// with it).
func (fs pollSyncFS) Unwrap() vfs.FS { return fs.FS }

// pollSyncFile is a file of a pollSyncFS.
type pollSyncFile struct {
	vfs.File
	s *pollSyncer
}

func (f pollSyncFile) Sync() error {
	if fd := f.Fd(); fd != vfs.InvalidFd {
		if err := f.s.sync(fd, false); !errors.Is(err, errNoPollSync) {
			return err
		}
	}
	return f.File.Sync()
}

func (f pollSyncFile) SyncData() error {
	if fd := f.Fd(); fd != vfs.InvalidFd {
		if err := f.s.sync(fd, true); !errors.Is(err, errNoPollSync) {
			return err
		}
	}
	return f.File.SyncData()
}
