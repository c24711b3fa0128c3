package node_test

import (
	"encoding/binary"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/beacon/engine"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/chain/follow"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/pendingtest"
	"github.com/tipnode/tipnode/pending/stream"
	"github.com/tipnode/tipnode/pending/stream/streamtest"
	"github.com/tipnode/tipnode/rpc/node"
)

// testPayload is a test-only encoding of a published snapshot as a stream
// message (the publisher's encoder lives on the sequencer side).
func testPayload(s *pending.Snapshot) []byte {
	h := s.Header()
	var nb [8]byte
	binary.BigEndian.PutUint64(nb[:], h.Number.Uint64())
	var id engine.PayloadID
	copy(id[:], crypto.Keccak256(h.ParentHash[:], nb[:]))
	p := &stream.Payload{PayloadID: id, Index: s.Index(), Metadata: stream.Metadata{BlockNumber: h.Number.Uint64()}}
	if s.Index() == 0 {
		p.Base = &stream.Base{ParentBeaconBlockRoot: *h.ParentBeaconRoot, ParentHash: h.ParentHash, FeeRecipient: h.Coinbase,
			PrevRandao: h.MixDigest, BlockNumber: hexutil.Uint64(h.Number.Uint64()), GasLimit: hexutil.Uint64(h.GasLimit),
			Timestamp: hexutil.Uint64(h.Time), ExtraData: h.Extra, BaseFeePerGas: (*hexutil.Big)(h.BaseFee)}
	}
	p.Diff.Transactions = []hexutil.Bytes{}
	for _, tx := range s.NewTransactions() {
		b, _ := tx.MarshalBinary()
		p.Diff.Transactions = append(p.Diff.Transactions, b)
	}
	p.Diff.GasUsed = hexutil.Uint64(h.GasUsed)
	p.Diff.ReceiptsRoot = types.DeriveSha(s.Receipts(), trie.NewStackTrie(nil))
	p.Diff.LogsBloom = h.Bloom
	p.Diff.Withdrawals = []*types.Withdrawal{}
	b, err := json.Marshal(p)
	if err != nil {
		panic(err)
	}
	return b
}

// TestReplicaNode assembles a replica through node.Config (Follow +
// Preconf): it follows a sequencer node's chain over JSON-RPC and its
// pre-confirmations over a websocket stream (a test server relaying the
// sequencer's snapshots), and answers `pending` like the sequencer
// (balances, block number, timestamp) before the canonical block arrives
// and after.
func TestReplicaNode(t *testing.T) {
	e := newEnv(t)
	srv := streamtest.NewServer(t)
	db, g, w := chaintest.InitStore(t, e.Spec)
	w.Stop()
	cfg := node.DefaultConfig()
	cfg.Server.Addr = "127.0.0.1:0"
	cfg.Metrics = true
	fc := follow.DefaultConfig()
	fc.URL = e.url
	cfg.Follow = &fc
	pc := node.DefaultPreconfConfig()
	pc.Client.URL = srv.URL
	cfg.Preconf = &pc
	fclock := chain.NewManualClock(time.Unix(pendingtest.GenesisTime, 0))
	rclock := pendingtest.NewClock() // never advanced: no staleness, no pings
	n := startNode(t, cfg, db, g, rclock, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel), node.WithFollowClock(fclock))
	rep := &followNode{Node: n, t: t, url: "http://" + n.Server.Addr().String(), clock: fclock, poll: fc.WithDefaults().PollInterval}
	select {
	case <-srv.Accepted:
	case <-time.After(time.Minute):
		t.Fatal("the replica did not connect to the stream")
	}
	// Relay the sequencer's snapshots from now on; the current block's
	// index 0 first (what a publisher replays to a new subscriber).
	msgs := make(chan []byte, 1024)
	e.Mgr.SubscribePreconfirmations(func(s *pending.Snapshot) { msgs <- testPayload(s) })
	srv.Broadcast(websocket.TextMessage, testPayload(e.Mgr.Current()))
	relay := func() {
		for {
			select {
			case m := <-msgs:
				srv.Broadcast(websocket.TextMessage, m)
			default:
				return
			}
		}
	}
	to := common.Address{0xbb}
	same := func(what string) {
		t.Helper()
		want := map[string]string{}
		for _, q := range [][]any{{"eth_getBalance", to, "pending"}, {"eth_getBalance", e.Accs[0].Address, "pending"}, {"eth_getTransactionCount", e.Accs[0].Address, "pending"}} {
			var s string
			if err := rpcCall(e.url, q[0].(string), &s, q[1:]...); err != nil {
				t.Fatal(err)
			}
			want[q[0].(string)+q[1].(common.Address).Hex()] = s
		}
		var wantBlock map[string]any
		if err := rpcCall(e.url, "eth_getBlockByNumber", &wantBlock, "pending", false); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(time.Minute)
		for {
			ok := true
			for _, q := range [][]any{{"eth_getBalance", to, "pending"}, {"eth_getBalance", e.Accs[0].Address, "pending"}, {"eth_getTransactionCount", e.Accs[0].Address, "pending"}} {
				var s string
				if err := rpcCall(rep.url, q[0].(string), &s, q[1:]...); err != nil {
					t.Fatal(err)
				}
				ok = ok && s == want[q[0].(string)+q[1].(common.Address).Hex()]
			}
			var got map[string]any
			if err := rpcCall(rep.url, "eth_getBlockByNumber", &got, "pending", false); err != nil {
				t.Fatal(err)
			}
			ok = ok && got["number"] == wantBlock["number"] && got["timestamp"] == wantBlock["timestamp"] && got["baseFeePerGas"] == wantBlock["baseFeePerGas"]
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the replica's pending (block %v) never matched the sequencer's (block %v)", what, got["number"], wantBlock["number"])
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// Traces of pre-confirmed transactions and of the pending block: the
	// replica answers what the sequencer answers.
	var preconfirmed []common.Hash
	sameTraces := func(what string) {
		t.Helper()
		tracers := []map[string]any{{"tracer": "callTracer"}, {"tracer": "prestateTracer", "tracerConfig": map[string]any{"diffMode": true}}, {}}
		var reqs [][]any
		for _, h := range preconfirmed {
			for _, tc := range tracers {
				reqs = append(reqs, []any{"debug_traceTransaction", h, tc})
			}
		}
		reqs = append(reqs, []any{"debug_traceBlockByNumber", "pending", map[string]any{"tracer": "callTracer"}})
		for _, q := range reqs {
			var want, got any
			if err := rpcCall(e.url, q[0].(string), &want, q[1:]...); err != nil {
				t.Fatalf("%s: sequencer: %v", what, err)
			}
			if err := rpcCall(rep.url, q[0].(string), &got, q[1:]...); err != nil {
				t.Fatalf("%s: replica: %v", what, err)
			}
			if w, g := mustJSON(t, want), mustJSON(t, got); w != g {
				t.Fatalf("%s: %v: replica %s, sequencer %s", what, q, g, w)
			}
		}
	}
	same("index 0 of block 1")
	for i := range 3 {
		tx := e.Tx(0, &to, big.NewInt(int64(1000+i)), 21_000, nil)
		if err := e.Pool.Add(tx); err != nil {
			t.Fatal(err)
		}
		preconfirmed = append(preconfirmed, tx.Hash())
		e.Tick(1)
		relay()
		same("pre-confirmation")
	}
	sameTraces("pre-confirmations of block 1")
	// Block 2 opens before the replica has block 1: pending block 2 on
	// pending block 1.
	e.Seal()
	relay()
	tx := e.Tx(0, &to, big.NewInt(7), 21_000, nil)
	if err := e.Pool.Add(tx); err != nil {
		t.Fatal(err)
	}
	e.Tick(1)
	relay()
	same("block 2 ahead of the canonical chain")
	if rep.Writer.Head().Number() == 0 {
		// Traced on pending block 2 over pending block 1's state.
		preconfirmed = []common.Hash{tx.Hash()}
		sameTraces("block 2 ahead of the canonical chain")
		t.Log("traced pending block 2 on pending block 1, on the replica and the sequencer")
	}
	if rep.Writer.Head().Number() != 0 {
		t.Log("the follower imported block 1 already (not a failure; the window was not exercised here)")
	}
	// Canonical block 1 arrives: pending still the sequencer's.
	var head1 types.Header
	if err := rpcCall(e.url, "eth_getBlockByNumber", &head1, "0x1", false); err != nil {
		t.Fatal(err)
	}
	rep.waitHead(head1.Hash())
	same("after canonical block 1")
	var bal hexutil.Big
	if err := rpcCall(rep.url, "eth_getBalance", &bal, to, "pending"); err != nil || bal.ToInt().Int64() != 1000+1001+1002+7 {
		t.Fatalf("replica pending balance %v (%v), want the four transfers", bal.ToInt(), err)
	}
	if m := scrape(t, rep.url); !strings.Contains(m, `tipnode_replica_messages_total{verdict="append"}`) {
		t.Fatalf("replica metrics not served:\n%s", m)
	}
}
