package rpc

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestLimiter(t *testing.T) {
	l, err := NewLimiter(2, 1, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r1, e1 := l.Acquire(ctx)
	r2, e2 := l.Acquire(ctx)
	if e1 != nil || e2 != nil {
		t.Fatal(e1, e2)
	}
	// The third waits in the queue; the fourth finds the queue full.
	waited := make(chan *Error, 1)
	go func() {
		_, err := l.Acquire(ctx)
		waited <- err
	}()
	waitFor(t, "one queued", func() bool { return l.Stats().Queued == 1 })
	if _, err := l.Acquire(ctx); err == nil || err.Code != CodeLimitExceeded ||
		err.Message != "too many concurrent executions (2 running, 1 queued), try again later" {
		t.Errorf("queue full: %v", err)
	}
	start := time.Now()
	if err := <-waited; err == nil || err.Code != CodeLimitExceeded || err.Message != "no execution slot within 200ms (2 running), try again later" {
		t.Errorf("wait timeout: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("wait took %s", d)
	}
	// The request's own deadline while queued: a timeout.
	dctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := l.Acquire(dctx); err == nil || err.Code != CodeTimeout {
		t.Errorf("request deadline while queued: %v", err)
	}
	// A released slot goes to the next waiter.
	got := make(chan func(), 1)
	go func() {
		r, err := l.Acquire(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	waitFor(t, "one queued", func() bool { return l.Stats().Queued == 1 })
	r1()
	r1() // a second call is harmless
	(<-got)()
	r2()
	st := l.Stats()
	if st.Running != 0 || st.Queued != 0 || st.Admitted != 3 || st.QueueFull != 1 || st.WaitTimeout != 1 {
		t.Errorf("stats %+v", st)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(l.Collector("evm"))
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 5 {
		t.Errorf("gather: %d families, %v", len(mfs), err)
	}
	for _, bad := range [][3]int{{0, 1, 1}, {1, -1, 1}, {1, 1, 0}} {
		if _, err := NewLimiter(bad[0], bad[1], time.Duration(bad[2])); err == nil {
			t.Errorf("NewLimiter%v: want error", bad)
		}
	}
}

// Methods under a Limiter wait for it; others never do: with every slot
// and the queue taken by slow executions, a cheap method still answers at
// once and one more execution is refused with -32005.
func TestLimiterOnlyLimitsItsMethods(t *testing.T) {
	l, err := NewLimiter(1, 1, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	started := make(chan struct{}, 4)
	_, url := testServer(t, Config{}, func(s *Server) {
		s.Register("heavy", l.Wrap(func(ctx context.Context, p Params) (any, error) {
			started <- struct{}{}
			select {
			case <-release:
				return "done", nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}))
	})
	var wg sync.WaitGroup
	results := make(chan string, 2)
	for range 2 { // one runs, one waits
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, b := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"heavy"}`)
			results <- string(b)
		}()
	}
	<-started
	waitFor(t, "one queued", func() bool { return l.Stats().Queued == 1 })
	start := time.Now()
	if _, got := post(t, url, `{"jsonrpc":"2.0","id":2,"method":"echo","params":[2]}`); !jsonEqual(t, got, `{"jsonrpc":"2.0","id":2,"result":2}`) {
		t.Errorf("cheap method: %s", got)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("cheap method waited %s", d)
	}
	_, got := post(t, url, `{"jsonrpc":"2.0","id":3,"method":"heavy"}`)
	if r := parseResp(t, got); r.Error == nil || r.Error.Code != CodeLimitExceeded || !strings.Contains(r.Error.Message, "try again later") {
		t.Errorf("third heavy call: %s", got)
	}
	close(release)
	wg.Wait()
	close(results)
	for r := range results {
		if !jsonEqual(t, []byte(r), `{"jsonrpc":"2.0","id":1,"result":"done"}`) {
			t.Errorf("heavy call: %s", r)
		}
	}
}
