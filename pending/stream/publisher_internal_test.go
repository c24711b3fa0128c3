package stream

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/beacon/engine"
	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/pending"
)

type nopSource struct{}

func (nopSource) SubscribePreconfirmations(func(*pending.Snapshot)) func() { return func() {} }

func newTestPublisher(t *testing.T, cfg PublisherConfig) (*Publisher, *Metrics) {
	t.Helper()
	m := NewPublisherMetrics(prometheus.NewRegistry())
	p, err := NewPublisher(cfg, nopSource{}, nil, m, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	p.Start()
	t.Cleanup(p.Stop)
	return p, m
}

// synth is message i of a synthetic stream: blocks of perBlock messages.
func synth(i, perBlock int, size int) *message {
	block, index := uint64(i/perBlock+1), uint64(i%perBlock)
	data := []byte(fmt.Sprintf("%d/%d;", block, index))
	if size > len(data) {
		data = append(data, bytes.Repeat([]byte{'x'}, size-len(data))...)
	}
	return &message{block: block, index: index, id: engine.PayloadID{byte(block)}, data: data}
}

// TestCatchUpHasNoGapNoDuplicate: subscribers register while messages are
// delivered concurrently. Every subscriber must receive, from the index 0
// of the block it joined in, exactly the delivered sequence: nothing
// missing at the boundary between the catch-up and the live messages,
// nothing twice.
func TestCatchUpHasNoGapNoDuplicate(t *testing.T) {
	const total, perBlock, subs = 3000, 7, 40
	p, _ := newTestPublisher(t, PublisherConfig{SendQueue: total})
	all := make([]*message, total)
	for i := range all {
		all[i] = synth(i, perBlock, 0)
	}
	var wg sync.WaitGroup
	got := make([]*subscriber, subs)
	start := make(chan struct{})
	for s := range subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range s * 7 { // spread the joins over the stream
				time.Sleep(time.Duration(s%3) * time.Microsecond)
			}
			sub, ok := p.subscribe()
			if !ok {
				t.Error("refused")
			}
			got[s] = sub
		}()
	}
	close(start)
	for _, m := range all {
		p.deliver(m)
	}
	wg.Wait()
	for s, sub := range got {
		var seq []*message
		for len(sub.ch) > 0 {
			seq = append(seq, <-sub.ch)
		}
		if len(seq) == 0 {
			t.Fatalf("subscriber %d received nothing (the open block is always replayed)", s)
		}
		first := -1
		for i, m := range all {
			if m == seq[0] {
				first = i
				break
			}
		}
		if first < 0 || seq[0].index != 0 {
			t.Fatalf("subscriber %d starts at block %d index %d, not at an index 0", s, seq[0].block, seq[0].index)
		}
		if want := all[first:]; len(seq) != len(want) {
			t.Fatalf("subscriber %d got %d messages from position %d, want %d", s, len(seq), first, len(want))
		}
		for i, m := range seq {
			if m != all[first+i] {
				t.Fatalf("subscriber %d message %d is %s, want %s", s, i, m.data, all[first+i].data)
			}
		}
	}
}

// TestDeliverSkipsBrokenBlocks: a table of sequences; what a subscriber
// joining at the end is replayed (the open block), and what is streamed.
func TestDeliverSkipsBrokenBlocks(t *testing.T) {
	msg := func(block, index uint64) *message {
		return &message{block: block, index: index, id: engine.PayloadID{byte(block)}, data: []byte(fmt.Sprintf("%d/%d", block, index))}
	}
	other := func(block, index uint64) *message {
		m := msg(block, index)
		m.data = append(m.data, '\'')
		return m
	}
	cases := []struct {
		name     string
		in       []*message
		streamed string // what a subscriber from the start receives
		replay   string // what a subscriber joining at the end receives
	}{
		{"append", []*message{msg(1, 0), msg(1, 1), msg(1, 2)}, "1/0 1/1 1/2", "1/0 1/1 1/2"},
		{"next block", []*message{msg(1, 0), msg(1, 1), msg(2, 0)}, "1/0 1/1 2/0", "2/0"},
		{"started mid-block", []*message{msg(1, 3), msg(1, 4), msg(2, 0), msg(2, 1)}, "2/0 2/1", "2/0 2/1"},
		{"gap", []*message{msg(1, 0), msg(1, 2), msg(1, 3), msg(2, 0)}, "1/0 2/0", "2/0"},
		{"republished", []*message{msg(1, 0), msg(1, 1), msg(1, 1), msg(1, 0), msg(1, 2)}, "1/0 1/1 1/2", "1/0 1/1 1/2"},
		{"same index, other bytes", []*message{msg(1, 0), msg(1, 1), other(1, 1), msg(1, 2)}, "1/0 1/1", ""},
		{"other block", []*message{msg(1, 0), msg(2, 1)}, "1/0", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, _ := newTestPublisher(t, PublisherConfig{})
			early, _ := p.subscribe()
			for _, m := range c.in {
				p.deliver(m)
			}
			late, _ := p.subscribe()
			read := func(s *subscriber) string {
				var out []string
				for len(s.ch) > 0 {
					out = append(out, string((<-s.ch).data))
				}
				return strings.Join(out, " ")
			}
			if got := read(early); got != c.streamed {
				t.Errorf("streamed %q, want %q", got, c.streamed)
			}
			if got := read(late); got != c.replay {
				t.Errorf("replayed %q, want %q", got, c.replay)
			}
		})
	}
}

// TestSlowSubscriberDropped: a websocket subscriber that does not read is
// dropped once more than SendQueue messages wait for it, while delivery
// (the sequencer's side) never waits; when it reads again it finds the
// close frame 1008 with the reason; the drop is counted.
func TestSlowSubscriberDropped(t *testing.T) {
	p, m := newTestPublisher(t, PublisherConfig{SendQueue: 2})
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	d := websocket.Dialer{ReadBufferSize: 1024}
	conn, _, err := d.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for p.Subscribers() == 0 { // the handler registers before upgrading
		time.Sleep(time.Millisecond)
	}
	fast, _ := p.subscribe() // another subscriber, not in the way
	delivered := 0
	for i := 0; p.Subscribers() == 2; i++ {
		if i == 10_000 {
			t.Fatal("the subscriber that does not read was never dropped")
		}
		p.deliver(synth(i, 1_000_000, 256<<10))
		delivered++
		for len(fast.ch) > 0 {
			<-fast.ch
		}
	}
	if got := testutil.ToFloat64(m.drops.WithLabelValues("queue")); got != 1 {
		t.Fatalf("drops{queue} = %v", got)
	}
	n := 0
	for {
		_, _, err := conn.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if !asClose(err, &ce) || ce.Code != CloseSlowSubscriber || !strings.Contains(ce.Text, "slow subscriber: more than 2 messages queued") {
				t.Fatalf("after %d messages: %v, want close 1008 slow subscriber", n, err)
			}
			break
		}
		n++
	}
	if n >= delivered {
		t.Fatalf("received all %d messages before the close", n)
	}
}

func asClose(err error, ce **websocket.CloseError) bool {
	c, ok := err.(*websocket.CloseError)
	*ce = c
	return ok
}
