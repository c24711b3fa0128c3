package rpc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// Subscription is one eth_subscribe subscription on a websocket connection.
//
// Lifecycle: the framework creates it, calls the kind's SubscribeHandler,
// answers eth_subscribe with ID(), and only once that response is queued on
// the connection (ahead of anything sent later) does it activate the
// subscription. Notify calls made before activation are held (in order) and
// flushed at activation, so a client always sees the subscription id before
// the first notification. The subscription ends — Done() is closed and
// Context() cancelled — on eth_unsubscribe, when the connection closes, when
// the server stops, or when the connection is dropped as a slow consumer.
//
// Slow consumers: notifications never block. Each connection has one
// outgoing queue bounded in messages (Config.WSSendQueue) and bytes
// (Config.WSMaxQueuedBytes), shared with responses and counted in the
// server-wide Config.MaxQueuedOutput; a notification that does not fit (or
// more than those bounds held before activation) disconnects the client
// with a close reason, and Notify returns ErrSlowConsumer. Feeds should
// therefore never retry, just stop on error or Done().
type Subscription struct {
	id     string
	kind   string
	conn   *wsConn
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu           sync.Mutex
	active       bool
	ended        bool
	pending      [][]byte
	pendingBytes int64
}

func newSubscription(c *wsConn, kind string) *Subscription {
	ctx, cancel := context.WithCancel(c.ctx)
	return &Subscription{
		id:     newSubscriptionID(),
		kind:   kind,
		conn:   c,
		ctx:    ctx,
		cancel: cancel,
		done:   make(chan struct{}),
	}
}

// newSubscriptionID returns "0x" followed by 32 random hex digits.
func newSubscriptionID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("rpc: crypto/rand failed: " + err.Error())
	}
	return "0x" + hex.EncodeToString(b[:])
}

// ID is the subscription id sent to the client ("0x" + 32 hex digits).
func (s *Subscription) ID() string { return s.id }

// Kind is the subscription kind (eth_subscribe params[0]).
func (s *Subscription) Kind() string { return s.kind }

// Context is cancelled when the subscription ends; use it for the feed.
func (s *Subscription) Context() context.Context { return s.ctx }

// Done is closed when the subscription ends.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Err is the same channel as Done (named like go-ethereum's accessor).
func (s *Subscription) Err() <-chan struct{} { return s.done }

// Notify sends result (marshalled with encoding/json) as an eth_subscription
// notification. It never blocks on the network. It returns
// ErrSubscriptionClosed after the subscription ended, ErrSlowConsumer when
// the connection's queue overflowed (the connection is then dropped),
// ErrNotificationTooLarge when the notification exceeds
// Config.MaxResponseBytes, or a marshalling error. Safe for concurrent use;
// notifications of one subscription are delivered in Notify call order when
// calls are not concurrent.
func (s *Subscription) Notify(result any) error {
	b, err := json.Marshal(result)
	if err != nil {
		return fmt.Errorf("rpc: encoding notification: %w", err)
	}
	msg := encodeNotification(s.id, b)
	if len(msg) > s.conn.srv.cfg.MaxResponseBytes {
		return ErrNotificationTooLarge
	}
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return ErrSubscriptionClosed
	}
	if !s.active {
		cfg := &s.conn.srv.cfg
		if len(s.pending) >= cfg.WSSendQueue || s.pendingBytes+int64(len(msg)) > cfg.WSMaxQueuedBytes {
			s.mu.Unlock()
			s.conn.abort(ClosePolicyViolation, fmt.Sprintf("slow consumer: output queue over its limit (%d messages, %d bytes)", cfg.WSSendQueue, cfg.WSMaxQueuedBytes), disconnectSlowConsumer)
			return ErrSlowConsumer
		}
		s.pending = append(s.pending, msg)
		s.pendingBytes += int64(len(msg))
		s.mu.Unlock()
		return nil
	}
	err = s.conn.enqueue(msg)
	s.mu.Unlock()
	switch {
	case errors.Is(err, ErrSlowConsumer):
		return ErrSlowConsumer
	case err != nil:
		return ErrSubscriptionClosed
	}
	return nil
}

// activate flushes held notifications and lets later ones go straight to the
// connection queue. Called after the eth_subscribe response was queued.
func (s *Subscription) activate() {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.active = true
	for _, m := range s.pending {
		if s.conn.enqueue(m) != nil { // the connection is closing (aborted if over its bounds)
			break
		}
	}
	s.pending, s.pendingBytes = nil, 0
	s.mu.Unlock()
}

// end marks the subscription ended (idempotent).
func (s *Subscription) end() {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	s.pending, s.pendingBytes = nil, 0
	s.mu.Unlock()
	s.cancel()
	close(s.done)
}
