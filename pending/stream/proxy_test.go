package stream

import (
	"errors"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/gorilla/websocket"

	"github.com/tipnode/tipnode/pending/stream/streamtest"
)

// TestClientThroughProxy: through a proxy that drops, duplicates, reorders
// and delays, the client hands the sink exactly the frames the proxy
// forwarded, each one a message the server sent, unaltered; a cut is
// reported by Down and followed by a reconnection; a stalled proxy (open
// TCP, no pongs) is detected by the ping.
func TestClientThroughProxy(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run("", func(t *testing.T) { testThroughProxy(t, seed) })
	}
}

func testThroughProxy(t *testing.T, seed uint64) {
	srv := streamtest.NewServer(t)
	proxy := streamtest.NewProxy(t, srv.URL, seed)
	proxy.SetFaults(streamtest.Faults{Drop: 0.2, Duplicate: 0.2, Reorder: 0.2, Delay: 2 * time.Millisecond})
	clock := newRecClock()
	cfg := testConfig(proxy.URL)
	_, sink, _ := startClient(t, cfg, clock)
	conn := recv(t, srv.Accepted, "upstream connection")

	const n = 200
	sent := map[uint64]*Payload{}
	for i := uint64(0); i < n; i++ {
		p := testPayload(t, i)
		p.Diff.GasUsed = hexutil.Uint64(21000 * (i + 1)) // distinct messages
		sent[i] = p
		mt, data := websocket.TextMessage, encode(t, p)
		if i%3 == 1 {
			mt, data = websocket.BinaryMessage, compress(t, data)
		}
		if err := conn.Send(mt, data); err != nil {
			t.Fatal(err)
		}
	}
	// Quiescence: every message was dropped or forwarded at least once,
	// and the sink holds every forwarded frame.
	var got []*Payload
	seen := map[uint64]bool{}
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := proxy.Stats()
		if len(seen)+st.Dropped == n && len(got) == st.Forwarded {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v, %d received, %d distinct", st, len(got), len(seen))
		}
		select {
		case p := <-sink.payloads:
			got = append(got, p)
			seen[p.Index] = true
		case <-time.After(20 * time.Millisecond): // waiting on the proxy's own goroutines
		}
	}
	st := proxy.Stats()
	if st.Dropped == 0 || st.Duplicated == 0 || st.Reordered == 0 || st.Delayed == 0 {
		t.Fatalf("faults not exercised: %+v", st)
	}
	inversions, dups := 0, 0
	count := map[uint64]int{}
	for i, p := range got {
		want := sent[p.Index]
		if want == nil {
			t.Fatalf("received index %d, never sent", p.Index)
		}
		if p.Diff.GasUsed != want.Diff.GasUsed || (p.Base == nil) != (want.Base == nil) || len(p.Diff.Transactions) != len(want.Diff.Transactions) {
			t.Fatalf("index %d altered: %+v", p.Index, p)
		}
		if i > 0 && p.Index < got[i-1].Index {
			inversions++
		}
		if count[p.Index]++; count[p.Index] == 2 {
			dups++
		}
	}
	if inversions == 0 || dups != st.Duplicated {
		t.Fatalf("%d inversions, %d duplicates seen by the client (stats %+v)", inversions, dups, st)
	}
	t.Logf("seed %d: %+v, %d received", seed, st, len(got))

	// A cut: Down, then a reconnection after the backoff.
	proxy.Cut()
	if err := recv(t, sink.downs, "Down after a cut"); !errors.Is(err, ErrConnLost) {
		t.Fatalf("Down(%v), want ErrConnLost", err)
	}
	clock.Advance(clock.nextSleep(t, cfg.PingInterval))
	conn = recv(t, srv.Accepted, "upstream reconnection")
	proxy.SetFaults(streamtest.Faults{})
	conn.Send(websocket.TextMessage, encode(t, testPayload(t, 0)))
	if p := recv(t, sink.payloads, "message after the reconnection"); p.Index != 0 {
		t.Fatalf("index %d", p.Index)
	}

	// A stall: the connection stays open but pongs stop.
	clock.waitTicker(t, cfg.PingInterval)
	proxy.Stall(true)
	for i := 0; i < 4; i++ {
		clock.Advance(cfg.PingInterval)
	}
	if err := recv(t, sink.downs, "Down after a stall"); !errors.Is(err, ErrPongTimeout) {
		t.Fatalf("Down(%v), want ErrPongTimeout", err)
	}
}
