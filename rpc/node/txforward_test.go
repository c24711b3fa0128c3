package node_test

import (
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/chain/follow"
	"github.com/tipnode/tipnode/pending/pendingtest"
	"github.com/tipnode/tipnode/rpc/eth"
	"github.com/tipnode/tipnode/rpc/node"
)

// devSpec is newEnv's genesis (the same bytes, hence the same chain).
func devSpec(t testing.TB) []byte {
	t.Helper()
	return pendingtest.Spec(t, pendingtest.Accounts(t, 10))
}

// startForwardingFollower starts a follower of upstream (ws) forwarding
// transactions to forwardURL.
func startForwardingFollower(t *testing.T, upstream, forwardURL string) *followNode {
	t.Helper()
	db, g, w := chaintest.InitStore(t, devSpec(t))
	w.Stop()
	cfg := node.DefaultConfig()
	cfg.Server.Addr = "127.0.0.1:0"
	fc := follow.DefaultConfig()
	fc.URL = upstream
	cfg.Follow = &fc
	tf := eth.DefaultForwardConfig()
	tf.URL = forwardURL
	cfg.TxForward = &tf
	clock := chain.NewManualClock(time.Unix(pendingtest.GenesisTime, 0))
	n := startNode(t, cfg, db, g, nil, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel), node.WithFollowClock(clock))
	return &followNode{Node: n, t: t, url: "http://" + n.Server.Addr().String(), clock: clock, poll: fc.WithDefaults().PollInterval}
}

// TestForwardThroughFollower: a wallet sends three transactions in a row
// through a follower, asking the follower for the pending nonce before
// each; the sequencer receives all three (its pending nonce counts them),
// pre-confirms and seals them; the follower's pending nonce counts them all
// along. A refusal by the sequencer reaches the client with the
// sequencer's own code and message; a transaction the follower can check
// itself (wrong chain id) is refused locally.
func TestForwardThroughFollower(t *testing.T) {
	seq := newEnv(t)
	up := "ws" + strings.TrimPrefix(seq.url, "http")
	f := startForwardingFollower(t, up, seq.url)
	fe := &env{t: t, url: f.url}
	acc := seq.Accs[0]
	to := common.Address{0xaa}
	sign := func(nonce uint64, chainID *big.Int) *types.Transaction {
		return pendingtest.SignTx(t, types.LatestSignerForChainID(chainID), acc.Key, &types.DynamicFeeTx{ChainID: chainID, Nonce: nonce,
			GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(10 * params.GWei), Gas: 21_000, To: &to, Value: big.NewInt(int64(nonce) + 1)})
	}
	var sent []*types.Transaction
	for i := range 3 {
		nonce := fe.pendingNonce(acc.Address)
		if nonce != uint64(i) {
			t.Fatalf("send %d: the follower's pending nonce is %d", i, nonce)
		}
		tx := sign(nonce, seq.Genesis.Config.ChainID)
		fe.sendRaw(tx)
		sent = append(sent, tx)
	}
	if n := seq.pendingNonce(acc.Address); n != 3 {
		t.Fatalf("the sequencer's pending nonce is %d after three forwarded transactions", n)
	}
	// The follower finds what it forwarded.
	if res := fe.call("eth_getTransactionByHash", sent[1].Hash()); string(res) == "null" {
		t.Fatal("the follower does not find a transaction it forwarded")
	}
	// Refusal by the sequencer (nonce too low): the same code and message
	// as the sequencer answers directly.
	dup := sign(0, seq.Genesis.Config.ChainID)
	raw, _ := dup.MarshalBinary()
	_, direct := seq.callErr("eth_sendRawTransaction", "0x"+common.Bytes2Hex(raw))
	_, via := fe.callErr("eth_sendRawTransaction", "0x"+common.Bytes2Hex(raw))
	if direct == nil || via == nil || direct.Code != via.Code || direct.Message != via.Message {
		t.Fatalf("refusal: direct %+v, through the follower %+v", direct, via)
	}
	// Checked locally: the sequencer never sees it.
	_, local := fe.callErr("eth_sendRawTransaction", mustRaw(t, sign(3, big.NewInt(1))))
	if local == nil || !strings.Contains(local.Message, "invalid chain id") {
		t.Fatalf("wrong chain id through the follower: %+v", local)
	}
	if n := fe.pendingNonce(acc.Address); n != 3 {
		t.Fatalf("the follower's pending nonce is %d after the refusals", n)
	}
	// Sealed upstream and followed: the nonce comes from the chain now and
	// the follower stopped tracking them.
	seq.Seal()
	f.waitHead(seq.node.Writer.Head().Hash())
	if n := fe.pendingNonce(acc.Address); n != 3 {
		t.Fatalf("the follower's pending nonce is %d after the seal", n)
	}
	if got := f.Forwarder.Nonces(acc.Address); len(got) != 0 {
		t.Fatalf("still tracking %d forwarded transactions after they were sealed", len(got))
	}
	// The next one goes through too.
	fe.sendRaw(sign(3, seq.Genesis.Config.ChainID))
	if n := seq.pendingNonce(acc.Address); n != 4 {
		t.Fatalf("the sequencer's pending nonce is %d", n)
	}
}

func mustRaw(t *testing.T, tx *types.Transaction) string {
	t.Helper()
	raw, err := tx.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return "0x" + common.Bytes2Hex(raw)
}

// TestForwardToSequencerDown: with the sequencer unreachable the client
// gets a clear -32000 naming it, and the pending nonce does not count the
// transaction.
func TestForwardToSequencerDown(t *testing.T) {
	seq := newEnv(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	f := startForwardingFollower(t, "ws"+strings.TrimPrefix(seq.url, "http"), dead)
	fe := &env{t: t, url: f.url}
	acc := seq.Accs[0]
	tx := pendingtest.SignTx(t, seq.Signer, acc.Key, &types.DynamicFeeTx{ChainID: seq.Genesis.Config.ChainID, Nonce: 0,
		GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(10 * params.GWei), Gas: 21_000, To: &common.Address{1}, Value: big.NewInt(1)})
	_, rerr := fe.callErr("eth_sendRawTransaction", mustRaw(t, tx))
	if rerr == nil || rerr.Code != -32000 || !strings.Contains(rerr.Message, "cannot forward the transaction to the sequencer ("+dead+")") {
		t.Fatalf("sequencer down: %+v", rerr)
	}
	if n := fe.pendingNonce(acc.Address); n != 0 {
		t.Fatalf("pending nonce %d counts a transaction that was not forwarded", n)
	}
}
