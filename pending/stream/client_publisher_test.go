package stream_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/pendingtest"
	"github.com/tipnode/tipnode/pending/stream"
	"github.com/tipnode/tipnode/pending/stream/streamtest"
)

type chanSink struct {
	payloads chan *stream.Payload
	downs    chan error
}

func (s chanSink) Payload(p *stream.Payload, _ time.Time) { s.payloads <- p }
func (s chanSink) Down(err error)                         { s.downs <- err }

// TestClientFollowsPublisher: the client, connected to the real publisher
// of a real sequencer (directly, and through the proxy without faults),
// decodes every message to exactly what the publisher encoded, and its
// transactions to the snapshot's new transactions.
func TestClientFollowsPublisher(t *testing.T) {
	var rec pendingtest.Recorder
	n := newSeqNode(t, pendingtest.Options{OnPublish: rec.Add, Publisher: &stream.PublisherConfig{}})
	pub := n.Publisher
	srv := httptest.NewServer(pub)
	t.Cleanup(srv.Close)
	url := "ws" + strings.TrimPrefix(srv.URL, "http")
	proxy := streamtest.NewProxy(t, url, 1)

	var sinks []chanSink
	for _, u := range []string{url, proxy.URL} {
		sink := chanSink{payloads: make(chan *stream.Payload, 256), downs: make(chan error, 16)}
		cfg := stream.DefaultClientConfig()
		cfg.URL = u
		// The real clock: the sequencer's manual clock never ticks the
		// client, whose pings and timeouts are not under test here.
		c, err := stream.NewClient(cfg, sink, pending.SystemClock{}, stream.NewClientMetrics(nil), zerolog.New(zerolog.NewTestWriter(t)))
		if err != nil {
			t.Fatal(err)
		}
		c.Start()
		t.Cleanup(c.Stop)
		sinks = append(sinks, sink)
	}
	// Both connected: each received the open block's index 0.
	for _, s := range sinks {
		select {
		case p := <-s.payloads:
			if p.Index != 0 {
				t.Fatalf("first message index %d", p.Index)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("no index 0")
		}
	}
	n.Transfer(0)
	n.Tick(1)
	logger(n, 1, 0x11)
	n.Transfer(2)
	n.Tick(1)
	n.Seal()
	n.Transfer(3)
	n.Tick(1)

	snaps := rec.All()[1:] // the first was received above
	for si, s := range sinks {
		for i, snap := range snaps {
			want, err := stream.Encode(snap)
			if err != nil {
				t.Fatal(err)
			}
			var got *stream.Payload
			select {
			case got = <-s.payloads:
			case <-time.After(20 * time.Second):
				t.Fatalf("client %d: no message %d", si, i)
			}
			wantJSON, _ := json.Marshal(want)
			gotJSON, _ := json.Marshal(got)
			if string(gotJSON) != string(wantJSON) {
				t.Fatalf("client %d message %d:\n got %s\nwant %s", si, i, gotJSON, wantJSON)
			}
			txs, err := got.Txs()
			if err != nil {
				t.Fatal(err)
			}
			newTxs := snap.NewTransactions()
			if len(txs) != len(newTxs) {
				t.Fatalf("client %d message %d: %d transactions, want %d", si, i, len(txs), len(newTxs))
			}
			for k := range txs {
				if txs[k].Hash() != newTxs[k].Hash() {
					t.Fatalf("client %d message %d tx %d: %s, want %s", si, i, k, txs[k].Hash(), newTxs[k].Hash())
				}
			}
		}
		select {
		case err := <-s.downs:
			t.Fatalf("client %d: Down(%v)", si, err)
		default:
		}
	}
}
