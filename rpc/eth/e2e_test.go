package eth

// End-to-end tests with go-ethereum's own client (ethclient over HTTP and
// websocket): its decoders check that our JSON reproduces block and header
// hashes exactly, the strongest oracle for the encoding.

import (
	"context"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"
	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"github.com/ethereum/go-ethereum/trie"

	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/store"
)

func TestE2EEthclientHTTP(t *testing.T) {
	db, g := chaintest.ImportedStore(t)
	_, url := startNode(t, db, g, newTestPool(g))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := ethclient.DialContext(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	id, err := c.ChainID(ctx)
	if err != nil || id.Cmp(g.Config.ChainID) != 0 {
		t.Fatalf("ChainID %v %v", id, err)
	}
	n, err := c.BlockNumber(ctx)
	if err != nil || n != 54 {
		t.Fatalf("BlockNumber %d %v", n, err)
	}
	// Every block and header must decode to its own hash (ethclient checks
	// the transactions; uncles are fetched through eth_getUncleBy…).
	blocks := chaintest.Blocks(t)
	for _, want := range blocks {
		num := want.Number()
		b, err := c.BlockByNumber(ctx, num)
		if err != nil {
			t.Fatalf("BlockByNumber(%v): %v", num, err)
		}
		if b.Hash() != want.Hash() || len(b.Transactions()) != len(want.Transactions()) || len(b.Uncles()) != len(want.Uncles()) {
			t.Fatalf("block %v: hash %s want %s", num, b.Hash().Hex(), want.Hash().Hex())
		}
		for i, tx := range b.Transactions() {
			if tx.Hash() != want.Transactions()[i].Hash() {
				t.Fatalf("block %v tx %d hash differs", num, i)
			}
		}
		h, err := c.HeaderByNumber(ctx, num)
		if err != nil || h.Hash() != want.Hash() {
			t.Fatalf("HeaderByNumber(%v): %v %v", num, h, err)
		}
	}
	if blocks[len(blocks)-1].Hash().Hex() != chaintest.HeadHash {
		t.Fatalf("head of chain.rlp is not %s", chaintest.HeadHash)
	}

	// A known transaction and its receipt (txinfo.json).
	info := readTxInfo(t)
	for _, tx := range info {
		got, pending, err := c.TransactionByHash(ctx, tx.Hash)
		if err != nil || pending || got.Hash() != tx.Hash {
			t.Fatalf("TransactionByHash(%s): pending=%v %v", tx.Hash.Hex(), pending, err)
		}
		sender, err := c.TransactionSender(ctx, got, blocks[tx.Block-1].Hash(), uint(tx.Index))
		if err != nil || sender != tx.Sender {
			t.Fatalf("sender of %s: %s %v, want %s", tx.Hash.Hex(), sender.Hex(), err, tx.Sender.Hex())
		}
		r, err := c.TransactionReceipt(ctx, tx.Hash)
		if err != nil {
			t.Fatalf("TransactionReceipt(%s): %v", tx.Hash.Hex(), err)
		}
		if r.BlockNumber.Uint64() != tx.Block || r.TransactionIndex != uint(tx.Index) || r.TxHash != tx.Hash || r.BlockHash != blocks[tx.Block-1].Hash() {
			t.Fatalf("receipt of %s: block %v index %d", tx.Hash.Hex(), r.BlockNumber, r.TransactionIndex)
		}
	}
	rs, err := c.BlockReceipts(ctx, gethrpc.BlockNumberOrHashWithNumber(54))
	if err != nil || len(rs) != len(blocks[53].Transactions()) {
		t.Fatalf("BlockReceipts(54): %d %v", len(rs), err)
	}
	if types.DeriveSha(types.Receipts(rs), trieHasher()) != blocks[53].ReceiptHash() {
		t.Fatal("receipts of block 54 do not hash to its receipts root")
	}

	// State at the head (headstate.json).
	checkHeadState(t, ctx, c)

	// Logs through the client's filter encoding.
	logs, err := c.FilterLogs(ctx, ethereum.FilterQuery{FromBlock: big.NewInt(0), ToBlock: big.NewInt(54)})
	if err != nil || len(logs) == 0 {
		t.Fatalf("FilterLogs: %d %v", len(logs), err)
	}

	checkCallAndStorage(t, ctx, c)
	if _, err := c.SuggestGasPrice(ctx); err != nil {
		t.Fatalf("SuggestGasPrice: %v", err)
	}
	if _, err := c.SuggestGasTipCap(ctx); err != nil {
		t.Fatalf("SuggestGasTipCap: %v", err)
	}
	if _, err := c.FeeHistory(ctx, 10, nil, []float64{25, 75}); err != nil {
		t.Fatalf("FeeHistory: %v", err)
	}
	if p, err := c.SyncProgress(ctx); err != nil || p != nil {
		t.Fatalf("SyncProgress %v %v", p, err)
	}
}

func trieHasher() *trie.StackTrie { return trie.NewStackTrie(nil) }

type txInfoEntry struct {
	Hash   common.Hash
	Sender common.Address
	Block  uint64
	Index  int
}

// readTxInfo collects the transactions listed in txinfo.json.
func readTxInfo(t testing.TB) []txInfoEntry {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chaintest.Dir(t), "chain", "txinfo.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	type entry struct {
		TxHash       *common.Hash   `json:"txhash"`
		Sender       common.Address `json:"sender"`
		Block        string         `json:"block"`
		IndexInBlock int            `json:"indexInBlock"`
	}
	var out []txInfoEntry
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !strings.HasPrefix(k, "tx-") {
			continue
		}
		var list []entry
		if json.Unmarshal(raw[k], &list) != nil {
			continue
		}
		for _, e := range list {
			if e.TxHash == nil {
				continue
			}
			var n big.Int
			n.SetString(strings.TrimPrefix(e.Block, "0x"), 16)
			out = append(out, txInfoEntry{Hash: *e.TxHash, Sender: e.Sender, Block: n.Uint64(), Index: e.IndexInBlock})
		}
	}
	if len(out) == 0 {
		t.Fatal("no transactions in txinfo.json")
	}
	return out
}

func checkHeadState(t *testing.T, ctx context.Context, c *ethclient.Client) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chaintest.Dir(t), "chain", "headstate.json"))
	if err != nil {
		t.Fatal(err)
	}
	var hs struct {
		Accounts map[common.Address]struct {
			Balance string            `json:"balance"`
			Nonce   uint64            `json:"nonce"`
			Storage map[string]string `json:"storage"`
		} `json:"accounts"`
	}
	if err := json.Unmarshal(data, &hs); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for addr, acc := range hs.Accounts {
		want, _ := new(big.Int).SetString(acc.Balance, 10)
		bal, err := c.BalanceAt(ctx, addr, big.NewInt(54))
		if err != nil || bal.Cmp(want) != 0 {
			t.Fatalf("BalanceAt(%s) = %v %v, want %v", addr.Hex(), bal, err, want)
		}
		for slot, val := range acc.Storage {
			got, err := c.StorageAt(ctx, addr, common.HexToHash(slot), nil)
			if err != nil || common.BytesToHash(got) != common.HexToHash(val) {
				t.Fatalf("StorageAt(%s, %s) = %x %v, want %s", addr.Hex(), slot, got, err, val)
			}
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("headstate.json has no accounts")
	}
}

// TestE2ESubscriptions: over a websocket, newHeads and logs subscribers see
// block 54 once it is imported and announced.
func TestE2ESubscriptions(t *testing.T) {
	db, g, w := chaintest.GenesisStore(t)
	w.Stop() // the node runs its own writer
	blocks := chaintest.Blocks(t)
	api, url := startNode(t, db, g, nil)
	im := writerOf(api)
	for _, b := range blocks[:len(blocks)-1] {
		if err := im.ImportBlock(b, store.TagSafe, store.TagFinalized); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rc, err := gethrpc.DialContext(ctx, "ws"+strings.TrimPrefix(url, "http"))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	c := ethclient.NewClient(rc)
	if n, err := c.BlockNumber(ctx); err != nil || n != 53 {
		t.Fatalf("BlockNumber over ws: %d %v", n, err)
	}
	checkCallAndStorage(t, ctx, c)
	heads := make(chan *types.Header, 4)
	hsub, err := c.SubscribeNewHead(ctx, heads)
	if err != nil {
		t.Fatal(err)
	}
	defer hsub.Unsubscribe()
	logs := make(chan types.Log, 64)
	lsub, err := c.SubscribeFilterLogs(ctx, ethereum.FilterQuery{}, logs)
	if err != nil {
		t.Fatal(err)
	}
	defer lsub.Unsubscribe()

	head := blocks[len(blocks)-1]
	if err := im.ImportBlock(head, store.TagSafe, store.TagFinalized); err != nil {
		t.Fatal(err)
	}

	select {
	case h := <-heads:
		if h.Hash() != head.Hash() {
			t.Fatalf("newHeads: got %d %s, want %s", h.Number, h.Hash().Hex(), head.Hash().Hex())
		}
	case err := <-hsub.Err():
		t.Fatal(err)
	case <-ctx.Done():
		t.Fatal("no newHeads notification")
	}
	var want []*types.Log
	for _, r := range mustBlockReceipts(t, ctx, c, 54) {
		want = append(want, r.Logs...)
	}
	if len(want) == 0 {
		t.Fatal("block 54 has no logs to check the logs subscription with")
	}
	for i, w := range want {
		select {
		case l := <-logs:
			if l.TxHash != w.TxHash || l.Index != w.Index || l.BlockHash != head.Hash() {
				t.Fatalf("log %d: got tx %s index %d, want tx %s index %d", i, l.TxHash.Hex(), l.Index, w.TxHash.Hex(), w.Index)
			}
		case err := <-lsub.Err():
			t.Fatal(err)
		case <-ctx.Done():
			t.Fatalf("logs subscription: only %d of %d logs", i, len(want))
		}
	}
}

func mustBlockReceipts(t *testing.T, ctx context.Context, c *ethclient.Client, n int64) []*types.Receipt {
	t.Helper()
	rs, err := c.BlockReceipts(ctx, gethrpc.BlockNumberOrHashWithNumber(gethrpc.BlockNumber(n)))
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// checkCallAndStorage runs eth_call and eth_getStorageAt through a client
// (HTTP or websocket): the callme contract answers, and the storage
// contract's slot 0 (a block counter) reads 0x32 at block 50 (history.json).
func checkCallAndStorage(t *testing.T, ctx context.Context, c *ethclient.Client) {
	t.Helper()
	callee := common.HexToAddress("0x17e7eedce4ac02ef114a7ed9fe6e2f33feba1667")
	out, err := c.CallContract(ctx, ethereum.CallMsg{To: &callee, Data: []byte{0xff, 0x01}}, nil)
	if err != nil || len(out) == 0 {
		t.Fatalf("CallContract: %x %v", out, err)
	}
	got, err := c.StorageAt(ctx, common.HexToAddress("0x7dcd17433742f4c0ca53122ab541d0ba67fc27df"), common.Hash{}, big.NewInt(50))
	if err != nil || common.BytesToHash(got) != common.HexToHash("0x32") {
		t.Fatalf("StorageAt: %x %v, want 0x32", got, err)
	}
}
