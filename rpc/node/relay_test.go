package node_test

import (
	"bytes"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"encoding/json"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/chain/follow"
	"github.com/tipnode/tipnode/pending/pendingtest"
	"github.com/tipnode/tipnode/pending/stream"
	"github.com/tipnode/tipnode/rpc/eth"
	"github.com/tipnode/tipnode/rpc/node"
)

// replicaOptions vary startReplica.
type replicaOptions struct {
	relay   bool   // serve the stream (Config.Stream)
	forward string // forward transactions to this URL ("" = no forwarding)
}

// startReplica starts a read replica of newEnv's chain: it follows
// followURL's chain and preconfWS's pre-confirmation stream. Its pending
// clock never moves (no staleness, no pings): the stream is what moves it.
func startReplica(t testing.TB, followURL, preconfWS string, o replicaOptions) *followNode {
	t.Helper()
	db, g, w := chaintest.InitStore(t, devSpec(t))
	w.Stop()
	cfg := node.DefaultConfig()
	cfg.Server.Addr = "127.0.0.1:0"
	cfg.Metrics = true
	fc := follow.DefaultConfig()
	fc.URL = followURL
	cfg.Follow = &fc
	pc := node.DefaultPreconfConfig()
	pc.Client.URL = preconfWS
	cfg.Preconf = &pc
	if o.relay {
		cfg.Stream = &stream.PublisherConfig{}
	}
	if o.forward != "" {
		tf := eth.DefaultForwardConfig()
		tf.URL = o.forward
		cfg.TxForward = &tf
	}
	fclock := chain.NewManualClock(time.Unix(pendingtest.GenesisTime, 0))
	rclock := pendingtest.NewClock()
	n := startNode(t, cfg, db, g, rclock, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel), node.WithFollowClock(fclock))
	return &followNode{Node: n, t: t, url: "http://" + n.Server.Addr().String(), clock: fclock, poll: fc.WithDefaults().PollInterval}
}

func wsURL(httpURL, path string) string { return "ws" + strings.TrimPrefix(httpURL, "http") + path }

// streamTap records every frame of a node's /preconfirmations.
type streamTap struct {
	mu   sync.Mutex
	msgs [][]byte
	conn *websocket.Conn
}

func tapStream(t *testing.T, httpURL string) *streamTap {
	t.Helper()
	conn, _, err := websocket.DefaultDialer.Dial(wsURL(httpURL, "/preconfirmations"), nil)
	if err != nil {
		t.Fatal(err)
	}
	st := &streamTap{conn: conn}
	go func() {
		for {
			_, b, err := conn.ReadMessage()
			if err != nil {
				return
			}
			st.mu.Lock()
			st.msgs = append(st.msgs, b)
			st.mu.Unlock()
		}
	}()
	t.Cleanup(func() { conn.Close() })
	return st
}

func (s *streamTap) all() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.msgs...)
}

// waitFor waits until s recorded a message equal to m.
func (s *streamTap) waitFor(t *testing.T, m []byte) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		for _, got := range s.all() {
			if bytes.Equal(got, m) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("message never relayed: %s", m)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// samePending waits until rep's pending answers like seq's: the pending
// block's number, timestamp, base fee, gas used and transaction hashes,
// and the balances and pending nonces of addrs.
func samePending(t *testing.T, what, seq, rep string, addrs ...common.Address) {
	t.Helper()
	snap := func(url string) string {
		var b strings.Builder
		var blk map[string]any
		if err := rpcCall(url, "eth_getBlockByNumber", &blk, "pending", false); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"number", "timestamp", "baseFeePerGas", "gasUsed", "miner", "mixHash", "parentHash"} {
			b.WriteString(k + "=" + toStr(blk[k]) + " ")
		}
		b.WriteString("txs=" + toStr(blk["transactions"]) + " ")
		for _, a := range addrs {
			var bal, nonce string
			if err := rpcCall(url, "eth_getBalance", &bal, a, "pending"); err != nil {
				t.Fatal(err)
			}
			if err := rpcCall(url, "eth_getTransactionCount", &nonce, a, "pending"); err != nil {
				t.Fatal(err)
			}
			b.WriteString(a.Hex()[:8] + "=" + bal + "/" + nonce + " ")
		}
		return b.String()
	}
	want := snap(seq)
	deadline := time.Now().Add(time.Minute)
	for {
		got := snap(rep)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: replica pending\n  %s\nsequencer pending\n  %s", what, got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func toStr(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []any:
		s := make([]string, len(v))
		for i, x := range v {
			s[i] = toStr(x)
		}
		return "[" + strings.Join(s, ",") + "]"
	case nil:
		return "<nil>"
	}
	return "?"
}

// TestRelayTree: sequencer -> replica A (following the sequencer's stream
// and serving its own) -> replica B (following A's chain and A's stream).
// B's pending equals the sequencer's after every pre-confirmation, ahead of
// the canonical chain and after it; every message the sequencer streamed
// after A joined is relayed by A byte for byte (same payload ids, indexes,
// transactions, totals), nothing more, nothing twice.
func TestRelayTree(t *testing.T) {
	e := newEnvWith(t, envOptions{stream: true})
	seqTap := tapStream(t, e.url)
	a := startReplica(t, e.url, wsURL(e.url, "/preconfirmations"), replicaOptions{relay: true})
	aTap := tapStream(t, a.url)
	b := startReplica(t, a.url, wsURL(a.url, "/preconfirmations"), replicaOptions{})
	to := common.Address{0xbb}
	addrs := []common.Address{to, e.Accs[0].Address, e.Accs[1].Address}
	samePending(t, "index 0 of block 1", e.url, b.url, addrs...)
	step := func(what string, n int) {
		t.Helper()
		for i := range n {
			if err := e.Pool.Add(e.Tx(i%2, &to, big.NewInt(int64(1000+i)), 21_000, nil)); err != nil {
				t.Fatal(err)
			}
		}
		e.Tick(1)
		samePending(t, what, e.url, a.url, addrs...)
		samePending(t, what, e.url, b.url, addrs...)
	}
	for i := range 3 {
		step("block 1 pre-confirmation", i+1)
	}
	e.Seal()
	samePending(t, "block 2 opened (canonical head behind)", e.url, b.url, addrs...)
	step("block 2 ahead of the canonical chain", 2)
	var head1 map[string]any
	if err := rpcCall(e.url, "eth_getBlockByNumber", &head1, "0x1", false); err != nil {
		t.Fatal(err)
	}
	h1 := common.HexToHash(head1["hash"].(string))
	a.waitHead(h1)
	b.waitHead(h1)
	samePending(t, "after canonical block 1", e.url, b.url, addrs...)
	step("block 2 after canonical block 1", 1)
	e.Seal()
	step("block 3", 2)

	seqMsgs := seqTap.all()
	aTap.waitFor(t, seqMsgs[len(seqMsgs)-1])
	got := aTap.all()
	// A's stream is the sequencer's from A's first message on.
	first := -1
	for i, m := range seqMsgs {
		if bytes.Equal(m, got[0]) {
			first = i
		}
	}
	if first < 0 {
		t.Fatalf("the relay's first message was never sent by the sequencer: %s", got[0])
	}
	want := seqMsgs[first:]
	if len(got) != len(want) {
		t.Fatalf("relay sent %d messages, the sequencer %d after the relay's first", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("message %d differs:\nrelay     %s\nsequencer %s", i, got[i], want[i])
		}
	}
	if len(want) < 8 {
		t.Fatalf("only %d messages compared", len(want))
	}
	t.Logf("%d messages relayed byte for byte (the sequencer sent %d)", len(want), len(seqMsgs))
}

// TestReplicaPendingLogsAheadOfChain: while a replica's window runs ahead
// of its canonical chain (pending block 2 on pending block 1, canonical
// head 0), eth_getLogs ranges ending at pending answer what the sequencer
// (canonical head 1) answers: the pending parent's logs (with its block
// hash) and the pending block's.
func TestReplicaPendingLogsAheadOfChain(t *testing.T) {
	e := newEnvWith(t, envOptions{stream: true})
	rep := startReplica(t, e.url, wsURL(e.url, "/preconfirmations"), replicaOptions{})
	samePending(t, "replica joined", e.url, rep.url)
	contract := crypto.CreateAddress(e.Accs[0].Address, 0)
	for _, tx := range []*types.Transaction{
		e.Tx(0, nil, big.NewInt(0), 200_000, pendingtest.InitCode(pairRuntime)),
		e.Tx(0, &contract, big.NewInt(0), 100_000, common.LeftPadBytes([]byte{1}, 32)),
	} {
		if err := e.Pool.Add(tx); err != nil {
			t.Fatal(err)
		}
	}
	e.Tick(1)
	e.Seal()
	if err := e.Pool.Add(e.Tx(0, &contract, big.NewInt(0), 100_000, common.LeftPadBytes([]byte{2}, 32))); err != nil {
		t.Fatal(err)
	}
	e.Tick(1)
	samePending(t, "block 2 pre-confirmed", e.url, rep.url)
	if h := rep.Writer.Head().Number(); h != 0 {
		t.Fatalf("the replica imported block %d: the window is not ahead of its chain", h)
	}
	for _, f := range []map[string]any{
		{"fromBlock": "earliest", "toBlock": "pending"},
		{"fromBlock": "0x1", "toBlock": "pending"},
		{"fromBlock": "0x2", "toBlock": "pending"},
		{"fromBlock": "pending", "toBlock": "pending"},
		{"fromBlock": "0x0", "toBlock": "pending", "topics": []any{common.BigToHash(big.NewInt(1))}},
	} {
		var want, got json.RawMessage
		if err := rpcCall(e.url, "eth_getLogs", &want, f); err != nil {
			t.Fatal(err)
		}
		if err := rpcCall(rep.url, "eth_getLogs", &got, f); err != nil {
			t.Fatalf("%v: %v", f, err)
		}
		if !jsonSame(want, got) {
			t.Fatalf("eth_getLogs %v:\nreplica   %s\nsequencer %s", f, got, want)
		}
		if f["fromBlock"] == "earliest" && !strings.Contains(string(want), "0x1") {
			t.Fatalf("no log of block 1 in %s", want)
		}
	}
}
