package rpc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
)

// serveOn starts a Server on l (wrapped by wrap when non-nil) with the
// standard test methods; stopped at cleanup.
func serveOn(t *testing.T, cfg Config, wrap func(net.Listener) net.Listener) (*Server, string) {
	t.Helper()
	s, err := NewServer(cfg, zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	registerTestMethods(s)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		l = wrap(l)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	for s.Addr() == nil {
		time.Sleep(time.Millisecond)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s, "http://" + l.Addr().String()
}

// gatedListener records accepted connections in order; the test can hold
// the server's writes on any of them: a client that does not read, without
// depending on socket buffer sizes.
type gatedListener struct {
	net.Listener
	mu    sync.Mutex
	conns []*gatedConn
	added chan struct{}
}

func newGatedListener(l net.Listener) *gatedListener {
	return &gatedListener{Listener: l, added: make(chan struct{}, 1)}
}

func (l *gatedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	g := &gatedConn{Conn: c, open: make(chan struct{}), closed: make(chan struct{})}
	close(g.open)
	l.mu.Lock()
	l.conns = append(l.conns, g)
	l.mu.Unlock()
	select {
	case l.added <- struct{}{}:
	default:
	}
	return g, nil
}

// hold stops (on) or resumes the server's writes on the i-th accepted
// connection.
func (l *gatedListener) hold(i int, on bool) {
	var g *gatedConn
	for g == nil {
		l.mu.Lock()
		if len(l.conns) > i {
			g = l.conns[i]
		}
		l.mu.Unlock()
		if g == nil {
			<-l.added
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
		if on {
			g.open = make(chan struct{})
		}
	default:
		if !on {
			close(g.open)
		}
	}
}

type gatedConn struct {
	net.Conn
	mu       sync.Mutex
	open     chan struct{} // closed while writes may proceed
	deadline time.Time     // write deadline, honoured while held
	closed   chan struct{}
	once     sync.Once
}

func (g *gatedConn) SetWriteDeadline(t time.Time) error {
	g.mu.Lock()
	g.deadline = t
	g.mu.Unlock()
	return g.Conn.SetWriteDeadline(t)
}

func (g *gatedConn) SetDeadline(t time.Time) error {
	g.mu.Lock()
	g.deadline = t
	g.mu.Unlock()
	return g.Conn.SetDeadline(t)
}

func (g *gatedConn) Write(b []byte) (int, error) {
	g.mu.Lock()
	open, deadline := g.open, g.deadline
	g.mu.Unlock()
	var expire <-chan time.Time
	if !deadline.IsZero() {
		timer := time.NewTimer(time.Until(deadline))
		defer timer.Stop()
		expire = timer.C
	}
	select {
	case <-open:
	case <-g.closed:
		return 0, net.ErrClosed
	case <-expire:
		return 0, os.ErrDeadlineExceeded
	}
	return g.Conn.Write(b)
}

func (g *gatedConn) CloseWrite() error {
	if cw, ok := g.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (g *gatedConn) Close() error {
	g.once.Do(func() { close(g.closed) })
	return g.Conn.Close()
}

// serveGated is serveOn with a gatedListener.
func serveGated(t *testing.T, cfg Config) (*Server, string, *gatedListener) {
	t.Helper()
	var gl *gatedListener
	s, url := serveOn(t, cfg, func(l net.Listener) net.Listener { gl = newGatedListener(l); return gl })
	return s, url, gl
}

// waitFor polls cond every 10 ms until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readUntilClose reads (and discards) messages until the connection ends
// and returns the close error.
func readUntilClose(t *testing.T, c *websocket.Conn) error {
	t.Helper()
	// The default handler's close reply fails once the server is gone and
	// would hide the close frame's code and reason.
	c.SetCloseHandler(func(int, string) error { return nil })
	c.SetPingHandler(func(string) error { return nil })
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		if _, _, err := c.ReadMessage(); err != nil {
			return err
		}
	}
}

func wantClose(t *testing.T, err error, code int, reason string) {
	t.Helper()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != code || !strings.Contains(ce.Text, reason) {
		t.Fatalf("want close %d %q, got %v", code, reason, err)
	}
}

func bigRequest(id, size int) []byte {
	return []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"big","params":[%d]}`, id, size))
}

// A client that stops reading is disconnected once its queued output
// passes WSMaxQueuedBytes: close 1008 with a reason (once the message being
// written is out), counted, and the server's queued output goes back to
// zero. Another client is unaffected.
func TestWebsocketSlowConsumerBytes(t *testing.T) {
	cfg := Config{MaxResponseBytes: 64 << 10, WSMaxQueuedBytes: 256 << 10}
	s, url, gate := serveGated(t, cfg)
	c := wsDial(t, url)
	other := wsDial(t, url)
	gate.hold(0, true)  // c stops reading
	for i := range 10 { // 10 x 60 KB: the 5th passes 256 KiB
		if err := c.WriteMessage(websocket.TextMessage, bigRequest(i, 60_000)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the slow consumer disconnect", func() bool { return s.Stats().Disconnects[disconnectSlowConsumer] == 1 })
	if q := s.Stats().QueuedOutputBytes; q > 64<<10 {
		t.Errorf("%d bytes still queued after the disconnect (only the message being written may stay)", q)
	}
	gate.hold(0, false)
	wantClose(t, readUntilClose(t, c), ClosePolicyViolation, "slow consumer: output queue over its limit (1024 messages, 262144 bytes)")
	waitFor(t, "queued output released", func() bool { return s.Stats().QueuedOutputBytes == 0 })
	if got := wsCall(t, other, `{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]}`); !jsonEqual(t, got, `{"jsonrpc":"2.0","id":1,"result":1}`) {
		t.Errorf("other connection: %s", got)
	}
}

// The count bound holds too: many small unread responses.
func TestWebsocketSlowConsumerMessages(t *testing.T) {
	s, url, gate := serveGated(t, Config{WSSendQueue: 8})
	c := wsDial(t, url)
	gate.hold(0, true)
	for i := range 20 {
		if err := c.WriteMessage(websocket.TextMessage, bigRequest(i, 10)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the slow consumer disconnect", func() bool { return s.Stats().Disconnects[disconnectSlowConsumer] == 1 })
	gate.hold(0, false)
	wantClose(t, readUntilClose(t, c), ClosePolicyViolation, "slow consumer: output queue over its limit (8 messages")
}

// A client stuck writing is still closed: the close frame waits at most
// WSWriteTimeout for the message being written, then the socket is closed.
func TestWebsocketSlowConsumerNeverReads(t *testing.T) {
	cfg := Config{MaxResponseBytes: 64 << 10, WSMaxQueuedBytes: 128 << 10, WSWriteTimeout: 300 * time.Millisecond}
	s, url, gate := serveGated(t, cfg)
	c := wsDial(t, url)
	gate.hold(0, true)
	for i := range 5 {
		if err := c.WriteMessage(websocket.TextMessage, bigRequest(i, 60_000)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the slow consumer disconnect", func() bool { return s.Stats().Disconnects[disconnectSlowConsumer] == 1 })
	waitFor(t, "the connection closed", func() bool { return s.Stats().OpenConns == 0 && s.Stats().QueuedOutputBytes == 0 })
}

// The server-wide bound: when two clients together pass MaxQueuedOutput,
// the one holding the most is disconnected with 1013; the other keeps its
// responses.
func TestServerOutputBoundEvictsLargest(t *testing.T) {
	cfg := Config{MaxResponseBytes: 64 << 10, WSMaxQueuedBytes: 700 << 10, MaxQueuedOutput: 800 << 10}
	s, url, gate := serveGated(t, cfg)
	a := wsDial(t, url)
	b := wsDial(t, url)
	gate.hold(0, true)
	gate.hold(1, true)
	for i := range 12 { // 600 KB queued by a
		if err := a.WriteMessage(websocket.TextMessage, bigRequest(i, 50_000)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "a's queue", func() bool { return s.Stats().QueuedOutputBytes > 590_000 })
	for i := range 10 { // b passes the total at its 5th, holding less than a
		if err := b.WriteMessage(websocket.TextMessage, bigRequest(100+i, 50_000)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the eviction", func() bool { return s.Stats().Disconnects[disconnectOutputLimit] == 1 })
	gate.hold(0, false)
	gate.hold(1, false)
	wantClose(t, readUntilClose(t, a), CloseTryAgainLater, "server output buffer full (limit 819200 bytes)")
	b.SetReadDeadline(time.Now().Add(10 * time.Second))
	for range 10 {
		if _, _, err := b.ReadMessage(); err != nil {
			t.Fatalf("b lost its responses: %v", err)
		}
	}
	if st := s.Stats(); st.Disconnects[disconnectSlowConsumer] != 0 || st.Disconnects[disconnectOutputLimit] != 1 {
		t.Errorf("disconnects %v", st.Disconnects)
	}
}

// HTTP responses count in the server-wide bound while written; one that
// does not fit (clients not reading hold the rest) is refused with 503
// -32005, while small answers still go through.
func TestServerOutputBoundRefusesHTTP(t *testing.T) {
	cfg := Config{MaxResponseBytes: 200 << 10, WSMaxQueuedBytes: 200 << 10, MaxQueuedOutput: 400 << 10}
	s, url, gate := serveGated(t, cfg)
	addr := strings.TrimPrefix(url, "http://")
	body := `{"jsonrpc":"2.0","id":1,"method":"big","params":[190000]}`
	for i := range 2 { // two raw clients whose 190 KB answers never leave
		c := dialFrom(t, "127.0.0.1", addr)
		gate.hold(i, true)
		fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	}
	waitFor(t, "the stuck responses", func() bool { return s.Stats().QueuedOutputBytes > 300<<10 })
	status, got := post(t, url, body)
	if status != http.StatusServiceUnavailable || !jsonEqual(t, got, `{"jsonrpc":"2.0","id":null,"error":{"code":-32005,"message":"server output buffer full (limit 409600 bytes), try again later"}}`) {
		t.Errorf("big response with the bound full: %d %s", status, got)
	}
	if status, got := post(t, url, `{"jsonrpc":"2.0","id":2,"method":"echo","params":[2]}`); status != 200 || !jsonEqual(t, got, `{"jsonrpc":"2.0","id":2,"result":2}`) {
		t.Errorf("small response with the bound full: %d %s", status, got)
	}
	if n := s.Stats().OutputRefused; n != 1 {
		t.Errorf("output refused %d, want 1", n)
	}
	gate.hold(0, false)
	gate.hold(1, false)
	waitFor(t, "the stuck responses written", func() bool { return s.Stats().QueuedOutputBytes == 0 })
}

// A message over WSMaxMessageBytes closes with 1009 and a reason.
func TestWebsocketMessageTooBigReason(t *testing.T) {
	s, url := testServer(t, Config{WSMaxMessageBytes: 512}, nil)
	c := wsDial(t, url)
	if err := c.WriteMessage(websocket.TextMessage, []byte(strings.Repeat(" ", 600))); err != nil {
		t.Fatal(err)
	}
	wantClose(t, readUntilClose(t, c), CloseMessageTooBig, "message too big (limit 512 bytes)")
	if n := s.Stats().Disconnects[disconnectTooBig]; n != 1 {
		t.Errorf("message_too_big disconnects %d", n)
	}
}

// An idle websocket is closed with 1000 "idle timeout"; one with a
// subscription, or one sending requests, is not (pings keep the
// subscribed one's liveness checked).
func TestWebsocketIdleTimeout(t *testing.T) {
	feed := newFeedSub()
	cfg := Config{WSIdleTimeout: 300 * time.Millisecond, WSPingInterval: 100 * time.Millisecond, WSPongTimeout: 2 * time.Second}
	s, url := testServer(t, cfg, func(s *Server) { s.RegisterSubscription("feed", feed.handler) })
	idle := wsDial(t, url)
	busy := wsDial(t, url)
	subbed := wsDial(t, url)
	wsCall(t, subbed, `{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["feed"]}`)
	wsRead(t, subbed) // "first"
	subErr := make(chan error, 1)
	go func() { // reading answers the server's pings
		subbed.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, _, err := subbed.ReadMessage()
		subErr <- err
	}()
	start := time.Now()
	for time.Since(start) < time.Second {
		wsCall(t, busy, `{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]}`)
		time.Sleep(100 * time.Millisecond)
	}
	wantClose(t, readUntilClose(t, idle), CloseNormal, "idle timeout (no request for 300ms)")
	select {
	case err := <-subErr:
		t.Fatalf("subscribed connection ended: %v", err)
	default:
	}
	if n := s.Stats().Disconnects[disconnectIdle]; n != 1 {
		t.Errorf("idle disconnects %d, want 1", n)
	}
}

// dialFrom opens a TCP connection to addr from the loopback address src.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip sends one JSON-RPC POST on c and returns the status and body.
func roundTrip(t *testing.T, c net.Conn) (int, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]}`
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Admission: MaxConnsPerIP per address, the last ConnReserve slots only for
// addresses holding fewer than ConnReservePerIP, MaxConns overall.
func TestConnectionLimitsPerAddressAndReserve(t *testing.T) {
	cfg := Config{MaxConns: 10, MaxConnsPerIP: 4, ConnReserve: 3, ConnReservePerIP: 1}
	s, url := testServer(t, cfg, nil)
	addr := strings.TrimPrefix(url, "http://")
	type conn struct {
		src  string
		want string // "" admitted, else the refusal message
	}
	perAddr := "too many connections from your address (limit 4)"
	reserve := "too many open connections: the last 3 of 10 are kept for addresses with fewer than 1"
	plan := []conn{
		{"127.0.0.1", ""}, {"127.0.0.1", ""}, {"127.0.0.1", ""}, {"127.0.0.1", ""},
		{"127.0.0.1", perAddr},
		{"127.0.0.2", ""}, {"127.0.0.2", ""}, {"127.0.0.2", ""}, // 7 open: only the reserve is left
		{"127.0.0.2", reserve},
		{"127.0.0.3", ""}, // holds none: the reserve admits it
		{"127.0.0.3", reserve},
		{"127.0.0.4", ""}, {"127.0.0.5", ""}, // 10 open
		{"127.0.0.6", "too many open connections (limit 10)"},
	}
	conns := make([]net.Conn, len(plan))
	for i, p := range plan {
		conns[i] = dialFrom(t, p.src, addr)
		// Admission follows accept order: let the listener see each in turn.
		waitFor(t, "accept", func() bool {
			st := s.Stats()
			n := uint64(0)
			for _, r := range st.Refused {
				n += r
			}
			return st.OpenConns+int(n) == i+1
		})
	}
	for i, p := range plan {
		status, body := roundTrip(t, conns[i])
		switch {
		case p.want == "" && status != 200:
			t.Errorf("conn %d from %s: refused %d %s", i, p.src, status, body)
		case p.want != "" && (status != 503 || !strings.Contains(body, `"code":-32005`) || !strings.Contains(body, p.want)):
			t.Errorf("conn %d from %s: %d %s, want 503 %q", i, p.src, status, body, p.want)
		}
	}
	st := s.Stats()
	if st.Refused[refusedPerAddress] != 1 || st.Refused[refusedReserve] != 2 || st.Refused[refusedMaxConns] != 1 {
		t.Errorf("refused %v", st.Refused)
	}
	// Closing connections gives the slots back.
	for _, c := range conns {
		c.Close()
	}
	waitFor(t, "slots released", func() bool { return s.Stats().OpenConns == 0 })
	if status, _ := roundTrip(t, dialFrom(t, "127.0.0.6", addr)); status != 200 {
		t.Errorf("after release: %d", status)
	}
}

func TestAddrKey(t *testing.T) {
	for _, tt := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 5}, "10.1.2.3"},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:10.1.2.3"), Port: 5}, "10.1.2.3"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:3:4:5:6"), Port: 5}, "2001:db8:1:2::/64"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:ffff::1"), Port: 9}, "2001:db8:1:2::/64"},
		{&net.UnixAddr{Name: "/tmp/s", Net: "unix"}, "/tmp/s"},
	} {
		if got := addrKey(tt.addr); got != tt.want {
			t.Errorf("addrKey(%v) = %q, want %q", tt.addr, got, tt.want)
		}
	}
}

// Slow clients are cut off: headers trickled (slowloris) are dropped after
// ReadHeaderTimeout, a trickled body is answered 408 -32002 after
// ReadTimeout, a connection that sends nothing is closed, and an idle
// keep-alive connection is closed after IdleTimeout.
func TestHTTPReadTimeouts(t *testing.T) {
	cfg := Config{ReadHeaderTimeout: 300 * time.Millisecond, ReadTimeout: 600 * time.Millisecond, IdleTimeout: 400 * time.Millisecond}
	s, url := testServer(t, cfg, nil)
	addr := strings.TrimPrefix(url, "http://")
	closedWithin := func(c net.Conn, d time.Duration) bool {
		c.SetReadDeadline(time.Now().Add(d))
		_, err := io.Copy(io.Discard, c)
		var ne net.Error
		return !(errors.As(err, &ne) && ne.Timeout())
	}
	trickle := func(c net.Conn, s string, every time.Duration) {
		go func() {
			for i := range len(s) {
				if _, err := c.Write([]byte{s[i]}); err != nil {
					return
				}
				time.Sleep(every)
			}
		}()
	}

	t.Run("slowloris headers", func(t *testing.T) {
		c := dialFrom(t, "127.0.0.1", addr)
		trickle(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Slow: "+strings.Repeat("a", 100), 50*time.Millisecond)
		start := time.Now()
		if !closedWithin(c, 3*time.Second) {
			t.Fatal("slow headers not cut off")
		}
		if d := time.Since(start); d < 250*time.Millisecond {
			t.Errorf("closed after %s, before the header timeout", d)
		}
	})
	t.Run("silent connection", func(t *testing.T) {
		if !closedWithin(dialFrom(t, "127.0.0.1", addr), 3*time.Second) {
			t.Fatal("silent connection not closed")
		}
	})
	t.Run("slow body", func(t *testing.T) {
		c := dialFrom(t, "127.0.0.1", addr)
		fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n")
		trickle(c, strings.Repeat(" ", 100), 100*time.Millisecond)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout || !jsonEqual(t, b, `{"jsonrpc":"2.0","id":null,"error":{"code":-32002,"message":"request not received within 600ms"}}`) {
			t.Errorf("slow body: %d %s", resp.StatusCode, b)
		}
		if n := s.Stats().BodyTimeouts; n != 1 {
			t.Errorf("body timeouts %d", n)
		}
	})
	t.Run("idle keep-alive", func(t *testing.T) {
		c := dialFrom(t, "127.0.0.1", addr)
		if status, _ := roundTrip(t, c); status != 200 {
			t.Fatalf("status %d", status)
		}
		start := time.Now()
		if !closedWithin(c, 3*time.Second) {
			t.Fatal("idle keep-alive connection not closed")
		}
		if d := time.Since(start); d < 300*time.Millisecond {
			t.Errorf("closed after %s, before the idle timeout", d)
		}
	})
}

// MaxCallsPerIP: an address runs at most that many calls at once (batch
// elements included); more wait their turn. Another address, and methods
// under their own Limiter, do not wait for it.
func TestMaxCallsPerIP(t *testing.T) {
	release := make(chan struct{})
	var running atomic.Int32
	lim, err := NewLimiter(4, 4, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	s, url := testServer(t, Config{MaxCallsPerIP: 2}, func(s *Server) {
		s.Register("block", func(ctx context.Context, p Params) (any, error) {
			running.Add(1)
			defer running.Add(-1)
			<-release
			return "done", nil
		})
		s.RegisterLimited("heavy", lim, func(ctx context.Context, p Params) (any, error) { return "heavy", nil })
	})
	addr := strings.TrimPrefix(url, "http://")
	results := make(chan string, 3)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"block"}`,
		`[{"jsonrpc":"2.0","id":2,"method":"block"},{"jsonrpc":"2.0","id":3,"method":"block"}]`,
	} {
		go func() {
			c := dialFrom(t, "127.0.0.1", addr)
			_, b := roundTripBody(t, c, body)
			results <- b
		}()
	}
	waitFor(t, "two running and one waiting", func() bool { return running.Load() == 2 && s.Stats().CallWaits == 1 })
	time.Sleep(50 * time.Millisecond)
	if n := running.Load(); n != 2 {
		t.Fatalf("%d calls running from one address, limit 2", n)
	}
	for _, tt := range []struct{ src, body, want string }{
		{"127.0.0.2", `{"jsonrpc":"2.0","id":4,"method":"echo","params":[4]}`, `{"jsonrpc":"2.0","id":4,"result":4}`},
		{"127.0.0.1", `{"jsonrpc":"2.0","id":5,"method":"heavy"}`, `{"jsonrpc":"2.0","id":5,"result":"heavy"}`},
	} {
		if _, got := roundTripBody(t, dialFrom(t, tt.src, addr), tt.body); !jsonEqual(t, []byte(got), tt.want) {
			t.Errorf("from %s with the first address full: %s", tt.src, got)
		}
	}
	close(release)
	for range 2 {
		if r := <-results; !strings.Contains(r, `"done"`) {
			t.Errorf("blocked call: %s", r)
		}
	}
}

// roundTripBody sends one JSON-RPC POST of body on c.
func roundTripBody(t *testing.T, c net.Conn, body string) (int, string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Errorf("read response: %v", err)
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
