package statesync

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/store"
)

// Config configures a Handler.
type Config struct {
	// MaxStreams is how many streams are served at once; more get 503.
	// Default 2.
	MaxStreams int
	// WriteTimeout bounds each write to a client (a reader stalled this
	// long is disconnected). Default 30s.
	WriteTimeout time.Duration
	// StreamTimeout bounds a whole stream. Default 30m.
	StreamTimeout time.Duration
	// BufferBytes is the stream's write buffer. Default 256 KiB.
	BufferBytes int
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{MaxStreams: 2, WriteTimeout: 30 * time.Second, StreamTimeout: 30 * time.Minute, BufferBytes: 256 << 10}
}

// Validate checks c.
func (c Config) Validate() error {
	if c.MaxStreams < 1 || c.WriteTimeout <= 0 || c.StreamTimeout <= 0 || c.BufferBytes < 4096 {
		return fmt.Errorf("snapshot: invalid config %+v", c)
	}
	return nil
}

// Source opens the view and block a stream is served from (the node's
// finalized block, or latest without one). The handler closes the view.
type Source func() (store.View, uint64, error)

// Handler serves the stream (GET): see the package doc.
type Handler struct {
	cfg Config
	src Source
	sem chan struct{}
	log zerolog.Logger
}

// NewHandler returns a handler serving src.
func NewHandler(cfg Config, src Source, log zerolog.Logger) (*Handler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Handler{cfg: cfg, src: src, sem: make(chan struct{}, cfg.MaxStreams), log: log.With().Str("component", "snapshot").Logger()}, nil
}

// deadlineConn sets a write deadline before every write.
type deadlineConn struct {
	net.Conn
	timeout time.Duration
	end     time.Time
}

func (c deadlineConn) Write(p []byte) (int, error) {
	d := time.Now().Add(c.timeout)
	if d.After(c.end) {
		d = c.end
	}
	if err := c.Conn.SetWriteDeadline(d); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case h.sem <- struct{}{}:
		defer func() { <-h.sem }()
	default:
		http.Error(w, fmt.Sprintf("snapshot: already serving %d streams, try again later", h.cfg.MaxStreams), http.StatusServiceUnavailable)
		return
	}
	view, n, err := h.src()
	if err != nil {
		http.Error(w, "snapshot: "+err.Error(), http.StatusInternalServerError)
		return
	}
	defer view.Close()
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "snapshot: connection cannot stream", http.StatusInternalServerError)
		return
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		h.log.Warn().Err(err).Msg("hijack")
		return
	}
	defer conn.Close()
	start := time.Now()
	dc := deadlineConn{Conn: conn, timeout: h.cfg.WriteTimeout, end: start.Add(h.cfg.StreamTimeout)}
	bw := bufio.NewWriterSize(dc, 4096)
	fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nConnection: close\r\nX-Tipnode-Snapshot-Block: %d\r\n\r\n", n)
	if err := bw.Flush(); err != nil {
		return
	}
	ctx, cancel := context.WithDeadline(r.Context(), dc.end)
	defer cancel()
	err = Write(ctx, dc, view, n, h.cfg.BufferBytes)
	ev := h.log.Info()
	if err != nil && !errors.Is(err, context.Canceled) {
		ev = h.log.Warn().Err(err)
	}
	ev.Str("remote", r.RemoteAddr).Uint64("block", n).Str("took", time.Since(start).Round(time.Millisecond).String()).Msg("snapshot stream served")
}
