package streamtest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Server is a websocket endpoint standing in for a stream publisher.
type Server struct {
	// URL is the server's ws:// URL (path /preconfirmations).
	URL string
	// Accepted receives every accepted connection (buffered; a test that
	// does not read it loses nothing else).
	Accepted chan *Conn

	srv      *httptest.Server
	refuse   atomic.Bool
	noPong   atomic.Bool
	attempts atomic.Int64
	mu       sync.Mutex
	conns    []*Conn
}

// Conn is one connection accepted by a Server.
type Conn struct {
	ws     *websocket.Conn
	wmu    sync.Mutex
	closed chan struct{}
	once   sync.Once
	// Pings receives a value for every ping the client sent (buffered,
	// dropped when full).
	Pings chan struct{}
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

// NewServer starts a server; the test's Cleanup closes it.
func NewServer(t testing.TB) *Server {
	s := &Server{Accepted: make(chan *Conn, 64)}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = "ws" + strings.TrimPrefix(s.srv.URL, "http") + "/preconfirmations"
	t.Cleanup(s.Close)
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.attempts.Add(1)
	if s.refuse.Load() {
		http.Error(w, "refused by the test", http.StatusServiceUnavailable)
		return
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &Conn{ws: ws, closed: make(chan struct{}), Pings: make(chan struct{}, 64)}
	ws.SetPingHandler(func(data string) error {
		select {
		case c.Pings <- struct{}{}:
		default:
		}
		if s.noPong.Load() {
			return nil
		}
		c.wmu.Lock()
		defer c.wmu.Unlock()
		return ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
	})
	s.mu.Lock()
	s.conns = append(s.conns, c)
	s.mu.Unlock()
	s.Accepted <- c
	// Read (and discard) so that control frames are handled.
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			c.Close()
			return
		}
	}
}

// Refuse makes the server answer upgrades with 503 (on) or accept them.
func (s *Server) Refuse(on bool) { s.refuse.Store(on) }

// NoPong makes the server ignore pings (on) or answer them.
func (s *Server) NoPong(on bool) { s.noPong.Store(on) }

// Attempts is the number of connection attempts (refused ones included).
func (s *Server) Attempts() int { return int(s.attempts.Load()) }

// Broadcast sends a frame to every open connection.
func (s *Server) Broadcast(messageType int, data []byte) {
	s.mu.Lock()
	conns := append([]*Conn(nil), s.conns...)
	s.mu.Unlock()
	for _, c := range conns {
		c.Send(messageType, data)
	}
}

// CutAll closes every open connection abruptly.
func (s *Server) CutAll() {
	s.mu.Lock()
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// Close closes every connection and the listener.
func (s *Server) Close() {
	s.CutAll()
	s.srv.Close()
}

// Send writes one frame; an error means the connection is gone.
func (c *Conn) Send(messageType int, data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return c.ws.WriteMessage(messageType, data)
}

// Close closes the connection without a close frame (a cut).
func (c *Conn) Close() {
	c.once.Do(func() {
		close(c.closed)
		c.ws.Close()
	})
}

// Closed is closed when the connection is.
func (c *Conn) Closed() <-chan struct{} { return c.closed }
