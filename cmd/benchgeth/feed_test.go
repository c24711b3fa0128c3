package main

import (
	"testing"
	"time"

	"github.com/tipnode/tipnode/cmd/benchgeth/load"
)

// TestSplitBySwaps: a request is "after" a swap when due within the window
// after it, "before" within the window before the next one, "after seal"
// when that swap opened a block (index 0), "before seal" within the window
// before such a swap, and "rest" otherwise; "mid", of the rest, within the
// window before the midpoint between two swaps.
func TestSplitBySwaps(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	events := []swapEvent{{At: ms(0), Index: 0}, {At: ms(200), Index: 1}, {At: ms(400), Index: 2}}
	samples := []load.Sample{
		{Due: ms(5), Latency: 1 * time.Millisecond},    // after seal (and swap)
		{Due: ms(100), Latency: 2 * time.Millisecond},  // rest, mid (the midpoint itself)
		{Due: ms(70), Latency: 9 * time.Millisecond},   // rest (before the mid window)
		{Due: ms(190), Latency: 3 * time.Millisecond},  // before swap
		{Due: ms(210), Latency: 4 * time.Millisecond},  // after swap
		{Due: ms(300), Latency: 5 * time.Millisecond},  // rest, mid
		{Due: ms(290), Latency: 3 * time.Millisecond},  // rest, mid
		{Due: ms(-50), Latency: 6 * time.Millisecond},  // rest (before the first, outside the window)
		{Due: ms(-10), Latency: 7 * time.Millisecond},  // before swap
		{Due: ms(1000), Latency: 8 * time.Millisecond}, // rest
	}
	sp := splitBySwaps(samples, events, 20*time.Millisecond)
	for _, c := range []struct {
		name string
		got  split
		n    int
		p99  time.Duration
	}{
		{"all", sp.All, 10, 9 * time.Millisecond},
		{"after", sp.AfterSwap, 2, 4 * time.Millisecond},
		{"before", sp.BeforeSwap, 2, 7 * time.Millisecond},
		{"after seal", sp.AfterSeal, 1, 1 * time.Millisecond},
		{"before seal", sp.BeforeSeal, 1, 7 * time.Millisecond},
		{"rest", sp.Rest, 6, 9 * time.Millisecond},
		{"mid", sp.Mid, 3, 5 * time.Millisecond},
	} {
		if c.got.N != c.n || c.got.P99 != c.p99 {
			t.Errorf("%s: n %d p99 %v, want n %d p99 %v", c.name, c.got.N, c.got.P99, c.n, c.p99)
		}
	}
}
