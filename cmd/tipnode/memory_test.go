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

// TestMemoryReturner: every interval, a heap that grew past its level
// after the last return by more than the threshold and more than that
// level is collected and returned; smaller growth (a steady state under
// GOGC 100) is left alone; Stop ends the loop.
func TestMemoryReturner(t *testing.T) {
	clock := chain.NewManualClock(time.Unix(1_700_000_000, 0))
	m := newMemoryReturner(clock, zerolog.Nop())
	var heap atomic.Uint64
	var returned atomic.Int64
	calls := make(chan struct{}, 16) // one per heapBytes call: one per check, two when it returns
	m.heapBytes = func() uint64 {
		calls <- struct{}{}
		return heap.Load()
	}
	const live = 100 << 20
	m.free = func() { returned.Add(1); heap.Store(live) }
	m.Start()
	defer m.Stop()
	var want int64
	for _, tc := range []struct {
		heap    uint64
		returns bool
	}{
		{returnThreshold, false},
		{returnThreshold + 1, true}, // base 0: the threshold applies; the base is now 100 MiB
		{200 << 20, false},          // twice the base: a steady state
		{200<<20 + 1, true},         // past it
		{150 << 20, false},
		{150 << 20, false},
	} {
		heap.Store(tc.heap)
		clock.Advance(m.interval) // Start armed the ticker before returning
		<-calls
		if tc.returns {
			want++
			<-calls
		}
		if got := returned.Load(); got != want {
			t.Fatalf("heap %d MiB: %d returns, want %d", tc.heap>>20, got, want)
		}
	}
	m.Stop()
	if got := returned.Load(); got != want {
		t.Fatalf("%d returns, want %d", got, want)
	}
}
