package stream_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/stream"
)

// TestPublisherServesTheSequencer: a subscriber connecting mid-block over
// a websocket receives that block's messages from index 0, then the live
// ones (the next block's included), each exactly the encoding of the
// snapshot the sequencer published.
func TestPublisherServesTheSequencer(t *testing.T) {
	var rec recorder
	var pub *stream.Publisher
	n := newSeqNode(t, func(m *pending.Manager) {
		m.SubscribePreconfirmations(rec.add)
		var err error
		if pub, err = stream.NewPublisher(stream.PublisherConfig{}, m, nil, nil, zerolog.Nop()); err != nil {
			t.Fatal(err)
		}
		pub.Start()
		t.Cleanup(pub.Stop)
	})
	srv := httptest.NewServer(pub)
	t.Cleanup(srv.Close)
	n.transfer(0)
	n.tick(1)
	n.logger(1, 0x11)
	n.transfer(0)
	n.tick(1)

	conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	n.transfer(2)
	n.tick(1)
	n.toSeal()
	n.transfer(3)
	n.tick(1)

	snaps := rec.all() // block 1: 0..3; block 2: 0, 1
	if len(snaps) != 6 {
		t.Fatalf("%d snapshots", len(snaps))
	}
	for i, s := range snaps {
		want, err := stream.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		wantJSON, _ := json.Marshal(want)
		_ = conn.SetReadDeadline(time.Now().Add(time.Minute)) // a hang guard, not a timing assertion
		typ, got, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if typ != websocket.TextMessage || string(got) != string(wantJSON) {
			t.Fatalf("message %d (block %d index %d):\n got %s\nwant %s", i, s.Header().Number, s.Index(), got, wantJSON)
		}
	}
}
