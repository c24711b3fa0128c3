package rpc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
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
		w.Header().Set("Connection", "close")
		writeHTTPError(w, http.StatusRequestEntityTooLarge, ErrLimit("request body too large (limit %d bytes)", limit))
	}
	if r.ContentLength > limit {
		tooLarge()
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			tooLarge()
			return
		}
		writeHTTPError(w, http.StatusBadRequest, ErrInvalidRequest("reading body: "+err.Error()))
		return
	}
	ss := &session{transport: TransportHTTP, remote: r.RemoteAddr}
	out := s.handleMessage(r.Context(), body, ss)
	ss.runAfterSend()
	w.Header().Set("Content-Type", "application/json")
	if out == nil { // only notifications
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	w.Write(out)
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

// limitListener caps the number of open connections it hands out. An extra
// connection is answered with HTTP 503 (after reading its request head, so
// the client sees the answer rather than a reset) and closed.
type limitListener struct {
	net.Listener
	sem     chan struct{}
	refuse  chan struct{} // bounds goroutines answering refused connections
	log     zerolog.Logger
	refused []byte
}

func newLimitListener(l net.Listener, max int, log zerolog.Logger) *limitListener {
	return &limitListener{
		Listener: l,
		sem:      make(chan struct{}, max),
		refuse:   make(chan struct{}, 64),
		log:      log,
		refused:  refusedResponse(max),
	}
}

func refusedResponse(max int) []byte {
	body := encodeError(nil, ErrLimit("too many open connections (limit %d)", max))
	return []byte(fmt.Sprintf("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body))
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.sem <- struct{}{}:
			return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
		default:
		}
		l.log.Debug().Str("remote", c.RemoteAddr().String()).Msg("rpc connection refused: too many open connections")
		select {
		case l.refuse <- struct{}{}:
			go func() {
				defer func() { <-l.refuse }()
				l.answerRefused(c)
			}()
		default:
			c.Close()
		}
	}
}

func (l *limitListener) answerRefused(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	br := bufio.NewReaderSize(c, 4096)
	if req, err := http.ReadRequest(br); err == nil {
		io.CopyN(io.Discard, req.Body, 1<<20)
		req.Body.Close()
	}
	c.Write(l.refused)
	if tc, ok := c.(*net.TCPConn); ok {
		tc.CloseWrite()
		io.CopyN(io.Discard, c, 1<<16) // let the client read the answer before the close
	}
}

// limitConn releases its slot once, on the first Close.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
