package rpc

import "sync/atomic"

// workerMaxIdle bounds the goroutines a Server keeps parked for later work.
// A websocket message takes one, or two when its method has a goroutine of
// its own (not inline, not HonoursContext), so 128 covers at least 64
// concurrent requests; more come and go as plain goroutines.
const workerMaxIdle = 128

// workers runs functions on goroutines that are kept after their work
// instead of exiting, at most workerMaxIdle of them idle. A goroutine grows
// its stack by copying it (runtime.newstack): a handler that runs the EVM
// needs several times the initial stack, and a fresh goroutine per request
// paid that copying on every request (a tenth of the server's CPU for
// eth_call over a websocket). A kept goroutine keeps its grown stack until
// the garbage collector shrinks it while idle. Idle workers exit when stop
// is closed (Server.Stop).
type workers struct {
	jobs chan func() // unbuffered: a send succeeds only into an idle worker
	idle atomic.Int32
	stop <-chan struct{}
}

func newWorkers(stop <-chan struct{}) *workers {
	return &workers{jobs: make(chan func()), stop: stop}
}

// run calls f on an idle worker, or on a new goroutine when none is idle.
// It never waits.
func (w *workers) run(f func()) {
	select {
	case w.jobs <- f:
	default:
		go w.loop(f)
	}
}

func (w *workers) loop(f func()) {
	for {
		f()
		f = nil // do not keep the job's memory while idle
		if w.idle.Add(1) > workerMaxIdle {
			w.idle.Add(-1)
			return
		}
		select {
		case f = <-w.jobs:
			w.idle.Add(-1)
		case <-w.stop:
			w.idle.Add(-1)
			return
		}
	}
}
