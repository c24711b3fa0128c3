package rpc

import (
	"context"
	"encoding/json"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// wsConn is one websocket session. Goroutines: one reader (readLoop), one
// writer (writeLoop, the only one writing data frames), and one per message
// being executed (at most Config.WSMaxInflight).
type wsConn struct {
	srv    *Server
	conn   *websocket.Conn
	remote string
	ctx    context.Context // cancelled when the connection closes
	cancel context.CancelFunc

	out        chan []byte // writer queue; a nil entry asks the writer to close (graceful)
	closed     chan struct{}
	closeOnce  sync.Once
	readerDone chan struct{}
	sem        chan struct{}
	inflight   sync.WaitGroup // Add only from the reader goroutine

	mu   sync.Mutex
	subs map[string]*Subscription // nil once closed

	dlMu     sync.Mutex
	stopping bool
}

var upgrader = websocket.Upgrader{
	ReadBufferSize:  4096,
	WriteBufferSize: 4096,
	// tipnode serves public, read-only data: any origin may connect.
	CheckOrigin: func(*http.Request) bool { return true },
}

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade already answered with an HTTP error
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &wsConn{
		srv:        s,
		conn:       conn,
		remote:     r.RemoteAddr,
		ctx:        ctx,
		cancel:     cancel,
		out:        make(chan []byte, s.cfg.WSSendQueue),
		closed:     make(chan struct{}),
		readerDone: make(chan struct{}),
		sem:        make(chan struct{}, s.cfg.WSMaxInflight),
		subs:       make(map[string]*Subscription),
	}
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "server shutting down"), time.Now().Add(time.Second))
		conn.Close()
		cancel()
		return
	}
	s.wsConns[c] = struct{}{}
	s.active.add()
	s.mu.Unlock()
	s.log.Debug().Str("remote", c.remote).Msg("rpc websocket opened")
	conn.SetReadLimit(s.cfg.WSMaxMessageBytes)
	go c.writeLoop()
	go c.readLoop()
}

// close tears the connection down (idempotent): ends all subscriptions,
// cancels in-flight requests' contexts and closes the socket.
func (c *wsConn) close(reason string) {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.cancel()
		c.conn.Close()
		c.mu.Lock()
		subs := c.subs
		c.subs = nil
		c.mu.Unlock()
		for _, sub := range subs {
			sub.end()
		}
		c.srv.mu.Lock()
		delete(c.srv.wsConns, c)
		c.srv.mu.Unlock()
		c.srv.active.done()
		c.srv.log.Debug().Str("remote", c.remote).Str("reason", reason).Msg("rpc websocket closed")
	})
}

func (c *wsConn) extendReadDeadline() {
	c.dlMu.Lock()
	if !c.stopping {
		c.conn.SetReadDeadline(time.Now().Add(c.srv.cfg.WSPingInterval + c.srv.cfg.WSPongTimeout))
	}
	c.dlMu.Unlock()
}

func (c *wsConn) readLoop() {
	defer close(c.readerDone)
	c.extendReadDeadline()
	c.conn.SetPongHandler(func(string) error { c.extendReadDeadline(); return nil })
	for {
		_, data, err := c.conn.ReadMessage()
		if err != nil {
			c.dlMu.Lock()
			stopping := c.stopping
			c.dlMu.Unlock()
			if !stopping { // on graceful shutdown, shutdown() closes after the in-flight work
				c.close("read: " + err.Error())
			}
			return
		}
		c.extendReadDeadline()
		select {
		case c.sem <- struct{}{}:
		case <-c.closed:
			return
		}
		c.inflight.Add(1)
		go func() {
			defer func() { <-c.sem; c.inflight.Done() }()
			ss := &session{transport: TransportWS, remote: c.remote, ws: c}
			if out := c.srv.handleMessage(c.ctx, data, ss); out != nil {
				c.send(out)
			}
			ss.runAfterSend()
		}()
	}
}

// send queues a response, waiting for room; false when the connection closed.
func (c *wsConn) send(b []byte) bool {
	select {
	case c.out <- b:
		return true
	case <-c.closed:
		return false
	}
}

// trySend queues a notification without waiting; false when the queue is full.
func (c *wsConn) trySend(b []byte) bool {
	select {
	case c.out <- b:
		return true
	default:
		return false
	}
}

func (c *wsConn) writeLoop() {
	wt := c.srv.cfg.WSWriteTimeout
	ping := time.NewTicker(c.srv.cfg.WSPingInterval)
	defer ping.Stop()
	for {
		select {
		case msg := <-c.out:
			if msg == nil {
				c.conn.WriteControl(websocket.CloseMessage,
					websocket.FormatCloseMessage(websocket.CloseGoingAway, "server shutting down"), time.Now().Add(wt))
				c.close("server stopped")
				return
			}
			c.conn.SetWriteDeadline(time.Now().Add(wt))
			if err := c.conn.WriteMessage(websocket.TextMessage, msg); err != nil {
				c.close("write: " + err.Error())
				return
			}
		case <-ping.C:
			if err := c.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(wt)); err != nil {
				c.close("ping: " + err.Error())
				return
			}
		case <-c.closed:
			return
		}
	}
}

// shutdown stops reading, lets in-flight messages finish and be written,
// then closes with 1001. It gives up (closing at once) when ctx ends.
func (c *wsConn) shutdown(ctx context.Context) {
	c.dlMu.Lock()
	c.stopping = true
	c.conn.SetReadDeadline(time.Now()) // unblocks the reader
	c.dlMu.Unlock()
	drained := make(chan struct{})
	go func() {
		<-c.readerDone
		c.inflight.Wait()
		close(drained)
	}()
	select {
	case <-drained:
		if c.send(nil) {
			select {
			case <-c.closed:
			case <-ctx.Done():
			}
		}
	case <-ctx.Done():
	case <-c.closed:
	}
	c.close("server stopped")
}

func (c *wsConn) subscribe(ctx context.Context, p Params, ss *session) (json.RawMessage, *Error) {
	mapper := c.srv.errorMapper()
	var kind string
	if err := p.Decode(0, "kind", &kind); err != nil {
		return nil, toError(err, mapper)
	}
	h := c.srv.subscribeHandler(kind)
	if h == nil {
		return nil, ErrInvalidParams("unsupported subscription kind %q", kind)
	}
	sub := newSubscription(c, kind)
	c.mu.Lock()
	if c.subs == nil {
		c.mu.Unlock()
		return nil, ErrServer("connection closed")
	}
	c.subs[sub.id] = sub
	c.mu.Unlock()

	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				c.srv.log.Error().Str("kind", kind).Interface("panic", r).Bytes("stack", debug.Stack()).Msg("rpc subscribe handler panicked")
				err = ErrInternal("internal error")
			}
		}()
		return h(ctx, sub, p.Rest(1))
	}()
	if err != nil {
		c.removeSub(sub.id)
		sub.end()
		return nil, toError(err, mapper)
	}
	ss.onSent(sub.activate)
	b, _ := json.Marshal(sub.id)
	return b, nil
}

func (c *wsConn) unsubscribe(p Params) (json.RawMessage, *Error) {
	var id string
	if err := p.Decode(0, "id", &id); err != nil {
		return nil, toError(err, nil)
	}
	sub := c.removeSub(id)
	if sub == nil {
		return json.RawMessage("false"), nil
	}
	sub.end()
	return json.RawMessage("true"), nil
}

func (c *wsConn) removeSub(id string) *Subscription {
	c.mu.Lock()
	defer c.mu.Unlock()
	sub := c.subs[id]
	if sub != nil {
		delete(c.subs, id)
	}
	return sub
}
