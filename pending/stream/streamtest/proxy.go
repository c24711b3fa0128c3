package streamtest

import (
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Faults are the proxy's per-message fault probabilities (0 .. 1) and
// delay. Each message forwarded is, in this order: dropped with
// probability Drop; else held back and sent after the next message with
// probability Reorder (a held message is sent anyway when no other comes
// within Delay + 50 ms); delayed by a uniform random duration below Delay
// (in order: a delay holds back the messages after it too); sent; sent a
// second time with probability Duplicate.
type Faults struct {
	Drop, Duplicate, Reorder float64
	Delay                    time.Duration
}

// Stats counts what the proxy did.
type Stats struct {
	Connections, Forwarded, Dropped, Duplicated, Reordered, Delayed, Cuts int
}

// Proxy is a websocket proxy between an upstream stream URL and its
// clients. Every client connection gets its own upstream connection;
// frames flow upstream -> client through the fault injector, and the proxy
// answers the client's pings itself (unless stalled).
type Proxy struct {
	// URL is the proxy's ws:// URL (any path).
	URL string

	upstream string
	srv      *httptest.Server
	stalled  atomic.Bool

	mu     sync.Mutex
	rng    *rand.Rand
	faults Faults
	stats  Stats
	links  map[*link]struct{}
	closed bool
	wg     sync.WaitGroup
}

type link struct {
	down, up *websocket.Conn // down: to the client; up: to the upstream
	wmu      sync.Mutex      // writes to down
	once     sync.Once
	done     chan struct{}
}

func (l *link) close() {
	l.once.Do(func() {
		close(l.done)
		l.down.Close()
		if l.up != nil {
			l.up.Close()
		}
	})
}

// NewProxy starts a proxy to upstream (a ws:// URL) whose random choices
// come from seed; the test's Cleanup closes it.
func NewProxy(t testing.TB, upstream string, seed uint64) *Proxy {
	p := &Proxy{upstream: upstream, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), links: map[*link]struct{}{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	p.URL = "ws" + strings.TrimPrefix(p.srv.URL, "http") + "/preconfirmations"
	t.Cleanup(p.Close)
	return p
}

// SetFaults replaces the fault settings (for messages from now on).
func (p *Proxy) SetFaults(f Faults) {
	p.mu.Lock()
	p.faults = f
	p.mu.Unlock()
}

// Stall stops (on) or resumes forwarding: while stalled, messages are
// dropped (counted as such) and the client's pings go unanswered, like a
// hung peer whose TCP connection stays open.
func (p *Proxy) Stall(on bool) { p.stalled.Store(on) }

// Cut closes every client and upstream connection abruptly; clients may
// reconnect at once.
func (p *Proxy) Cut() {
	p.mu.Lock()
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	p.stats.Cuts++
	p.mu.Unlock()
	for _, l := range links {
		l.close()
	}
}

// Stats returns the counts so far.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Close cuts every connection, waits for the proxy's goroutines and closes
// the listener.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.Cut()
	p.srv.Close()
	p.wg.Wait()
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		http.Error(w, "proxy closed", http.StatusServiceUnavailable)
		return
	}
	p.wg.Add(1)
	p.mu.Unlock()
	defer p.wg.Done()
	up, _, err := websocket.DefaultDialer.Dial(p.upstream, nil)
	if err != nil {
		http.Error(w, "upstream: "+err.Error(), http.StatusBadGateway)
		return
	}
	down, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		up.Close()
		return
	}
	l := &link{down: down, up: up, done: make(chan struct{})}
	down.SetPingHandler(func(data string) error {
		if p.stalled.Load() {
			return nil
		}
		l.wmu.Lock()
		defer l.wmu.Unlock()
		return down.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
	})
	p.mu.Lock()
	p.links[l] = struct{}{}
	p.stats.Connections++
	closed := p.closed
	p.mu.Unlock()
	defer func() {
		l.close()
		p.mu.Lock()
		delete(p.links, l)
		p.mu.Unlock()
	}()
	if closed {
		return
	}
	// The client side: read and discard, so that pings are answered and a
	// client leaving is noticed.
	go func() {
		for {
			if _, _, err := down.ReadMessage(); err != nil {
				l.close()
				return
			}
		}
	}()
	// The upstream side, through the fault injector.
	type msg struct {
		mt   int
		data []byte
	}
	in := make(chan msg, 1024)
	go func() {
		defer close(in)
		for {
			mt, data, err := up.ReadMessage()
			if err != nil {
				l.close()
				return
			}
			select {
			case in <- msg{mt, data}:
			case <-l.done:
				return
			}
		}
	}()
	var held *msg
	for {
		var flush <-chan time.Time
		if held != nil {
			p.mu.Lock()
			wait := p.faults.Delay + 50*time.Millisecond
			p.mu.Unlock()
			flush = time.After(wait)
		}
		var m msg
		var ok bool
		select {
		case m, ok = <-in:
			if !ok {
				return
			}
		case <-flush:
			if !p.write(l, held.mt, held.data) {
				return
			}
			held = nil
			continue
		}
		if p.stalled.Load() {
			p.count(func(s *Stats) { s.Dropped++ })
			continue
		}
		p.mu.Lock()
		f := p.faults
		drop := p.rng.Float64() < f.Drop
		reorder := !drop && held == nil && p.rng.Float64() < f.Reorder
		dup := !drop && p.rng.Float64() < f.Duplicate
		var delay time.Duration
		if !drop && f.Delay > 0 {
			delay = time.Duration(p.rng.Int64N(int64(f.Delay)))
		}
		p.mu.Unlock()
		switch {
		case drop:
			p.count(func(s *Stats) { s.Dropped++ })
			continue
		case reorder:
			p.count(func(s *Stats) { s.Reordered++ })
			held = &m
			continue
		}
		if delay > 0 {
			p.count(func(s *Stats) { s.Delayed++ })
			time.Sleep(delay) // the fault itself: a slow network
		}
		if !p.write(l, m.mt, m.data) {
			return
		}
		if held != nil {
			if !p.write(l, held.mt, held.data) {
				return
			}
			held = nil
		}
		if dup {
			p.count(func(s *Stats) { s.Duplicated++ })
			if !p.write(l, m.mt, m.data) {
				return
			}
		}
	}
}

func (p *Proxy) count(f func(*Stats)) {
	p.mu.Lock()
	f(&p.stats)
	p.mu.Unlock()
}

// write forwards one frame to the client; false when the link is gone.
func (p *Proxy) write(l *link, mt int, data []byte) bool {
	l.wmu.Lock()
	l.down.SetWriteDeadline(time.Now().Add(5 * time.Second))
	err := l.down.WriteMessage(mt, data)
	l.wmu.Unlock()
	if err != nil {
		l.close()
		return false
	}
	p.count(func(s *Stats) { s.Forwarded++ })
	return true
}
