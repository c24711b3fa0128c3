package chain

import (
	"runtime"
	"sync"
	"testing"
)

// TestWithSpareP: on a one-P process a section runs with two Ps, nested
// and overlapping sections keep them until the last one ends, and a
// process with more Ps is left alone.
func TestWithSpareP(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	w := &Writer{}
	w.WithSpareP(func() {
		if n := runtime.GOMAXPROCS(0); n != 2 {
			t.Fatalf("in a section: GOMAXPROCS %d, want 2", n)
		}
		w.WithSpareP(func() {})
		if n := runtime.GOMAXPROCS(0); n != 2 {
			t.Fatalf("after a nested section: GOMAXPROCS %d, want 2", n)
		}
	})
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Fatalf("after the sections: GOMAXPROCS %d, want 1", n)
	}

	// Overlapping sections on several goroutines: two Ps until the last.
	inside, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.WithSpareP(func() {
				inside <- struct{}{}
				<-release
				if n := runtime.GOMAXPROCS(0); n != 2 {
					t.Errorf("overlapping section: GOMAXPROCS %d, want 2", n)
				}
			})
		}()
	}
	for i := 0; i < 4; i++ {
		<-inside
	}
	for i := 0; i < 4; i++ {
		release <- struct{}{}
	}
	wg.Wait()
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Fatalf("after overlapping sections: GOMAXPROCS %d, want 1", n)
	}

	runtime.GOMAXPROCS(3)
	w.WithSpareP(func() {
		if n := runtime.GOMAXPROCS(0); n != 3 {
			t.Fatalf("with 3 Ps: GOMAXPROCS %d in a section, want 3", n)
		}
	})
	if n := runtime.GOMAXPROCS(0); n != 3 {
		t.Fatalf("with 3 Ps: GOMAXPROCS %d after a section, want 3", n)
	}
}

// TestSpareWhen: with SetSpareWhen, WithSparePIfBusy raises only when its
// condition holds at the start, and otherwise runs on the caller's
// goroutine with the one P; WithSpareP always raises.
func TestSpareWhen(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	w := &Writer{}
	need := false
	w.SetSpareWhen(func() bool { return need })
	for _, c := range []struct {
		need  bool
		procs int
	}{{false, 1}, {true, 2}, {false, 1}} {
		need = c.need
		ran := false
		w.WithSparePIfBusy(func() {
			ran = true
			if n := runtime.GOMAXPROCS(0); n != c.procs {
				t.Errorf("need %v: GOMAXPROCS %d in the section, want %d", c.need, n, c.procs)
			}
		})
		if !ran {
			t.Fatalf("need %v: the section did not run", c.need)
		}
		if n := runtime.GOMAXPROCS(0); n != 1 {
			t.Fatalf("need %v: GOMAXPROCS %d after the section, want 1", c.need, n)
		}
	}
	w.WithSpareP(func() {
		if n := runtime.GOMAXPROCS(0); n != 2 {
			t.Errorf("WithSpareP without the need: GOMAXPROCS %d in the section, want 2", n)
		}
	})
}
