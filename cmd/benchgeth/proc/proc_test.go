package proc

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	for _, tc := range []struct {
		line string
		want time.Duration
		ok   bool
	}{
		{"1234 (geth) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0 100 0 0", 3 * time.Second, true},
		{"99 (a) b) (c) R 1 1 1 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 1 0 0", 100 * time.Millisecond, true},
		{"99 (short) R 1 1", 0, false},
		{"no parenthesis at all", 0, false},
		{"1 (x) S 1 1 1 0 -1 0 0 0 0 0 x 3 0", 0, false},
	} {
		got, err := parseStatCPU([]byte(tc.line))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%q: %v, %v; want %v ok=%v", tc.line, got, err, tc.want, tc.ok)
		}
	}
}

func TestParseRSS(t *testing.T) {
	got, err := parseRSS([]byte("Name:\tgeth\nVmPeak:\t 100 kB\nVmRSS:\t   2048 kB\nThreads: 3\n"))
	if err != nil || got != 2048<<10 {
		t.Fatalf("%d, %v", got, err)
	}
	if _, err := parseRSS([]byte("Name:\tgeth\n")); err == nil {
		t.Fatal("missing VmRSS accepted")
	}
}

func TestSelf(t *testing.T) {
	if _, err := CPUTime(0); err != nil {
		t.Fatal(err)
	}
	if rss, err := RSS(os.Getpid()); err != nil || rss <= 0 {
		t.Fatalf("rss %d, %v", rss, err)
	}
}

func TestDirSize(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a"), make([]byte, 100), 0o644)
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "b"), make([]byte, 23), 0o644)
	if n, err := DirSize(dir); err != nil || n != 123 {
		t.Fatalf("%d, %v", n, err)
	}
}

func TestCPUList(t *testing.T) {
	got, err := ParseCPUList("0,2-4")
	if err != nil || !reflect.DeepEqual(got, []int{0, 2, 3, 4}) {
		t.Fatalf("%v, %v", got, err)
	}
	if CPUList(got) != "0,2,3,4" {
		t.Fatal(CPUList(got))
	}
	for _, bad := range []string{"", "a", "3-1", "-1"} {
		if _, err := ParseCPUList(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseCPUBusy(t *testing.T) {
	stat := "cpu  10 10 10 10 10 0 10 0 0 0\ncpu0 1 2 3 100 7 5 6 8 0 0\ncpu1 10 20 30 1000 70 50 60 80 0 0\nintr 1 2\n"
	got, err := parseCPUBusy([]byte(stat), []int{1})
	if want := 250 * time.Second / userHZ; err != nil || got != want {
		t.Fatalf("cpu1: %v, %v; want %v", got, err, want)
	}
	got, err = parseCPUBusy([]byte(stat), []int{0, 1})
	if want := 275 * time.Second / userHZ; err != nil || got != want {
		t.Fatalf("cpu0,1: %v, %v; want %v", got, err, want)
	}
	if _, err := parseCPUBusy([]byte(stat), []int{2}); err == nil {
		t.Fatal("missing cpu accepted")
	}
	if _, err := CPUBusy([]int{0}); err != nil {
		t.Fatal(err)
	}
}
