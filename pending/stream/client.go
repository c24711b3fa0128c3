package stream

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/pending"
)

// Sink receives what a Client reads.
type Sink interface {
	// Payload is called with each decoded message in arrival order, on the client's goroutine.
	Payload(p *Payload, received time.Time)
	// Down is called when the connection is lost or went stale; pending must fall back to the canonical head.
	Down(err error)
}

// Liveness is what a Sink may implement besides: Alive is called, on the
// client's goroutine, when the connection proved alive without a message
// (the server answered a ping, every PingInterval): a sequencer with
// nothing to pre-confirm is silent between its blocks' first messages, and
// its stream is not stale for that.
type Liveness interface {
	Alive(at time.Time)
}

// ClientConfig configures a Client. Data only; DefaultClientConfig holds
// the defaults, Validate checks it.
type ClientConfig struct {
	// URL is the stream's websocket URL (ws:// or wss://), e.g.
	// ws://sequencer:8545/preconfirmations. Required.
	URL string
	// PingInterval is how often the client pings the server. Default
	// 500 ms. It is also the resolution of the pong and idle checks.
	PingInterval time.Duration
	// PongTimeout: a ping unanswered for this long ends the connection
	// (ErrPongTimeout) and the client reconnects. Default 1.5 s (three
	// intervals); at least PingInterval.
	PongTimeout time.Duration
	// IdleTimeout: a connection on which no message (pre-confirmation)
	// arrived for this long is considered stale (ErrIdle) and reconnected,
	// even if it answers pings. Default 30 s; it must exceed the
	// sequencer's block time, since a block opens with a message (index 0)
	// even when it has no transactions.
	IdleTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait before reconnecting: it
	// starts at MinBackoff, doubles on every failed attempt up to
	// MaxBackoff, and is reset once a connection proved healthy (it
	// delivered a message or answered a ping). Defaults 100 ms and 10 s.
	MinBackoff, MaxBackoff time.Duration
	// HandshakeTimeout bounds the websocket handshake. Default 5 s.
	HandshakeTimeout time.Duration
	// MaxMessageBytes bounds one frame as read, and a brotli frame once
	// decompressed. A larger frame ends the connection (websocket read
	// limit) or is refused (decompressed). Default DefaultMaxMessageBytes.
	MaxMessageBytes int64
}

// DefaultClientConfig returns the defaults (URL unset).
func DefaultClientConfig() ClientConfig {
	return ClientConfig{
		PingInterval:     500 * time.Millisecond,
		PongTimeout:      1500 * time.Millisecond,
		IdleTimeout:      30 * time.Second,
		MinBackoff:       100 * time.Millisecond,
		MaxBackoff:       10 * time.Second,
		HandshakeTimeout: 5 * time.Second,
		MaxMessageBytes:  DefaultMaxMessageBytes,
	}
}

// Validate checks the configuration; errors wrap ErrClientConfig.
func (c ClientConfig) Validate() error {
	u, err := url.Parse(c.URL)
	switch {
	case c.URL == "":
		return fmt.Errorf("%w: no stream URL", ErrClientConfig)
	case err != nil:
		return fmt.Errorf("%w: stream URL %q: %v", ErrClientConfig, c.URL, err)
	case u.Scheme != "ws" && u.Scheme != "wss":
		return fmt.Errorf("%w: stream URL %q: scheme must be ws or wss", ErrClientConfig, c.URL)
	case u.Host == "":
		return fmt.Errorf("%w: stream URL %q has no host", ErrClientConfig, c.URL)
	case c.PingInterval <= 0:
		return fmt.Errorf("%w: ping interval %s must be positive", ErrClientConfig, c.PingInterval)
	case c.PongTimeout < c.PingInterval:
		return fmt.Errorf("%w: pong timeout %s shorter than the ping interval %s", ErrClientConfig, c.PongTimeout, c.PingInterval)
	case c.IdleTimeout <= c.PingInterval:
		return fmt.Errorf("%w: idle timeout %s must exceed the ping interval %s", ErrClientConfig, c.IdleTimeout, c.PingInterval)
	case c.MinBackoff <= 0 || c.MaxBackoff < c.MinBackoff:
		return fmt.Errorf("%w: backoff %s..%s: need 0 < min <= max", ErrClientConfig, c.MinBackoff, c.MaxBackoff)
	case c.HandshakeTimeout <= 0:
		return fmt.Errorf("%w: handshake timeout %s must be positive", ErrClientConfig, c.HandshakeTimeout)
	case c.MaxMessageBytes <= 0 || c.MaxMessageBytes > 1<<30:
		return fmt.Errorf("%w: max message bytes %d: need 1 .. 1 GiB", ErrClientConfig, c.MaxMessageBytes)
	}
	return nil
}

// Client follows a pre-confirmation stream: it connects, reads and decodes
// every frame, hands each message to the Sink in arrival order, pings the
// server, and reconnects with exponential backoff whenever the connection
// fails, stops answering pings or carries no message for IdleTimeout.
//
// Goroutines: one loop (Start .. Stop) that dials, checks liveness on the
// ping ticker and calls the Sink; per connection one reader that reads
// and decodes frames ahead of the loop (a queue of readAhead messages) and
// handles pongs. Sink calls come from the loop only, one at a time.
//
// Down is called once per outage: when an established connection ends
// (whatever the cause), and when the first connection attempt of the
// client fails; failed redials during an outage do not repeat it. Stop
// does not call Down.
type Client struct {
	cfg     ClientConfig
	sink    Sink
	clock   pending.Clock
	metrics *ClientMetrics
	log     zerolog.Logger
	dialer  websocket.Dialer
	logs    logLimiter

	ctx       context.Context
	cancel    context.CancelFunc
	done      chan struct{}
	startOnce sync.Once
	stopOnce  sync.Once
	started   atomic.Bool

	onPong func() // tests: called after a pong is recorded
}

// readAhead is how many decoded messages the reader may hold while the
// Sink is busy; beyond it the reader blocks and TCP pushes back.
const readAhead = 16

// writeWait bounds a ping or close frame write.
const writeWait = time.Second

// NewClient returns a stopped client; cfg must be valid (see Validate).
// metrics may be nil.
func NewClient(cfg ClientConfig, sink Sink, clock pending.Clock, metrics *ClientMetrics, log zerolog.Logger) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if sink == nil || clock == nil {
		return nil, fmt.Errorf("%w: nil sink or clock", ErrClientConfig)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Client{
		cfg: cfg, sink: sink, clock: clock, metrics: metrics,
		log:    log.With().Str("component", "stream-client").Str("url", cfg.URL).Logger(),
		dialer: websocket.Dialer{HandshakeTimeout: cfg.HandshakeTimeout, ReadBufferSize: 64 << 10},
		logs:   logLimiter{window: 10 * time.Second, burst: 4},
		ctx:    ctx, cancel: cancel, done: make(chan struct{}),
	}, nil
}

// Start launches the client's loop. Calling it again does nothing.
func (c *Client) Start() {
	c.startOnce.Do(func() {
		c.started.Store(true)
		go c.run()
	})
}

// Stop closes the connection and waits for the loop and the reader to end.
// It returns once a Sink call in progress returns; it never waits for the
// network (dials and reads are cancelled). Safe to call more than once,
// and without Start.
func (c *Client) Stop() {
	c.stopOnce.Do(func() {
		c.cancel()
		c.startOnce.Do(func() {}) // a later Start does nothing
		if c.started.Load() {
			<-c.done
		}
	})
}

func (c *Client) run() {
	defer close(c.done)
	backoff := c.cfg.MinBackoff
	down := false // Down was called for the current outage
	everConnected := false
	var downSince time.Time
	attempts := 0
	for {
		attempts++
		conn, err := c.dial()
		if c.ctx.Err() != nil {
			if conn != nil {
				conn.Close()
			}
			return
		}
		if err != nil {
			err = fmt.Errorf("%w: %v", ErrDial, err)
			c.metrics.disconnect(err)
			if ok, suppressed := c.logs.allow(c.clock.Now()); ok {
				c.log.Warn().Err(err).Int("attempt", attempts).Stringer("retry_in", backoff).Int("lines_suppressed", suppressed).
					Msg("pre-confirmation stream: cannot connect; pending answers the canonical head until it is back")
			}
			if !down && !everConnected {
				c.sink.Down(err)
				down = true
			}
		} else {
			if everConnected {
				c.metrics.reconnect()
			}
			now := c.clock.Now()
			if ok, suppressed := c.logs.allow(now); ok {
				ev := c.log.Info().Int("attempts", attempts).Int("lines_suppressed", suppressed)
				if !downSince.IsZero() {
					ev = ev.Stringer("down_for", now.Sub(downSince).Round(time.Millisecond))
				}
				ev.Msg("pre-confirmation stream connected")
			}
			everConnected, attempts = true, 0
			healthy, messages, err := c.serve(conn)
			if c.ctx.Err() != nil {
				return
			}
			c.metrics.disconnect(err)
			downSince = c.clock.Now()
			if ok, suppressed := c.logs.allow(downSince); ok {
				c.log.Warn().Err(err).Stringer("connected_for", downSince.Sub(now).Round(time.Millisecond)).Int("messages", messages).Int("lines_suppressed", suppressed).
					Msg("pre-confirmation stream lost; pending answers the canonical head until it is back")
			}
			c.sink.Down(err)
			down = true
			if healthy {
				backoff = c.cfg.MinBackoff
			}
		}
		if !c.sleep(backoff) {
			return
		}
		backoff = min(2*backoff, c.cfg.MaxBackoff)
	}
}

// dial connects. The websocket library watches the context while it
// dials TCP but not during the handshake: the connection is closed when
// the client stops, so that Stop never waits for a peer that accepted TCP
// and never answers.
func (c *Client) dial() (*websocket.Conn, error) {
	var mu sync.Mutex
	var unwatch func() bool
	d := c.dialer
	d.NetDialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			mu.Lock()
			unwatch = context.AfterFunc(c.ctx, func() { nc.Close() })
			mu.Unlock()
		}
		return nc, err
	}
	conn, _, err := d.DialContext(c.ctx, c.cfg.URL, nil)
	mu.Lock()
	if unwatch != nil {
		unwatch()
	}
	mu.Unlock()
	return conn, err
}

// sleep waits d on the client's clock; false when the client stopped.
func (c *Client) sleep(d time.Duration) bool {
	t := c.clock.NewTicker(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-c.ctx.Done():
		return false
	}
}

// frame is what the reader hands the loop: a decoded message, or the
// error that ended the connection.
type frame struct {
	p        *Payload
	received time.Time
	err      error
}

// serve runs one connection until it fails or the client stops. healthy
// reports whether the connection delivered a message or a pong.
func (c *Client) serve(conn *websocket.Conn) (healthy bool, messages int, err error) {
	c.metrics.setConnected(true)
	defer c.metrics.setConnected(false)
	conn.SetReadLimit(c.cfg.MaxMessageBytes)
	var lastPong atomic.Int64 // clock time of the last pong, UnixNano
	conn.SetPongHandler(func(string) error {
		lastPong.Store(c.clock.Now().UnixNano())
		if c.onPong != nil {
			c.onPong()
		}
		return nil
	})
	frames := make(chan frame, readAhead)
	quit := make(chan struct{})
	readerDone := make(chan struct{})
	go c.read(conn, frames, quit, readerDone)
	defer func() {
		close(quit)
		if c.ctx.Err() != nil {
			conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "client stopping"), time.Now().Add(writeWait))
		}
		conn.Close()
		<-readerDone
	}()

	lastMessage := c.clock.Now() // before the ticker: its first tick is later
	ticker := c.clock.NewTicker(c.cfg.PingInterval)
	defer ticker.Stop()
	var pingSent time.Time
	pingOutstanding := false
	for {
		select {
		case <-c.ctx.Done():
			return healthy, messages, c.ctx.Err()
		case f := <-frames:
			if f.err != nil {
				return healthy, messages, fmt.Errorf("%w: %v", ErrConnLost, f.err)
			}
			healthy = true
			messages++
			lastMessage = f.received
			c.sink.Payload(f.p, f.received)
		case now := <-ticker.C(): // the tick's time: a manual clock may have moved on
			if pingOutstanding && lastPong.Load() >= pingSent.UnixNano() {
				pingOutstanding, healthy = false, true
				if l, ok := c.sink.(Liveness); ok {
					l.Alive(time.Unix(0, lastPong.Load()))
				}
			}
			if pingOutstanding && now.Sub(pingSent) >= c.cfg.PongTimeout {
				return healthy, messages, fmt.Errorf("%w: no pong for %s", ErrPongTimeout, now.Sub(pingSent))
			}
			if idle := now.Sub(lastMessage); idle >= c.cfg.IdleTimeout {
				return healthy, messages, fmt.Errorf("%w: none for %s", ErrIdle, idle)
			}
			if !pingOutstanding {
				if err := conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)); err != nil {
					return healthy, messages, fmt.Errorf("%w: ping: %v", ErrConnLost, err)
				}
				pingSent, pingOutstanding = now, true
			}
		}
	}
}

// read reads and decodes frames until the connection fails or quit is
// closed. Frames that do not decode are counted, logged and skipped.
func (c *Client) read(conn *websocket.Conn, frames chan<- frame, quit <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		mt, data, err := conn.ReadMessage()
		if err != nil {
			select {
			case frames <- frame{err: err}:
			case <-quit:
			}
			return
		}
		received := c.clock.Now()
		p, err := DecodeLimit(mt, data, int(c.cfg.MaxMessageBytes))
		if err != nil {
			c.metrics.frameBytes(len(data))
			c.metrics.decodeError(err)
			if ok, suppressed := c.logs.allow(received); ok {
				c.log.Warn().Err(err).Int("bytes", len(data)).Int("lines_suppressed", suppressed).Msg("pre-confirmation stream: message skipped")
			}
			continue
		}
		c.metrics.message(len(data))
		select {
		case frames <- frame{p: p, received: received}:
		case <-quit:
			return
		}
	}
}

// logLimiter allows burst lines per window and counts the rest, so that a
// flapping stream does not flood the log. Safe for concurrent use.
type logLimiter struct {
	mu         sync.Mutex
	window     time.Duration
	burst      int
	start      time.Time
	n          int
	suppressed int
}

// allow reports whether a line may be written now, and how many were
// suppressed since the last one written.
func (l *logLimiter) allow(now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.start) >= l.window || now.Before(l.start) {
		l.start, l.n = now, 0
	}
	if l.n >= l.burst {
		l.suppressed++
		return false, 0
	}
	l.n++
	s := l.suppressed
	l.suppressed = 0
	return true, s
}
