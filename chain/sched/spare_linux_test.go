//go:build linux

package sched

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// mustThreadNice is threadNice, failing t on an error.
func mustThreadNice(t *testing.T) int {
	t.Helper()
	n, err := threadNice()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// niceThreads lists the process's threads whose nice value is above base
// (from /proc/self/task/*/stat, field 19), the main thread left out: when
// a goroutine locked to it exits, the runtime parks that thread for good
// instead of ending it (the process's first thread cannot exit alone), so
// no goroutine runs on it again either.
func niceThreads(t *testing.T, base int) []string {
	t.Helper()
	stats, _ := filepath.Glob("/proc/self/task/*/stat")
	main := filepath.Join("/proc/self/task", strconv.Itoa(os.Getpid()), "stat")
	var over []string
	for _, f := range stats {
		if f == main {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread exited meanwhile
		}
		fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if n, err := strconv.Atoi(fields[16]); err == nil && n > base {
			over = append(over, f+": nice "+fields[16])
		}
	}
	return over
}

// taskNice is the nice value of the process's thread tid, if it exists.
func taskNice(tid int) (int, bool) {
	b, err := os.ReadFile(filepath.Join("/proc/self/task", strconv.Itoa(tid), "stat"))
	if err != nil {
		return 0, false
	}
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	n, err := strconv.Atoi(fields[16])
	return n, err == nil
}

// waitNiceThreads polls niceThreads for up to 5 s until it is empty (a
// thread exits a little after its goroutine) and returns what is left.
func waitNiceThreads(t *testing.T, base int) []string {
	t.Helper()
	over := niceThreads(t, base)
	for deadline := time.Now().Add(5 * time.Second); len(over) > 0 && time.Now().Before(deadline); over = niceThreads(t, base) {
		time.Sleep(10 * time.Millisecond)
	}
	return over
}

// niceSection is SpareP with a fixed nice value, as chain.Writer holds it.
type niceSection struct {
	spare SpareP
	nice  int
}

func (w *niceSection) WithSpareP(fn func()) { w.spare.Run(w.nice, fn) }

// TestSectionLowPriority: on a one-P process a spare-P section runs on a
// thread whose nice value is raised by nice, the caller's thread
// keeps its own, the lowered thread is kept for the next section (the same
// thread runs it) and ends at close, and a panic in the section reaches the
// caller (the thread kept), a runtime.Goexit ends the section's goroutine
// and its thread only. Off (0) or with more than one P, the section runs as
// it is.
func TestSectionLowPriority(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	base := mustThreadNice(t)
	if base+5 > 19 {
		t.Skipf("the test runs at nice %d: no room to lower it by 5", base)
	}
	if over := waitNiceThreads(t, base); len(over) > 0 {
		t.Fatalf("threads above nice %d before the test: %v", base, over)
	}
	w := &niceSection{nice: 5}
	var in, tid1, tid2 int
	w.WithSpareP(func() { in, tid1 = mustThreadNice(t), unix.Gettid() })
	if in != base+5 {
		t.Errorf("in a section: nice %d, want %d", in, base+5)
	}
	if n := mustThreadNice(t); n != base {
		t.Errorf("the caller's thread after the section: nice %d, want %d", n, base)
	}
	w.WithSpareP(func() { tid2 = unix.Gettid() })
	if tid2 != tid1 {
		t.Errorf("the second section ran on thread %d, the first on %d: want the kept thread", tid2, tid1)
	}
	if n, ok := taskNice(tid1); !ok || n != base+5 {
		t.Errorf("between sections: the section's thread %d exists %v, nice %d; want kept, at %d", tid1, ok, n, base+5)
	}

	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("panic in a section: recovered %v, want boom", r)
			}
		}()
		w.WithSpareP(func() { panic("boom") })
	}()
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Errorf("after a panicking section: GOMAXPROCS %d, want 1", n)
	}
	w.WithSpareP(func() { tid2 = unix.Gettid() })
	if tid2 != tid1 {
		t.Errorf("after a panic the section ran on thread %d, want the kept %d", tid2, tid1)
	}

	w.WithSpareP(runtime.Goexit) // ends the kept goroutine, not the caller
	if over := waitNiceThreads(t, base); len(over) > 0 {
		t.Errorf("the thread of a section that called Goexit outlived it: %v", over)
	}
	w.WithSpareP(func() { in = mustThreadNice(t) })
	if in != base+5 {
		t.Errorf("after a Goexit: nice %d in a section, want %d", in, base+5)
	}
	w.spare.Close()
	if over := waitNiceThreads(t, base); len(over) > 0 {
		t.Errorf("a lowered thread outlived close: %v", over)
	}
	w.WithSpareP(func() { in = mustThreadNice(t) })
	if in != base+5 {
		t.Errorf("after close: nice %d in a section, want %d", in, base+5)
	}
	if over := waitNiceThreads(t, base); len(over) > 0 {
		t.Errorf("after close, a section's thread outlived it: %v", over)
	}

	for _, c := range []struct {
		name  string
		procs int
		nice  int
	}{{"off", 1, 0}, {"three Ps", 3, 5}} {
		runtime.GOMAXPROCS(c.procs)
		w := &niceSection{nice: c.nice}
		w.WithSpareP(func() { in = mustThreadNice(t) })
		if in != base {
			t.Errorf("%s: nice %d in a section, want %d", c.name, in, base)
		}
	}
}

// BenchmarkSection measures a raised spare-P section on a one-P process
// (GOMAXPROCS 2 and back, the section on a low-priority thread) with an
// empty body: on a kept thread (lowThreads), and on a thread of its own
// that ends with the section (after close: what every section cost before
// threads were kept).
func BenchmarkSection(b *testing.B) {
	for _, c := range []struct {
		name  string
		fresh bool
	}{{"kept", false}, {"fresh", true}} {
		b.Run(c.name, func(b *testing.B) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // the benchmark sets its -cpu count before each run
			w := &niceSection{nice: 5}
			if c.fresh {
				w.spare.Close()
			}
			defer w.spare.Close()
			cpu0 := processCPU(b)
			for i := 0; i < b.N; i++ {
				w.WithSpareP(func() {})
			}
			b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the process's user and system CPU time so far.
func processCPU(tb testing.TB) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
