package pending

import (
	"sync"
	"time"
)

// Clock is the time source of the pool and the sequencer. Production code
// uses SystemClock; tests use ManualClock and never sleep.
type Clock interface {
	Now() time.Time
	NewTicker(d time.Duration) Ticker
}

// Ticker delivers ticks like time.Ticker.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// SystemClock is the wall clock.
type SystemClock struct{}

func (SystemClock) Now() time.Time { return time.Now() }

func (SystemClock) NewTicker(d time.Duration) Ticker { return sysTicker{time.NewTicker(d)} }

type sysTicker struct{ t *time.Ticker }

func (t sysTicker) C() <-chan time.Time { return t.t.C }
func (t sysTicker) Stop()               { t.t.Stop() }

// ManualClock is a Clock driven by Advance. Its tickers have unbuffered
// channels: Advance hands every due tick to the receiver before returning,
// so after Advance the sequencer loop has at least started handling them
// (use Sequencer.Sync to wait until it has finished). Safe for concurrent
// use.
type ManualClock struct {
	mu      sync.Mutex
	now     time.Time
	tickers []*manualTicker
}

// NewManualClock returns a clock reading start.
func NewManualClock(start time.Time) *ManualClock { return &ManualClock{now: start} }

func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *ManualClock) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("pending: non-positive ticker interval")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTicker{c: make(chan time.Time), d: d, next: c.now.Add(d), stop: make(chan struct{})}
	c.tickers = append(c.tickers, t)
	return t
}

// Advance moves the clock forward by d, delivering every tick that falls due
// in order (a 1 s advance over a 200 ms ticker delivers five ticks, each
// received before the next is sent). Ticks to a stopped ticker are dropped.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	target := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		var due *manualTicker
		for _, t := range c.tickers {
			if !t.stopped() && !t.next.After(target) && (due == nil || t.next.Before(due.next)) {
				due = t
			}
		}
		if due == nil {
			c.now = target
			c.mu.Unlock()
			return
		}
		at := due.next
		due.next = at.Add(due.d)
		c.now = at
		c.mu.Unlock()
		select {
		case due.c <- at:
		case <-due.stop:
		}
	}
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
