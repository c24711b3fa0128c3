package rpc

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// Default values of Config. A zero field in Config means "use the default".
const (
	DefaultAddr              = "127.0.0.1:8545"
	DefaultMaxRequestBytes   = 5 << 20  // 5 MiB
	DefaultMaxBatch          = 1000     // elements per batch
	DefaultBatchParallelism  = 8        // concurrently executing elements of one batch
	DefaultMaxResponseBytes  = 25 << 20 // 25 MiB per response (single, element or whole batch)
	DefaultRequestTimeout    = 5 * time.Second
	DefaultWSMaxMessageBytes = 5 << 20  // 5 MiB
	DefaultWSMaxInflight     = 4        // concurrently executing messages per websocket
	DefaultWSSendQueue       = 1024     // queued outgoing messages per websocket
	DefaultWSMaxQueuedBytes  = 32 << 20 // queued outgoing bytes per websocket
	DefaultMaxQueuedOutput   = 256 << 20
	DefaultWSIdleTimeout     = 5 * time.Minute
	DefaultWSPingInterval    = 30 * time.Second
	DefaultWSPongTimeout     = 30 * time.Second
	DefaultWSWriteTimeout    = 10 * time.Second
	DefaultMaxConns          = 1000
	DefaultMaxConnsPerIP     = 100
	DefaultConnReservePerIP  = 4
	DefaultMaxCallsPerIP     = 8
	DefaultShutdownTimeout   = 10 * time.Second
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 15 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
)

// Config configures a Server. The zero value is valid: every zero field takes
// the default documented on it. Negative values are rejected by Validate.
type Config struct {
	// Addr is the TCP listen address used by Start. Default "127.0.0.1:8545".
	Addr string
	// MaxRequestBytes limits an HTTP request body. Larger bodies get HTTP 413
	// and a CodeLimitExceeded error. Default 5 MiB.
	MaxRequestBytes int64
	// MaxBatch limits the number of elements of one batch (HTTP or
	// websocket); a longer batch gets a single CodeLimitExceeded error.
	// Default 1000.
	MaxBatch int
	// BatchParallelism bounds how many elements of one batch execute at the
	// same time. Default 8.
	BatchParallelism int
	// MaxResponseBytes limits the encoded size of one response: a response
	// (or batch element) over it is replaced by a CodeLimitExceeded error, and
	// batch elements after the running total passes it are replaced likewise.
	// It also bounds one subscription notification. Default 25 MiB.
	MaxResponseBytes int
	// RequestTimeout bounds the execution of one message (a single request or
	// a whole batch). Handlers get a context with this deadline; a handler
	// still running at the deadline is answered with CodeTimeout (the handler
	// goroutine is left to finish and its result discarded). Default 5s.
	RequestTimeout time.Duration
	// WSMaxMessageBytes limits one incoming websocket message; a larger one
	// closes the connection with status 1009 (message too big) and a reason
	// naming the limit. Default 5 MiB.
	WSMaxMessageBytes int64
	// WSMaxInflight bounds the messages of one websocket connection that
	// execute concurrently; the connection is not read while it is full.
	// It also bounds the answers a connection has under construction (each
	// up to MaxResponseBytes) on top of its queue. Default 4.
	WSMaxInflight int
	// WSSendQueue is the capacity, in messages, of a websocket connection's
	// outgoing queue. A response or notification that finds it full
	// disconnects the client as a slow consumer (close 1008). Default 1024.
	WSSendQueue int
	// WSMaxQueuedBytes bounds the bytes of one websocket connection's
	// outgoing queue (the message being written included). A response or
	// notification that would pass it disconnects the client as a slow
	// consumer: the queue is dropped at once and the connection closed
	// with status 1008 and a reason. At least MaxResponseBytes.
	// Default 32 MiB (or MaxResponseBytes if larger).
	WSMaxQueuedBytes int64
	// MaxQueuedOutput bounds the output the whole server holds for
	// clients: every websocket queue plus HTTP responses being written.
	// When a message would pass it, the websocket with the most queued
	// output is disconnected (status 1013, "try again later") to make room;
	// an HTTP response that still does not fit is replaced by HTTP 503 with
	// a CodeLimitExceeded error. A connection holding less than 64 KiB is
	// never refused, so the bound may be exceeded by at most MaxConns x
	// 64 KiB. At least WSMaxQueuedBytes. Default 256 MiB (or
	// WSMaxQueuedBytes if larger).
	MaxQueuedOutput int64
	// WSIdleTimeout closes a websocket (status 1000, "idle timeout") that
	// has had no request for this long, no request executing and no
	// subscription. Connections with subscriptions are never idle; their
	// liveness is checked with pings. Default 5 min.
	WSIdleTimeout time.Duration
	// WSPingInterval is how often the server pings an idle websocket.
	// Default 30s.
	WSPingInterval time.Duration
	// WSPongTimeout is how long after a ping interval without any message or
	// pong the connection is considered dead. Default 30s.
	WSPongTimeout time.Duration
	// WSWriteTimeout bounds one websocket write. Default 10s.
	WSWriteTimeout time.Duration
	// MaxConns limits open TCP connections (HTTP keep-alive and websocket)
	// accepted by Start/Serve; extra connections are answered with HTTP 503
	// and a CodeLimitExceeded body, and closed. Connection limits are not
	// enforced when the Server is used only as an http.Handler.
	// Default 1000.
	MaxConns int
	// MaxConnsPerIP limits the open connections of one client address (an
	// IPv6 client by its /64). Behind a reverse proxy every client has the
	// proxy's address: raise it there. Default 100.
	MaxConnsPerIP int
	// ConnReserve keeps the last ConnReserve of the MaxConns slots for
	// addresses holding fewer than ConnReservePerIP connections, so a new
	// client is still served while others hog their share. Less than
	// MaxConns. Default MaxConns/10 (100).
	ConnReserve int
	// ConnReservePerIP: see ConnReserve. Default 4.
	ConnReservePerIP int
	// MaxCallsPerIP bounds the handler calls (batch elements included)
	// executing at once for one client address, across its connections;
	// more wait their turn (within their request's deadline). It keeps one
	// client from taking every CPU from the others and from the node's own
	// work. Methods registered with their own Limiter (RegisterLimited)
	// are bounded by it instead. Default 8.
	MaxCallsPerIP int
	// ShutdownTimeout bounds Stop when the caller's context has no earlier
	// deadline. Default 10s.
	ShutdownTimeout time.Duration
	// ReadHeaderTimeout bounds reading HTTP request headers (also of a new
	// connection that sends nothing): slowloris clients are answered 408
	// and closed after it. Default 10s.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading an HTTP request body, from the end of its
	// headers (under net/http, when the Server is used as an http.Handler:
	// the whole request); a body still arriving then is answered HTTP 408
	// with a CodeTimeout error and the connection closed. Default 15s.
	ReadTimeout time.Duration
	// IdleTimeout closes HTTP keep-alive connections idle this long
	// between requests. Default 120s.
	IdleTimeout time.Duration
	// CORSOrigins lists the browser origins allowed to call the HTTP
	// endpoint ("*" allows any). Default none: no CORS headers are sent, so
	// browsers refuse cross-origin calls; non-browser clients are unaffected.
	CORSOrigins []string
}

// DefaultConfig returns a Config with every field set to its default.
func DefaultConfig() Config { return Config{}.WithDefaults() }

// WithDefaults returns a copy of c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	setDef(&c.MaxRequestBytes, DefaultMaxRequestBytes)
	setDef(&c.MaxBatch, DefaultMaxBatch)
	setDef(&c.BatchParallelism, DefaultBatchParallelism)
	setDef(&c.MaxResponseBytes, DefaultMaxResponseBytes)
	setDef(&c.RequestTimeout, DefaultRequestTimeout)
	setDef(&c.WSMaxMessageBytes, DefaultWSMaxMessageBytes)
	setDef(&c.WSMaxInflight, DefaultWSMaxInflight)
	setDef(&c.WSSendQueue, DefaultWSSendQueue)
	setDef(&c.WSMaxQueuedBytes, max(DefaultWSMaxQueuedBytes, int64(c.MaxResponseBytes)))
	setDef(&c.MaxQueuedOutput, max(DefaultMaxQueuedOutput, c.WSMaxQueuedBytes))
	setDef(&c.WSIdleTimeout, DefaultWSIdleTimeout)
	setDef(&c.WSPingInterval, DefaultWSPingInterval)
	setDef(&c.WSPongTimeout, DefaultWSPongTimeout)
	setDef(&c.WSWriteTimeout, DefaultWSWriteTimeout)
	setDef(&c.MaxConns, DefaultMaxConns)
	setDef(&c.MaxConnsPerIP, DefaultMaxConnsPerIP)
	setDef(&c.ConnReserve, c.MaxConns/10)
	setDef(&c.ConnReservePerIP, DefaultConnReservePerIP)
	setDef(&c.MaxCallsPerIP, DefaultMaxCallsPerIP)
	setDef(&c.ShutdownTimeout, DefaultShutdownTimeout)
	setDef(&c.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	setDef(&c.ReadTimeout, DefaultReadTimeout)
	setDef(&c.IdleTimeout, DefaultIdleTimeout)
	return c
}

func setDef[T int | int64 | time.Duration](p *T, def T) {
	if *p == 0 {
		*p = def
	}
}

// Validate reports every invalid field of c (after defaults are applied).
func (c Config) Validate() error {
	c = c.WithDefaults()
	var errs []error
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		errs = append(errs, fmt.Errorf("rpc: invalid Addr %q: %w", c.Addr, err))
	}
	pos := func(name string, v int64) {
		if v < 0 {
			errs = append(errs, fmt.Errorf("rpc: %s must not be negative (got %d)", name, v))
		}
	}
	pos("MaxRequestBytes", c.MaxRequestBytes)
	pos("MaxBatch", int64(c.MaxBatch))
	pos("BatchParallelism", int64(c.BatchParallelism))
	pos("MaxResponseBytes", int64(c.MaxResponseBytes))
	pos("RequestTimeout", int64(c.RequestTimeout))
	pos("WSMaxMessageBytes", c.WSMaxMessageBytes)
	pos("WSMaxInflight", int64(c.WSMaxInflight))
	pos("WSSendQueue", int64(c.WSSendQueue))
	pos("WSMaxQueuedBytes", c.WSMaxQueuedBytes)
	pos("MaxQueuedOutput", c.MaxQueuedOutput)
	pos("WSIdleTimeout", int64(c.WSIdleTimeout))
	pos("WSPingInterval", int64(c.WSPingInterval))
	pos("WSPongTimeout", int64(c.WSPongTimeout))
	pos("WSWriteTimeout", int64(c.WSWriteTimeout))
	pos("MaxConns", int64(c.MaxConns))
	pos("MaxConnsPerIP", int64(c.MaxConnsPerIP))
	pos("ConnReserve", int64(c.ConnReserve))
	pos("ConnReservePerIP", int64(c.ConnReservePerIP))
	pos("MaxCallsPerIP", int64(c.MaxCallsPerIP))
	pos("ShutdownTimeout", int64(c.ShutdownTimeout))
	pos("ReadHeaderTimeout", int64(c.ReadHeaderTimeout))
	pos("ReadTimeout", int64(c.ReadTimeout))
	pos("IdleTimeout", int64(c.IdleTimeout))
	if c.WSMaxQueuedBytes < int64(c.MaxResponseBytes) {
		errs = append(errs, fmt.Errorf("rpc: WSMaxQueuedBytes %d below MaxResponseBytes %d (one response must fit)", c.WSMaxQueuedBytes, c.MaxResponseBytes))
	}
	if c.MaxQueuedOutput < c.WSMaxQueuedBytes {
		errs = append(errs, fmt.Errorf("rpc: MaxQueuedOutput %d below WSMaxQueuedBytes %d", c.MaxQueuedOutput, c.WSMaxQueuedBytes))
	}
	if c.ConnReserve >= c.MaxConns {
		errs = append(errs, fmt.Errorf("rpc: ConnReserve %d must be below MaxConns %d", c.ConnReserve, c.MaxConns))
	}
	if c.ReadTimeout < c.ReadHeaderTimeout {
		errs = append(errs, fmt.Errorf("rpc: ReadTimeout %s below ReadHeaderTimeout %s (it covers the headers too)", c.ReadTimeout, c.ReadHeaderTimeout))
	}
	return errors.Join(errs...)
}
