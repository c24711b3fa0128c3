package rpc

import (
	"sync"
	"testing"
	"time"
)

// waitIdle waits until w has n idle workers.
func waitIdle(t *testing.T, w *workers, n int32) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for w.idle.Load() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d idle workers, want %d", w.idle.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestWorkersReuseBoundAndStop(t *testing.T) {
	stop := make(chan struct{})
	w := newWorkers(stop)

	// A finished worker parks and takes the next job: one idle after many
	// sequential jobs, not one per job (a job may rarely find the previous
	// worker counted idle but not parked yet and start a second one).
	for range 20 {
		done := make(chan struct{})
		w.run(func() { close(done) })
		<-done
		for deadline := time.Now().Add(5 * time.Second); w.idle.Load() == 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("a finished worker did not go idle")
			}
		}
		time.Sleep(time.Millisecond)
	}
	if n := w.idle.Load(); n > 2 {
		t.Fatalf("%d idle workers after 20 sequential jobs: not reused", n)
	}

	// More concurrent jobs than the bound: all run at once (run never
	// waits), and at most workerMaxIdle stay afterwards.
	n := workerMaxIdle + 10
	var started, finished sync.WaitGroup
	started.Add(n)
	finished.Add(n)
	release := make(chan struct{})
	for range n {
		w.run(func() {
			defer finished.Done()
			started.Done()
			<-release
		})
	}
	started.Wait()
	close(release)
	finished.Wait()
	waitIdle(t, w, workerMaxIdle)

	// Stop ends the idle workers; a job after it still runs.
	close(stop)
	waitIdle(t, w, 0)
	done := make(chan struct{})
	w.run(func() { close(done) })
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("job after stop did not run")
	}
}
