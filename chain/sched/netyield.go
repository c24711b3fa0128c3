package sched

import (
	"os"
	"runtime"
	"syscall"
)

// NetYield gives the goroutines waiting for the network their turn during
// long CPU work on a one-P process (GOMAXPROCS 1). runtime.Gosched is no
// such turn there: it puts the goroutine on the global run queue, and the
// scheduler takes it from there again before it polls the network, so a
// request that arrived meanwhile waits for the whole of the work. Yield
// instead parks the goroutine until the runtime's next network poll: it
// makes a pipe of its own readable and waits for that in the poller, which
// reports it together with whatever requests arrived. One goroutine at a
// time: the sequencer's loop, or the writer's goroutine running a seal the
// loop waits for (chain.Writer.Seal's yield).
type NetYield struct {
	r, w *os.File
	rc   syscall.RawConn
	one  [1]byte
	buf  [64]byte // drains the pipe, a byte a yield
}

// NewNetYield opens the pipe; on an error the caller keeps a nil
// *NetYield, whose Yield is runtime.Gosched.
func NewNetYield() (*NetYield, error) {
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
	return &NetYield{r: r, w: w, rc: rc, one: [1]byte{1}}, nil
}

// Yield parks until the next network poll has run, then lets the
// goroutines that poll readied run first (runtime.Gosched alone when y is
// nil or its pipe fails).
func (y *NetYield) Yield() {
	if y != nil {
		written := false
		_ = y.rc.Read(func(fd uintptr) bool {
			if !written {
				// Readable from now on: the poller sees it at its next
				// poll, and the goroutine waits for that.
				_, err := y.w.Write(y.one[:])
				written = err == nil
				return !written
			}
			_, err := syscall.Read(int(fd), y.buf[:])
			return err != syscall.EAGAIN
		})
	}
	// The poll readies this goroutine and the requests that arrived
	// together, this one first (the runtime's ready list is in reverse
	// order of the events, and the pipe's is the latest): without Gosched
	// the requests would wait for the caller's next run of work too.
	// Gosched puts it on the global run queue, taken after the local one
	// (but for one schedule in 61).
	runtime.Gosched()
}

// Close closes the pipe (nothing when y is nil).
func (y *NetYield) Close() {
	if y != nil {
		y.r.Close()
		y.w.Close()
	}
}
