package node_test

import (
	"bytes"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/tipnode/tipnode/pending/pendingtest"
	"github.com/tipnode/tipnode/rpc/rpctest"
)

// slotRuntime: with 32 bytes of calldata returns SLOAD(calldata[0:32]);
// with 64 bytes stores calldata[32:64] at slot calldata[0:32].
var slotRuntime = common.FromHex("366040146013576000355460005260206000f35b6020356000355500")

// benchSlots is the number of slots the readers read and the feeder writes.
const benchSlots = 1000

// BenchmarkPendingReads: eth_getStorageAt and eth_call (one SLOAD) over HTTP
// at `latest` and at `pending` (parallel callers, keep-alive) on a sequencer
// node while a feeder adds 20 transactions every 200 ms (wall clock), each
// writing one of the slots read, and pre-confirms them (the ManualClock
// advanced one interval): a snapshot swap every 200 ms, a seal every ten,
// ~100 pre-confirmed transactions in the average snapshot. Reports the
// process CPU per call (server, client and the feeder: compare the tags,
// whose feed is the same), p99 of the calls started within 20 ms after a
// swap, within 20 ms before one (while the sequencer executes the
// interval's transactions) and of the others. With -cpu 1 (one P, as a
// node pinned to one core) it shows whether the sequencer's work holds up
// the readers.
func BenchmarkPendingReads(b *testing.B) {
	for _, method := range []string{"storage", "call"} {
		for _, tag := range []string{"latest", "pending"} {
			b.Run(method+"/"+tag, func(b *testing.B) { benchPendingReads(b, method, tag) })
		}
	}
}

func benchPendingReads(b *testing.B, method, tag string) {
	e := newEnvWith(b, envOptions{})
	if err := e.Pool.Add(e.Tx(0, nil, big.NewInt(0), 200_000, pendingtest.InitCode(slotRuntime))); err != nil {
		b.Fatal(err)
	}
	e.Seal()
	contract := crypto.CreateAddress(e.Accs[0].Address, 0)
	slot := func(i int) common.Hash { return common.BigToHash(big.NewInt(int64(i))) }
	bodies := make([][]byte, benchSlots)
	for i := range bodies {
		if method == "storage" {
			bodies[i] = []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"eth_getStorageAt","params":["%s","%s","%s"]}`, contract.Hex(), slot(i).Hex(), tag))
		} else {
			bodies[i] = []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":"%s","input":"%s"},"%s"]}`, contract.Hex(), slot(i).Hex(), tag))
		}
	}
	// Every slot once in the store, so both tags read present slots.
	for i := 0; i < benchSlots; i += 20 {
		for j := i; j < i+20; j++ {
			data := append(slot(j).Bytes(), common.BigToHash(big.NewInt(int64(j+1))).Bytes()...)
			if err := e.Pool.Add(e.Tx(j%len(e.Accs), &contract, big.NewInt(0), 60_000, data)); err != nil {
				b.Fatal(err)
			}
		}
		e.Tick(1)
	}
	e.Seal()

	var swapsMu sync.Mutex
	var swaps []time.Time
	stop, done := make(chan struct{}), make(chan struct{})
	var feedErr atomic.Value
	go func() { // 20 transactions pre-confirmed every 200 ms
		defer close(done)
		tk := time.NewTicker(200 * time.Millisecond)
		defer tk.Stop()
		k := 0
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
			}
			for range 20 {
				k++
				data := append(slot(k*7919%benchSlots).Bytes(), common.BigToHash(big.NewInt(int64(k))).Bytes()...)
				if err := e.Pool.Add(e.Tx(k%len(e.Accs), &contract, big.NewInt(0), 60_000, data)); err != nil {
					feedErr.Store(err)
					return
				}
			}
			e.Clock.Advance(e.Cfg.PreconfInterval)
			e.Seq.Sync()
			swapsMu.Lock()
			swaps = append(swaps, time.Now())
			swapsMu.Unlock()
		}
	}()
	defer func() {
		close(stop)
		<-done
		if err, _ := feedErr.Load().(error); err != nil {
			b.Fatal(err)
		}
	}()
	time.Sleep(500 * time.Millisecond) // the pending block holds pre-confirmations

	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	type sample struct {
		at time.Time
		d  time.Duration
	}
	var samplesMu sync.Mutex
	var samples []sample
	var bad atomic.Int64
	var next atomic.Int64
	b.ReportAllocs()
	cpu0 := rpctest.ProcessCPU(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var mine []sample
		for pb.Next() {
			body := bodies[next.Add(1)%benchSlots]
			t0 := time.Now()
			resp, err := c.Post(e.url, "application/json", bytes.NewReader(body))
			if err != nil {
				bad.Add(1)
				continue
			}
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			mine = append(mine, sample{t0, time.Since(t0)})
			if !bytes.Contains(out, []byte(`"result"`)) {
				bad.Add(1)
			}
		}
		samplesMu.Lock()
		samples = append(samples, mine...)
		samplesMu.Unlock()
	})
	b.StopTimer()
	b.ReportMetric(float64(rpctest.ProcessCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
	if bad.Load() > 0 {
		b.Fatalf("%d failed calls", bad.Load())
	}
	swapsMu.Lock()
	sw := slices.Clone(swaps)
	swapsMu.Unlock()
	var after, before, rest []time.Duration
	for _, s := range samples {
		i := sort.Search(len(sw), func(i int) bool { return sw[i].After(s.at) })
		switch {
		case i > 0 && s.at.Sub(sw[i-1]) < 20*time.Millisecond:
			after = append(after, s.d)
		case i < len(sw) && sw[i].Sub(s.at) < 20*time.Millisecond:
			before = append(before, s.d) // while the sequencer executed the interval's transactions
		default:
			rest = append(rest, s.d)
		}
	}
	p99 := func(d []time.Duration) float64 {
		if len(d) == 0 {
			return 0
		}
		slices.Sort(d)
		return float64(d[len(d)*99/100].Microseconds())
	}
	if len(after) > 100 {
		b.ReportMetric(p99(after), "p99-after-swap-µs")
	}
	if len(before) > 100 {
		b.ReportMetric(p99(before), "p99-before-swap-µs")
	}
	b.ReportMetric(p99(rest), "p99-rest-µs")
}

// BenchmarkPendingServe: the server's own work (Server.ServeHTTP in
// process, one goroutine, no sockets) for eth_getStorageAt and eth_call (one
// SLOAD) at `latest` and at `pending`, with a pending block of five
// pre-confirmations of 20 transactions each (100 transactions, each writing
// one of the slots read) over a sealed block that wrote every slot. No
// swaps during the loop: the per-request cost of reading through a
// realistic snapshot, comparable with benchstat.
func BenchmarkPendingServe(b *testing.B) {
	e := newEnvWith(b, envOptions{})
	if err := e.Pool.Add(e.Tx(0, nil, big.NewInt(0), 200_000, pendingtest.InitCode(slotRuntime))); err != nil {
		b.Fatal(err)
	}
	e.Seal()
	contract := crypto.CreateAddress(e.Accs[0].Address, 0)
	slot := func(i int) common.Hash { return common.BigToHash(big.NewInt(int64(i))) }
	write := func(k int) {
		data := append(slot(k*7919%benchSlots).Bytes(), common.BigToHash(big.NewInt(int64(k+1))).Bytes()...)
		if err := e.Pool.Add(e.Tx(k%len(e.Accs), &contract, big.NewInt(0), 60_000, data)); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < benchSlots; i++ {
		data := append(slot(i).Bytes(), common.BigToHash(big.NewInt(int64(i+1))).Bytes()...)
		if err := e.Pool.Add(e.Tx(i%len(e.Accs), &contract, big.NewInt(0), 60_000, data)); err != nil {
			b.Fatal(err)
		}
		if i%20 == 19 {
			e.Tick(1)
		}
	}
	e.Seal()
	for k := 0; k < 100; k++ {
		write(k)
		if k%20 == 19 {
			e.Tick(1)
		}
	}
	if s := e.Mgr.Current(); s == nil || len(s.Transactions()) != 100 {
		b.Fatalf("pending block holds %d transactions, want 100", len(e.Mgr.Current().Transactions()))
	}
	for _, method := range []string{"storage", "call"} {
		for _, tag := range []string{"latest", "pending"} {
			b.Run(method+"/"+tag, func(b *testing.B) {
				bodies := make([][]byte, benchSlots)
				for i := range bodies {
					if method == "storage" {
						bodies[i] = []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"eth_getStorageAt","params":["%s","%s","%s"]}`, contract.Hex(), slot(i).Hex(), tag))
					} else {
						bodies[i] = []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":"%s","input":"%s"},"%s"]}`, contract.Hex(), slot(i).Hex(), tag))
					}
				}
				rd := bytes.NewReader(nil)
				req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/", io.NopCloser(rd))
				if err != nil {
					b.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				b.ReportAllocs()
				i := 0
				cpu0 := rpctest.ProcessCPU(b)
				for b.Loop() {
					body := bodies[i%benchSlots]
					i++
					rd.Reset(body)
					req.ContentLength = int64(len(body))
					w := &discardWriter{h: make(http.Header)}
					e.node.Server.ServeHTTP(w, req)
					if w.status != http.StatusOK || !bytes.Contains(w.body, []byte(`"result"`)) {
						b.Fatalf("status %d: %s", w.status, w.body)
					}
				}
				// Process CPU (GC included) per request: steadier than the
				// wall time on a shared machine.
				b.ReportMetric(float64(rpctest.ProcessCPU(b)-cpu0)/float64(i), "cpu-ns/op")
			})
		}
	}
}

// discardWriter is a ResponseWriter that keeps the last response.
type discardWriter struct {
	h      http.Header
	status int
	body   []byte
}

func (w *discardWriter) Header() http.Header    { return w.h }
func (w *discardWriter) WriteHeader(status int) { w.status = status }
func (w *discardWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.body = append(w.body[:0], b...)
	return len(b), nil
}
