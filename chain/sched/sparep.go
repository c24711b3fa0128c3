package sched

import (
	"runtime"
	"sync"
)

// SpareP runs sections of work with a second P on a one-P process
// (GOMAXPROCS 1: a node limited to one CPU). Sections nest and overlap
// (counted: the first raises GOMAXPROCS from 1 to 2, the last lowers it);
// a process with more Ps is left alone. With a nice value above 0, a
// raised section runs on an OS thread of its own at that lower priority,
// kept for the next section, so that a reader's thread waking with work
// preempts it instead of waiting out the kernel's time slice. The zero
// value is ready; Close ends the kept threads. chain.Writer.WithSpareP
// explains why a node needs it.
type SpareP struct {
	mu     sync.Mutex
	n      int        // sections running
	raised bool       // whether the first of them raised GOMAXPROCS
	low    lowThreads // the threads of raised sections
}

// Run runs fn in a section, on a thread lowered by nice (0: on the
// caller's goroutine) when the section raised GOMAXPROCS. A panic in fn
// is raised again here.
func (s *SpareP) Run(nice int, fn func()) {
	s.mu.Lock()
	if s.n == 0 && runtime.GOMAXPROCS(0) == 1 {
		runtime.GOMAXPROCS(2)
		s.raised = true
	}
	s.n++
	low := s.raised && nice > 0
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.n--; s.n == 0 && s.raised {
			runtime.GOMAXPROCS(1)
			s.raised = false
		}
		s.mu.Unlock()
	}()
	if low {
		s.low.run(nice, fn)
		return
	}
	fn()
}

// Close ends the kept idle threads; the ones running a section end after
// it. A later section gets a thread of its own that ends with it.
func (s *SpareP) Close() { s.low.close() }

// lowThreads runs the raised sections (SpareP.Run with a nice value) on
// goroutines each locked for its whole life to an OS thread whose nice
// value is raised: kept idle between sections and reused, so that a section
// does not pay for creating a thread and ending it (a clone and an exit at
// every pre-confirmation, journal write and seal). No other goroutine ever
// runs on such a thread (locked and never unlocked), so the lowered
// priority reaches nothing else; the threads end with their goroutines at
// close (SpareP.Close, at Writer.Stop). There are as many as sections ever
// ran at once (they nest: a pre-confirmation's section waits for the
// writer's journal section). The zero value is ready; after close a section gets a thread of
// its own that ends with it.
type lowThreads struct {
	mu     sync.Mutex
	idle   []*lowThread
	closed bool
}

// lowThread is one kept goroutine and its thread.
type lowThread struct {
	work chan func()
	done chan lowResult
}

// lowResult is how a section's fn ended: its panic value, or whether it
// called runtime.Goexit (which ends the kept goroutine too).
type lowResult struct {
	panicked any
	exited   bool
}

// run runs fn on a low-priority thread (nice raised by nice) and waits for
// it; a panic in fn is raised again here.
func (l *lowThreads) run(nice int, fn func()) {
	l.mu.Lock()
	var t *lowThread
	if n := len(l.idle); n > 0 {
		t, l.idle = l.idle[n-1], l.idle[:n-1]
	}
	l.mu.Unlock()
	if t == nil {
		t = startLowThread(nice)
	}
	t.work <- fn
	r := <-t.done
	if !r.exited {
		l.mu.Lock()
		if l.closed {
			close(t.work) // the goroutine ends, and its thread with it
		} else {
			l.idle = append(l.idle, t)
		}
		l.mu.Unlock()
	}
	if r.panicked != nil {
		panic(r.panicked)
	}
}

// close ends the idle threads; the ones running a section end after it.
func (l *lowThreads) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for _, t := range l.idle {
		close(t.work)
	}
	l.idle = nil
}

// startLowThread starts a goroutine locked to its OS thread, with the
// thread's nice value raised by nice, that runs the functions sent to it.
func startLowThread(nice int) *lowThread {
	t := &lowThread{work: make(chan func()), done: make(chan lowResult, 1)}
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		_ = lowerThreadPriority(nice)
		for fn := range t.work {
			t.runOne(fn)
		}
	}()
	return t
}

// runOne runs fn and reports how it ended on t.done.
func (t *lowThread) runOne(fn func()) {
	returned := false
	defer func() {
		p := recover()
		t.done <- lowResult{panicked: p, exited: !returned && p == nil}
	}()
	fn()
	returned = true
}
