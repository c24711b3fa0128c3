package follow

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"
	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/chain/follow/followtest"
	"github.com/tipnode/tipnode/store"
)

// Catch-up benchmark: a go-ethereum upstream holds a chain of benchBlocks
// blocks with benchTxs transactions each (transfers, logs, storage
// writes). BenchmarkCatchUp imports the same blocks from an RLP file
// (what `tipnode import` does) and follows them from the upstream over
// loopback (raw and JSON blocks), each on a fresh store with the same
// settings, and reports blocks/s and Mgas/s. The follower should lose at
// most 20% to fetching.
const (
	benchBlocks = 300
	benchTxs    = 24
)

const benchUpstreamEnv = "TIPNODE_FOLLOW_BENCH_UPSTREAM" // set for the upstream process only

// benchUpstream is the go-ethereum upstream of the catch-up benchmark, in
// its own process (so that the follower's CPU time is its own): its URL,
// genesis spec, chain as an RLP file, head and total gas.
type benchUpstream struct {
	pid  int // the upstream process
	url  string
	spec []byte
	rlp  []byte
	head common.Hash
	n    int
	gas  uint64
}

var (
	benchOnce  sync.Once
	benchUp    *benchUpstream
	benchSetup error
	benchStdin io.WriteCloser // kept open (and reachable): the upstream process lives until ours ends
)

// TestBenchUpstream is the upstream process of BenchmarkCatchUp (skipped
// otherwise): it builds the chain, writes its spec and RLP into the
// directory named by the environment, prints the URL and serves until its
// stdin closes.
func TestBenchUpstream(t *testing.T) {
	dir := os.Getenv(benchUpstreamEnv)
	if dir == "" {
		t.Skip("the upstream process of BenchmarkCatchUp")
	}
	u := startUpstream(t, followtest.Options{GasLimit: 60_000_000})
	for i := range benchBlocks {
		u.block(benchTxs, byte('a'+i%8)) // 8 senders: the pool takes 24 of each's at once
	}
	c, err := gethrpc.Dial(u.HTTP)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var buf bytes.Buffer
	head := u.head().Number.Uint64()
	for n := uint64(1); n <= head; n++ {
		var raw hexutil.Bytes
		if err := c.Call(&raw, "debug_getRawBlock", hexutil.Uint64(n)); err != nil {
			t.Fatal(err)
		}
		buf.Write(raw)
	}
	if err := os.WriteFile(filepath.Join(dir, "chain.rlp"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "genesis.json"), u.Spec, 0o644); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("ready %s\n", u.HTTP)
	io.Copy(io.Discard, os.Stdin)
}

// benchChain starts the upstream process once per benchmark process.
func benchChain(b *testing.B) *benchUpstream {
	benchOnce.Do(func() {
		dir, err := os.MkdirTemp("", "follow-bench-")
		if err != nil {
			benchSetup = err
			return
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestBenchUpstream$", "-test.timeout=30m")
		cmd.Env = append(os.Environ(), benchUpstreamEnv+"="+dir)
		benchStdin, _ = cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if benchSetup = cmd.Start(); benchSetup != nil {
			return
		}
		sc := bufio.NewScanner(out)
		var url string
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "ready ") {
				url = strings.TrimPrefix(line, "ready ")
				break
			}
		}
		go io.Copy(io.Discard, out)
		if url == "" {
			benchSetup = errors.New("the upstream process did not start")
			return
		}
		up := &benchUpstream{pid: cmd.Process.Pid, url: url}
		if up.spec, benchSetup = os.ReadFile(filepath.Join(dir, "genesis.json")); benchSetup != nil {
			return
		}
		if up.rlp, benchSetup = os.ReadFile(filepath.Join(dir, "chain.rlp")); benchSetup != nil {
			return
		}
		os.RemoveAll(dir)
		for s := rlp.NewStream(bytes.NewReader(up.rlp), 0); ; {
			blk := new(types.Block)
			if s.Decode(blk) != nil {
				break
			}
			up.n, up.gas, up.head = up.n+1, up.gas+blk.GasUsed(), blk.Hash()
		}
		benchUp = up
	})
	if benchSetup != nil {
		b.Fatal(benchSetup)
	}
	return benchUp
}

// benchStore is a fresh store with the upstream's genesis and a writer.
func benchStore(b *testing.B, spec []byte, sync bool) (*store.DB, *chain.Genesis, *chain.Writer) {
	b.Helper()
	g, err := chain.ParseGenesis(spec)
	if err != nil {
		b.Fatal(err)
	}
	cfg := store.DefaultConfig(b.TempDir())
	cfg.SyncWrites = sync
	db, err := store.Open(cfg, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if err := chain.InitGenesis(db, g); err != nil {
		b.Fatal(err)
	}
	w, err := chain.NewWriter(db, chain.NewExecutor(g.Config), chain.DefaultWriterConfig(), zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	w.Start()
	b.Cleanup(w.Stop)
	return db, g, w
}

// BenchmarkCatchUp runs, per iteration, one round of: import of the
// chain from the RLP file, follow with raw blocks, follow with JSON
// blocks (gzipped, and with --follow.nogzip), follow with raw blocks and
// fsync (as `tipnode run`), each on a fresh store (no fsync unless said,
// as `tipnode import`), in a rotating order. The machine is shared, so
// each round's follow times are compared with the same round's import; it
// reports the median rates, the median per-round ratio to the import
// (-benchtime 7x for seven rounds), and the CPU time of our process and of
// the upstream's per run. TIPNODE_CATCHUP_VARIANTS=import-file,follow-json
// runs only the variants named.
func BenchmarkCatchUp(b *testing.B) {
	u := benchChain(b)
	blocks, gas := u.n, u.gas
	b.Logf("upstream chain (go-ethereum, its own process): %d blocks, %d transactions, %.1f Mgas", blocks, blocks*benchTxs, float64(gas)/1e6)
	type variant struct {
		name       string
		json, sync bool
		file       bool
		nogzip     bool
	}
	variants := []variant{{name: "import-file", file: true}, {name: "follow-raw"}, {name: "follow-json", json: true},
		{name: "follow-json-nogzip", json: true, nogzip: true}, {name: "follow-raw-fsync", sync: true}}
	if only := os.Getenv("TIPNODE_CATCHUP_VARIANTS"); only != "" { // e.g. import-file,follow-json
		variants = slices.DeleteFunc(variants, func(v variant) bool { return !slices.Contains(strings.Split(only, ","), v.name) })
	}
	times := make(map[string][]time.Duration)
	cpus := make(map[string][]time.Duration)
	upCPUs := make(map[string][]time.Duration)
	ratios := make(map[string][]float64)
	run := func(v variant) time.Duration {
		_, g, w := benchStore(b, u.spec, v.sync)
		if v.file {
			start := time.Now()
			if _, err := w.ImportRLP(bytes.NewReader(u.rlp), time.Hour, nil); err != nil {
				b.Fatal(err)
			}
			if w.Head().Hash() != u.head {
				b.Fatal("import did not reach the upstream's head")
			}
			return time.Since(start)
		}
		cfg := DefaultConfig()
		cfg.URL, cfg.JSONBlocks, cfg.NoGzip = u.url, v.json, v.nogzip
		done := make(chan struct{})
		var once sync.Once
		defer w.SubscribeHeads(func(ev *chain.HeadEvent) {
			if ev.Head.Hash() == u.head {
				once.Do(func() { close(done) })
			}
		})()
		f, err := New(cfg, w, g, nil, nil, zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		defer f.Stop()
		start := time.Now()
		if err := f.Start(); err != nil {
			b.Fatal(err)
		}
		select {
		case <-done:
		case <-time.After(5 * time.Minute):
			b.Fatal("the follower did not reach the head")
		}
		return time.Since(start)
	}
	for i := range b.N {
		round := make(map[string]time.Duration)
		for j := range variants {
			v := variants[(i+j)%len(variants)]
			cpu0, up0 := chaintest.ProcessCPU(b), procCPUTime(u.pid)
			round[v.name] = run(v)
			cpus[v.name] = append(cpus[v.name], chaintest.ProcessCPU(b)-cpu0)
			upCPUs[v.name] = append(upCPUs[v.name], procCPUTime(u.pid)-up0)
			times[v.name] = append(times[v.name], round[v.name])
		}
		for _, v := range variants {
			if v.file {
				continue
			}
			ratios[v.name] = append(ratios[v.name], round["import-file"].Seconds()/round[v.name].Seconds())
		}
	}
	median := func(xs []float64) float64 { slices.Sort(xs); return xs[len(xs)/2] }
	for _, v := range variants {
		var rates []float64
		for _, d := range times[v.name] {
			rates = append(rates, float64(blocks)/d.Seconds())
		}
		r := median(rates)
		b.ReportMetric(r, v.name+"-blocks/s")
		var cpu []float64
		for _, d := range cpus[v.name] {
			cpu = append(cpu, d.Seconds())
		}
		var upCPU []float64
		for _, d := range upCPUs[v.name] {
			upCPU = append(upCPU, d.Seconds())
		}
		b.ReportMetric(median(cpu), v.name+"-cpu-s")
		b.ReportMetric(median(upCPU), v.name+"-upstream-cpu-s")
		line := fmt.Sprintf("%-18s median %6.1f blocks/s %6.1f Mgas/s, %5.2f CPU-s (ours) %5.2f CPU-s (upstream)", v.name, r, r*float64(gas)/float64(blocks)/1e6, median(cpu), median(upCPU))
		if v.name != "import-file" {
			q := median(ratios[v.name])
			b.ReportMetric(q, v.name+"-vs-import")
			line += fmt.Sprintf("   %.2f x the import's rate (median of per-round ratios)", q)
		}
		b.Log(line)
	}
	b.ReportMetric(0, "ns/op")
}

// procCPUTime is the CPU time process pid used so far (user + system),
// from /proc (0 where there is none).
func procCPUTime(pid int) time.Duration {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name (which may hold spaces): utime and
	// stime are the 12th and 13th of them, in clock ticks (100 per second).
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	var ut, st int64
	fmt.Sscan(f[11], &ut)
	fmt.Sscan(f[12], &st)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// BenchmarkHeadLag follows (over a websocket, fsync on, as `tipnode run`)
// an upstream that makes a block every second (every 200 ms: a chain of
// sub-second blocks, Base after Denim), with transactions, and reports the
// delay from the upstream having a block to our head being it (readable
// at latest): p50 and p99 over the blocks, and how many blocks behind the
// upstream our head was when each block was made (behind-p99).
func BenchmarkHeadLag(b *testing.B) {
	const blocks = 60
	for _, tc := range []struct {
		name  string
		ws    bool
		every time.Duration
	}{{"ws", true, time.Second}, {"http-poll-500ms", false, time.Second}, {"ws-200ms-blocks", true, 200 * time.Millisecond}} {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				u := startUpstream(b, followtest.Options{})
				_, g, w := benchStore(b, u.Spec, true)
				var (
					mu   sync.Mutex
					seen = make(map[common.Hash]time.Time)
				)
				w.SubscribeHeads(func(ev *chain.HeadEvent) {
					now := time.Now()
					mu.Lock()
					for _, h := range ev.Added {
						seen[h.Hash()] = now
					}
					mu.Unlock()
				})
				cfg := DefaultConfig()
				cfg.URL = u.HTTP
				if tc.ws {
					cfg.URL = u.WS
				}
				f, err := New(cfg, w, g, nil, nil, zerolog.Nop())
				if err != nil {
					b.Fatal(err)
				}
				if err := f.Start(); err != nil {
					b.Fatal(err)
				}
				made := make(map[common.Hash]time.Time)
				var behind []int
				tick := time.NewTicker(tc.every)
				ctx := context.Background()
				for i := range blocks {
					<-tick.C
					for range 8 { // transfers from 4 senders
						acc := i % 4
						n := u.nonces[acc]
						u.nonces[acc]++
						tx := followtest.Tx(b, acc, n, &common.Address{0xb0, byte(i)}, big.NewInt(1), 21_000, nil)
						if err := u.Client().SendTransaction(ctx, tx); err != nil {
							b.Fatal(err)
						}
					}
					hash := u.Commit() // the upstream has the block from here on
					made[hash] = time.Now()
					mu.Lock()
					behind = append(behind, len(made)-1-len(seen))
					mu.Unlock()
				}
				tick.Stop()
				time.Sleep(2 * time.Second)
				f.Stop()
				var lags []time.Duration
				mu.Lock()
				for h, at := range made {
					if got, ok := seen[h]; ok {
						lags = append(lags, max(got.Sub(at), 0))
					}
				}
				mu.Unlock()
				if len(lags) < blocks*9/10 {
					b.Fatalf("only %d of %d blocks were followed", len(lags), blocks)
				}
				slices.Sort(lags)
				p := func(q float64) time.Duration { return lags[min(len(lags)-1, int(q*float64(len(lags))))] }
				b.ReportMetric(float64(p(0.5).Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(p(0.99).Microseconds())/1000, "p99-ms")
				slices.Sort(behind)
				b.ReportMetric(float64(behind[min(len(behind)-1, len(behind)*99/100)]), "behind-p99")
				b.ReportMetric(0, "ns/op")
				b.Logf("%s: %d blocks, lag p50 %v p99 %v max %v; blocks behind when the next was made: p50 %d p99 %d max %d", tc.name, len(lags),
					p(0.5), p(0.99), lags[len(lags)-1], behind[len(behind)/2], behind[min(len(behind)-1, len(behind)*99/100)], behind[len(behind)-1])
			}
		})
	}
}
