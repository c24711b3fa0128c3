package pending_test

import (
	"math/big"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/tipnode/tipnode/pending/pendingtest"
	"github.com/tipnode/tipnode/pending/stream"
)

// tokenRuntime is a minimal ERC-20 transfer(to, amount) without checks:
// calldata is to (32 bytes) then amount (32 bytes); balances live at slot
// = address; it emits Transfer(caller, to, amount).
func tokenRuntime() []byte {
	sig := crypto.Keccak256([]byte("Transfer(address,address,uint256)"))
	code := []byte{
		0x33, 0x54, // CALLER SLOAD
		0x60, 0x20, 0x35, // PUSH1 32 CALLDATALOAD
		0x90, 0x03, // SWAP1 SUB: bal - amount
		0x33, 0x55, // CALLER SSTORE
		0x5f, 0x35, 0x80, 0x54, // PUSH0 CALLDATALOAD DUP1 SLOAD
		0x60, 0x20, 0x35, 0x01, // PUSH1 32 CALLDATALOAD ADD
		0x90, 0x55, // SWAP1 SSTORE
		0x60, 0x20, 0x35, 0x5f, 0x52, // mem[0] = amount
		0x5f, 0x35, 0x33, // to, caller
		0x7f, // PUSH32 sig
	}
	code = append(code, sig...)
	return append(code, 0x60, 0x20, 0x5f, 0xa3, 0x00) // PUSH1 32 PUSH0 LOG3 STOP
}

// readerDelays runs an open-loop "reader" on its own goroutine until stop
// is closed: a request is due every period and takes work of CPU; it
// records how late each one started (the queueing delay a read sees). It
// waits runnable (yielding), so it starts as soon as it gets a P.
func readerDelays(stop <-chan struct{}, out chan<- []time.Duration, period, work time.Duration) {
	lat := make([]time.Duration, 0, 4096)
	due := time.Now()
	for {
		select {
		case <-stop:
			out <- lat
			return
		default:
		}
		due = due.Add(period)
		for time.Now().Before(due) {
			runtime.Gosched() // waits runnable: a timer would add its own ~1 ms granularity
		}
		lat = append(lat, time.Since(due))
		for t0 := time.Now(); time.Since(t0) < work; {
		}
	}
}

// BenchmarkSwapReaderDelay runs the sequencer on one P (GOMAXPROCS=1, as
// tipnode pinned to one core) or two through pre-confirmation intervals of 20
// transactions (10 ERC-20 transfers with a log, 10 ether transfers: the
// side-by-side benchmark's feed at 100 tx/s), with a stream publisher
// attached, while a reader goroutine runs requests due every 100 µs, each
// 20 µs of CPU. It reports how late the reader's requests started during
// the intervals (max and p99 over all of them: a swap that holds the P
// shows here; median-swap-worst is the median over the intervals of the
// worst delay in each), plus the allocations and GC cycles per swap. Seal
// ticks are not measured. procs=1/idle is the same reader without the
// sequencer (a baseline: on a shared machine the OS's own scheduling
// delays show in it too).
//
// With one P, a goroutine blocked in a syscall keeps the P until the
// syscall returns or sysmon retakes it (sysmon sleeps up to 10 ms when
// idle): the pre-confirmation journal's fsync (Pebble's WAL sync), not the
// interval's CPU work (about 0.3 ms for 20 transactions; the stream's
// encoding was 0.5 ms more, mostly the receipts root over the whole block,
// before the roots were derived incrementally: BenchmarkSnapshotRoots), is
// what holds the reader. With two Ps the reader
// runs during the fsync.
func BenchmarkSwapReaderDelay(b *testing.B) {
	for _, c := range []struct {
		name  string
		procs int
		idle  bool
	}{{"procs=1/idle", 1, true}, {"procs=1", 1, false}, {"procs=2", 2, false}} {
		b.Run(c.name, func(b *testing.B) { benchSwapReaderDelay(b, c.procs, c.idle) })
	}
}

func benchSwapReaderDelay(b *testing.B, np int, idle bool) {
	const senders = 20
	cfg := stream.DefaultPublisherConfig()
	h := pendingtest.New(b, pendingtest.Options{Keys: senders + 1, Publisher: &cfg})
	_, token := h.Deploy(senders, tokenRuntime(), 200_000)
	h.Seal()
	procs := runtime.GOMAXPROCS(np)
	defer runtime.GOMAXPROCS(procs)

	var (
		all        []time.Duration
		allocs     uint64
		bytes      uint64
		gcs        uint32
		swaps      int
		ms0, ms1   runtime.MemStats
		data       = make([]byte, 64)
		out        = make(chan []time.Duration)
		swapWorsts []time.Duration
	)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for k := 0; k < senders && !idle; k++ {
			if k%2 == 0 {
				to := common.Address{0xbe, byte(k)}
				copy(data[12:32], to[:])
				new(big.Int).SetUint64(uint64(i + 1)).FillBytes(data[32:64])
				h.Send(k, &token, new(big.Int), 60_000, slices.Clone(data))
			} else {
				h.Transfer(k)
			}
		}
		num := h.Mgr.Current().Number()
		stop := make(chan struct{})
		go readerDelays(stop, out, 100*time.Microsecond, 20*time.Microsecond)
		time.Sleep(2 * time.Millisecond) // the reader runs before the tick
		runtime.ReadMemStats(&ms0)
		b.StartTimer()
		if idle {
			time.Sleep(6 * time.Millisecond)
		} else {
			h.Tick(1)
		}
		b.StopTimer()
		runtime.ReadMemStats(&ms1)
		time.Sleep(2 * time.Millisecond) // and after it (the publisher's encoding)
		close(stop)
		lat := <-out
		if !idle && h.Mgr.Current().Number() != num {
			continue // a seal tick
		}
		if n := len(h.Mgr.Current().NewTransactions()); n != senders && !idle {
			b.Fatalf("pre-confirmed %d of %d", n, senders)
		}
		swaps++
		allocs += ms1.Mallocs - ms0.Mallocs
		bytes += ms1.TotalAlloc - ms0.TotalAlloc
		gcs += ms1.NumGC - ms0.NumGC
		all = append(all, lat...)
		swapWorsts = append(swapWorsts, slices.Max(lat))
	}
	if swaps == 0 || len(all) == 0 {
		return
	}
	slices.Sort(all)
	slices.Sort(swapWorsts)
	b.ReportMetric(float64(all[len(all)-1].Microseconds()), "max-µs")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(swapWorsts[len(swapWorsts)/2].Microseconds()), "median-swap-worst-µs")
	b.ReportMetric(float64(allocs)/float64(swaps), "allocs/swap")
	b.ReportMetric(float64(bytes)/float64(swaps), "B/swap")
	b.ReportMetric(float64(gcs)/float64(swaps), "gc/swap")
}
