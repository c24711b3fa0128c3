package store

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestCloseGuardWaitsForInflight(t *testing.T) {
	var g closeGuard
	first, second := g.enter(), g.enter() // two readers in flight
	if !first || !second {
		t.Fatal("enter on an open guard failed")
	}
	done := make(chan bool, 1)
	go func() { done <- g.close() }()
	for !g.isClosed() {
		time.Sleep(time.Millisecond)
	}
	if g.enter() {
		t.Fatal("enter succeeded after close began")
	}
	g.exit()
	select {
	case <-done:
		t.Fatal("close returned with an operation in flight")
	case <-time.After(20 * time.Millisecond):
	}
	g.exit()
	if ok := <-done; !ok {
		t.Fatal("first close returned false")
	}
	if g.close() {
		t.Fatal("second close returned true")
	}
	var idle closeGuard
	if !idle.close() || idle.close() {
		t.Fatal("close of an idle guard: want true, then false")
	}
}

// TestCloseGuardConcurrent: no operation is ever inside the guard after a
// close returned, and exactly one of several concurrent closes wins.
func TestCloseGuardConcurrent(t *testing.T) {
	for round := 0; round < 50; round++ {
		var (
			g        closeGuard
			returned atomic.Bool
			wins     atomic.Int32
			wg       sync.WaitGroup
		)
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for g.enter() {
					if returned.Load() {
						t.Error("an operation entered after close returned")
					}
					g.exit()
				}
			}()
		}
		for i := 0; i < 3; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(time.Duration(i) * 100 * time.Microsecond)
				if g.close() {
					returned.Store(true)
					wins.Add(1)
				}
			}()
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("round %d: %d closes won, want 1", round, wins.Load())
		}
	}
}
