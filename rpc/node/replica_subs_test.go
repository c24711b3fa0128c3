package node_test

import (
	"context"
	"encoding/json"
	"math/big"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	gethrpc "github.com/ethereum/go-ethereum/rpc"

	"github.com/tipnode/tipnode/pending/pendingtest"
)

// subTap records one subscription's notifications.
type subTap struct {
	ch  chan json.RawMessage
	sub *gethrpc.ClientSubscription
}

func subscribe(t *testing.T, httpURL string, args ...any) *subTap {
	t.Helper()
	c, err := gethrpc.Dial(wsURL(httpURL, ""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	st := &subTap{ch: make(chan json.RawMessage, 1024)}
	if st.sub, err = c.EthSubscribe(context.Background(), st.ch, args...); err != nil {
		t.Fatalf("subscribe %v: %v", args, err)
	}
	return st
}

// take reads n notifications.
func (s *subTap) take(t *testing.T, what string, n int) []string {
	t.Helper()
	out := make([]string, 0, n)
	timeout := time.After(time.Minute)
	for len(out) < n {
		select {
		case m := <-s.ch:
			out = append(out, string(m))
		case err := <-s.sub.Err():
			t.Fatalf("%s: subscription ended: %v", what, err)
		case <-timeout:
			t.Fatalf("%s: %d notifications, want %d: %v", what, len(out), n, out)
		}
	}
	return out
}

// none checks nothing more arrived (after the replica handled everything).
func (s *subTap) none(t *testing.T, what string) {
	t.Helper()
	select {
	case m := <-s.ch:
		t.Fatalf("%s: unexpected notification %s", what, m)
	default:
	}
}

// TestReplicaSubscriptions: the same subscriptions on the sequencer and on
// a forwarding replica receive the same notifications for the same
// transactions (sent through the replica): newPreconfirmations (number,
// index, parent, timestamp, hashes), pendingLogs, newPendingTransactions
// (hashes, each once), newHeads and logs once the blocks are canonical on
// the replica. Nothing arrives twice on the replica when a canonical block
// re-anchors its pending blocks.
func TestReplicaSubscriptions(t *testing.T) {
	e := newEnvWith(t, envOptions{stream: true})
	rep := startReplica(t, e.url, wsURL(e.url, "/preconfirmations"), replicaOptions{forward: e.url})
	samePending(t, "replica joined", e.url, rep.url)
	kinds := [][]any{{"newPreconfirmations"}, {"pendingLogs", map[string]any{}}, {"newPendingTransactions"}, {"newHeads"}, {"logs", map[string]any{}}}
	var seqSubs, repSubs []*subTap
	for _, k := range kinds {
		seqSubs = append(seqSubs, subscribe(t, e.url, k...))
		repSubs = append(repSubs, subscribe(t, rep.url, k...))
	}
	send := func(tx any) common.Hash {
		t.Helper()
		var h common.Hash
		if err := rpcCall(rep.url, "eth_sendRawTransaction", &h, tx); err != nil {
			t.Fatal(err)
		}
		return h
	}
	contract := crypto.CreateAddress(e.Accs[0].Address, 0)
	to := common.Address{0xbb}
	// Block 1: deploy the logging contract, a transfer; block 2: two
	// calls that log, a transfer.
	var hashes []common.Hash
	hashes = append(hashes, send(mustRaw(t, e.Tx(0, nil, big.NewInt(0), 200_000, pendingtest.InitCode(pairRuntime)))))
	hashes = append(hashes, send(mustRaw(t, e.Tx(1, &to, big.NewInt(5), 21_000, nil))))
	e.Tick(1)
	e.Seal()
	for i := range 2 {
		hashes = append(hashes, send(mustRaw(t, e.Tx(0, &contract, big.NewInt(0), 100_000, common.LeftPadBytes([]byte{byte(i + 1)}, 32)))))
	}
	e.Tick(1)
	hashes = append(hashes, send(mustRaw(t, e.Tx(1, &to, big.NewInt(6), 21_000, nil))))
	e.Tick(1)
	samePending(t, "all pre-confirmed", e.url, rep.url, to)
	e.Seal()
	var head2 map[string]any
	if err := rpcCall(e.url, "eth_getBlockByNumber", &head2, "0x2", false); err != nil {
		t.Fatal(err)
	}
	rep.waitHead(common.HexToHash(head2["hash"].(string)))
	samePending(t, "after canonical block 2", e.url, rep.url, to)
	rep.Replica.Sync()

	// newPendingTransactions: the same hashes (each once; the order may
	// differ: the replica learns some from the stream first).
	sorted := func(s []string) string { sort.Strings(s); return strings.Join(s, ",") }
	var want []string
	for _, h := range hashes {
		b, _ := json.Marshal(h)
		want = append(want, string(b))
	}
	for i, name := range []string{"sequencer", "replica"} {
		subs := [][]*subTap{seqSubs, repSubs}[i]
		if got := subs[2].take(t, name+" newPendingTransactions", len(hashes)); sorted(got) != sorted(append([]string(nil), want...)) {
			t.Fatalf("%s newPendingTransactions %v, want %v", name, got, want)
		}
	}
	// The others: equal sequences. The sequencer's newPreconfirmations
	// from block 1's first pre-confirmation (the replica joined at block
	// 1's index 0, before subscribing).
	counts := map[string]int{"newPreconfirmations": 5, "pendingLogs": 2, "newHeads": 2, "logs": 2}
	for i, k := range kinds {
		name := k[0].(string)
		n, ok := counts[name]
		if !ok {
			continue
		}
		s, r := seqSubs[i].take(t, "sequencer "+name, n), repSubs[i].take(t, "replica "+name, n)
		for j := range s {
			if !jsonSame(json.RawMessage(s[j]), json.RawMessage(r[j])) {
				t.Fatalf("%s notification %d:\nsequencer %s\nreplica   %s", name, j, s[j], r[j])
			}
		}
	}
	for i, k := range kinds {
		repSubs[i].none(t, "replica "+k[0].(string))
	}
}
