package pending

import (
	"os"
	"runtime"
	"syscall"
)

// netYield gives the goroutines waiting for the network their turn during
// long CPU work on a one-P process (GOMAXPROCS 1). runtime.Gosched is no
// such turn there: it puts the goroutine on the global run queue, and the
// scheduler takes it from there again before it polls the network, so a
// request that arrived meanwhile waits for the whole of the work. yield
// instead parks the goroutine until the runtime's next network poll: it
// makes a pipe of its own readable and waits for that in the poller, which
// reports it together with whatever requests arrived. One goroutine at a
// time (the sequencer's loop).
type netYield struct {
	r, w *os.File
	rc   syscall.RawConn
	one  [1]byte
	buf  [64]byte // drains the pipe, a byte a yield
}

// newNetYield opens the pipe; an error means yield falls back to
// runtime.Gosched.
func newNetYield() (*netYield, error) {
	r, w, err := os.Pipe() // both ends non-blocking and in the poller
	if err != nil {
		return nil, err
	}
	rc, err := r.SyscallConn()
	if err != nil {
		r.Close()
		w.Close()
		return nil, err
	}
	return &netYield{r: r, w: w, rc: rc, one: [1]byte{1}}, nil
}

// yield parks until the next network poll has run (runtime.Gosched when y
// is nil or its pipe fails).
func (y *netYield) yield() {
	if y == nil {
		runtime.Gosched()
		return
	}
	written, parked := false, false
	err := y.rc.Read(func(fd uintptr) bool {
		if !written {
			// Readable from now on: the poller sees it at its next poll,
			// and the goroutine waits for that.
			_, err := y.w.Write(y.one[:])
			written = err == nil
			return !written
		}
		parked = true
		_, err := syscall.Read(int(fd), y.buf[:])
		return err != syscall.EAGAIN
	})
	if err != nil || !parked {
		runtime.Gosched()
	}
}

// close closes the pipe.
func (y *netYield) close() {
	if y != nil {
		y.r.Close()
		y.w.Close()
	}
}
