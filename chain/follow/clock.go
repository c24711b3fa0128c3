package follow

import (
	"sync"
	"time"
)

// Clock is the follower's time source: polling, reconnect backoff, progress
// lines and the metrics' durations. Production uses SystemClock; tests use
// ManualClock and never sleep.
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
}

// Timer fires once on C, like time.Timer.
type Timer interface {
	C() <-chan time.Time
	Stop()
}

// SystemClock is the wall clock.
type SystemClock struct{}

func (SystemClock) Now() time.Time { return time.Now() }

func (SystemClock) NewTimer(d time.Duration) Timer { return sysTimer{time.NewTimer(d)} }

type sysTimer struct{ t *time.Timer }

func (t sysTimer) C() <-chan time.Time { return t.t.C }
func (t sysTimer) Stop()               { t.t.Stop() }

// ManualClock is a Clock driven by Advance. Timers fire (buffered, never
// blocking Advance) when the clock reaches their deadline. Changed lets a
// test wait for the follower to arm a timer before advancing. Safe for
// concurrent use.
type ManualClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*manualTimer
	changed chan struct{}
}

// NewManualClock returns a clock reading start.
func NewManualClock(start time.Time) *ManualClock {
	return &ManualClock{now: start, changed: make(chan struct{})}
}

func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *ManualClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{clock: c, c: make(chan time.Time, 1), at: c.now.Add(d)}
	if d <= 0 {
		t.c <- c.now
		return t
	}
	c.timers = append(c.timers, t)
	c.notify()
	return t
}

// Advance moves the clock forward by d and fires every timer due.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	keep := c.timers[:0]
	for _, t := range c.timers {
		if t.at.After(c.now) {
			keep = append(keep, t)
			continue
		}
		t.c <- t.at
	}
	clear(c.timers[len(keep):])
	c.timers = keep
	c.notify()
}

// Timers is the number of armed timers.
func (c *ManualClock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Next returns how long until the earliest armed timer fires (ok false:
// none is armed).
func (c *ManualClock) Next() (d time.Duration, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, t := range c.timers {
		if left := t.at.Sub(c.now); i == 0 || left < d {
			d, ok = left, true
		}
	}
	return d, ok
}

// Changed returns a channel closed at the next change (a timer armed,
// stopped or fired).
func (c *ManualClock) Changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// notify wakes Changed waiters; c.mu is held.
func (c *ManualClock) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}

type manualTimer struct {
	clock *ManualClock
	c     chan time.Time
	at    time.Time
}

func (t *manualTimer) C() <-chan time.Time { return t.c }

func (t *manualTimer) Stop() {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.timers {
		if x == t {
			c.timers = append(c.timers[:i], c.timers[i+1:]...)
			c.notify()
			return
		}
	}
}
