package stream

import (
	"errors"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/stream/streamtest"
)

// recClock is a manual clock that reports every ticker asked of it.
type recClock struct {
	*pending.ManualClock
	tickers chan time.Duration
}

func newRecClock() *recClock {
	return &recClock{ManualClock: pending.NewManualClock(time.Unix(1_700_000_000, 0)), tickers: make(chan time.Duration, 4096)}
}

func (c *recClock) NewTicker(d time.Duration) pending.Ticker {
	t := c.ManualClock.NewTicker(d)
	c.tickers <- d // after: a test that saw it may Advance
	return t
}

// waitTicker waits until a ticker of d is created.
func (c *recClock) waitTicker(t *testing.T, d time.Duration) {
	t.Helper()
	for recv(t, c.tickers, "a ticker") != d {
	}
}

// nextSleep returns the next ticker other than the ping ticker.
func (c *recClock) nextSleep(t *testing.T, ping time.Duration) time.Duration {
	t.Helper()
	for {
		d := recv(t, c.tickers, "a ticker")
		if d != ping {
			return d
		}
	}
}

type testSink struct {
	payloads chan *Payload
	downs    chan error
	alives   chan time.Time
}

func newTestSink() *testSink {
	return &testSink{payloads: make(chan *Payload, 4096), downs: make(chan error, 256), alives: make(chan time.Time, 256)}
}

func (s *testSink) Payload(p *Payload, _ time.Time) { s.payloads <- p }
func (s *testSink) Down(err error)                  { s.downs <- err }

// Alive (Liveness) drops what the test does not read.
func (s *testSink) Alive(at time.Time) {
	select {
	case s.alives <- at:
	default:
	}
}

// recv waits for a value; the deadline only turns a hang into a failure.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("no %s", what)
		panic("unreachable")
	}
}

// testConfig has a ping interval no backoff step equals, so that tests can
// tell the tickers apart.
func testConfig(url string) ClientConfig {
	cfg := DefaultClientConfig()
	cfg.URL = url
	cfg.PingInterval = 333 * time.Millisecond
	cfg.PongTimeout = 999 * time.Millisecond
	cfg.IdleTimeout = 30 * time.Second
	return cfg
}

func startClient(t *testing.T, cfg ClientConfig, clock pending.Clock, setup ...func(*Client)) (*Client, *testSink, *ClientMetrics) {
	t.Helper()
	sink := newTestSink()
	m := NewClientMetrics(nil)
	c, err := NewClient(cfg, sink, clock, m, zerolog.New(zerolog.NewTestWriter(t)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range setup {
		f(c)
	}
	c.Start()
	t.Cleanup(c.Stop)
	return c, sink, m
}

func TestClientConfigValidate(t *testing.T) {
	ok := DefaultClientConfig()
	ok.URL = "ws://127.0.0.1:8545/preconfirmations"
	tests := []struct {
		name string
		f    func(*ClientConfig)
		ok   bool
	}{
		{"defaults with a URL", func(*ClientConfig) {}, true},
		{"wss", func(c *ClientConfig) { c.URL = "wss://relay.example/preconfirmations" }, true},
		{"no URL", func(c *ClientConfig) { c.URL = "" }, false},
		{"http URL", func(c *ClientConfig) { c.URL = "http://127.0.0.1:8545" }, false},
		{"no host", func(c *ClientConfig) { c.URL = "ws:///x" }, false},
		{"bad URL", func(c *ClientConfig) { c.URL = "ws://[::1" }, false},
		{"zero ping", func(c *ClientConfig) { c.PingInterval = 0 }, false},
		{"pong timeout below ping", func(c *ClientConfig) { c.PongTimeout = c.PingInterval / 2 }, false},
		{"idle timeout at ping", func(c *ClientConfig) { c.IdleTimeout = c.PingInterval }, false},
		{"zero backoff", func(c *ClientConfig) { c.MinBackoff = 0 }, false},
		{"max below min backoff", func(c *ClientConfig) { c.MaxBackoff = c.MinBackoff / 2 }, false},
		{"zero handshake", func(c *ClientConfig) { c.HandshakeTimeout = 0 }, false},
		{"zero message bytes", func(c *ClientConfig) { c.MaxMessageBytes = 0 }, false},
		{"huge message bytes", func(c *ClientConfig) { c.MaxMessageBytes = 2 << 30 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.f(&c)
			err := c.Validate()
			if tt.ok != (err == nil) || (err != nil && !errors.Is(err, ErrClientConfig)) {
				t.Fatalf("Validate: %v", err)
			}
		})
	}
	if _, err := NewClient(ok, nil, pending.SystemClock{}, nil, zerolog.Nop()); !errors.Is(err, ErrClientConfig) {
		t.Fatalf("nil sink: %v", err)
	}
}

// TestClientDelivers: text, raw binary and brotli frames reach the sink in
// order; a frame that does not decode is counted and skipped, and the
// connection stays up.
func TestClientDelivers(t *testing.T) {
	srv := streamtest.NewServer(t)
	_, sink, m := startClient(t, testConfig(srv.URL), newRecClock())
	conn := recv(t, srv.Accepted, "connection")
	frames := []struct {
		mt   int
		data []byte
	}{
		{websocket.TextMessage, encode(t, testPayload(t, 0))},
		{websocket.BinaryMessage, compress(t, encode(t, testPayload(t, 1)))},
		{websocket.TextMessage, []byte(`{"index":"2"}`)},
		{websocket.BinaryMessage, []byte{0xde, 0xad}},
		{websocket.BinaryMessage, encode(t, testPayload(t, 2))},
	}
	for _, f := range frames {
		if err := conn.Send(f.mt, f.data); err != nil {
			t.Fatal(err)
		}
	}
	for want := uint64(0); want < 3; want++ {
		if p := recv(t, sink.payloads, "message"); p.Index != want {
			t.Fatalf("message index %d, want %d", p.Index, want)
		}
	}
	// The skipped frames were read before the last message was delivered.
	if got := testutil.ToFloat64(m.messages); got != 3 {
		t.Fatalf("messages_total %v", got)
	}
	for _, reason := range []string{"malformed", "missing_field"} {
		if got := testutil.ToFloat64(m.decodeErrors.WithLabelValues(reason)); got != 1 {
			t.Fatalf("decode_errors_total{%s} %v", reason, got)
		}
	}
	if got := testutil.ToFloat64(m.connected); got != 1 {
		t.Fatalf("connected %v", got)
	}
	select {
	case err := <-sink.downs:
		t.Fatalf("Down(%v) on a healthy connection", err)
	default:
	}
}

// TestClientPongTimeout: a server that stops answering pings is dropped
// after PongTimeout; Down says why and the client reconnects.
func TestClientPongTimeout(t *testing.T) {
	srv := streamtest.NewServer(t)
	srv.NoPong(true)
	clock := newRecClock()
	cfg := testConfig(srv.URL)
	_, sink, m := startClient(t, cfg, clock)
	conn := recv(t, srv.Accepted, "connection")
	clock.waitTicker(t, cfg.PingInterval)
	// Ticks at 333 (ping), 666, 999 (ping outstanding 666 ms), 1332
	// (outstanding 999 ms = PongTimeout).
	for i := 0; i < 4; i++ {
		clock.Advance(cfg.PingInterval)
		if i == 0 {
			recv(t, conn.Pings, "ping")
		}
	}
	err := recv(t, sink.downs, "Down")
	if !errors.Is(err, ErrPongTimeout) {
		t.Fatalf("Down(%v), want ErrPongTimeout", err)
	}
	recv(t, conn.Closed(), "connection closed")
	if got := testutil.ToFloat64(m.disconnects.WithLabelValues("pong_timeout")); got != 1 {
		t.Fatalf("disconnects_total{pong_timeout} %v", got)
	}
	srv.NoPong(false)
	clock.Advance(clock.nextSleep(t, cfg.PingInterval))
	recv(t, srv.Accepted, "reconnection")
}

// TestClientIdle: a server that answers pings but sends no message is
// dropped after IdleTimeout; until then every answered ping tells the
// sink the connection is alive (Liveness).
func TestClientIdle(t *testing.T) {
	srv := streamtest.NewServer(t)
	clock := newRecClock()
	cfg := testConfig(srv.URL)
	cfg.IdleTimeout = 4 * cfg.PingInterval
	pongs := make(chan struct{}, 16)
	_, sink, _ := startClient(t, cfg, clock, func(c *Client) { c.onPong = func() { pongs <- struct{}{} } })
	conn := recv(t, srv.Accepted, "connection")
	clock.waitTicker(t, cfg.PingInterval)
	for i := 0; i < 4; i++ {
		clock.Advance(cfg.PingInterval)
		if i < 3 { // the fourth tick finds the connection idle and pings no more
			recv(t, conn.Pings, "ping")
			recv(t, pongs, "pong")
		}
	}
	if err := recv(t, sink.downs, "Down"); !errors.Is(err, ErrIdle) {
		t.Fatalf("Down(%v), want ErrIdle", err)
	}
	if n := len(sink.alives); n < 2 {
		t.Fatalf("Alive called %d times for 3 answered pings, want at least 2", n)
	}
}

// TestClientBackoff: failed attempts wait 100 ms doubling to the 10 s cap;
// Down is called once for the outage; a connection that delivered a
// message resets the backoff.
func TestClientBackoff(t *testing.T) {
	srv := streamtest.NewServer(t)
	srv.Refuse(true)
	clock := newRecClock()
	cfg := testConfig(srv.URL)
	_, sink, m := startClient(t, cfg, clock)
	want := []time.Duration{100, 200, 400, 800, 1600, 3200, 6400, 10000, 10000}
	for i, w := range want {
		d := clock.nextSleep(t, cfg.PingInterval)
		if d != w*time.Millisecond {
			t.Fatalf("wait %d: %s, want %s", i, d, w*time.Millisecond)
		}
		if i == len(want)-1 {
			srv.Refuse(false)
		}
		clock.Advance(d)
	}
	conn := recv(t, srv.Accepted, "connection")
	if srv.Attempts() != len(want)+1 {
		t.Fatalf("%d attempts, want %d", srv.Attempts(), len(want)+1)
	}
	if err := recv(t, sink.downs, "Down"); !errors.Is(err, ErrDial) {
		t.Fatalf("Down(%v), want ErrDial", err)
	}
	if len(sink.downs) != 0 {
		t.Fatalf("%d more Down calls during one outage", len(sink.downs))
	}
	if got := testutil.ToFloat64(m.disconnects.WithLabelValues("dial")); got != float64(len(want)) {
		t.Fatalf("disconnects_total{dial} %v", got)
	}
	conn.Send(websocket.TextMessage, encode(t, testPayload(t, 0)))
	recv(t, sink.payloads, "message")
	conn.Close()
	if err := recv(t, sink.downs, "Down"); !errors.Is(err, ErrConnLost) {
		t.Fatalf("Down(%v), want ErrConnLost", err)
	}
	if d := clock.nextSleep(t, cfg.PingInterval); d != cfg.MinBackoff {
		t.Fatalf("wait after a healthy connection %s, want %s", d, cfg.MinBackoff)
	}
	clock.Advance(cfg.MinBackoff)
	recv(t, srv.Accepted, "reconnection")
	clock.waitTicker(t, cfg.PingInterval) // serving: the reconnection was counted
	if got := testutil.ToFloat64(m.reconnects); got != 1 {
		t.Fatalf("reconnects_total %v", got)
	}
}

// TestClientStop: Stop returns while a dial hangs, while connected, twice,
// and without Start; no goroutine is left behind.
func TestClientStop(t *testing.T) {
	before := runtime.NumGoroutine()
	// A listener that accepts TCP and never answers the handshake.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	stopWithin := func(c *Client) {
		done := make(chan struct{})
		go func() { c.Stop(); close(done) }()
		recv(t, done, "return from Stop")
	}
	sink := newTestSink()
	cfg := testConfig("ws://" + ln.Addr().String() + "/preconfirmations")
	cfg.HandshakeTimeout = time.Hour
	c, err := NewClient(cfg, sink, newRecClock(), nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	c.Start()
	hung := recv(t, accepted, "dial")
	stopWithin(c)
	stopWithin(c)
	hung.Close()

	srv := streamtest.NewServer(t)
	c2, err := NewClient(testConfig(srv.URL), sink, newRecClock(), nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	c2.Start()
	conn := recv(t, srv.Accepted, "connection")
	stopWithin(c2)
	recv(t, conn.Closed(), "connection closed by Stop")
	if len(sink.downs) != 0 {
		t.Fatal("Stop called Down")
	}

	c3, _ := NewClient(testConfig(srv.URL), sink, newRecClock(), nil, zerolog.Nop())
	stopWithin(c3)
	c3.Start() // after Stop: does nothing

	ln.Close()
	srv.Close()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond) // goroutines of closed connections wind down
	}
}
