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

// TestSpareWhen: NeedsSpareP follows the condition set by SetSpareWhen
// (true without one); WithSpareP always raises.
func TestSpareWhen(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	w := &Writer{}
	if !w.NeedsSpareP() {
		t.Fatal("without SetSpareWhen: NeedsSpareP false, want true")
	}
	need := false
	w.SetSpareWhen(func() bool { return need })
	for _, c := range []bool{false, true, false} {
		need = c
		if got := w.NeedsSpareP(); got != c {
			t.Fatalf("need %v: NeedsSpareP %v", c, got)
		}
	}
	w.WithSpareP(func() {
		if n := runtime.GOMAXPROCS(0); n != 2 {
			t.Errorf("WithSpareP without the need: GOMAXPROCS %d in the section, want 2", n)
		}
	})
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Fatalf("GOMAXPROCS %d after the section, want 1", n)
	}
}
