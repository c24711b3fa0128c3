package main

import (
	"fmt"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
)

// Memory settings of a serving process (--memory.limit, --memory.gcpercent).
const (
	// defaultGCPercent lets the heap grow to 5x its live data between
	// collections: a serving node's live heap is small (tens of MiB) and
	// every request allocates, so at Go's 100 collections cost a few % of
	// every request's CPU; the soft memory limit bounds the heap either way.
	defaultGCPercent = 400
	// importGCPercent is tipnode import's target: its live heap is small
	// (about 50 MiB on the 1M-slot benchmark chain) and it allocates for
	// every node and transaction; at 600 the import's collections cost
	// about 8 % less of its CPU than at 100 (about 850 instead of 660 MiB
	// of RSS on that chain).
	importGCPercent = 600
	// memoryHeadroom is what the automatic soft limit allows on top of the
	// Go-heap caches (--cache.state): requests in flight, batches, the
	// websockets' queues (--rpc.maxoutput), pending state.
	memoryHeadroom int64 = 1 << 30
	// returnInterval is how often the returner looks at the heap;
	// returnThreshold is the least growth it hands back to the system.
	returnInterval  = 5 * time.Second
	returnThreshold = 64 << 20
)

// memoryLimit is the Go soft memory limit (bytes) of a serving process:
// limitMiB when positive, none when negative, and when 0 the automatic one:
// the Go-heap caches (heapCaches: the state cache; Pebble's block cache
// lives outside the Go heap) plus memoryHeadroom.
func memoryLimit(limitMiB, heapCaches int64) (int64, error) {
	switch {
	case limitMiB < 0:
		return math.MaxInt64, nil
	case limitMiB == 0:
		return heapCaches + memoryHeadroom, nil
	case limitMiB < 64:
		return 0, fmt.Errorf("--memory.limit %d MiB: want at least 64 (0 = automatic, -1 = none)", limitMiB)
	}
	return limitMiB << 20, nil
}

// memoryReturner hands memory the Go heap took for a burst (a big batch, a
// burst of simulations) back to the system soon after, instead of keeping
// it until later garbage collections shrink the heap goal (on a quiet node
// that can take minutes): every interval, when the heap holds (objects,
// garbage included, plus free memory not returned) more than threshold —
// and more than it did after the last return — above what it held after
// the last return, it collects and returns the free memory
// (debug.FreeOSMemory). In a steady state the heap stays under twice its
// live size (GOGC 100) and nothing is done; the soft memory limit
// (debug.SetMemoryLimit) bounds the heap under load.
type memoryReturner struct {
	clock     chain.Clock
	interval  time.Duration
	threshold uint64
	heapBytes func() uint64 // the heap's memory not returned to the system
	free      func()        // collects and returns it
	log       zerolog.Logger

	base uint64 // heapBytes after the last return (loop goroutine only)

	startOnce, stopOnce sync.Once
	quit, done          chan struct{}
}

func newMemoryReturner(clock chain.Clock, log zerolog.Logger) *memoryReturner {
	return &memoryReturner{
		clock: clock, interval: returnInterval, threshold: returnThreshold,
		heapBytes: heapRetained, free: debug.FreeOSMemory,
		log:  log.With().Str("component", "memory").Logger(),
		quit: make(chan struct{}), done: make(chan struct{}),
	}
}

// heapRetained reads the heap memory not returned to the system (objects,
// live or garbage, free and unused spans) without stopping the world
// (runtime/metrics, unlike runtime.ReadMemStats).
func heapRetained() uint64 {
	s := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
	}
	metrics.Read(s)
	var n uint64
	for _, v := range s {
		if v.Value.Kind() == metrics.KindUint64 {
			n += v.Value.Uint64()
		}
	}
	return n
}

// Start runs the loop until Stop.
func (m *memoryReturner) Start() {
	m.startOnce.Do(func() {
		t := m.clock.NewTicker(m.interval)
		go func() {
			defer close(m.done)
			defer t.Stop()
			for {
				select {
				case <-m.quit:
					return
				case <-t.C():
					m.check()
				}
			}
		}()
	})
}

// check returns the memory when the heap grew past its level after the
// last return by more than the threshold and more than that level.
func (m *memoryReturner) check() {
	n := m.heapBytes()
	if n <= m.base+max(m.threshold, m.base) {
		return
	}
	m.free()
	m.base = m.heapBytes()
	m.log.Debug().Uint64("heapBytes", n).Uint64("afterBytes", m.base).Msg("returned heap memory to the system")
}

// Stop ends the loop (after Start) and waits for it.
func (m *memoryReturner) Stop() {
	m.stopOnce.Do(func() {
		close(m.quit)
		m.startOnce.Do(func() { close(m.done) })
		<-m.done
	})
}

// setGCPercent applies a --memory.gcpercent value (0: GOGC as the
// environment sets it) and returns what restores the previous target; a
// negative value is refused.
func setGCPercent(percent int) (restore func(), err error) {
	if percent < 0 {
		return nil, fmt.Errorf("--memory.gcpercent %d: want 0 (GOGC from the environment) or more", percent)
	}
	if percent == 0 {
		return func() {}, nil
	}
	prev := debug.SetGCPercent(percent)
	return func() { debug.SetGCPercent(prev) }, nil
}
