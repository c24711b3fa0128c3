package stream_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/tipnode/tipnode/pending/pendingtest"
	"github.com/tipnode/tipnode/pending/stream"
)

// TestPublisherServesTheSequencer: a subscriber connecting mid-block over
// a websocket receives that block's messages from index 0, then the live
// ones (the next block's included), each exactly the encoding of the
// snapshot the sequencer published.
func TestPublisherServesTheSequencer(t *testing.T) {
	var rec pendingtest.Recorder
	n := newSeqNode(t, pendingtest.Options{OnPublish: rec.Add, Publisher: &stream.PublisherConfig{}})
	pub := n.Publisher
	srv := httptest.NewServer(pub)
	t.Cleanup(srv.Close)
	n.Transfer(0)
	n.Tick(1)
	logger(n, 1, 0x11)
	n.Transfer(0)
	n.Tick(1)

	conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	n.Transfer(2)
	n.Tick(1)
	n.Seal()
	n.Transfer(3)
	n.Tick(1)

	snaps := rec.All() // block 1: 0..3; block 2: 0, 1
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
