package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
)

// Handler implements one JSON-RPC method. ctx carries the request deadline
// (Config.RequestTimeout) and is cancelled when a websocket client goes away
// (not an HTTP client of Start/Serve: see the package doc); p holds
// the positional params. The result is marshalled with encoding/json (nil
// marshals as null). A returned error is converted as described in
// Server.SetErrorMapper.
type Handler func(ctx context.Context, p Params) (any, error)

// SubscribeHandler starts a subscription of one kind (eth_subscribe
// params[0]). It must validate p (the params after the kind) synchronously
// and return an error (typically from p.Decode, or ErrInvalidParams) when they
// are invalid; then the subscription is discarded. On success it starts its
// own feed (a goroutine) that calls sub.Notify and stops when sub.Done() is
// closed, and returns nil. ctx is the request context: do not keep it; use
// sub.Context() for the feed.
type SubscribeHandler func(ctx context.Context, sub *Subscription, p Params) error

// Method names handled by the framework itself.
const (
	MethodSubscribe   = "eth_subscribe"
	MethodUnsubscribe = "eth_unsubscribe"
)

// Transport names reported in the call log.
const (
	TransportHTTP = "http"
	TransportWS   = "ws"
)

// Server is a JSON-RPC 2.0 server over HTTP and websocket on one listener.
// Register methods before serving; registration is safe for concurrent use
// but methods registered later are only seen by later requests.
type Server struct {
	cfg  Config
	log  zerolog.Logger
	mux  *http.ServeMux
	fast *fasthttp.Server        // serves the listener (fast.go)
	slow fasthttp.RequestHandler // ServeHTTP under fasthttp: everything but the plain POST

	rootMounted atomic.Bool // a Handle pattern may match "/" (no fast path)

	// table is what the registration calls installed, replaced whole
	// (copy on write, under mu) by each of them: a request reads it with
	// one atomic load and no lock.
	table atomic.Pointer[methodTable]

	mu        sync.RWMutex
	listener  net.Listener
	stopping  bool
	stopFlag  atomic.Bool // stopping, read by requests without mu
	wsConns   map[*wsConn]struct{}
	newConns  map[net.Conn]struct{} // accepted HTTP connections that have not sent a request yet
	openConns map[net.Conn]struct{} // accepted HTTP connections not closed or hijacked yet
	serveDone chan struct{}

	active tracker // ServeHTTP calls, websocket connections, running handlers
	// handlers counts the handler calls running on workers (call): a batch
	// runs its elements in turn once they are as many as the Ps.
	handlers atomic.Int32

	stopCtx    context.Context // cancelled when Stop begins (HandleStream handlers)
	stopCancel context.CancelFunc
	workers    *workers // goroutines of websocket messages and handlers (workers.go)

	conns       *connLimits   // connection admission (MaxConns, MaxConnsPerIP, ConnReserve)
	calls       *addrSlots    // executing calls per client address (MaxCallsPerIP)
	output      *outputBudget // server-wide queued output (MaxQueuedOutput)
	stats       stats         // counters exported by Collector
	timeoutWarn rateLimiter   // timed-out requests' warnings (calllog.go)
}

// NewServer validates cfg and returns a Server; zero fields of cfg take
// their defaults.
func NewServer(cfg Config, log zerolog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	s := &Server{
		cfg:       cfg,
		log:       log.With().Str("component", "rpc").Logger(),
		mux:       http.NewServeMux(),
		wsConns:   make(map[*wsConn]struct{}),
		newConns:  make(map[net.Conn]struct{}),
		openConns: make(map[net.Conn]struct{}),
		conns:     newConnLimits(cfg),
		calls:     newAddrSlots(cfg.MaxCallsPerIP),
		output:    &outputBudget{limit: cfg.MaxQueuedOutput},
	}
	s.table.Store(&methodTable{methods: map[string]methodEntry{}, subs: map[string]SubscribeHandler{}})
	s.stopCtx, s.stopCancel = context.WithCancel(context.Background())
	s.workers = newWorkers(s.stopCtx.Done())
	s.mux.Handle("/", http.HandlerFunc(s.serveRPC))
	s.fast = newFastServer(s)
	s.slow = fasthttpadaptor.NewFastHTTPHandler(s)
	return s, nil
}

// Config returns the effective configuration (defaults applied).
func (s *Server) Config() Config { return s.cfg }

// Register installs h for method. It panics on an empty method, a nil
// handler, a duplicate registration, or the framework-owned names
// eth_subscribe/eth_unsubscribe (use RegisterSubscription).
func (s *Server) Register(method string, h Handler, opts ...MethodOption) {
	checkRegister(method, h)
	s.register(method, methodEntry{h: h, cooperative: hasOption(opts, HonoursContext)})
}

// MethodOption changes how the calls of a registered method run.
type MethodOption uint8

const (
	// HonoursContext declares that the handler returns promptly once its
	// context is done: every wait in it takes the context, and its long
	// work stops with it (an EVM execution cancelled by the context, a loop
	// that checks it). Its calls then run on the goroutine that executes
	// the message, as inline ones do, but keep everything else (the
	// request's deadline in the context, the per-address slot, the
	// limiter): that saves a hand-off to a goroutine of their own and the
	// switch back, on every call and on every element of a batch (a batch
	// of 100 eth_call took 11-25 % less CPU in the side-by-side harness; a
	// single call's gain was within its noise). The handler enforces the
	// deadline: the call is answered when it returns, with the timeout
	// error other methods answer at the deadline when the context ended
	// and the handler failed.
	HonoursContext MethodOption = iota + 1
)

func hasOption(opts []MethodOption, o MethodOption) bool {
	for _, x := range opts {
		if x == o {
			return true
		}
	}
	return false
}

// checkRegister panics on what Register refuses.
func checkRegister(method string, h Handler) {
	if method == "" || h == nil {
		panic("rpc: Register with empty method or nil handler")
	}
	if method == MethodSubscribe || method == MethodUnsubscribe {
		panic("rpc: " + method + " is handled by the framework; use RegisterSubscription")
	}
}

// register installs m for name (it panics on a duplicate).
func (s *Server) register(name string, m methodEntry) {
	s.update(func(t *methodTable) {
		if _, dup := t.methods[name]; dup {
			panic("rpc: duplicate registration of " + name)
		}
		t.methods[name] = m
	})
}

// update installs a copy of the method table changed by f.
func (s *Server) update(f func(*methodTable)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.table.Load()
	t := *old
	t.methods = maps.Clone(old.methods)
	t.subs = maps.Clone(old.subs)
	f(&t)
	s.table.Store(&t)
}

// RegisterLimited installs h for method under the Limiter l: calls wait
// for (or are refused by) l, and, being bounded by it, do not count
// against Config.MaxCallsPerIP, so other methods never wait behind them.
// It panics as Register does.
func (s *Server) RegisterLimited(method string, l *Limiter, h Handler, opts ...MethodOption) {
	if l == nil {
		panic("rpc: RegisterLimited with a nil Limiter")
	}
	checkRegister(method, h)
	s.register(method, methodEntry{h: l.Wrap(h), limited: true, cooperative: hasOption(opts, HonoursContext)})
}

// RegisterInline installs h as Register does, for a method that returns
// at once without blocking (no I/O, no waiting on a lock or channel): it
// runs on the goroutine executing the message instead of one of its own,
// which saves a goroutine, a channel and two switches per call. The
// deadline is not enforced on it (the call is answered when h returns),
// so h must be that cheap. The call log and metrics treat it as any
// method; a single (non-batch) inline call also skips the request's
// timeout timer and the per-address slot (Config.MaxCallsPerIP), which
// cost more than it does: its concurrency is bounded by the address's
// connections.
func (s *Server) RegisterInline(method string, h Handler) {
	checkRegister(method, h)
	s.register(method, methodEntry{h: h, inline: true})
}

// WrapHandlers replaces the handler h of every method registered so far
// that is not inline with wrap(method, h): a layer over all of them (the
// upstream fallback of a fork). The layer must honour the context as h
// does (HonoursContext stays). Call it before serving.
func (s *Server) WrapHandlers(wrap func(method string, h Handler) Handler) {
	s.update(func(t *methodTable) {
		for name, m := range t.methods {
			if !m.inline {
				m.h = wrap(name, m.h)
				t.methods[name] = m
			}
		}
	})
}

// RegisterSubscription installs h for eth_subscribe kind (e.g. "newHeads").
// It panics on an empty kind, a nil handler or a duplicate.
func (s *Server) RegisterSubscription(kind string, h SubscribeHandler) {
	if kind == "" || h == nil {
		panic("rpc: RegisterSubscription with empty kind or nil handler")
	}
	s.update(func(t *methodTable) {
		if _, dup := t.subs[kind]; dup {
			panic("rpc: duplicate subscription kind " + kind)
		}
		t.subs[kind] = h
	})
}

// Handle mounts an extra HTTP handler (e.g. "/metrics" or "GET /health") on
// the same listener, using http.ServeMux patterns. Everything not matched by
// a mounted pattern is served as JSON-RPC. Mounted handlers are not subject
// to the JSON-RPC method/content-type checks; under Start/Serve their
// request bodies are bounded by Config.MaxRequestBytes too (fasthttp reads
// a body before any handler runs).
func (s *Server) Handle(pattern string, h http.Handler) {
	if mountedRoot(pattern) {
		s.rootMounted.Store(true)
	}
	s.mux.Handle(pattern, h)
}

// HandleStream mounts a long-lived handler (a websocket feed that hijacks
// its connection) as Handle does. Its request context is cancelled when
// Stop begins, so it can close its connection (1001) and return: Stop
// waits for it like any request. Its connections count against the
// listener's limits (MaxConns, MaxConnsPerIP, ConnReserve) until closed.
func (s *Server) HandleStream(pattern string, h http.Handler) {
	s.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Not derived from r.Context(): under fasthttp that is the request's
		// RequestCtx, which fasthttp resets and reuses once the handler has
		// hijacked the connection, while the feed (and this cancel) outlive
		// it. A hijacked connection's context carries nothing else.
		ctx, cancel := context.WithCancel(s.stopCtx)
		defer cancel()
		h.ServeHTTP(w, r.WithContext(ctx))
	}))
}

// SetErrorMapper installs a function that maps handler errors which are not
// already an *Error to an *Error (return nil to fall through). The full
// conversion order for a handler error is: an *Error in the chain (errors.As)
// as is; the mapper; an ErrorCoder in the chain; context.DeadlineExceeded →
// CodeTimeout; anything else → CodeInternal with the error text.
// Call it before serving.
func (s *Server) SetErrorMapper(m func(error) *Error) {
	s.update(func(t *methodTable) { t.mapper = m })
}

// SetBatchScope installs fn, called once per JSON-RPC batch before any of
// its elements runs: the elements run with the context it returns, and
// release runs after the last element finished. The method layer uses it to
// give every element of a batch the same consistent read. Call it before
// serving.
func (s *Server) SetBatchScope(fn func(ctx context.Context) (scoped context.Context, release func())) {
	s.update(func(t *methodTable) { t.batchCtx = fn })
}

// Start listens on Config.Addr and serves in a background goroutine. It
// returns once the listener is open (or with the listen error).
func (s *Server) Start() error {
	l, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("rpc: listen %s: %w", s.cfg.Addr, err)
	}
	ready := make(chan error, 1)
	go func() {
		if err := s.serve(l, ready); err != nil {
			s.log.Error().Err(err).Msg("rpc server stopped with error")
		}
	}()
	return <-ready
}

// Serve serves l until Stop; it returns nil after a graceful Stop. The
// listener is wrapped to enforce Config.MaxConns, MaxConnsPerIP and
// ConnReserve.
func (s *Server) Serve(l net.Listener) error { return s.serve(l, nil) }

func (s *Server) serve(l net.Listener, ready chan<- error) error {
	s.mu.Lock()
	if s.stopping || s.listener != nil {
		s.mu.Unlock()
		l.Close()
		err := ErrServerStopped
		if !s.stopping {
			err = errors.New("rpc: server already serving")
		}
		if ready != nil {
			ready <- err
		}
		return err
	}
	ll := newLimitListener(l, s.conns, s.log)
	s.listener = ll
	s.serveDone = make(chan struct{})
	done := s.serveDone
	s.mu.Unlock()
	defer close(done)
	if ready != nil {
		ready <- nil
	}
	s.log.Info().Str("addr", l.Addr().String()).Msg("rpc server listening")
	err := s.fast.Serve(ll)
	s.mu.RLock()
	stopping := s.stopping
	s.mu.RUnlock()
	if stopping {
		return nil
	}
	return err
}

// Addr returns the listening address, or nil before Start/Serve.
func (s *Server) Addr() net.Addr {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.listener == nil {
		return nil
	}
	return s.listener.Addr()
}

// Stop shuts the server down gracefully: it stops accepting connections and
// new requests (answered 503), lets in-flight HTTP requests and websocket
// messages finish and their responses be written, then closes websockets
// with status 1001 (ending their subscriptions), and waits for running
// handlers. When ctx (bounded by Config.ShutdownTimeout) expires first,
// everything is closed forcibly and ctx's error is returned.
func (s *Server) Stop(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ShutdownTimeout)
	defer cancel()
	s.mu.Lock()
	already := s.stopping
	s.stopping = true
	s.stopFlag.Store(true)
	s.stopCancel()
	conns := make([]*wsConn, 0, len(s.wsConns))
	for c := range s.wsConns {
		conns = append(conns, c)
	}
	serving := s.listener != nil
	// Connections that never sent a request (e.g. browser pre-connects):
	// close them now. fastConnState closes any accepted from here on.
	for c := range s.newConns {
		c.Close()
	}
	clear(s.newConns)
	s.mu.Unlock()
	if !already {
		s.log.Info().Msg("rpc server stopping")
	}

	var wg sync.WaitGroup
	errc := make(chan error, 1)
	if serving {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.fast.ShutdownWithContext(ctx); err != nil {
				errc <- err
			}
		}()
	}
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.shutdown(ctx)
		}()
	}
	wg.Wait()
	err := s.active.wait(ctx)
	if err != nil {
		s.mu.RLock()
		for c := range s.openConns {
			c.Close()
		}
		left := make([]*wsConn, 0, len(s.wsConns))
		for c := range s.wsConns {
			left = append(left, c)
		}
		s.mu.RUnlock()
		for _, c := range left { // close takes s.mu itself
			c.close("server stopped")
		}
		return err
	}
	select {
	case err := <-errc:
		return err
	default:
	}
	return nil
}

// ServeHTTP implements http.Handler: mounted handlers, JSON-RPC over HTTP
// POST, and websocket upgrades.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.stopFlag.Load() {
		w.Header().Set("Connection", "close")
		writeHTTPError(w, http.StatusServiceUnavailable, ErrServer("server is shutting down"))
		return
	}
	if s.cors(w, r) {
		return
	}
	s.active.add()
	defer s.active.done()
	s.mux.ServeHTTP(w, r)
}

// method returns a method's entry (zero when unknown) and the error mapper.
func (s *Server) method(name string) (methodEntry, func(error) *Error) {
	t := s.table.Load()
	return t.methods[name], t.mapper
}

func (s *Server) subscribeHandler(kind string) SubscribeHandler {
	return s.table.Load().subs[kind]
}

func (s *Server) errorMapper() func(error) *Error {
	return s.table.Load().mapper
}

// methodTable is the registered methods, subscriptions and hooks.
type methodTable struct {
	methods  map[string]methodEntry
	subs     map[string]SubscribeHandler
	mapper   func(error) *Error
	batchCtx func(context.Context) (context.Context, func())
}

// methodEntry is one registered method.
type methodEntry struct {
	h           Handler
	limited     bool // has its own Limiter (RegisterLimited)
	inline      bool // runs without a goroutine (RegisterInline)
	cooperative bool // returns once its context is done (HonoursContext)
}

// session is what a transport provides to message execution.
type session struct {
	transport string
	remote    string  // the client's address, host:port
	key       string  // addr(), computed once
	ws        *wsConn // nil over HTTP
	// afterSend collects callbacks to run after this message's response has
	// been queued for writing (subscription activation).
	mu        sync.Mutex
	afterSend []func()
}

// sessionKey keys the message's session in its handlers' context.
type sessionKey struct{}

// ClientAddr is the address of the client whose call ctx belongs to, as
// per-client limits count it (an IP address; IPv6: its /64), or "" outside
// a call.
func ClientAddr(ctx context.Context) string {
	if ss, ok := ctx.Value(sessionKey{}).(*session); ok {
		return ss.addr()
	}
	return ""
}

// addr is the client address calls count against (addrKey of remote).
func (ss *session) addr() string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.key == "" {
		ss.key = ss.addrOf()
	}
	return ss.key
}

func (ss *session) addrOf() string {
	host, _, err := net.SplitHostPort(ss.remote)
	if err != nil {
		return ss.remote
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return host
	}
	return addrKey(&net.TCPAddr{IP: ip})
}

func (ss *session) onSent(f func()) {
	ss.mu.Lock()
	ss.afterSend = append(ss.afterSend, f)
	ss.mu.Unlock()
}

func (ss *session) runAfterSend() {
	ss.mu.Lock()
	fs := ss.afterSend
	ss.afterSend = nil
	ss.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// handleMessage decodes and executes one message and returns the encoded
// response (nil: nothing to send). parent is cancelled when the client goes
// away; the message gets Config.RequestTimeout on top of it.
func (s *Server) handleMessage(parent context.Context, body []byte, ss *session) []byte {
	reqs, batch, msgErr := decodeMessage(body, s.cfg.MaxBatch)
	if msgErr != nil {
		s.logCall(ss, "", 0, msgErr)
		return encodeError(nil, msgErr)
	}
	var inline, slot bool
	if !batch {
		inline, slot = s.classify(reqs[0])
	}
	if inline {
		// An inline method answers at once from memory: no timeout timer
		// and no per-address slot (the floor of every request's cost).
		return s.execute(context.WithValue(parent, sessionKey{}, ss), reqs[0], ss, func() {}, nil)
	}
	ctx, cancel := context.WithTimeout(context.WithValue(parent, sessionKey{}, ss), s.cfg.RequestTimeout)
	defer cancel()
	if !batch {
		release, aerr := s.admit(ctx, slot, ss)
		if aerr != nil {
			return s.refuse(reqs[0], ss, aerr)
		}
		// One response: MaxResponseBytes only (the transport reserves the
		// server-wide output when it writes or queues it).
		return s.execute(ctx, reqs[0], ss, release, nil)
	}
	scope := s.table.Load().batchCtx
	if scope != nil {
		var release func()
		ctx, release = scope(ctx)
		defer release()
	}
	// The batch's response budget: every element's encoded answer is
	// counted as it is produced, against MaxResponseBytes and the
	// server-wide output (MaxQueuedOutput); once it is spent, the elements
	// not yet started are answered -32005 without running.
	// Answers are counted in element order (each element keeps its slot
	// until its turn), so which elements fit does not depend on timing, and
	// at most BatchParallelism answers are held uncounted.
	budget := &respBudget{s: s, limit: int64(s.cfg.MaxResponseBytes), self: ss.ws, done: make([]bool, len(reqs))}
	budget.turn.L = &budget.mu
	defer budget.release()
	parts := make([][]byte, len(reqs))
	sem := make(chan struct{}, s.cfg.BatchParallelism)
	procs := int32(runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, r := range reqs {
		if r.err != nil { // cheap, no need for a goroutine
			parts[i] = encodeError(r.id, r.err)
			budget.finish(i)
			continue
		}
		sem <- struct{}{}
		if budget.spent.Load() {
			parts[i] = s.refuse(r, ss, errNotExecuted(budget.limit))
			budget.finish(i)
			<-sem
			continue
		}
		// The slot is taken before the element's goroutine exists: waiting
		// elements cost no goroutine and no scheduling.
		_, slot := s.classify(r)
		release, aerr := s.admit(ctx, slot, ss)
		if aerr != nil {
			parts[i] = s.refuse(r, ss, aerr)
			budget.finish(i)
			<-sem
			continue
		}
		if s.handlers.Load() >= procs {
			// Every core has a handler already: a goroutine of its own
			// would only wait for one (and its hand-offs cost about a
			// tenth of a batch's CPU); the element runs here, in turn.
			parts[i] = s.execute(ctx, r, ss, release, budget.element(i))
			<-sem
			continue
		}
		wg.Add(1)
		// A kept worker: a method that honours its context runs the EVM
		// on this goroutine, and a kept one has the stack grown already.
		s.workers.run(func() {
			defer func() { <-sem; wg.Done() }()
			parts[i] = s.execute(ctx, r, ss, release, budget.element(i))
		})
	}
	wg.Wait()
	// Joining copies the whole answer: work of this address too.
	if release, err := s.calls.acquire(ctx, ss.addr()); err == nil {
		defer release()
	}
	return joinBatch(parts)
}

// respBudget accounts the encoded answers of one batch as they are
// produced: against Config.MaxResponseBytes (the whole batch) and the
// server-wide output budget (Config.MaxQueuedOutput), so that a batch never
// holds more than one response's worth of results, whatever it asks for.
// Answers are counted in element order. An answer that does not fit spends
// the budget: the elements not started yet are answered -32005 without
// running. Small error answers are not counted (there are at most MaxBatch
// of them). Safe for concurrent use by the batch's elements.
type respBudget struct {
	s     *Server
	limit int64
	self  *wsConn // the batch's websocket (never evicted for its own output), nil over HTTP
	spent atomic.Bool

	mu   sync.Mutex
	turn sync.Cond // on mu: next moved
	used int64     // bytes counted (and reserved in the server's output)
	next int       // the element whose answer is counted next
	done []bool    // elements counted (or not counted at all)
}

// elementBudget is one batch element's view of its batch's budget.
type elementBudget struct {
	*respBudget
	i int
}

func (b *respBudget) element(i int) *elementBudget { return &elementBudget{b, i} }

// room is how many more bytes the batch may produce.
func (b *respBudget) room() int64 {
	if b.spent.Load() {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.limit - b.used
}

// take waits for element e's turn and counts n more bytes of answer (when
// counted); the error (-32005) when they do not fit, after which the budget
// is spent, as it is by an element refused for its size (overflow).
// The turn passes to the next element either way.
func (e *elementBudget) take(n int64, counted, overflow bool) *Error {
	b := e.respBudget
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.next != e.i {
		b.turn.Wait()
	}
	defer b.finishLocked(e.i)
	switch {
	case overflow: // the element's own answer did not fit
		b.spent.Store(true)
		return nil
	case !counted:
		return nil
	case b.spent.Load() || b.used+n > b.limit:
		b.spent.Store(true)
		return ErrResponseTooLarge(int(b.limit))
	case !b.s.reserveOutput(n, b.used, b.self):
		b.s.output.refused.Add(1)
		b.spent.Store(true)
		return ErrLimit("server output buffer full (limit %d bytes), try again later", b.s.cfg.MaxQueuedOutput)
	}
	b.used += n
	return nil
}

// finish passes element i's turn without counting anything.
func (b *respBudget) finish(i int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.finishLocked(i)
}

func (b *respBudget) finishLocked(i int) {
	b.done[i] = true
	for b.next < len(b.done) && b.done[b.next] {
		b.next++
	}
	b.turn.Broadcast()
}

// release gives the counted bytes back to the server's output budget (the
// transport reserves the joined answer itself when it writes it).
func (b *respBudget) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.s.output.release(b.used)
	b.used = 0
}

// classify looks r's method up once: inline reports a valid call of a
// method registered inline (RegisterInline); slot, whether its call takes
// a per-address slot (admit). Invalid requests, the framework's own
// methods, unknown methods and methods with their own Limiter take none.
func (s *Server) classify(r *request) (inline, slot bool) {
	if r.err != nil || r.method == MethodSubscribe || r.method == MethodUnsubscribe {
		return false, false
	}
	m, _ := s.method(r.method)
	if m.h == nil {
		return false, false
	}
	return m.inline, !m.limited
}

// admit takes the slot of the client's address (Config.MaxCallsPerIP),
// waiting within ctx, for a call that takes one (classify); for the
// others it takes nothing.
func (s *Server) admit(ctx context.Context, slot bool, ss *session) (release func(), err *Error) {
	if !slot {
		return func() {}, nil
	}
	release, cerr := s.calls.acquire(ctx, ss.addr())
	if cerr != nil {
		if errors.Is(cerr, context.DeadlineExceeded) {
			return nil, ErrTimeout()
		}
		return nil, ErrServer("request canceled")
	}
	return release, nil
}

// refuse answers r with err (nil for a notification).
func (s *Server) refuse(r *request, ss *session, err *Error) []byte {
	s.logCall(ss, r.method, 0, err)
	if r.isNotification() {
		return nil
	}
	return encodeError(r.id, err)
}

// execute runs one admitted request and returns its encoded response, or
// nil for a notification. release (from admit) is called once the
// handler has returned.
func (s *Server) execute(ctx context.Context, r *request, ss *session, release func(), budget *elementBudget) []byte {
	if r.err != nil { // not reached in a batch (answered before)
		release()
		s.logCall(ss, r.method, 0, r.err)
		return encodeError(r.id, r.err)
	}
	start := time.Now()
	result, rerr := s.call(ctx, r, ss, release, budget)
	s.logCall(ss, r.method, time.Since(start), rerr)
	if r.isNotification() {
		if budget != nil {
			budget.take(0, false, false)
		}
		return nil
	}
	var out []byte
	if rerr == nil {
		out = encodeResult(r.id, result)
	} else {
		out = encodeError(r.id, rerr) // may be large too: revert data
	}
	result = nil
	// Counted as produced: a batch's budget, or MaxResponseBytes alone.
	// Small error answers are not counted (a batch has at most MaxBatch).
	switch {
	case budget != nil:
		if e := budget.take(int64(len(out)), rerr == nil || len(out) > smallError, rerr != nil && rerr.overflow); e != nil {
			out = encodeError(r.id, e)
		}
	case len(out) > s.cfg.MaxResponseBytes:
		out = encodeError(r.id, ErrResponseTooLarge(s.cfg.MaxResponseBytes))
	}
	return out
}

// smallError: error answers up to this size are not counted in a batch's
// response budget.
const smallError = 1 << 10

// call dispatches r and returns the marshalled result or the error. It
// calls release once the handler has returned (or at once when no handler
// runs).
func (s *Server) call(ctx context.Context, r *request, ss *session, release func(), budget *elementBudget) (json.RawMessage, *Error) {
	handed := false
	defer func() {
		if !handed {
			release()
		}
	}()
	switch r.method {
	case MethodSubscribe, MethodUnsubscribe:
		if ss.ws == nil {
			return nil, &Error{Code: CodeMethodNotFound, Message: "notifications not supported"}
		}
		if r.objParams {
			return nil, ErrInvalidParams("invalid params: params must be an array")
		}
		if r.method == MethodSubscribe {
			return ss.ws.subscribe(ctx, Params{raw: r.params, valid: true}, ss)
		}
		return ss.ws.unsubscribe(Params{raw: r.params, valid: true})
	}
	m, mapper := s.method(r.method)
	h := m.h
	if h == nil {
		return nil, ErrMethodNotFound(r.method)
	}
	if r.objParams {
		return nil, ErrInvalidParams("invalid params: params must be an array")
	}
	if ctx.Err() != nil { // batch deadline passed before this element started
		return nil, ErrTimeout()
	}
	if m.inline {
		o := s.run(ctx, h, r, mapper, budget)
		return o.res, o.err
	}
	if m.cooperative {
		s.active.add()
		s.handlers.Add(1)
		o := s.run(ctx, h, r, mapper, budget)
		s.handlers.Add(-1)
		s.active.done()
		if o.err != nil && ctx.Err() != nil {
			// What the hand-off answers once the context has ended.
			return nil, contextError(ctx)
		}
		return o.res, o.err
	}
	handed = true
	r = r.detached() // the handler may outlive the answer and the message's buffer
	done := make(chan outcome, 1)
	s.active.add()
	s.handlers.Add(1)
	s.workers.run(func() {
		defer s.active.done()
		defer s.handlers.Add(-1)
		defer release() // held until the handler really returns
		done <- s.run(ctx, h, r, mapper, budget)
	})
	select {
	case o := <-done:
		return o.res, o.err
	case <-ctx.Done():
		// Prefer a result that is ready at the same instant.
		select {
		case o := <-done:
			return o.res, o.err
		default:
		}
		return nil, contextError(ctx)
	}
}

// contextError answers a call whose context ended before its handler
// answered: the request's deadline passed, or the client went away.
func contextError(ctx context.Context) *Error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ErrTimeout()
	}
	return ErrServer("request canceled")
}

// outcome is a handler's marshalled result or its error.
type outcome struct {
	res json.RawMessage
	err *Error
}

// run calls h for r and marshals its result; a panic is recovered and
// logged.
func (s *Server) run(ctx context.Context, h Handler, r *request, mapper func(error) *Error, budget *elementBudget) (o outcome) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error().Str("method", r.method).Interface("panic", p).Bytes("stack", debug.Stack()).Msg("rpc handler panicked")
			o = outcome{err: ErrInternal("internal error")}
		}
	}()
	p := Params{raw: r.params, valid: true, limit: s.cfg.MaxResponseBytes}
	if budget != nil {
		p.budget = budget.respBudget
	}
	res, err := h(ctx, p)
	if err != nil {
		o.err = toError(err, mapper)
		if o.err.Code == CodeInternal {
			s.log.Warn().Str("method", r.method).Err(err).Msg("rpc handler failed")
		}
		return o
	}
	if raw, ok := res.(RawResult); ok {
		if err := p.CheckResponse(len(raw)); err != nil {
			return outcome{err: err.(*Error)}
		}
		return outcome{res: json.RawMessage(raw)}
	}
	b, merr := json.Marshal(res)
	if merr != nil {
		s.log.Error().Str("method", r.method).Err(merr).Msg("rpc result not marshallable")
		return outcome{err: ErrInternal("internal error: result cannot be encoded")}
	}
	if err := p.CheckResponse(len(b)); err != nil { // dropped here, before the answer copies it
		return outcome{err: err.(*Error)}
	}
	return outcome{res: b}
}

// tracker counts running activities and lets Stop wait until none is left.
// Every request adds and leaves, so it takes no lock: an atomic count,
// which wait (once, at Stop) polls.
type tracker struct {
	n atomic.Int64
}

func (t *tracker) add()  { t.n.Add(1) }
func (t *tracker) done() { t.n.Add(-1) }

// trackerPoll is how often wait looks at the count.
const trackerPoll = 2 * time.Millisecond

func (t *tracker) wait(ctx context.Context) error {
	if t.n.Load() == 0 {
		return nil
	}
	tick := time.NewTicker(trackerPoll)
	defer tick.Stop()
	for t.n.Load() > 0 {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
