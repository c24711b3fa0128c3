package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// wsConn is one websocket session. Goroutines: one reader (readLoop), one
// writer (writeLoop: pings, the close frame, notifications), and one per
// message being executed (at most Config.WSMaxInflight). Data frames are
// written by whoever holds wmu: the writer, or a message's goroutine that
// finds wmu free after queueing its answer and then writes the queue out
// itself (its execution slot already released), which saves waking the
// writer per message; one that finds wmu held wakes the writer instead, so
// nothing queued is left unwritten. Frames go out in queue order either way.
//
// Output goes through one queue bounded in messages (Config.WSSendQueue)
// and bytes (Config.WSMaxQueuedBytes, the message being written included),
// and counted in the server-wide budget (Config.MaxQueuedOutput). A message
// that does not fit aborts the connection: the queue is dropped at once
// (its memory is free), reading and executing stop, and the writer sends a
// close frame with the code and reason once the message it is writing is
// out (bounded by Config.WSWriteTimeout), then closes.
type wsConn struct {
	srv    *Server
	conn   *websocket.Conn
	remote string
	key    string          // the session address key of remote, computed once
	rbuf   []byte          // readMessage's scratch, reader goroutine only
	ctx    context.Context // cancelled when the connection closes or aborts
	cancel context.CancelFunc

	closed     chan struct{}
	closeOnce  sync.Once
	readerDone chan struct{}
	sem        chan struct{}
	inflight   sync.WaitGroup // Add only from the reader goroutine
	executing  atomic.Int32   // messages being executed
	lastRead   atomic.Int64   // unix nanoseconds of the last message read

	qmu        sync.Mutex
	queue      [][]byte     // waiting to be written
	qbytes     int64        // bytes of queue plus the message being written
	writing    int64        // bytes of the message being written
	queued     atomic.Int64 // qbytes - writing, read without qmu (largestQueue)
	closing    bool         // no more output; the writer sends closeFrame after the current message
	closeFrame []byte       // close frame payload (code and reason)
	closeWhy   string       // for the log
	wake       chan struct{}
	wmu        sync.Mutex // held while taking data messages off the queue and writing them

	mu   sync.Mutex
	subs map[string]*Subscription // nil once closed

	dlMu     sync.Mutex
	stopping bool // reading stopped on purpose (Stop, abort): a read error is not a failure
}

var upgrader = websocket.Upgrader{
	ReadBufferSize:  4096,
	WriteBufferSize: 4096,
	// tipnode serves public, read-only data: any origin may connect.
	CheckOrigin: func(*http.Request) bool { return true },
	Error:       refuseUpgrade,
}

// refuseUpgrade answers a websocket upgrade the server cannot take (not a
// GET, a missing or bad key or version...) with the status gorilla chose
// and a JSON-RPC error naming the reason, as every HTTP refusal.
func refuseUpgrade(w http.ResponseWriter, _ *http.Request, status int, reason error) {
	w.Header().Set("Sec-Websocket-Version", "13")
	msg := strings.TrimPrefix(reason.Error(), "websocket: ")
	writeHTTPError(w, status, ErrInvalidRequest("websocket upgrade refused: "+msg))
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
		closed:     make(chan struct{}),
		readerDone: make(chan struct{}),
		sem:        make(chan struct{}, s.cfg.WSMaxInflight),
		subs:       make(map[string]*Subscription),
		wake:       make(chan struct{}, 1),
	}
	c.key = (&session{remote: c.remote}).addr()
	c.lastRead.Store(time.Now().UnixNano())
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(CloseGoingAway, "server shutting down"), time.Now().Add(time.Second))
		conn.Close()
		cancel()
		return
	}
	s.wsConns[c] = struct{}{}
	s.active.add()
	s.mu.Unlock()
	s.log.Debug().Str("remote", c.remote).Msg("rpc websocket opened")
	// The read limit is enforced by readMessage (gorilla's own closes with
	// 1009 but no reason).
	conn.SetReadLimit(0)
	go c.writeLoop()
	go c.readLoop()
}

// close tears the connection down at once (idempotent): ends all
// subscriptions, cancels in-flight requests' contexts, releases queued
// output and closes the socket.
func (c *wsConn) close(reason string) {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.cancel()
		c.conn.Close()
		c.endSubs()
		c.qmu.Lock()
		c.closing = true
		freed := c.qbytes
		c.queue, c.qbytes, c.writing = nil, 0, 0
		c.queued.Store(0)
		c.qmu.Unlock()
		c.srv.output.release(freed)
		c.srv.mu.Lock()
		delete(c.srv.wsConns, c)
		c.srv.mu.Unlock()
		c.srv.active.done()
		c.srv.log.Debug().Str("remote", c.remote).Str("reason", reason).Msg("rpc websocket closed")
	})
}

func (c *wsConn) endSubs() {
	c.mu.Lock()
	subs := c.subs
	c.subs = nil
	c.mu.Unlock()
	for _, sub := range subs {
		sub.end()
	}
}

// abort disconnects the client for a limit: the queued output is dropped
// now, reading, executing and subscriptions stop, and the writer sends a
// close frame with code and text after the message it is writing, then
// closes. metric is the disconnect reason counted.
func (c *wsConn) abort(code int, text, metric string) {
	if !c.requestClose(code, text, true, metric) {
		return
	}
	c.srv.log.Info().Str("remote", c.remote).Int("code", code).Str("reason", text).Msg("rpc websocket disconnected")
	c.cancel()
	go c.endSubs() // the caller may hold a subscription's lock (Notify)
	c.stopReading()
}

// requestClose makes the writer send a close frame (code, text) and close
// once the queue is written; with drop the queue is dropped first. The
// disconnect metric (if any) is counted before the writer is woken, so a
// client that sees the close frame also sees it counted. False when the
// connection was already closing.
func (c *wsConn) requestClose(code int, text string, drop bool, metric string) bool {
	c.qmu.Lock()
	if c.closing {
		c.qmu.Unlock()
		return false
	}
	c.closing = true
	c.closeFrame = websocket.FormatCloseMessage(code, text)
	c.closeWhy = fmt.Sprintf("%d %s", code, text)
	var freed int64
	if drop {
		freed = c.qbytes - c.writing
		c.queue, c.qbytes = nil, c.writing
		c.queued.Store(0)
	}
	c.qmu.Unlock()
	c.srv.output.release(freed)
	if metric != "" {
		c.srv.stats.disconnect(metric)
	}
	c.wakeWriter()
	return true
}

func (c *wsConn) wakeWriter() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// stopReading unblocks the reader, which then returns without closing.
func (c *wsConn) stopReading() {
	c.dlMu.Lock()
	c.stopping = true
	c.conn.SetReadDeadline(time.Now())
	c.dlMu.Unlock()
}

// droppable is the output abort would free now (the queue, not the
// message being written).
func (c *wsConn) droppable() int64 { return c.queued.Load() }

// enqueue queues one message and wakes the writer. A message that does not
// fit the connection's bounds or the server's output budget aborts the
// connection (ErrSlowConsumer); errConnClosing when it is closing anyway.
func (c *wsConn) enqueue(b []byte) error {
	if err := c.push(b); err != nil {
		return err
	}
	c.wakeWriter()
	return nil
}

// push queues one message as enqueue does, without waking the writer: the
// caller calls flush.
func (c *wsConn) push(b []byte) error {
	n := int64(len(b))
	cfg := &c.srv.cfg
	c.qmu.Lock()
	if c.closing {
		c.qmu.Unlock()
		return errConnClosing
	}
	held := c.qbytes
	if len(c.queue) >= cfg.WSSendQueue || held+n > cfg.WSMaxQueuedBytes {
		c.qmu.Unlock()
		c.abort(ClosePolicyViolation, fmt.Sprintf("slow consumer: output queue over its limit (%d messages, %d bytes)", cfg.WSSendQueue, cfg.WSMaxQueuedBytes), disconnectSlowConsumer)
		return ErrSlowConsumer
	}
	c.qmu.Unlock()
	// The server-wide budget may disconnect other connections: no lock held.
	if !c.srv.reserveOutput(n, held, c) {
		c.abort(CloseTryAgainLater, fmt.Sprintf("server output buffer full (limit %d bytes); this connection held the most", cfg.MaxQueuedOutput), disconnectOutputLimit)
		return ErrSlowConsumer
	}
	c.qmu.Lock()
	if c.closing {
		c.qmu.Unlock()
		c.srv.output.release(n)
		return errConnClosing
	}
	c.queue = append(c.queue, b)
	c.qbytes += n
	c.queued.Add(n)
	c.qmu.Unlock()
	return nil
}

// flush writes the queue out on the calling goroutine when no one else is
// writing, else (or when a close frame is due) wakes the writer.
func (c *wsConn) flush() {
	if !c.wmu.TryLock() {
		c.wakeWriter() // the holder may have seen the queue empty already
		return
	}
	for {
		msg, closeFrame := c.next()
		if msg == nil {
			c.wmu.Unlock()
			if closeFrame != nil {
				c.wakeWriter()
			}
			return
		}
		if err := c.write(msg); err != nil {
			c.wmu.Unlock()
			c.close("write: " + err.Error())
			return
		}
	}
}

// write writes one data message taken off the queue by next (wmu held)
// and releases it.
func (c *wsConn) write(msg []byte) error {
	c.conn.SetWriteDeadline(time.Now().Add(c.srv.cfg.WSWriteTimeout))
	err := c.conn.WriteMessage(websocket.TextMessage, msg)
	c.written()
	return err
}

// next pops the next message for the writer (counted as being written
// until written is called), or returns the close frame to send once the
// queue is empty and the connection is closing.
func (c *wsConn) next() (msg, closeFrame []byte) {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	if len(c.queue) > 0 {
		msg = c.queue[0]
		c.queue[0] = nil
		c.queue = c.queue[1:]
		c.writing = int64(len(msg))
		c.queued.Add(-c.writing)
		return msg, nil
	}
	if c.closing {
		return nil, c.closeFrame
	}
	return nil, nil
}

// written releases the message being written.
func (c *wsConn) written() {
	c.qmu.Lock()
	n := c.writing
	c.writing = 0
	c.qbytes -= n
	c.qmu.Unlock()
	c.srv.output.release(n)
}

func (c *wsConn) extendReadDeadline() {
	c.dlMu.Lock()
	if !c.stopping {
		c.conn.SetReadDeadline(time.Now().Add(c.srv.cfg.WSPingInterval + c.srv.cfg.WSPongTimeout))
	}
	c.dlMu.Unlock()
}

// wsKeepReadBuffer bounds the scratch buffer a connection keeps between
// messages; a larger message's buffer is dropped after use.
const wsKeepReadBuffer = 64 << 10

// readMessage reads one data message, at most WSMaxMessageBytes of it,
// into the connection's scratch buffer and returns an exact-size copy
// (one allocation per message).
func (c *wsConn) readMessage() ([]byte, error) {
	_, r, err := c.conn.NextReader()
	if err != nil {
		return nil, err
	}
	limit := c.srv.cfg.WSMaxMessageBytes
	buf := c.rbuf[:0]
	if buf == nil {
		buf = make([]byte, 0, 512)
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, errTooBig
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if cap(buf) <= wsKeepReadBuffer {
		c.rbuf = buf
	} else {
		c.rbuf = nil
	}
	data := make([]byte, len(buf))
	copy(data, buf)
	return data, nil
}

func (c *wsConn) readLoop() {
	defer close(c.readerDone)
	c.extendReadDeadline()
	c.conn.SetPongHandler(func(string) error { c.extendReadDeadline(); return nil })
	for {
		data, err := c.readMessage()
		if errors.Is(err, errTooBig) {
			c.abort(CloseMessageTooBig, fmt.Sprintf("message too big (limit %d bytes)", c.srv.cfg.WSMaxMessageBytes), disconnectTooBig)
			return
		}
		if err != nil {
			c.dlMu.Lock()
			stopping := c.stopping
			c.dlMu.Unlock()
			if !stopping { // on graceful shutdown or abort, the writer closes
				c.close("read: " + err.Error())
			}
			return
		}
		c.lastRead.Store(time.Now().UnixNano())
		c.extendReadDeadline()
		select {
		case c.sem <- struct{}{}:
		case <-c.closed:
			return
		}
		if c.ctx.Err() != nil { // aborted while waiting for a slot
			<-c.sem
			return
		}
		c.inflight.Add(1)
		c.executing.Add(1)
		c.srv.workers.run(func() {
			queued := false
			defer func() {
				c.executing.Add(-1)
				<-c.sem
				if queued {
					c.flush()
				}
				c.inflight.Done()
			}()
			ss := &session{transport: TransportWS, remote: c.remote, key: c.key, ws: c}
			if out := c.srv.handleMessage(c.ctx, data, ss); out != nil {
				queued = c.push(out) == nil
			}
			ss.runAfterSend()
		})
	}
}

func (c *wsConn) writeLoop() {
	cfg := &c.srv.cfg
	ping := time.NewTicker(cfg.WSPingInterval)
	defer ping.Stop()
	idle := time.NewTimer(cfg.WSIdleTimeout)
	defer idle.Stop()
	for {
		c.wmu.Lock()
		msg, closeFrame := c.next()
		switch {
		case msg != nil:
			err := c.write(msg)
			c.wmu.Unlock()
			if err != nil {
				c.close("write: " + err.Error())
				return
			}
			continue
		case closeFrame != nil: // wmu stays held: no data frame after the close frame
			if c.conn.WriteControl(websocket.CloseMessage, closeFrame, time.Now().Add(cfg.WSWriteTimeout)) == nil {
				lingerClose(c.conn.NetConn())
			}
			c.qmu.Lock()
			why := c.closeWhy
			c.qmu.Unlock()
			c.close(why)
			return
		}
		c.wmu.Unlock()
		select {
		case <-c.wake:
		case <-ping.C:
			if err := c.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(cfg.WSWriteTimeout)); err != nil {
				c.close("ping: " + err.Error())
				return
			}
		case <-idle.C:
			idle.Reset(c.checkIdle())
		case <-c.closed:
			return
		}
	}
}

// lingerClose half-closes nc after the close frame and reads what the
// client still sends (its close reply) for a moment, so that closing does
// not reset the connection before the client has read the close frame.
func lingerClose(nc net.Conn) {
	cw, ok := nc.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		return
	}
	nc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	io.Copy(io.Discard, io.LimitReader(nc, 64<<10))
}

// checkIdle closes the connection (1000) when it has been idle for
// WSIdleTimeout: no message read, none executing, no subscription. It
// returns when to check again.
func (c *wsConn) checkIdle() time.Duration {
	timeout := c.srv.cfg.WSIdleTimeout
	c.mu.Lock()
	subs := len(c.subs)
	c.mu.Unlock()
	if subs > 0 || c.executing.Load() > 0 {
		return timeout
	}
	since := time.Since(time.Unix(0, c.lastRead.Load()))
	if since < timeout {
		return timeout - since
	}
	if c.requestClose(CloseNormal, fmt.Sprintf("idle timeout (no request for %s)", timeout), false, disconnectIdle) {
		c.stopReading()
	}
	return timeout
}

// shutdown stops reading, lets in-flight messages finish and be written,
// then closes with 1001. It gives up (closing at once) when ctx ends.
func (c *wsConn) shutdown(ctx context.Context) {
	c.stopReading()
	drained := make(chan struct{})
	go func() {
		<-c.readerDone
		c.inflight.Wait()
		close(drained)
	}()
	select {
	case <-drained:
		c.requestClose(CloseGoingAway, "server shutting down", false, "")
		select {
		case <-c.closed:
		case <-ctx.Done():
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
		// go-ethereum's answer, which clients probe for.
		return nil, &Error{Code: CodeMethodNotFound, Message: fmt.Sprintf("no %q subscription in eth namespace", kind)}
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
