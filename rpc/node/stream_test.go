package node_test

import (
	"io"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/stream"
	"github.com/tipnode/tipnode/rpc/node"
)

// TestStreamEndpoint: a sequencer node with Config.Stream serves
// ws://ADDR/preconfirmations: a subscriber gets the open block from index
// 0 and then the live pre-confirmations; the node's stop closes it with
// 1001.
func TestStreamEndpoint(t *testing.T) {
	db, g, w := chaintest.InitStore(t, devSpec(t))
	w.Stop()
	cfg := node.DefaultConfig()
	cfg.Server.Addr = "127.0.0.1:0"
	seqCfg := pending.DefaultConfig()
	cfg.Sequencer = &seqCfg
	cfg.Stream = &stream.PublisherConfig{}
	cfg.Metrics = true
	clock := pending.NewManualClock(time.Unix(genesisTime+10, 0))
	n, err := node.New(cfg, db, g, clock, zerolog.New(io.Discard))
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
	e := &env{t: t, url: "http://" + n.Server.Addr().String(), clock: clock, seq: n.Sequencer, cfg: seqCfg, g: g, mgr: n.Pending}
	conn, _, err := websocket.DefaultDialer.Dial("ws://"+n.Server.Addr().String()+"/preconfirmations", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	accs := devKeys(t)
	tx := signTx(t, types.LatestSigner(g.Config), accs[0], &types.DynamicFeeTx{ChainID: g.Config.ChainID, GasTipCap: big.NewInt(params.GWei),
		GasFeeCap: big.NewInt(10 * params.GWei), Gas: 21_000, To: &common.Address{1}, Value: big.NewInt(1)})
	e.sendRaw(tx)
	e.tick(1)
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
