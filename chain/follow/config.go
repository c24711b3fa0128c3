package follow

import (
	"fmt"
	"net/url"
	"time"
)

// Config configures a Follower. Data only: zero fields take the defaults
// of DefaultConfig (WithDefaults); check with Validate.
type Config struct {
	// URL is the upstream JSON-RPC endpoint: http:// or https:// (the head
	// is polled every PollInterval) or ws:// or wss:// (newHeads
	// subscription, polled every 4 PollIntervals as a safety net).
	// Required.
	URL string
	// MaxReorg is the deepest reorg followed, in blocks removed from our
	// chain. A deeper one stops following with ErrReorgTooDeep. Default 64.
	MaxReorg uint64
	// PollInterval is how often the upstream head is polled. Default 500 ms.
	PollInterval time.Duration
	// FetchBatch is the number of blocks fetched in one upstream request
	// (a JSON-RPC batch) during catch-up. Default 16.
	FetchBatch int
	// FetchParallel is the number of such requests in flight. Memory is
	// bounded by about FetchBatch × (FetchParallel + 2) blocks. Default 4.
	FetchParallel int
	// RequestTimeout bounds one upstream request. Default 30 s.
	RequestTimeout time.Duration
	// BackoffMin and BackoffMax bound the wait before reconnecting after an
	// upstream fault: it starts at BackoffMin, doubles up to BackoffMax,
	// and goes back to BackoffMin after a successful exchange. Defaults
	// 500 ms and 30 s.
	BackoffMin time.Duration
	BackoffMax time.Duration
	// ProgressInterval is the period of the catch-up progress line on the
	// log (blocks, blocks/s, Mgas/s, ETA). Default 10 s.
	ProgressInterval time.Duration
	// JSONBlocks fetches blocks as JSON (eth_getBlockByNumber with full
	// transactions) only. By default the raw block (debug_getRawBlock) is
	// asked for first and JSON is used when the upstream refuses it.
	JSONBlocks bool
	// NoGzip asks an http(s) upstream for uncompressed answers. By default
	// they are gzipped (Go's http client asks for it and go-ethereum
	// complies), which saves bandwidth on a slow link but costs CPU on both
	// sides: on loopback or a fast LAN, NoGzip catches up faster (on a
	// shared 2-core machine the upstream spent a third less CPU serving
	// JSON blocks). Websockets are never compressed.
	NoGzip bool
}

// DefaultConfig returns the documented defaults (without a URL).
func DefaultConfig() Config {
	return Config{
		MaxReorg:         64,
		PollInterval:     500 * time.Millisecond,
		FetchBatch:       16,
		FetchParallel:    4,
		RequestTimeout:   30 * time.Second,
		BackoffMin:       500 * time.Millisecond,
		BackoffMax:       30 * time.Second,
		ProgressInterval: 10 * time.Second,
	}
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	d := DefaultConfig()
	if c.MaxReorg == 0 {
		c.MaxReorg = d.MaxReorg
	}
	if c.PollInterval == 0 {
		c.PollInterval = d.PollInterval
	}
	if c.FetchBatch == 0 {
		c.FetchBatch = d.FetchBatch
	}
	if c.FetchParallel == 0 {
		c.FetchParallel = d.FetchParallel
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = d.RequestTimeout
	}
	if c.BackoffMin == 0 {
		c.BackoffMin = d.BackoffMin
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = d.BackoffMax
	}
	if c.ProgressInterval == 0 {
		c.ProgressInterval = d.ProgressInterval
	}
	return c
}

// Validate checks c (after WithDefaults).
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	u, err := url.Parse(c.URL)
	switch {
	case c.URL == "":
		return bad("the upstream URL is required")
	case err != nil:
		return bad("upstream URL %q: %v", c.URL, err)
	case u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "ws" && u.Scheme != "wss":
		return bad("upstream URL %q: scheme must be http, https, ws or wss", c.URL)
	case u.Host == "":
		return bad("upstream URL %q has no host", c.URL)
	case c.MaxReorg == 0 || c.MaxReorg > 100_000:
		return bad("max reorg %d: want 1..100000", c.MaxReorg)
	case c.PollInterval <= 0 || c.RequestTimeout <= 0 || c.ProgressInterval <= 0:
		return bad("intervals and timeouts must be > 0")
	case c.FetchBatch < 1 || c.FetchBatch > 1000:
		return bad("fetch batch %d: want 1..1000", c.FetchBatch)
	case c.FetchParallel < 1 || c.FetchParallel > 64:
		return bad("fetch parallelism %d: want 1..64", c.FetchParallel)
	case c.BackoffMin <= 0 || c.BackoffMax < c.BackoffMin:
		return bad("backoff %v..%v: want 0 < min <= max", c.BackoffMin, c.BackoffMax)
	}
	return nil
}

// websocket reports whether the URL is a websocket one.
func (c Config) websocket() bool {
	u, err := url.Parse(c.URL)
	return err == nil && (u.Scheme == "ws" || u.Scheme == "wss")
}
