package chain

import (
	"testing"
	"time"
)

// ManualClock.Advance delivers ticks and fires timers in time order, the
// clock reading each one's time as it is delivered; stopped tickers and
// timers get nothing; a timer of d <= 0 has fired at once.
func TestManualClock(t *testing.T) {
	start := time.Unix(1_000, 0)
	c := NewManualClock(start)
	tick := c.NewTicker(200 * time.Millisecond)
	stopped := c.NewTicker(100 * time.Millisecond)
	stopped.Stop()
	timer := c.NewTimer(500 * time.Millisecond)
	cancelled := c.NewTimer(300 * time.Millisecond)
	cancelled.Stop()
	if d, ok := c.Next(); !ok || d != 500*time.Millisecond || c.Timers() != 1 {
		t.Fatalf("Next %v %v, Timers %d; want 500ms, 1 armed", d, ok, c.Timers())
	}
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	type event struct {
		what     string
		at, read time.Time
	}
	events := make(chan event, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 5 {
			got := <-tick.C()
			events <- event{"tick", got, c.Now()}
		}
	}()
	changed := c.Changed()
	c.Advance(time.Second)
	<-done
	<-changed
	if got := <-timer.C(); got != at(500) {
		t.Fatalf("timer fired at %v, want %v", got, at(500))
	}
	for i, want := range []int{200, 400, 600, 800, 1000} {
		ev := <-events
		if ev.at != at(want) || ev.read.Before(at(want)) {
			t.Fatalf("tick %d at %v (clock %v), want %v", i, ev.at, ev.read, at(want))
		}
	}
	select {
	case <-cancelled.C():
		t.Fatal("a stopped timer fired")
	case <-stopped.C():
		t.Fatal("a stopped ticker ticked")
	default:
	}
	if c.Now() != at(1000) || c.Timers() != 0 {
		t.Fatalf("after Advance: now %v, %d timers armed", c.Now(), c.Timers())
	}
	if _, ok := c.Next(); ok {
		t.Fatal("Next reports a timer after all fired")
	}
	select {
	case <-c.NewTimer(0).C():
	default:
		t.Fatal("a timer of 0 has not fired at once")
	}
	tick.Stop()
	c.Advance(time.Second) // no receiver: must not block on the stopped ticker
}
