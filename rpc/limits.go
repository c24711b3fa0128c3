package rpc

import (
	"context"
	"fmt"
	"hash/maphash"
	"net"
	"sync"
	"sync/atomic"
)

// Reasons a connection is refused at accept (metric label values).
const (
	refusedMaxConns   = "max_conns"   // Config.MaxConns reached
	refusedPerAddress = "per_address" // Config.MaxConnsPerIP reached for the address
	refusedReserve    = "reserve"     // only the reserve is left and the address holds its share
)

// Reasons the server closes a websocket because of a limit (metric label
// values).
const (
	disconnectSlowConsumer = "slow_consumer"   // its queue passed WSSendQueue / WSMaxQueuedBytes (1008)
	disconnectOutputLimit  = "output_limit"    // evicted for Config.MaxQueuedOutput (1013)
	disconnectTooBig       = "message_too_big" // a message over WSMaxMessageBytes (1009)
	disconnectIdle         = "idle"            // WSIdleTimeout without use (1000)
)

// Websocket close codes the server sends (RFC 6455 section 7.4.1).
const (
	CloseNormal          = 1000 // idle timeout
	CloseGoingAway       = 1001 // server stopping
	ClosePolicyViolation = 1008 // slow consumer: the connection's output queue passed its bound
	CloseMessageTooBig   = 1009 // an incoming message over WSMaxMessageBytes
	CloseTryAgainLater   = 1013 // evicted to keep the server's queued output under MaxQueuedOutput
)

// refusal is why a connection was refused and the raw HTTP answer sent.
type refusal struct {
	reason string
	answer []byte
}

// connLimits admits connections: at most max open, at most perIP per
// client address, and once only reserve slots are left, only addresses
// holding fewer than reservePerIP. Safe for concurrent use.
type connLimits struct {
	max, perIP, reserve, reservePerIP int

	mu     sync.Mutex
	open   int
	byAddr map[string]int

	refusals map[string]*refusal
	refused  map[string]*atomic.Uint64
}

func newConnLimits(cfg Config) *connLimits {
	l := &connLimits{
		max: cfg.MaxConns, perIP: cfg.MaxConnsPerIP, reserve: cfg.ConnReserve, reservePerIP: cfg.ConnReservePerIP,
		byAddr: make(map[string]int),
		refusals: map[string]*refusal{
			refusedMaxConns:   {refusedMaxConns, refusedResponse(ErrLimit("too many open connections (limit %d)", cfg.MaxConns))},
			refusedPerAddress: {refusedPerAddress, refusedResponse(ErrLimit("too many connections from your address (limit %d)", cfg.MaxConnsPerIP))},
			refusedReserve: {refusedReserve, refusedResponse(ErrLimit("too many open connections: the last %d of %d are kept for addresses with fewer than %d",
				cfg.ConnReserve, cfg.MaxConns, cfg.ConnReservePerIP))},
		},
		refused: make(map[string]*atomic.Uint64),
	}
	for r := range l.refusals {
		l.refused[r] = new(atomic.Uint64)
	}
	return l
}

// admit takes a slot for a connection from addr and returns its release
// function, or the refusal.
func (l *connLimits) admit(addr string) (release func(), r *refusal) {
	l.mu.Lock()
	defer l.mu.Unlock()
	held := l.byAddr[addr]
	switch {
	case l.open >= l.max:
		r = l.refusals[refusedMaxConns]
	case held >= l.perIP:
		r = l.refusals[refusedPerAddress]
	case l.open >= l.max-l.reserve && held >= l.reservePerIP:
		r = l.refusals[refusedReserve]
	}
	if r != nil {
		l.refused[r.reason].Add(1)
		return nil, r
	}
	l.open++
	l.byAddr[addr] = held + 1
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.open--
		if n := l.byAddr[addr] - 1; n > 0 {
			l.byAddr[addr] = n
		} else {
			delete(l.byAddr, addr)
		}
	}, nil
}

// counts returns the open connections and the number of addresses holding
// them.
func (l *connLimits) counts() (open, addrs int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open, len(l.byAddr)
}

// addrKey is the client address a connection counts against: the IP of an
// IPv4 client, the /64 of an IPv6 one (one subscriber usually holds a whole
// /64), or the address text for other networks.
func addrKey(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	if ip4 := ta.IP.To4(); ip4 != nil {
		return ip4.String()
	}
	return fmt.Sprintf("%s/64", ta.IP.Mask(net.CIDRMask(64, 128)))
}

// outputFloor: a connection holding less than this much output is never
// refused by the server-wide bound (Config.MaxQueuedOutput), so the bound
// cannot starve well-behaved clients of small answers.
const outputFloor = 64 << 10

// outputBudget accounts the output the server holds for clients (every
// websocket queue and HTTP responses being written) against
// Config.MaxQueuedOutput.
type outputBudget struct {
	limit   int64
	used    atomic.Int64
	refused atomic.Uint64 // HTTP responses refused
}

// tryReserve adds n bytes for a connection already holding held bytes;
// false when that would pass the limit (and the connection holds at least
// outputFloor).
func (b *outputBudget) tryReserve(n, held int64) bool {
	if b.used.Add(n) <= b.limit || held+n <= outputFloor {
		return true
	}
	b.used.Add(-n)
	return false
}

func (b *outputBudget) release(n int64) { b.used.Add(-n) }

// reserveOutput reserves n bytes of the server-wide output budget for a
// connection holding held bytes (self is its websocket, nil over HTTP).
// When the budget is full, the websocket with the most droppable queued
// output is disconnected (1013) to make room, unless that is self; false
// when no room could be made.
func (s *Server) reserveOutput(n, held int64, self *wsConn) bool {
	for range 8 {
		if s.output.tryReserve(n, held) {
			return true
		}
		victim := s.largestQueue(self, n)
		if victim == nil {
			return false
		}
		victim.abort(CloseTryAgainLater, fmt.Sprintf("server output buffer full (limit %d bytes); this connection held the most", s.cfg.MaxQueuedOutput), disconnectOutputLimit)
	}
	return false
}

// largestQueue returns the websocket whose queued output (not yet being
// written) is largest, or nil when that is self (counting the n bytes self
// wants to add) or nothing can be dropped.
func (s *Server) largestQueue(self *wsConn, n int64) *wsConn {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var best *wsConn
	var most int64
	if self != nil {
		best, most = self, self.droppable()+n
	}
	for c := range s.wsConns {
		if d := c.droppable(); d > most {
			best, most = c, d
		}
	}
	if best == self || most <= 0 {
		return nil
	}
	return best
}

// addrSlots bounds the calls executing at once per client address
// (Config.MaxCallsPerIP). Waiting calls are served in arrival order. The
// addresses are spread over shards, each with its own lock, so calls of
// different clients share none.
type addrSlots struct {
	max    int
	waits  atomic.Uint64 // calls that had to wait
	seed   maphash.Seed  // spreads addresses over the shards
	shards [addrShards]addrShard
}

const addrShards = 32

type addrShard struct {
	mu sync.Mutex
	m  map[string]*addrSem
	_  [48]byte // a shard per 64-byte cache line (8 mutex + 8 map + 48)
}

type addrSem struct {
	slots chan struct{}
	users int // calls holding or waiting for a slot
}

func newAddrSlots(max int) *addrSlots {
	a := &addrSlots{max: max, seed: maphash.MakeSeed()}
	for i := range a.shards {
		a.shards[i].m = make(map[string]*addrSem)
	}
	return a
}

func (a *addrSlots) shard(addr string) *addrShard {
	return &a.shards[maphash.String(a.seed, addr)%addrShards]
}

// acquire waits for a slot of addr (or ctx) and returns its release.
func (a *addrSlots) acquire(ctx context.Context, addr string) (release func(), err error) {
	sh := a.shard(addr)
	sh.mu.Lock()
	s := sh.m[addr]
	if s == nil {
		s = &addrSem{slots: make(chan struct{}, a.max)}
		sh.m[addr] = s
	}
	s.users++
	sh.mu.Unlock()
	release = func() {
		<-s.slots
		sh.leave(addr, s)
	}
	select {
	case s.slots <- struct{}{}:
		return release, nil
	default:
	}
	a.waits.Add(1)
	select {
	case s.slots <- struct{}{}:
		return release, nil
	case <-ctx.Done():
		sh.leave(addr, s)
		return nil, ctx.Err()
	}
}

func (sh *addrShard) leave(addr string, s *addrSem) {
	sh.mu.Lock()
	if s.users--; s.users == 0 {
		delete(sh.m, addr)
	}
	sh.mu.Unlock()
}
