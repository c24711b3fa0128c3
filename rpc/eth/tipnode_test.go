package eth

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rlp"
	gethrpc "github.com/ethereum/go-ethereum/rpc"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
)

// TestLogsSubscriptionRemoved: over a websocket, a logs subscriber at head
// 54 sees, when the writer unwinds to 44, every log of blocks 45..54 again
// with removed=true (oldest first, as eth_getLogs listed them), and then,
// when the blocks come back, their logs again (removed=false) after the
// removals; newHeads announces 45..54 again.
func TestLogsSubscriptionRemoved(t *testing.T) {
	db, g := chaintest.ImportedStore(t)
	api, url := startNode(t, db, g, nil)
	w := writerOf(api)
	blocks := chaintest.Blocks(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rc, err := gethrpc.DialContext(ctx, "ws"+strings.TrimPrefix(url, "http"))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	c := ethclient.NewClient(rc)
	want, err := c.FilterLogs(ctx, ethereum.FilterQuery{FromBlock: big.NewInt(45)})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 2 {
		t.Fatalf("blocks 45..54 have %d logs: too few to check the order", len(want))
	}
	logs := make(chan types.Log, 4*len(want))
	lsub, err := c.SubscribeFilterLogs(ctx, ethereum.FilterQuery{}, logs)
	if err != nil {
		t.Fatal(err)
	}
	defer lsub.Unsubscribe()
	heads := make(chan *types.Header, 32)
	hsub, err := c.SubscribeNewHead(ctx, heads)
	if err != nil {
		t.Fatal(err)
	}
	defer hsub.Unsubscribe()

	if err := w.UnwindTo(44, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Import(blocks[44:], chain.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	next := func() types.Log {
		t.Helper()
		select {
		case l := <-logs:
			return l
		case err := <-lsub.Err():
			t.Fatal(err)
		case <-ctx.Done():
			t.Fatal("logs subscription: a log is missing")
		}
		return types.Log{}
	}
	key := func(l types.Log) string {
		return fmt.Sprintf("%d %s %d %s %d", l.BlockNumber, l.BlockHash.Hex(), l.TxIndex, l.TxHash.Hex(), l.Index)
	}
	for _, removed := range []bool{true, false} {
		for i, wl := range want {
			l := next()
			if l.Removed != removed || key(l) != key(wl) {
				t.Fatalf("log %d (removed=%v): got %s removed=%v, want %s", i, removed, key(l), l.Removed, key(wl))
			}
		}
	}
	for n := uint64(45); n <= 54; n++ {
		select {
		case h := <-heads:
			if h.Number.Uint64() != n || h.Hash() != blocks[n-1].Hash() {
				t.Fatalf("newHeads: %d %s, want %d", h.Number, h.Hash().Hex(), n)
			}
		case <-ctx.Done():
			t.Fatalf("newHeads: no head %d", n)
		}
	}
}

// TestTipnodeGenesisAndRawBlock: tipnode_genesis answers the stored spec
// (it parses to our block 0); debug_getRawBlock answers each block's RLP
// (it decodes to the block eth_getBlockByNumber describes), null for a
// block we do not have, and refuses pending.
func TestTipnodeGenesisAndRawBlock(t *testing.T) {
	db, g := chaintest.ImportedStore(t)
	_, url := startNode(t, db, g, nil)
	var spec json.RawMessage
	wantResult(t, callRPC(t, url, "tipnode_genesis"), &spec)
	got, err := chain.ParseGenesis(spec)
	if err != nil || got.Block.Hash() != g.Block.Hash() {
		t.Fatalf("tipnode_genesis parses to %v, %v", got, err)
	}
	blocks := chaintest.Blocks(t)
	for _, n := range []int{1, 27, 54} {
		var raw hexutil.Bytes
		wantResult(t, callRPC(t, url, "debug_getRawBlock", hexutil.Uint64(n)), &raw)
		b := new(types.Block)
		if err := rlp.DecodeBytes(raw, b); err != nil || b.Hash() != blocks[n-1].Hash() || len(b.Transactions()) != len(blocks[n-1].Transactions()) {
			t.Fatalf("raw block %d: %v", n, err)
		}
	}
	if r := callRPC(t, url, "debug_getRawBlock", "0x100"); r.Error != nil || string(r.Result) != "null" {
		t.Fatalf("raw block 256: %s %v", r.Result, r.Error)
	}
	wantCode(t, callRPC(t, url, "debug_getRawBlock", "pending"), -32602)
}

// TestEthSyncingFromProgress: eth_syncing answers the installed progress
// while it says the node catches up, false otherwise.
func TestEthSyncingFromProgress(t *testing.T) {
	db, g := chaintest.ImportedStore(t)
	api, url := startNode(t, db, g, nil)
	if r := callRPC(t, url, "eth_syncing"); string(r.Result) != "false" {
		t.Fatalf("eth_syncing without a source: %s", r.Result)
	}
	var syncing atomic.Bool
	syncing.Store(true)
	api.SetSyncProgress(func() (SyncProgress, bool) {
		return SyncProgress{StartingBlock: 3, CurrentBlock: 54, HighestBlock: 90}, syncing.Load()
	})
	if !jsonEqual(t, callRPC(t, url, "eth_syncing").Result, `{"startingBlock":"0x3","currentBlock":"0x36","highestBlock":"0x5a"}`) {
		t.Fatal("eth_syncing while catching up")
	}
	syncing.Store(false)
	if r := callRPC(t, url, "eth_syncing"); string(r.Result) != "false" {
		t.Fatalf("eth_syncing once caught up: %s", r.Result)
	}
}
