package chain

import (
	"sync"
	"time"
)

// Clock is the time source of the node's background loops: the pool and
// the sequencer (pending) tick, the follower (chain/follow) arms timers for
// polling and backoff. Production code uses SystemClock; tests use
// ManualClock and never sleep.
type Clock interface {
	Now() time.Time
	NewTicker(d time.Duration) Ticker
	NewTimer(d time.Duration) Timer
}

// Ticker delivers ticks like time.Ticker.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// Timer fires once on C, like time.Timer.
type Timer interface {
	C() <-chan time.Time
	Stop()
}

// SystemClock is the wall clock.
type SystemClock struct{}

func (SystemClock) Now() time.Time { return time.Now() }

func (SystemClock) NewTicker(d time.Duration) Ticker { return sysTicker{time.NewTicker(d)} }

func (SystemClock) NewTimer(d time.Duration) Timer { return sysTimer{time.NewTimer(d)} }

type sysTicker struct{ t *time.Ticker }

func (t sysTicker) C() <-chan time.Time { return t.t.C }
func (t sysTicker) Stop()               { t.t.Stop() }

type sysTimer struct{ t *time.Timer }

func (t sysTimer) C() <-chan time.Time { return t.t.C }
func (t sysTimer) Stop()               { t.t.Stop() }

// ManualClock is a Clock driven by Advance. Safe for concurrent use.
//
// Tickers have unbuffered channels: Advance hands every due tick to the
// receiver before going on, so after Advance the loop has at least started
// handling them (sequencer.Sequencer.Sync waits until it has finished).
// Timers have a buffered channel and fire (never blocking Advance) when
// the clock reaches their deadline. Timers, Next and Changed let a test
// wait for a loop to arm a timer before advancing.
type ManualClock struct {
	mu      sync.Mutex
	now     time.Time
	tickers []*manualTicker
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

// NewTicker returns a ticker every d (d must be positive).
func (c *ManualClock) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("chain: non-positive ticker interval")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTicker{c: make(chan time.Time), d: d, next: c.now.Add(d), stop: make(chan struct{})}
	c.tickers = append(c.tickers, t)
	return t
}

// NewTimer returns a timer firing at Now()+d (at once when d <= 0).
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

// Advance moves the clock forward by d, delivering every tick and firing
// every timer that falls due, in time order (a 1 s advance over a 200 ms
// ticker delivers five ticks, each received before the next is sent; the
// clock reads each tick's time while it is delivered). Ticks to a stopped
// ticker are dropped.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	target := c.now.Add(d)
	for {
		var tick *manualTicker
		for _, t := range c.tickers {
			if !t.stopped() && !t.next.After(target) && (tick == nil || t.next.Before(tick.next)) {
				tick = t
			}
		}
		timer := -1
		for i, t := range c.timers {
			if !t.at.After(target) && (timer < 0 || t.at.Before(c.timers[timer].at)) {
				timer = i
			}
		}
		switch {
		case timer >= 0 && (tick == nil || !tick.next.Before(c.timers[timer].at)):
			t := c.timers[timer]
			c.timers = append(c.timers[:timer], c.timers[timer+1:]...)
			c.now = t.at
			t.c <- t.at // buffered, fires once
			c.notify()
		case tick != nil:
			at := tick.next
			tick.next = at.Add(tick.d)
			c.now = at
			c.mu.Unlock()
			select {
			case tick.c <- at:
			case <-tick.stop:
			}
			c.mu.Lock()
		default:
			c.now = target
			c.notify()
			return
		}
	}
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
// stopped or fired, or the clock advanced).
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

type manualTicker struct {
	c    chan time.Time
	d    time.Duration
	next time.Time
	once sync.Once
	stop chan struct{}
}

func (t *manualTicker) C() <-chan time.Time { return t.c }
func (t *manualTicker) Stop()               { t.once.Do(func() { close(t.stop) }) }
func (t *manualTicker) stopped() bool {
	select {
	case <-t.stop:
		return true
	default:
		return false
	}
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
