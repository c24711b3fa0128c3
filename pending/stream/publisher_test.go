package stream_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
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

// TestPublisherRootsOff: with Roots off (--stream.roots=off) every message
// is the snapshot's encoding with state_root and block_hash zero (on, the
// default, they are the snapshot's); Validate takes on and off only.
func TestPublisherRootsOff(t *testing.T) {
	var rec pendingtest.Recorder
	n := newSeqNode(t, pendingtest.Options{OnPublish: rec.Add, Publisher: &stream.PublisherConfig{Roots: stream.RootsOff}})
	srv := httptest.NewServer(n.Publisher)
	t.Cleanup(srv.Close)
	conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	n.Transfer(0)
	n.Tick(1)
	snaps := rec.All()
	if len(snaps) != 2 {
		t.Fatalf("%d snapshots", len(snaps))
	}
	for i, s := range snaps {
		want, err := stream.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		if want.Diff.StateRoot == (common.Hash{}) || want.Diff.BlockHash == (common.Hash{}) {
			t.Fatalf("snapshot %d encodes without roots", i)
		}
		want.Diff.StateRoot, want.Diff.BlockHash = common.Hash{}, common.Hash{}
		wantJSON, _ := json.Marshal(want)
		_ = conn.SetReadDeadline(time.Now().Add(time.Minute)) // a hang guard, not a timing assertion
		_, got, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if string(got) != string(wantJSON) {
			t.Fatalf("message %d:\n got %s\nwant %s", i, got, wantJSON)
		}
	}
	for roots, ok := range map[string]bool{"on": true, "off": true, "": true, "yes": false, "ON": false} {
		c := stream.PublisherConfig{Roots: roots}.WithDefaults()
		if err := c.Validate(); (err == nil) != ok {
			t.Errorf("roots %q: %v", roots, err)
		}
	}
}
