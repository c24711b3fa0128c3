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
	DefaultWSMaxMessageBytes = 5 << 20 // 5 MiB
	DefaultWSMaxInflight     = 16      // concurrently executing messages per websocket
	DefaultWSSendQueue       = 1024    // queued outgoing messages per websocket
	DefaultWSPingInterval    = 30 * time.Second
	DefaultWSPongTimeout     = 30 * time.Second
	DefaultWSWriteTimeout    = 10 * time.Second
	DefaultMaxConns          = 1000
	DefaultShutdownTimeout   = 10 * time.Second
	DefaultReadHeaderTimeout = 10 * time.Second
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
	// closes the connection with status 1009 (message too big). Default 5 MiB.
	WSMaxMessageBytes int64
	// WSMaxInflight bounds the messages of one websocket connection that
	// execute concurrently; the connection is not read while it is full.
	// Default 16.
	WSMaxInflight int
	// WSSendQueue is the capacity, in messages, of a websocket connection's
	// outgoing queue. Responses wait for room; a subscription notification
	// that finds the queue full drops the connection (slow consumer).
	// Default 1024.
	WSSendQueue int
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
	// and closed. Not enforced when the Server is used only as an
	// http.Handler. Default 1000.
	MaxConns int
	// ShutdownTimeout bounds Stop when the caller's context has no earlier
	// deadline. Default 10s.
	ShutdownTimeout time.Duration
	// ReadHeaderTimeout bounds reading HTTP request headers. Default 10s.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes idle HTTP keep-alive connections. Default 120s.
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
	setDef(&c.WSPingInterval, DefaultWSPingInterval)
	setDef(&c.WSPongTimeout, DefaultWSPongTimeout)
	setDef(&c.WSWriteTimeout, DefaultWSWriteTimeout)
	setDef(&c.MaxConns, DefaultMaxConns)
	setDef(&c.ShutdownTimeout, DefaultShutdownTimeout)
	setDef(&c.ReadHeaderTimeout, DefaultReadHeaderTimeout)
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
	pos("WSPingInterval", int64(c.WSPingInterval))
	pos("WSPongTimeout", int64(c.WSPongTimeout))
	pos("WSWriteTimeout", int64(c.WSWriteTimeout))
	pos("MaxConns", int64(c.MaxConns))
	pos("ShutdownTimeout", int64(c.ShutdownTimeout))
	pos("ReadHeaderTimeout", int64(c.ReadHeaderTimeout))
	pos("IdleTimeout", int64(c.IdleTimeout))
	return errors.Join(errs...)
}
