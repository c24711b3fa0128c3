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

// Memory settings of a serving process (--memory.limit).
const (
	// memoryHeadroom is what the automatic soft limit allows on top of the
	// Go-heap caches (--cache.state): requests in flight, batches, the
	// websockets' queues (--rpc.maxoutput), pending state.
	memoryHeadroom int64 = 1 << 30
	// returnInterval is how often the returner looks at the heap's free
	// memory; returnThreshold is the free, not yet returned memory above
	// which it hands it back to the system.
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

// memoryReturner hands memory the Go heap freed back to the system soon
// after a burst (a big batch, a burst of simulations) instead of keeping
// it until the next garbage collections shrink the heap goal: every
// interval, when more than threshold bytes of heap are free and not yet
// returned, it collects and returns them (debug.FreeOSMemory). The soft
// memory limit (debug.SetMemoryLimit) bounds the heap under load; this
// brings resident memory back down once the load ends.
type memoryReturner struct {
	clock     chain.Clock
	interval  time.Duration
	threshold uint64
	freeBytes func() uint64 // free heap memory not returned to the system
	free      func()        // returns it
	log       zerolog.Logger

	startOnce, stopOnce sync.Once
	quit, done          chan struct{}
}

func newMemoryReturner(clock chain.Clock, log zerolog.Logger) *memoryReturner {
	return &memoryReturner{
		clock: clock, interval: returnInterval, threshold: returnThreshold,
		freeBytes: heapFreeBytes, free: debug.FreeOSMemory,
		log:  log.With().Str("component", "memory").Logger(),
		quit: make(chan struct{}), done: make(chan struct{}),
	}
}

// heapFreeBytes reads the heap's free, unreturned memory without stopping
// the world (runtime/metrics, unlike runtime.ReadMemStats).
func heapFreeBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
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

// check returns the free memory when it passed the threshold.
func (m *memoryReturner) check() {
	if n := m.freeBytes(); n > m.threshold {
		m.free()
		m.log.Debug().Uint64("freeBytes", n).Msg("returned free heap memory to the system")
	}
}

// Stop ends the loop (after Start) and waits for it.
func (m *memoryReturner) Stop() {
	m.stopOnce.Do(func() {
		close(m.quit)
		m.startOnce.Do(func() { close(m.done) })
		<-m.done
	})
}
