package node_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/rpc"
	"github.com/tipnode/tipnode/rpc/node"
	"github.com/tipnode/tipnode/store"
)

// hugeReturnBatch is the reproduction: a 13 KB batch of n eth_calls
// whose code override returns 4 MiB (PUSH3 0x400000 PUSH1 0 RETURN), each
// answer 8 MiB of hex.
func hugeReturnBatch(n int) string {
	const c = "0x00000000000000000000000000000000000c0de1"
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"eth_call","params":[{"to":"%s"},"latest",{"%s":{"code":"0x624000006000f3"}}]}`, i, c, c)
	}
	b.WriteByte(']')
	return b.String()
}

// heapSampler records the peak of the Go heap's live objects (sampled
// every millisecond, without stopping the world) until stopped.
type heapSampler struct {
	peak atomic.Uint64
	quit chan struct{}
	wg   sync.WaitGroup
}

func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func sampleHeap() *heapSampler {
	h := &heapSampler{quit: make(chan struct{})}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			if n := heapObjects(); n > h.peak.Load() {
				h.peak.Store(n)
			}
			select {
			case <-h.quit:
				return
			case <-t.C:
			}
		}
	}()
	return h
}

func (h *heapSampler) stop() uint64 {
	close(h.quit)
	h.wg.Wait()
	return h.peak.Load()
}

// TestHugeBatchMemoryBounded: the batch of 64 eth_calls answering
// 4 MiB each (8 MiB of hex) is answered within the response limit (25 MiB:
// the first elements, in order) and the rest with -32005, most of them
// without running; the heap never holds much more than one response's
// worth of results (it used to hold every element's answer: about 1 GB).
func TestHugeBatchMemoryBounded(t *testing.T) {
	url := memoryTestNode(t)
	const elements = 64
	body := hugeReturnBatch(elements)
	runtime.GC()
	base := heapObjects()
	sampler := sampleHeap()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		sampler.stop()
		t.Fatal(err)
	}
	var answers []struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *rpc.Error      `json:"error"`
	}
	err = json.NewDecoder(resp.Body).Decode(&answers)
	resp.Body.Close()
	peak := sampler.stop()
	if err != nil {
		t.Fatal(err)
	}
	growth := int64(peak) - int64(base)
	t.Logf("heap %d MiB at rest, peak +%d MiB", base>>20, growth>>20)
	// One response (25 MiB) held by the server, the same read by this
	// client, and the elements in flight: well under 300 MiB (it was
	// about 1 GB).
	if growth > 300<<20 {
		t.Fatalf("heap peak %d MiB above its rest level, want under 300", growth>>20)
	}
	if len(answers) != elements {
		t.Fatalf("%d answers, want %d", len(answers), elements)
	}
	answered, notRun := 0, 0
	for i, a := range answers {
		switch {
		case a.ID != i:
			t.Fatalf("answer %d has id %d", i, a.ID)
		case a.Error == nil:
			if answered != i || len(a.Result) != 2+2+8<<20 {
				t.Fatalf("answer %d: a %d-byte result after %d answered", i, len(a.Result), answered)
			}
			answered++
		case a.Error.Code != rpc.CodeLimitExceeded || !strings.HasPrefix(a.Error.Message, "response too large"):
			t.Fatalf("answer %d: %+v", i, a.Error)
		case strings.HasSuffix(a.Error.Message, "not executed"):
			notRun++
		}
	}
	t.Logf("%d answered, %d refused after running, %d not executed", answered, elements-answered-notRun, notRun)
	if answered != 3 || notRun < elements-answered-1-rpc.DefaultBatchParallelism {
		t.Fatalf("%d answered (want 3), %d not executed", answered, notRun)
	}
}

// memoryTestNode starts a node whose executions never time out or wait
// too long for a slot in these tests (the race detector slows the EVM
// about tenfold) and returns its URL.
func memoryTestNode(t *testing.T, opts ...func(*node.Config)) string {
	t.Helper()
	cfg := store.DefaultConfig(t.TempDir())
	cfg.SyncWrites = false
	cfg.CacheBytes, cfg.MemtableBytes = 16<<20, 4<<20
	db, err := store.Open(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	g := initDevGenesis(t, db)
	ncfg := node.DefaultConfig()
	ncfg.Server.Addr = "127.0.0.1:0"
	ncfg.Server.RequestTimeout = 2 * time.Minute
	ncfg.API.EVMTimeout, ncfg.API.ExecutionWait = time.Minute, time.Minute
	for _, o := range opts {
		o(&ncfg)
	}
	n := startNode(t, ncfg, db, g, nil, zerolog.New(io.Discard))
	return "http://" + n.Server.Addr().String()
}

// TestSimulateStopsAtResponseLimit: an eth_simulateV1 whose results cannot
// fit in the response limit is refused with -32005 as soon as its results
// so far pass it, without running (and holding) the rest: 200 calls each
// returning 64 KiB (26 MiB of hex) against a 1 MiB limit never hold more
// than a few MiB.
func TestSimulateStopsAtResponseLimit(t *testing.T) {
	url := memoryTestNode(t, func(c *node.Config) { c.Server.MaxResponseBytes = 1 << 20 })
	const c = "0x00000000000000000000000000000000000c0de2"
	var calls strings.Builder
	for i := range 200 {
		if i > 0 {
			calls.WriteByte(',')
		}
		fmt.Fprintf(&calls, `{"to":"%s"}`, c)
	}
	// PUSH3 0x010000 PUSH1 0 RETURN: 64 KiB of zeros.
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"eth_simulateV1","params":[{"blockStateCalls":[{"stateOverrides":{"%s":{"code":"0x620100006000f3"}},"calls":[%s]}]},"latest"]}`, c, calls.String())
	runtime.GC()
	base := heapObjects()
	sampler := sampleHeap()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		sampler.stop()
		t.Fatal(err)
	}
	var answer struct {
		Error *rpc.Error `json:"error"`
	}
	err = json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	growth := int64(sampler.stop()) - int64(base)
	if err != nil {
		t.Fatal(err)
	}
	if answer.Error == nil || answer.Error.Code != rpc.CodeLimitExceeded || !strings.HasPrefix(answer.Error.Message, "response too large (limit 1048576 bytes)") {
		t.Fatalf("answer %+v, want -32005 response too large", answer.Error)
	}
	t.Logf("heap peak +%d KiB", growth>>10)
	if growth > 12<<20 {
		t.Fatalf("heap peak %d MiB above its rest level: the simulation ran on past the limit", growth>>20)
	}
}
