package node_test

import (
	"context"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/devnet"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/pendingtest"
	"github.com/tipnode/tipnode/pending/sequencer"
	"github.com/tipnode/tipnode/rpc"
	"github.com/tipnode/tipnode/rpc/node"
	"github.com/tipnode/tipnode/store"
)

// Load and abuse helpers. Every client connects to 127.0.0.1; distinct
// client addresses are distinct loopback source addresses (127.0.0.x).

const (
	// burnCode burns all its gas: JUMPDEST PUSH1 0 JUMP.
	burnCode = "0x5b600056"
	burnAddr = "0x00000000000000000000000000000000000b0b0b"
)

// heavyGas is the gas of a heavy call: 50M, a tenth of it under the race
// detector (which slows the EVM about tenfold).
var heavyGas = map[bool]int{false: 50_000_000, true: 5_000_000}[raceEnabled]

// heavyCall is a heavyGas eth_call (it burns all of it).
var heavyCall = fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":"%s","gas":"%#x"},"latest",{"%s":{"code":"%s"}}]}`,
	burnAddr, heavyGas, burnAddr, burnCode)

// bigBatch is a batch of 25 eth_getCode of bigCodeAddr: a 1.2 MiB answer
// without any EVM work.
func bigBatch() []byte {
	var b strings.Builder
	b.WriteByte('[')
	for i := range 25 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"eth_getCode","params":["%s","latest"]}`, i, bigCodeAddr)
	}
	b.WriteByte(']')
	return []byte(b.String())
}

func loopbackDialer(ip string) *net.Dialer {
	return &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
}

func httpClientFrom(ip string, keepAlive bool) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: loopbackDialer(ip).DialContext, DisableKeepAlives: !keepAlive, MaxIdleConnsPerHost: 64,
	}}
}

func wsDialFrom(ctx context.Context, ip, url string) (*websocket.Conn, error) {
	d := websocket.Dialer{NetDialContext: loopbackDialer(ip).DialContext, HandshakeTimeout: 5 * time.Second}
	c, resp, err := d.DialContext(ctx, "ws"+strings.TrimPrefix(url, "http"), nil)
	if resp != nil {
		resp.Body.Close()
	}
	return c, err
}

func postFrom(c *http.Client, url, body string) (int, []byte, error) {
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// heavyLoad runs n clients (from ip) each sending 50M-gas eth_calls back
// to back until ctx ends; it returns the answered and refused counts when
// ctx ends.
func heavyLoad(ctx context.Context, url, ip string, n int) func() (ok, refused, failed int64) {
	var okN, refusedN, failedN atomic.Int64
	var wg sync.WaitGroup
	client := httpClientFrom(ip, true)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				_, b, err := postFrom(client, url, heavyCall)
				switch {
				case err != nil:
					failedN.Add(1)
				case strings.Contains(string(b), "out of gas"):
					okN.Add(1)
				case strings.Contains(string(b), "-32005"):
					refusedN.Add(1)
				default:
					failedN.Add(1)
				}
			}
		}()
	}
	return func() (int64, int64, int64) {
		wg.Wait()
		return okN.Load(), refusedN.Load(), failedN.Load()
	}
}

// sealTimes records when the writer publishes each new head.
type sealTimes struct {
	mu    sync.Mutex
	times []time.Time
}

func recordSeals(w *chain.Writer) (*sealTimes, func()) {
	st := &sealTimes{}
	unsub := w.SubscribeHeads(func(ev *chain.HeadEvent) {
		if len(ev.Added) == 0 {
			return
		}
		now := time.Now()
		st.mu.Lock()
		st.times = append(st.times, now)
		st.mu.Unlock()
	})
	return st, unsub
}

// jitter returns, for events scheduled on a grid of interval (some grid
// points may have none: a pre-confirmation needs new transactions), the
// spread of their offsets from the grid (max - min, the grid anchored at
// the first event) and the largest deviation of the gap between two
// consecutive events from a whole number of intervals.
func (s *sealTimes) jitter(interval time.Duration) (spread, worstGap time.Duration, n int) {
	s.mu.Lock()
	ts := slices.Clone(s.times)
	s.mu.Unlock()
	if len(ts) < 2 {
		return 0, 0, len(ts)
	}
	wrap := func(d time.Duration) time.Duration { // to (-interval/2, interval/2]
		d %= interval
		if d > interval/2 {
			d -= interval
		} else if d <= -interval/2 {
			d += interval
		}
		return d
	}
	lo, hi := time.Duration(0), time.Duration(0)
	for k, t := range ts {
		off := wrap(t.Sub(ts[0]))
		lo, hi = min(lo, off), max(hi, off)
		if k > 0 {
			d := wrap(t.Sub(ts[k-1]))
			worstGap = max(worstGap, max(d, -d))
		}
	}
	return hi - lo, worstGap, len(ts)
}

// startLoadNode starts a node with a wall-clock sequencer (200 ms / 2 s)
// on a fresh dev store in dir and the given server limits.
func startLoadNode(tb testing.TB, srv rpc.Config, maxExecutions int) *node.Node {
	tb.Helper()
	cfg := store.DefaultConfig(tb.TempDir())
	cfg.SyncWrites = true // as a node runs: fsyncs in the poller (store.DB.SyncsInPoller)
	cfg.CacheBytes, cfg.MemtableBytes = 64<<20, 8<<20
	db, err := store.Open(cfg, zerolog.Nop())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	g := initDevGenesis(tb, db)
	ncfg := node.DefaultConfig()
	srv.Addr = "127.0.0.1:0"
	ncfg.Server = srv
	ncfg.Metrics = true
	if maxExecutions > 0 {
		ncfg.API.MaxExecutions = maxExecutions
	}
	seq := sequencer.DefaultConfig()
	ncfg.Sequencer = &seq
	n := startNode(tb, ncfg, db, g, nil, zerolog.New(io.Discard))
	return n
}

// latencies collects request latencies of a well-behaved client.
type latencies struct {
	mu     sync.Mutex
	d      []time.Duration
	errors []string
}

func (l *latencies) add(d time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.errors = append(l.errors, err.Error())
		return
	}
	l.d = append(l.d, d)
}

func (l *latencies) summary() (n int, p50, p99, worst time.Duration, errs []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := slices.Clone(l.d)
	slices.Sort(d)
	if len(d) == 0 {
		return 0, 0, 0, 0, l.errors
	}
	return len(d), d[len(d)/2], d[len(d)*99/100], d[len(d)-1], l.errors
}

func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// The abuse test: while non-reading websocket clients ask for large
// responses, slow bodies and slowloris headers trickle in, hundreds of idle
// websockets are held and 24 clients run 50M-gas eth_calls back to back
// (5M under the race detector),
// well-behaved clients from other addresses (keep-alive HTTP, a new
// connection per request, a websocket) are all served within a bounded
// latency, the server's memory stays bounded, and it comes back once the
// abusers leave. The figures are logged.
func TestAbuse(t *testing.T) {
	if testing.Short() {
		t.Skip("abuse test skipped in -short mode")
	}
	// The abuse runs in this process: under the race detector (about ten
	// times slower) a quarter of it, with a looser latency bound.
	lvl := struct {
		slow, idlePerAddr, nonReading int
		latency                       time.Duration
		idle                          time.Duration
	}{100, 80, 2, 3 * time.Second, 2 * time.Second}
	if raceEnabled {
		lvl.slow, lvl.idlePerAddr, lvl.nonReading, lvl.latency, lvl.idle = 25, 20, 1, 6*time.Second, 4*time.Second
	}
	srvCfg := rpc.Config{
		MaxResponseBytes: 2 << 20, WSMaxQueuedBytes: 4 << 20, MaxQueuedOutput: 16 << 20,
		MaxConns: 300, MaxConnsPerIP: 16, ConnReservePerIP: 4,
		ReadHeaderTimeout: time.Second, ReadTimeout: 2 * time.Second, IdleTimeout: 2 * time.Second,
		WSIdleTimeout: lvl.idle, WSPingInterval: time.Second, WSPongTimeout: 2 * time.Second, WSWriteTimeout: 2 * time.Second,
	}
	n := startLoadNode(t, srvCfg, 0)
	url := "http://" + n.Server.Addr().String()
	addr := n.Server.Addr().String()
	seals, unsub := recordSeals(n.Writer)
	defer unsub()
	runtime.GC()
	baseHeap := heapInUse()

	const abuseFor = 8 * time.Second
	ctx, stop := context.WithTimeout(context.Background(), abuseFor)
	defer stop()
	var wg sync.WaitGroup
	var counts struct{ nonReading, slowBody, slowHeaders, idleWS, refusedDial atomic.Int64 }

	// Non-reading websockets asking for 1.2 MiB answers (two addresses).
	batch := bigBatch()
	for _, ip := range []string{"127.0.0.2", "127.0.0.3"}[:lvl.nonReading] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				c, err := wsDialFrom(ctx, ip, url)
				if err != nil {
					counts.refusedDial.Add(1)
					time.Sleep(50 * time.Millisecond)
					continue
				}
				counts.nonReading.Add(1)
				dropped := func() uint64 {
					st := n.Server.Stats()
					return st.Disconnects["slow_consumer"] + st.Disconnects["output_limit"]
				}
				before := dropped()
				for i := 0; i < 60 && ctx.Err() == nil; i++ {
					if c.WriteMessage(websocket.TextMessage, batch) != nil {
						break
					}
				}
				// Never read: the server drops a connection once its queue
				// passes the bound; then come back.
				for ctx.Err() == nil && dropped() == before {
					time.Sleep(20 * time.Millisecond)
				}
				c.Close()
			}
		}()
	}
	// Slow bodies: 1 byte every 2 s, 100 connections from one address (16 admitted).
	for range lvl.slow {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				c, err := loopbackDialer("127.0.0.4").DialContext(ctx, "tcp", addr)
				if err != nil {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				counts.slowBody.Add(1)
				fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n")
				go func() {
					for ctx.Err() == nil {
						if _, err := c.Write([]byte{' '}); err != nil {
							return
						}
						time.Sleep(2 * time.Second)
					}
				}()
				c.SetReadDeadline(deadlineOf(ctx))
				io.Copy(io.Discard, c) // the 408 (or 503), then the close
				c.Close()
				time.Sleep(100 * time.Millisecond)
			}
		}()
	}
	// Slowloris: headers 1 byte every 300 ms, 100 connections, reconnecting.
	for range lvl.slow {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				c, err := loopbackDialer("127.0.0.5").DialContext(ctx, "tcp", addr)
				if err != nil {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				counts.slowHeaders.Add(1)
				head := "POST / HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 1000)
				for i := 0; i < len(head) && ctx.Err() == nil; i++ {
					if _, err := c.Write([]byte{head[i]}); err != nil {
						break
					}
					time.Sleep(300 * time.Millisecond)
				}
				c.Close()
				time.Sleep(100 * time.Millisecond)
			}
		}()
	}
	// Idle websockets: 80 per address from three addresses (16 each admitted), reconnecting.
	for _, ip := range []string{"127.0.0.6", "127.0.0.7", "127.0.0.8"} {
		for range lvl.idlePerAddr {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					c, err := wsDialFrom(ctx, ip, url)
					if err != nil {
						counts.refusedDial.Add(1)
						time.Sleep(200 * time.Millisecond)
						continue
					}
					counts.idleWS.Add(1)
					c.SetReadDeadline(deadlineOf(ctx))
					for {
						if _, _, err := c.ReadMessage(); err != nil {
							break
						}
					}
					c.Close()
				}
			}()
		}
	}
	// 24 clients (from two addresses) running 50M-gas eth_calls back to back.
	heavyDone1 := heavyLoad(ctx, url, "127.0.0.9", 12)
	heavyDone2 := heavyLoad(ctx, url, "127.0.0.13", 12)
	heavyDone := func() (int64, int64, int64) {
		a1, b1, c1 := heavyDone1()
		a2, b2, c2 := heavyDone2()
		return a1 + a2, b1 + b2, c1 + c2
	}

	// Well-behaved clients, each from its own address, one request every 25 ms.
	var keepAlive, fresh, ws latencies
	good := func(l *latencies, do func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(500 * time.Millisecond) // let the abuse start
			for ctx.Err() == nil {
				start := time.Now()
				err := do()
				l.add(time.Since(start), err)
				time.Sleep(25 * time.Millisecond)
			}
		}()
	}
	checkAnswer := func(status int, b []byte, err error) error {
		if err != nil {
			return err
		}
		if status != 200 || !strings.Contains(string(b), `"result":"0x`) {
			return fmt.Errorf("status %d: %s", status, b)
		}
		return nil
	}
	kaClient := httpClientFrom("127.0.0.10", true)
	good(&keepAlive, func() error {
		return checkAnswer(postFrom(kaClient, url, `{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}`))
	})
	freshClient := httpClientFrom("127.0.0.11", false)
	good(&fresh, func() error {
		return checkAnswer(postFrom(freshClient, url, `{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266","latest"]}`))
	})
	wsConn, err := wsDialFrom(context.Background(), "127.0.0.12", url)
	if err != nil {
		t.Fatal(err)
	}
	defer wsConn.Close()
	good(&ws, func() error {
		if err := wsConn.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}`)); err != nil {
			return err
		}
		wsConn.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, b, err := wsConn.ReadMessage()
		return checkAnswer(200, b, err)
	})

	// Sample the server while the abuse runs.
	var peakHeap uint64
	var peakQueued int64
	var peakConns int
	for ctx.Err() == nil {
		peakHeap = max(peakHeap, heapInUse())
		st := n.Server.Stats()
		peakQueued, peakConns = max(peakQueued, st.QueuedOutputBytes), max(peakConns, st.OpenConns)
		time.Sleep(200 * time.Millisecond)
	}
	heavyOK, heavyRefused, heavyFailed := heavyDone()
	wg.Wait()

	// The abusers are gone: connections and queued output drain, memory returns.
	deadline := time.Now().Add(15 * time.Second)
	for {
		st := n.Server.Stats()
		if st.QueuedOutputBytes == 0 && st.OpenConns <= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the abuse: %d connections open, %d bytes queued", st.OpenConns, st.QueuedOutputBytes)
		}
		time.Sleep(50 * time.Millisecond)
	}
	kaClient.CloseIdleConnections()
	runtime.GC()
	runtime.GC()
	afterHeap := heapInUse()
	st := n.Server.Stats()
	spread, worstInterval, nSeals := seals.jitter(sequencer.DefaultConfig().BlockTime)
	ex := n.API.Executions().Stats()

	mib := func(b uint64) float64 { return float64(b) / (1 << 20) }
	t.Logf("abuse for %s: %d non-reading websocket sessions, %d slow-body and %d slowloris connection attempts, %d idle websockets, %d websocket dials refused",
		abuseFor, counts.nonReading.Load(), counts.slowBody.Load(), counts.slowHeaders.Load(), counts.idleWS.Load(), counts.refusedDial.Load())
	t.Logf("server: refused %v, disconnects %v, body timeouts %d, peak %d connections, peak queued output %.1f MiB",
		st.Refused, st.Disconnects, st.BodyTimeouts, peakConns, mib(uint64(peakQueued)))
	t.Logf("%dM-gas eth_calls: %d executed, %d refused -32005, %d failed; limiter admitted %d, queue full %d, wait timeout %d, waited %s in all",
		heavyGas/1_000_000, heavyOK, heavyRefused, heavyFailed, ex.Admitted, ex.QueueFull, ex.WaitTimeout, ex.Waited.Round(time.Millisecond))
	t.Logf("heap in use: %.0f MiB before, %.0f MiB peak, %.0f MiB after the abusers left (GC)", mib(baseHeap), mib(peakHeap), mib(afterHeap))
	t.Logf("seals: %d, offset spread %s, worst interval deviation %s (race detector %v; the target is measured by BenchmarkSealJitterUnderEVMLoad)",
		nSeals, spread.Round(time.Millisecond), worstInterval.Round(time.Millisecond), raceEnabled)
	for name, l := range map[string]*latencies{"keep-alive HTTP": &keepAlive, "new connection per request": &fresh, "websocket": &ws} {
		cnt, p50, p99, worst, errs := l.summary()
		t.Logf("good client (%s): %d requests, p50 %s, p99 %s, max %s, %d errors", name, cnt, p50.Round(time.Microsecond), p99.Round(time.Microsecond), worst.Round(time.Microsecond), len(errs))
		if len(errs) > 0 {
			t.Errorf("good client (%s) not served: %d errors, first: %s", name, len(errs), errs[0])
		}
		if cnt < 5 {
			t.Errorf("good client (%s): only %d requests served", name, cnt)
		}
		if worst > lvl.latency {
			t.Errorf("good client (%s): a request took %s", name, worst)
		}
	}
	// Each limit did its job.
	if st.Disconnects["slow_consumer"]+st.Disconnects["output_limit"] == 0 && counts.nonReading.Load() > 1 {
		t.Error("no slow consumer was disconnected")
	}
	if st.Refused["per_address"] == 0 {
		t.Error("no connection refused by the per-address cap")
	}
	if st.BodyTimeouts == 0 {
		t.Error("no slow body timed out")
	}
	if st.Disconnects["idle"] == 0 {
		t.Error("no idle websocket closed")
	}
	if ex.Admitted == 0 {
		t.Error("no execution admitted")
	}
	if peakQueued > srvCfg.MaxQueuedOutput+int64(srvCfg.MaxConns)*64<<10 {
		t.Errorf("queued output peaked at %d bytes, over the bound", peakQueued)
	}
	// Memory: bounded while abused, back after.
	if peak := peakHeap - min(peakHeap, baseHeap); peak > 256<<20 {
		t.Errorf("heap grew by %.0f MiB under abuse", mib(peak))
	}
	if grown := afterHeap - min(afterHeap, baseHeap); grown > 32<<20 {
		t.Errorf("heap still %.0f MiB above the start after the abusers left", mib(grown))
	}
}

func deadlineOf(ctx context.Context) time.Time {
	d, ok := ctx.Deadline()
	if !ok {
		return time.Now().Add(time.Minute)
	}
	return d
}

// BenchmarkSealJitterUnderEVMLoad measures how far seals and
// pre-confirmations drift from their schedule (200 ms / 2 s, wall clock)
// while 24 clients run 50M-gas eth_calls back to back, with the execution
// limiter at its default (and, for comparison, with 64 executions
// allowed at once). One iteration is one block time; run it with
// -benchtime=Nx. Target: seal jitter at most 20 ms.
func BenchmarkSealJitterUnderEVMLoad(b *testing.B) {
	b.Run("limiter=default", func(b *testing.B) { sealJitter(b, 0) })
	b.Run("limiter=64", func(b *testing.B) { sealJitter(b, 64) })
}

func sealJitter(b *testing.B, maxExecutions int) {
	n := startLoadNode(b, rpc.Config{}, maxExecutions)
	url := "http://" + n.Server.Addr().String()
	seals, unsub := recordSeals(n.Writer)
	defer unsub()
	var mu sync.Mutex
	var preconfs []time.Time
	unsubP := n.Pending.SubscribePreconfirmations(func(*pending.Snapshot) {
		mu.Lock()
		preconfs = append(preconfs, time.Now())
		mu.Unlock()
	})
	defer unsubP()
	ctx, stop := context.WithCancel(context.Background())
	done := heavyLoad(ctx, url, "127.0.0.9", 24)
	// Also a cheap method, to see what it waits under the load.
	var cheap latencies
	cheapDone := make(chan struct{})
	go func() {
		defer close(cheapDone)
		c := httpClientFrom("127.0.0.10", true)
		for ctx.Err() == nil {
			start := time.Now()
			_, _, err := postFrom(c, url, `{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}`)
			cheap.add(time.Since(start), err)
			time.Sleep(20 * time.Millisecond)
		}
	}()
	// A transfer every 100 ms, so that every interval pre-confirms.
	txDone := make(chan struct{})
	go func() {
		defer close(txDone)
		accs, err := devnet.Accounts(devnet.Mnemonic, 2)
		if err != nil {
			b.Error(err)
			return
		}
		c := httpClientFrom("127.0.0.11", true)
		signer := types.LatestSigner(n.Genesis.Config)
		to := accs[1].Address
		for nonce := uint64(0); ctx.Err() == nil; nonce++ {
			tx := pendingtest.SignTx(b, signer, accs[0].Key, &types.DynamicFeeTx{ChainID: n.Genesis.Config.ChainID, Nonce: nonce,
				GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(100 * params.GWei), Gas: 21_000, To: &to, Value: big.NewInt(1)})
			raw, _ := tx.MarshalBinary()
			if _, body, err := postFrom(c, url, `{"jsonrpc":"2.0","id":1,"method":"eth_sendRawTransaction","params":["`+hexutil.Encode(raw)+`"]}`); err != nil || strings.Contains(string(body), "error") {
				b.Errorf("send: %s %v", body, err)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	time.Sleep(time.Second) // the load is running
	seals.mu.Lock()
	seals.times = nil
	seals.mu.Unlock()
	mu.Lock()
	preconfs = nil
	mu.Unlock()
	b.ResetTimer()
	time.Sleep(time.Duration(b.N)*sequencer.DefaultConfig().BlockTime + 100*time.Millisecond)
	b.StopTimer()
	stop()
	ok, refused, failed := done()
	<-cheapDone
	<-txDone
	spread, worst, nSeals := seals.jitter(sequencer.DefaultConfig().BlockTime)
	mu.Lock()
	pc := &sealTimes{times: preconfs}
	mu.Unlock()
	pSpread, pWorst, nPre := pc.jitter(sequencer.DefaultConfig().PreconfInterval)
	cnt, p50, p99, cheapMax, _ := cheap.summary()
	ex := n.API.Executions().Stats()
	b.ReportMetric(float64(spread.Microseconds())/1000, "seal-spread-ms")
	b.ReportMetric(float64(worst.Microseconds())/1000, "seal-interval-dev-ms")
	b.ReportMetric(float64(pWorst.Microseconds())/1000, "preconf-interval-dev-ms")
	b.ReportMetric(float64(p99.Microseconds())/1000, "blockNumber-p99-ms")
	b.Logf("%d seals: offset spread %s, worst interval deviation %s; %d pre-confirmations: spread %s, worst interval deviation %s",
		nSeals, spread, worst, nPre, pSpread, pWorst)
	b.Logf("50M-gas eth_calls: %d executed, %d refused, %d failed (limiter: %d admitted, %d wait timeouts, %d queue full)",
		ok, refused, failed, ex.Admitted, ex.WaitTimeout, ex.QueueFull)
	b.Logf("eth_blockNumber meanwhile: %d calls, p50 %s, p99 %s, max %s", cnt, p50, p99, cheapMax)
}
