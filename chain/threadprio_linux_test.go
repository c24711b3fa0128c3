//go:build linux

package chain

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
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

// TestSectionLowPriority: on a one-P process a spare-P section runs on a
// thread whose nice value is raised by SectionNice, the caller's thread
// keeps its own, the lowered thread exits with the section (no goroutine
// runs on it afterwards), and a panic in the section reaches the caller.
// Off (0) or with more than one P, the section runs as it is.
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
	w := &Writer{sectionNice: 5}
	var in int
	w.WithSpareP(func() { in = mustThreadNice(t) })
	if in != base+5 {
		t.Errorf("in a section: nice %d, want %d", in, base+5)
	}
	if n := mustThreadNice(t); n != base {
		t.Errorf("the caller's thread after the section: nice %d, want %d", n, base)
	}
	if over := waitNiceThreads(t, base); len(over) > 0 {
		t.Errorf("a lowered thread outlived its section: %v", over)
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
	if over := waitNiceThreads(t, base); len(over) > 0 {
		t.Errorf("a lowered thread outlived its panicking section: %v", over)
	}

	for _, c := range []struct {
		name  string
		procs int
		nice  int
	}{{"off", 1, 0}, {"three Ps", 3, 5}} {
		runtime.GOMAXPROCS(c.procs)
		w := &Writer{sectionNice: c.nice}
		w.WithSpareP(func() { in = mustThreadNice(t) })
		if in != base {
			t.Errorf("%s: nice %d in a section, want %d", c.name, in, base)
		}
	}
}
