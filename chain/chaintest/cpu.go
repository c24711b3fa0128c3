package chaintest

import (
	"syscall"
	"testing"
	"time"
)

// ProcessCPU is this process's user and system CPU time so far: benchmarks
// report its growth per operation, whatever goroutine did the work (on a
// shared machine the wall time says little). Package chain's own tests
// cannot import this package (it imports chain) and rpc/rpctest keeps its
// own (it imports none of our packages).
func ProcessCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
