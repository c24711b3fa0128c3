package main

import (
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
)

func TestMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		mib, caches, want int64
		fails             bool
	}{
		{0, 256 << 20, 256<<20 + 1<<30, false},
		{0, 0, 1 << 30, false},
		{-1, 256 << 20, math.MaxInt64, false},
		{768, 256 << 20, 768 << 20, false},
		{63, 0, 0, true},
	} {
		got, err := memoryLimit(tc.mib, tc.caches)
		if (err != nil) != tc.fails || got != tc.want {
			t.Errorf("memoryLimit(%d, %d) = %d, %v; want %d (error %v)", tc.mib, tc.caches, got, err, tc.want, tc.fails)
		}
	}
}

// TestMemoryReturner: every interval, free heap memory above the
// threshold is returned; below it nothing is done; Stop ends the loop.
func TestMemoryReturner(t *testing.T) {
	clock := chain.NewManualClock(time.Unix(1_700_000_000, 0))
	m := newMemoryReturner(clock, zerolog.Nop())
	var free atomic.Uint64
	var returned atomic.Int64
	checked := make(chan struct{}, 16)
	m.freeBytes = func() uint64 {
		defer func() { checked <- struct{}{} }()
		return free.Load()
	}
	m.free = func() { returned.Add(1); free.Store(0) }
	m.Start()
	defer m.Stop()
	tick := func() { // Start armed the ticker before returning
		clock.Advance(m.interval)
		<-checked
	}
	free.Store(returnThreshold)
	tick()
	if returned.Load() != 0 {
		t.Fatal("returned memory at the threshold")
	}
	free.Store(returnThreshold + 1)
	tick()
	if returned.Load() != 1 || free.Load() != 0 {
		t.Fatalf("%d returns above the threshold, want 1", returned.Load())
	}
	tick()
	if returned.Load() != 1 {
		t.Fatal("returned again with nothing free")
	}
	m.Stop()
}
