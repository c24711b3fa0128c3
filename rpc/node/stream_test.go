package node_test

import (
	"io"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/pending/pendingtest"
	"github.com/tipnode/tipnode/pending/sequencer"
	"github.com/tipnode/tipnode/pending/stream"
	"github.com/tipnode/tipnode/rpc/node"
)

// TestStreamEndpoint: a sequencer node with Config.Stream serves
// ws://ADDR/preconfirmations: a subscriber gets the open block from index
// 0 and then the live pre-confirmations; the node's stop closes it with
// 1001.
func TestStreamEndpoint(t *testing.T) {
	h := pendingtest.New(t, pendingtest.Options{Keys: 10, External: true}) // the node opens its own writer
	cfg := node.DefaultConfig()
	cfg.Server.Addr = "127.0.0.1:0"
	seqCfg := sequencer.DefaultConfig()
	cfg.Sequencer = &seqCfg
	cfg.Stream = &stream.PublisherConfig{}
	cfg.Metrics = true
	n, err := node.New(cfg, h.DB, h.Genesis, h.Clock, zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = n.Stop()
		}
	})
	h.Attach(n.Pending, n.Pool, n.Sequencer)
	e := &env{Harness: h, t: t, url: "http://" + n.Server.Addr().String()}
	conn, _, err := websocket.DefaultDialer.Dial("ws://"+n.Server.Addr().String()+"/preconfirmations", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tx := e.Tx(0, &common.Address{1}, big.NewInt(1), 21_000, nil)
	e.sendRaw(tx)
	e.Tick(1)
	read := func() stream.Payload {
		t.Helper()
		_ = conn.SetReadDeadline(time.Now().Add(time.Minute)) // hang guard
		var p stream.Payload
		if err := conn.ReadJSON(&p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p0, p1 := read(), read()
	if p0.Index != 0 || p0.Base == nil || p0.Metadata.BlockNumber != 1 || p1.Index != 1 || len(p1.Diff.Transactions) != 1 || p1.PayloadID != p0.PayloadID {
		t.Fatalf("got %+v then %+v", p0, p1)
	}
	stopped = true
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	if _, _, err := conn.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseGoingAway) {
		t.Fatalf("after stop: %v, want close 1001", err)
	}
}
