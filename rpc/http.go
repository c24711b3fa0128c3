package rpc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
)

// jsonContentType reports whether a POST's Content-Type is the one
// JSON-RPC takes: application/json, with at most a charset parameter of
// utf-8. Anything else (text/plain, form encodings...) is refused with 415:
// those are what a web page may POST cross-origin without a CORS
// preflight, and a node holding keys must not act on them.
func jsonContentType(ct string) bool {
	if ct == "application/json" { // what nearly every client sends: no parsing
		return true
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return false
	}
	for k, v := range params {
		if k != "charset" || !strings.EqualFold(v, "utf-8") {
			return false
		}
	}
	return true
}

// serveRPC serves JSON-RPC on every path not taken by a mounted handler.
func (s *Server) serveRPC(w http.ResponseWriter, r *http.Request) {
	if websocket.IsWebSocketUpgrade(r) {
		s.serveWS(w, r)
		return
	}
	if r.Method != http.MethodPost {
		s.log.Debug().Str("remote", r.RemoteAddr).Str("httpMethod", r.Method).Msg("rpc request refused: method")
		w.Header().Set("Allow", http.MethodPost)
		writeHTTPError(w, http.StatusMethodNotAllowed, ErrInvalidRequest("method "+r.Method+" not allowed, use POST"))
		return
	}
	if ct := r.Header.Get("Content-Type"); !jsonContentType(ct) {
		s.log.Debug().Str("remote", r.RemoteAddr).Str("contentType", ct).Msg("rpc request refused: content type")
		if ct == "" {
			ct = "(none)"
		}
		writeHTTPError(w, http.StatusUnsupportedMediaType, ErrInvalidRequest("unsupported content type "+ct+": JSON-RPC takes Content-Type application/json"))
		return
	}
	limit := s.cfg.MaxRequestBytes
	tooLarge := func() {
		s.log.Debug().Str("remote", r.RemoteAddr).Int64("limit", limit).Int64("contentLength", r.ContentLength).Msg("rpc request refused: body too large")
		w.Header().Set("Connection", "close")
		writeHTTPError(w, http.StatusRequestEntityTooLarge, ErrLimit("request body too large (limit %d bytes)", limit))
	}
	if r.ContentLength > limit {
		tooLarge()
		return
	}
	body, err := readBody(http.MaxBytesReader(w, r.Body, limit), r.ContentLength)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			tooLarge()
			return
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// A client trickling its body (slowloris): ReadTimeout passed.
			s.stats.bodyTimeouts.Add(1)
			s.log.Debug().Str("remote", r.RemoteAddr).Stringer("readTimeout", s.cfg.ReadTimeout).Msg("rpc request refused: body not received in time")
			w.Header().Set("Connection", "close")
			writeHTTPError(w, http.StatusRequestTimeout, &Error{Code: CodeTimeout,
				Message: fmt.Sprintf("request not received within %s", s.cfg.ReadTimeout)})
			return
		}
		s.log.Debug().Str("remote", r.RemoteAddr).Err(err).Msg("rpc request refused: reading body")
		writeHTTPError(w, http.StatusBadRequest, ErrInvalidRequest("reading body: "+err.Error()))
		return
	}
	ss := &session{transport: TransportHTTP, remote: r.RemoteAddr}
	out := s.handleMessage(r.Context(), body, ss)
	ss.runAfterSend()
	h := w.Header()
	h["Content-Type"] = headerJSON // canonical keys: no Set (canonicalisation, a slice per call)
	if out == nil {                // only notifications
		h["Content-Length"] = headerZero
		w.WriteHeader(http.StatusOK)
		return
	}
	// The response counts in the server's queued output while it is written.
	n := int64(len(out))
	if !s.reserveOutput(n, 0, nil) {
		s.output.refused.Add(1)
		writeHTTPError(w, http.StatusServiceUnavailable, ErrLimit("server output buffer full (limit %d bytes), try again later", s.cfg.MaxQueuedOutput))
		return
	}
	defer s.output.release(n)
	h["Content-Length"] = []string{strconv.Itoa(len(out))}
	w.WriteHeader(http.StatusOK)
	w.Write(out)
}

// Header values the response path assigns; net/http only reads them.
var (
	headerJSON = []string{"application/json"}
	headerZero = []string{"0"}
)

// readBody is io.ReadAll starting from the announced size (contentLength,
// -1 when unknown) instead of 512 bytes: a known body is read into one
// allocation, without growing and copying. r must be bounded (the
// MaxBytesReader): the announced size is trusted only after the caller
// checked it against the limit.
func readBody(r io.Reader, contentLength int64) ([]byte, error) {
	size := 512
	if contentLength > 0 {
		size = int(contentLength) + 1 // +1: the read that returns io.EOF needs no growth
	}
	b := make([]byte, 0, size)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// cors adds CORS headers for an allowed Origin and answers preflight
// requests; it reports whether the request was fully handled.
func (s *Server) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || len(s.cfg.CORSOrigins) == 0 {
		return false
	}
	allowed := false
	for _, o := range s.cfg.CORSOrigins {
		if o == "*" || strings.EqualFold(o, origin) {
			allowed = true
			break
		}
	}
	if !allowed {
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		h.Set("Access-Control-Allow-Methods", "POST, GET, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Content-Type")
		h.Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
		return true
	}
	return false
}

// writeHTTPError answers with an HTTP status and a JSON-RPC error body
// (id null).
func writeHTTPError(w http.ResponseWriter, status int, e *Error) {
	b := encodeError(nil, e)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

// limitListener admits connections under the connection limits
// (connLimits) and answers a refused one with HTTP 503 (after reading its
// request head, so the client sees the answer rather than a reset) before
// closing it.
type limitListener struct {
	net.Listener
	limits *connLimits
	refuse chan struct{} // bounds goroutines answering refused connections
	log    zerolog.Logger
}

func newLimitListener(l net.Listener, limits *connLimits, log zerolog.Logger) *limitListener {
	return &limitListener{
		Listener: l,
		limits:   limits,
		refuse:   make(chan struct{}, 64),
		log:      log,
	}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key := addrKey(c.RemoteAddr())
		release, refusal := l.limits.admit(key)
		if refusal == nil {
			return &limitConn{Conn: c, release: release}, nil
		}
		l.log.Debug().Str("remote", c.RemoteAddr().String()).Str("reason", refusal.reason).Msg("rpc connection refused")
		select {
		case l.refuse <- struct{}{}:
			go func() {
				defer func() { <-l.refuse }()
				answerRefused(c, refusal.answer)
			}()
		default:
			c.Close()
		}
	}
}

// answerRefused reads the request head (bounded in time and size), answers
// with the prepared 503 and closes.
func answerRefused(c net.Conn, answer []byte) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	br := bufio.NewReaderSize(c, 4096)
	if req, err := http.ReadRequest(br); err == nil {
		io.CopyN(io.Discard, req.Body, 1<<20)
		req.Body.Close()
	}
	c.Write(answer)
	if tc, ok := c.(*net.TCPConn); ok {
		tc.CloseWrite()
		io.CopyN(io.Discard, c, 1<<16) // let the client read the answer before the close
	}
}

// refusedResponse is the raw HTTP 503 answer carrying e.
func refusedResponse(e *Error) []byte {
	body := encodeError(nil, e)
	return []byte(fmt.Sprintf("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body))
}

// limitConn releases its slot once, on the first Close.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
	active  atomic.Bool // has sent a request (fastConnState)
	// drainOnClose: the connection is closed after refusing a request it
	// has not finished sending (413, 431). Close then half-closes it (the
	// answer is sent), reads and discards the rest of the request for at
	// most drainBytes / drainTime, and only then closes, so that a client
	// that writes its whole request before reading gets the answer
	// instead of a connection reset.
	drainOnClose atomic.Bool
}

// The bounds of the drain after a refusal (limitConn.drainOnClose).
const (
	drainBytes = 8 << 20
	drainTime  = 2 * time.Second
)

// CloseWrite half-closes a TCP connection (lingerClose).
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

func (c *limitConn) Close() error {
	if c.drainOnClose.CompareAndSwap(true, false) {
		if c.CloseWrite() == nil {
			c.Conn.SetReadDeadline(time.Now().Add(drainTime))
			io.CopyN(io.Discard, c.Conn, drainBytes)
		}
	}
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
