package rpc

// The listener's HTTP server. Serve and Start run fasthttp (valyala/fasthttp)
// rather than net/http: for the plain JSON-RPC POST, which is nearly every
// request, net/http's own work per request (a header map, a context, a
// goroutine reading ahead to notice a client going away, deadline resets,
// response buffers) cost about as much CPU as the rest of a cheap call; fasthttp
// reuses its request and response objects and serves a keep-alive connection
// on one goroutine.
//
// serveFast answers a request itself only in the plain case: POST to "/"
// (when no mounted pattern covers "/"), Content-Type application/json, no
// websocket upgrade, no CORS Origin to answer, server not stopping. Every
// other request (mounted handlers, websocket upgrades, other paths, CORS,
// the 405/415/503 answers) goes through fasthttpadaptor to ServeHTTP, the
// net/http handler, so it behaves exactly as before; websocket upgrades
// hijack the connection through the adaptor. Errors fasthttp meets before a
// handler runs (a body over MaxRequestBytes, a body or header not received
// in time, a malformed request) are answered by fastError with the same
// JSON-RPC bodies net/http's path gives.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"
)

// fastReadBuffer is fasthttp's per-connection read buffer; it bounds the
// request line and headers (larger heads get 431).
const fastReadBuffer = 16 << 10

// smallResponse: responses up to this size are copied into fasthttp's
// response buffer and written at once with it; larger ones are streamed
// from the encoded bytes and hold their share of MaxQueuedOutput until
// written.
const smallResponse = 4 << 10

func newFastServer(s *Server) *fasthttp.Server {
	cfg := s.cfg
	return &fasthttp.Server{
		Handler:      s.serveFast,
		ErrorHandler: s.fastError,
		// Headers within ReadHeaderTimeout (of a new connection or from the
		// first byte of a keep-alive request), then the body within
		// ReadTimeout.
		ReadTimeout: cfg.ReadHeaderTimeout,
		HeaderReceived: func(*fasthttp.RequestHeader) fasthttp.RequestConfig {
			return fasthttp.RequestConfig{ReadTimeout: cfg.ReadTimeout}
		},
		IdleTimeout:                  cfg.IdleTimeout,
		WriteTimeout:                 cfg.ReadTimeout + cfg.RequestTimeout + cfg.WSWriteTimeout,
		MaxRequestBodySize:           int(cfg.MaxRequestBytes),
		ReadBufferSize:               fastReadBuffer,
		ConnState:                    s.fastConnState,
		NoDefaultServerHeader:        true,
		NoDefaultContentType:         true,
		DisablePreParseMultipartForm: true,
		CloseOnShutdown:              true,
		Logger:                       fastLogger{s.log},
	}
}

// fastLogger sends fasthttp's own messages to the debug log.
type fastLogger struct{ log zerolog.Logger }

func (l fastLogger) Printf(format string, args ...any) {
	l.log.Debug().Msg("http: " + fmt.Sprintf(format, args...))
}

// mountedRoot reports whether a Handle pattern can match the path "/"
// (then serveFast leaves every request to the mux).
func mountedRoot(pattern string) bool {
	p := pattern
	if i := strings.IndexAny(p, " \t"); i >= 0 { // "METHOD path"
		p = strings.TrimLeft(p[i:], " \t")
	}
	if i := strings.IndexByte(p, '/'); i > 0 { // host before the path
		p = p[i:]
	}
	return p == "/" || strings.HasPrefix(p, "/{")
}

var (
	bytesPOST  = []byte("POST")
	bytesRoot  = []byte("/")
	bytesJSON  = []byte("application/json")
	bytesOrign = []byte("Origin")
)

// serveFast is the fasthttp handler: the plain JSON-RPC POST here, anything
// else through the net/http handler.
func (s *Server) serveFast(ctx *fasthttp.RequestCtx) {
	h := &ctx.Request.Header
	if !s.plainPost(ctx, h) {
		s.slow(ctx)
		return
	}
	// As net/http does for a handler: a panic (handlers' own are recovered
	// in run) is logged and ends this connection, not the process.
	defer func() {
		if p := recover(); p != nil {
			s.log.Error().Interface("panic", p).Bytes("stack", debug.Stack()).Msg("rpc http request panicked")
			ctx.Response.Reset()
			ctx.Response.Header.SetContentTypeBytes(bytesJSON)
			ctx.SetStatusCode(fasthttp.StatusInternalServerError)
			ctx.SetBody(encodeError(nil, ErrInternal("internal error")))
			ctx.SetConnectionClose()
		}
	}()
	s.active.add()
	defer s.active.done()
	ss := &session{transport: TransportHTTP, remote: ctx.RemoteAddr().String()}
	// No per-request context: the call's deadline is RequestTimeout from
	// here (a client going away is not noticed before it).
	out := s.handleMessage(context.Background(), ctx.PostBody(), ss)
	ss.runAfterSend()
	resp := &ctx.Response
	resp.Header.SetContentTypeBytes(bytesJSON)
	if out == nil { // only notifications
		return
	}
	n := int64(len(out))
	if !s.reserveOutput(n, 0, nil) {
		s.output.refused.Add(1)
		resp.Header.SetContentTypeBytes(bytesJSON)
		resp.SetStatusCode(fasthttp.StatusServiceUnavailable)
		resp.SetBodyRaw(encodeError(nil, ErrLimit("server output buffer full (limit %d bytes), try again later", s.cfg.MaxQueuedOutput)))
		return
	}
	if n <= smallResponse {
		s.output.release(n)
		resp.SetBodyRaw(out)
		return
	}
	b := bodyPool.Get().(*outBody)
	b.b, b.s, b.n = out, s, n
	resp.SetBodyStream(b, len(out))
}

// plainPost reports whether serveFast answers the request itself.
func (s *Server) plainPost(ctx *fasthttp.RequestCtx, h *fasthttp.RequestHeader) bool {
	if s.rootMounted.Load() || !bytesEqual(h.Method(), bytesPOST) || !bytesEqual(ctx.Path(), bytesRoot) ||
		!bytesEqual(h.ContentType(), bytesJSON) || h.ConnectionUpgrade() {
		return false
	}
	if len(s.cfg.CORSOrigins) > 0 && len(h.PeekBytes(bytesOrign)) > 0 {
		return false
	}
	return !s.stopFlag.Load()
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }

// outBody streams a large response and releases its share of the output
// budget once fasthttp has written it (or dropped it).
type outBody struct {
	b   []byte
	off int
	n   int64
	s   *Server
}

var bodyPool = sync.Pool{New: func() any { return new(outBody) }}

func (b *outBody) Read(p []byte) (int, error) {
	if b.off >= len(b.b) {
		return 0, io.EOF
	}
	n := copy(p, b.b[b.off:])
	b.off += n
	return n, nil
}

// WriteTo lets fasthttp copy the body in one write.
func (b *outBody) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(b.b[b.off:])
	b.off += n
	return int64(n), err
}

func (b *outBody) Close() error {
	b.s.output.release(b.n)
	*b = outBody{}
	bodyPool.Put(b)
	return nil
}

// fastError answers the errors fasthttp meets before a handler runs.
func (s *Server) fastError(ctx *fasthttp.RequestCtx, err error) {
	remote := ctx.RemoteAddr().String()
	var status int
	var e *Error
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		limit := s.cfg.MaxRequestBytes
		s.log.Debug().Str("remote", remote).Int64("limit", limit).Int("contentLength", ctx.Request.Header.ContentLength()).Msg("rpc request refused: body too large")
		status, e = fasthttp.StatusRequestEntityTooLarge, ErrLimit("request body too large (limit %d bytes)", limit)
	case isTimeout(err) && s.bodyTimeout(ctx, err):
		// A client trickling its body (slowloris): ReadTimeout passed.
		s.stats.bodyTimeouts.Add(1)
		s.log.Debug().Str("remote", remote).Stringer("readTimeout", s.cfg.ReadTimeout).Msg("rpc request refused: body not received in time")
		status, e = fasthttp.StatusRequestTimeout, &Error{Code: CodeTimeout,
			Message: fmt.Sprintf("request not received within %s", s.cfg.ReadTimeout)}
	case isTimeout(err):
		s.log.Debug().Str("remote", remote).Stringer("readHeaderTimeout", s.cfg.ReadHeaderTimeout).Msg("rpc request refused: headers not received in time")
		status, e = fasthttp.StatusRequestTimeout, &Error{Code: CodeTimeout,
			Message: fmt.Sprintf("request headers not received within %s", s.cfg.ReadHeaderTimeout)}
	case errors.As(err, new(*fasthttp.ErrSmallBuffer)):
		s.log.Debug().Str("remote", remote).Err(err).Msg("rpc request refused: headers too large")
		status, e = fasthttp.StatusRequestHeaderFieldsTooLarge, ErrInvalidRequest("request headers too large")
	default:
		s.log.Debug().Str("remote", remote).Err(err).Msg("rpc request refused: malformed")
		status, e = fasthttp.StatusBadRequest, ErrInvalidRequest("malformed HTTP request")
	}
	if status == fasthttp.StatusRequestEntityTooLarge || status == fasthttp.StatusRequestHeaderFieldsTooLarge {
		// fasthttp closes the connection after this answer with the rest
		// of the request unread: the client would get a reset, often
		// before it reads the answer. Drain it first (bounded).
		if lc, ok := ctx.Conn().(*limitConn); ok {
			lc.drainOnClose.Store(true)
		}
	}
	ctx.Response.Reset()
	ctx.Response.Header.SetContentTypeBytes(bytesJSON)
	ctx.SetStatusCode(status)
	ctx.SetBody(encodeError(nil, e))
}

// bodyTimeout tells a timeout while reading the body from one while
// waiting for the headers: fasthttp wraps the error of a header read ("error
// when reading request headers: ..."), passes a body read's as it is, and
// a connection that sent nothing at all has not left StateNew.
func (s *Server) bodyTimeout(ctx *fasthttp.RequestCtx, err error) bool {
	if _, direct := err.(*net.OpError); !direct {
		return false
	}
	s.mu.RLock()
	_, silent := s.newConns[ctx.Conn()]
	s.mu.RUnlock()
	return !silent
}

func isTimeout(err error) bool {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// fastConnState tracks connections: those that have not sent a request
// yet (Stop closes them at once) and all open ones (a forced Stop closes
// them).
func (s *Server) fastConnState(c net.Conn, st fasthttp.ConnState) {
	switch st {
	case fasthttp.StateIdle:
		return // after StateActive: nothing to update
	case fasthttp.StateActive:
		// Once per connection (the first request), not per request.
		if lc, ok := c.(*limitConn); ok && lc.active.Swap(true) {
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch st {
	case fasthttp.StateNew:
		if s.stopping {
			c.Close()
			return
		}
		s.newConns[c] = struct{}{}
		s.openConns[c] = struct{}{}
	case fasthttp.StateHijacked, fasthttp.StateClosed:
		delete(s.newConns, c)
		delete(s.openConns, c)
	default:
		delete(s.newConns, c)
	}
}
