package stream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/beacon/engine"
	"github.com/ethereum/go-ethereum/common"
	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/pending"
)

// Websocket close codes the publisher sends.
const (
	// CloseGoingAway: the node is stopping.
	CloseGoingAway = websocket.CloseGoingAway
	// CloseSlowSubscriber: the subscriber did not keep up (its queue
	// overflowed, or a write or a pong timed out): policy violation.
	CloseSlowSubscriber = websocket.ClosePolicyViolation
)

// PublisherConfig configures the publisher. Data only: zero fields take
// the defaults of DefaultPublisherConfig (WithDefaults).
type PublisherConfig struct {
	// SendQueue is how many live messages may wait for one subscriber
	// (on top of the current block's messages it is sent when it
	// connects). A subscriber with more waiting is dropped with close
	// 1008. Default 64 (about 13 s of messages at the 200 ms interval).
	SendQueue int
	// MaxSubscribers bounds the connected subscribers; one more is
	// answered HTTP 503. The RPC server's connection limits apply too.
	// Default 1000.
	MaxSubscribers int
	// WriteTimeout bounds the write of one message or ping; a subscriber
	// slower than that is dropped. Default 5 s.
	WriteTimeout time.Duration
	// PingInterval is how often a subscriber is pinged; one that sent no
	// pong (or anything) for 3 intervals is dropped. Default 5 s.
	PingInterval time.Duration
	// MaxBacklog bounds the snapshots waiting to be encoded; beyond it
	// (the encoder fell that far behind) they are dropped and the stream
	// resumes at the next block (index 0). Default 1024.
	MaxBacklog int
	// Roots is whether each message carries the pre-confirmation's state
	// root and block hash (Snapshot.StateRoot, Snapshot.BlockHash): "on"
	// (the default) or "off" (zero, as OP subblocks send them), for an
	// operator who measures that the per-cut trie update costs too much
	// (--stream.roots). A node whose store keeps no trie (a forked dev
	// chain) sends zero either way.
	Roots string
}

// Values of PublisherConfig.Roots.
const (
	RootsOn  = "on"
	RootsOff = "off"
)

// DefaultPublisherConfig returns the documented defaults.
func DefaultPublisherConfig() PublisherConfig {
	return PublisherConfig{SendQueue: 64, MaxSubscribers: 1000, WriteTimeout: 5 * time.Second, PingInterval: 5 * time.Second, MaxBacklog: 1024, Roots: RootsOn}
}

// WithDefaults fills zero fields with the defaults.
func (c PublisherConfig) WithDefaults() PublisherConfig {
	d := DefaultPublisherConfig()
	if c.SendQueue == 0 {
		c.SendQueue = d.SendQueue
	}
	if c.MaxSubscribers == 0 {
		c.MaxSubscribers = d.MaxSubscribers
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = d.WriteTimeout
	}
	if c.PingInterval == 0 {
		c.PingInterval = d.PingInterval
	}
	if c.MaxBacklog == 0 {
		c.MaxBacklog = d.MaxBacklog
	}
	if c.Roots == "" {
		c.Roots = d.Roots
	}
	return c
}

// Validate checks the configuration (after WithDefaults).
func (c PublisherConfig) Validate() error {
	switch {
	case c.SendQueue < 0:
		return fmt.Errorf("%w: send queue %d < 0", ErrConfig, c.SendQueue)
	case c.MaxSubscribers < 0:
		return fmt.Errorf("%w: max subscribers %d < 0", ErrConfig, c.MaxSubscribers)
	case c.WriteTimeout < 0 || c.PingInterval < 0:
		return fmt.Errorf("%w: negative write timeout or ping interval", ErrConfig)
	case c.MaxBacklog < 0:
		return fmt.Errorf("%w: max backlog %d < 0", ErrConfig, c.MaxBacklog)
	case c.Roots != RootsOn && c.Roots != RootsOff:
		return fmt.Errorf("%w: roots %q (want %q or %q)", ErrConfig, c.Roots, RootsOn, RootsOff)
	}
	return nil
}

// Source is where the publisher takes snapshots from (*pending.Manager).
type Source interface {
	SubscribePreconfirmations(fn func(*pending.Snapshot)) (unsubscribe func())
}

// message is one encoded pre-confirmation, shared by every subscriber.
type message struct {
	block uint64
	index uint64
	id    engine.PayloadID
	data  []byte
}

// Publisher serves a Manager's snapshots as the pre-confirmation stream.
// It subscribes to the source, encodes every snapshot ONCE (on its own
// goroutine, so the publishing driver only appends to a queue), keeps the
// current block's messages from index 0, and fans them out to websocket
// subscribers (ServeHTTP). A subscriber that connects mid-block is sent the
// block's messages 0..k and then the live ones: the catch-up and the
// registration happen under the lock live messages are delivered under,
// so there is no gap and no duplicate at the boundary. Each subscriber has
// a bounded queue; delivery never blocks, and a subscriber whose queue
// overflows is dropped (close 1008, counted).
//
// A snapshot that does not continue the open block (index > 0 of a block
// whose index 0 was not seen, or a gap) is skipped, as are the rest of
// that block's: the stream resumes at the next index 0. A snapshot that
// encodes to exactly a message already sent for the open block (same
// payload id, index and bytes: a relay's driver re-publishing a block it
// re-anchored on a new canonical head) is not sent again.
type Publisher struct {
	cfg     PublisherConfig
	src     Source
	clock   pending.Clock
	metrics *Metrics
	log     zerolog.Logger

	qmu    sync.Mutex
	queue  []*pending.Snapshot // published, not yet encoded
	wake   chan struct{}
	unsub  func()
	quit   chan struct{}
	done   chan struct{}
	start  sync.Once
	stop   sync.Once
	closed chan struct{} // closed by Stop: subscribers are sent 1001
	// rootFailed is the last block whose state root failed (logged once;
	// owned by loop).
	rootFailed uint64

	mu      sync.Mutex
	open    bool       // a block is open (its index 0 was seen)
	backlog []*message // the open block's messages, index 0 first
	subs    map[*subscriber]struct{}
}

// NewPublisher returns a publisher of src's snapshots. clock drives the
// pings (nil: the wall clock); metrics may be nil. Call Start before the
// source's driver publishes its first snapshot, so the stream starts at an
// index 0.
func NewPublisher(cfg PublisherConfig, src Source, clock pending.Clock, metrics *Metrics, log zerolog.Logger) (*Publisher, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if clock == nil {
		clock = pending.SystemClock{}
	}
	return &Publisher{
		cfg: cfg, src: src, clock: clock, metrics: metrics,
		log:    log.With().Str("component", "stream").Logger(),
		wake:   make(chan struct{}, 1),
		quit:   make(chan struct{}),
		done:   make(chan struct{}),
		closed: make(chan struct{}),
		subs:   make(map[*subscriber]struct{}),
	}, nil
}

// Start subscribes to the source and starts the encoding loop.
func (p *Publisher) Start() {
	p.start.Do(func() {
		p.unsub = p.src.SubscribePreconfirmations(p.enqueue)
		go p.loop()
	})
}

// Stop unsubscribes, ends the loop and closes every subscriber with 1001.
// Connections are closed by their own goroutines (ServeHTTP returns).
func (p *Publisher) Stop() {
	p.stop.Do(func() {
		p.start.Do(func() { close(p.done) })
		if p.unsub != nil {
			p.unsub()
		}
		close(p.quit)
		<-p.done
		close(p.closed)
	})
}

// enqueue runs on the publishing driver's goroutine: append, never block.
func (p *Publisher) enqueue(s *pending.Snapshot) {
	p.qmu.Lock()
	if len(p.queue) >= p.cfg.MaxBacklog {
		p.queue = p.queue[:0]
		p.qmu.Unlock()
		p.skip("encoder backlog full")
		return
	}
	p.queue = append(p.queue, s)
	p.qmu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *Publisher) loop() {
	defer close(p.done)
	for {
		select {
		case <-p.quit:
			return
		case <-p.wake:
		}
		for {
			p.qmu.Lock()
			batch := p.queue
			p.queue = nil
			p.qmu.Unlock()
			if len(batch) == 0 {
				break
			}
			for _, s := range batch {
				p.publish(s)
			}
		}
	}
}

// skip closes the open block: nothing more of it is sent (the stream
// resumes at the next index 0).
func (p *Publisher) skip(why string) {
	p.mu.Lock()
	p.open, p.backlog = false, nil
	p.mu.Unlock()
	p.metrics.skipped(why)
	p.log.Warn().Str("reason", why).Msg("pre-confirmation stream skips to the next block")
}

// publish encodes s and delivers it.
func (p *Publisher) publish(s *pending.Snapshot) {
	t0 := time.Now()
	pl, err := Encode(s)
	if err == nil && p.cfg.Roots == RootsOff {
		pl.Diff.StateRoot, pl.Diff.BlockHash = common.Hash{}, common.Hash{}
	}
	if rerr := s.RootErr(); err == nil && rerr != nil && p.rootFailed != s.Number() {
		// Sent without a root (zero: not announced, as with Roots off);
		// skipping the message would be a gap that freezes every
		// follower's block.
		p.rootFailed = s.Number()
		p.log.Error().Err(rerr).Uint64("block", s.Number()).Uint64("index", s.Index()).
			Msg("the pending block has no state root: its pre-confirmations are streamed without one")
	}
	var data []byte
	if err == nil {
		data, err = json.Marshal(pl)
	}
	if err != nil {
		p.log.Error().Err(err).Uint64("block", s.Header().Number.Uint64()).Uint64("index", s.Index()).Msg("cannot encode a pre-confirmation")
		p.skip("encode error")
		return
	}
	m := &message{block: pl.Metadata.BlockNumber, index: pl.Index, id: pl.PayloadID, data: data}
	p.metrics.encoded(time.Since(t0))
	p.deliver(m)
}

// deliver appends m to the open block (or opens one on index 0) and queues
// it for every subscriber, under mu (see Publisher).
func (p *Publisher) deliver(m *message) {
	p.mu.Lock()
	if p.open && m.index < uint64(len(p.backlog)) && p.backlog[m.index].id == m.id && bytes.Equal(p.backlog[m.index].data, m.data) {
		// The same message again (a relay re-publishing a snapshot it
		// re-anchored on a new canonical head): already sent.
		p.mu.Unlock()
		p.metrics.skipped("republished")
		return
	}
	if m.index == 0 {
		p.open, p.backlog = true, []*message{m}
	} else {
		var last *message
		if n := len(p.backlog); p.open && n > 0 {
			last = p.backlog[n-1]
		}
		if last == nil || last.id != m.id || last.index+1 != m.index {
			wasOpen := p.open
			p.open, p.backlog = false, nil
			p.mu.Unlock()
			if wasOpen { // the first message of a block missed is worth a warning; the rest are counted
				p.log.Warn().Uint64("block", m.block).Uint64("index", m.index).Msg("pre-confirmation does not continue the open block; the stream skips to the next block")
			}
			p.metrics.skipped("not continuing the block")
			return
		}
		p.backlog = append(p.backlog, m)
	}
	var dropped []*subscriber
	for sub := range p.subs {
		select {
		case sub.ch <- m:
		default:
			delete(p.subs, sub)
			dropped = append(dropped, sub)
		}
	}
	p.metrics.setSubscribers(len(p.subs))
	p.mu.Unlock()
	p.metrics.published()
	for _, sub := range dropped {
		p.metrics.drop("queue")
		sub.drop(CloseSlowSubscriber, fmt.Sprintf("slow subscriber: more than %d messages queued", p.cfg.SendQueue))
	}
}

// subscriber is one websocket client.
type subscriber struct {
	ch       chan *message
	dropOnce sync.Once
	dropped  chan struct{}
	code     int
	reason   string
}

func (s *subscriber) drop(code int, reason string) {
	s.dropOnce.Do(func() {
		s.code, s.reason = code, reason
		close(s.dropped)
	})
}

// subscribe registers a subscriber, queued with the open block's messages.
func (p *Publisher) subscribe() (*subscriber, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.subs) >= p.cfg.MaxSubscribers {
		return nil, false
	}
	sub := &subscriber{ch: make(chan *message, len(p.backlog)+p.cfg.SendQueue), dropped: make(chan struct{})}
	for _, m := range p.backlog {
		sub.ch <- m
	}
	p.subs[sub] = struct{}{}
	p.metrics.setSubscribers(len(p.subs))
	return sub, true
}

func (p *Publisher) unsubscribe(sub *subscriber) {
	p.mu.Lock()
	delete(p.subs, sub)
	p.metrics.setSubscribers(len(p.subs))
	p.mu.Unlock()
}

// Subscribers is the number of connected subscribers.
func (p *Publisher) Subscribers() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.subs)
}

var upgrader = websocket.Upgrader{
	ReadBufferSize:  1024,
	WriteBufferSize: 16 * 1024,
	// Public, read-only data: any origin may connect.
	CheckOrigin: func(*http.Request) bool { return true },
}

// maxClientMessage bounds what a subscriber may send (it has nothing to
// say; control frames aside).
const maxClientMessage = 4096

// ServeHTTP upgrades to a websocket and streams until the subscriber goes,
// is dropped, the request's context ends (the server stops) or the
// publisher stops. It returns when the connection is closed.
func (p *Publisher) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !websocket.IsWebSocketUpgrade(r) {
		http.Error(w, "the pre-confirmation stream is a websocket: connect with ws:// (Upgrade: websocket)", http.StatusBadRequest)
		return
	}
	select {
	case <-p.closed:
		http.Error(w, "the pre-confirmation stream is stopped", http.StatusServiceUnavailable)
		return
	default:
	}
	sub, ok := p.subscribe()
	if !ok {
		p.metrics.refused()
		http.Error(w, fmt.Sprintf("too many stream subscribers (limit %d)", p.cfg.MaxSubscribers), http.StatusServiceUnavailable)
		return
	}
	defer p.unsubscribe(sub)
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade answered with an HTTP error
	}
	defer conn.Close()
	log := p.log.With().Str("remote", r.RemoteAddr).Logger()
	log.Debug().Msg("stream subscriber connected")
	p.serve(r.Context(), conn, sub, log)
}

// serve is the connection's writer; a reader goroutine consumes pongs and
// the client's close.
func (p *Publisher) serve(ctx context.Context, conn *websocket.Conn, sub *subscriber, log zerolog.Logger) {
	readerDone := make(chan struct{})
	alive := 3 * p.cfg.PingInterval
	conn.SetReadLimit(maxClientMessage)
	_ = conn.SetReadDeadline(time.Now().Add(alive))
	conn.SetPongHandler(func(string) error { return conn.SetReadDeadline(time.Now().Add(alive)) })
	go func() {
		defer close(readerDone)
		for {
			_, r, err := conn.NextReader()
			if err != nil {
				return
			}
			if _, err := io.Copy(io.Discard, r); err != nil {
				return
			}
			_ = conn.SetReadDeadline(time.Now().Add(alive))
		}
	}()
	ping := p.clock.NewTicker(p.cfg.PingInterval)
	defer ping.Stop()
	closeWith := func(code int, reason string) {
		_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(time.Second))
	}
	for {
		// A drop wins over queued messages: they are never sent.
		select {
		case <-sub.dropped:
			log.Warn().Str("reason", sub.reason).Msg("stream subscriber dropped")
			closeWith(sub.code, sub.reason)
			return
		default:
		}
		select {
		case <-sub.dropped:
			continue
		case m := <-sub.ch:
			_ = conn.SetWriteDeadline(time.Now().Add(p.cfg.WriteTimeout))
			if err := conn.WriteMessage(websocket.TextMessage, m.data); err != nil {
				p.metrics.drop("write")
				log.Debug().Err(err).Msg("stream subscriber write failed")
				return
			}
			p.metrics.sent(len(m.data))
		case <-ping.C():
			if err := conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(p.cfg.WriteTimeout)); err != nil {
				p.metrics.drop("write")
				return
			}
		case <-readerDone:
			log.Debug().Msg("stream subscriber gone")
			return
		case <-ctx.Done():
			closeWith(CloseGoingAway, "server shutting down")
			return
		case <-p.closed:
			closeWith(CloseGoingAway, "server shutting down")
			return
		}
	}
}
