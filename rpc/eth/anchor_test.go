package eth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	gethrpc "github.com/ethereum/go-ethereum/rpc"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/chain/statedump"
	"github.com/tipnode/tipnode/store"
)

// anchoredConformanceStore returns a store initialised from the state of
// the conformance chain at block anchor (dumped from an imported store, as
// geth dump --iterative writes it; the import verifies it against block
// anchor's state root) with the blocks above imported, and the full store
// it came from.
func anchoredConformanceStore(t *testing.T, anchor uint64) (db *store.DB, g *chain.Genesis, full *store.DB, fullG *chain.Genesis) {
	t.Helper()
	full, fullG = chaintest.ImportedStore(t)
	dump := chaintest.DumpJSONL(t, full, anchor)
	blocks := chaintest.Blocks(t) // 1..54
	view, err := full.View()
	if err != nil {
		t.Fatal(err)
	}
	var headers []*types.Header
	for n := uint64(0); n <= anchor; n++ {
		headers = append(headers, chaintest.CanonicalBlock(t, full, n).Header())
	}
	top := headers[anchor]
	body, err := view.Body(anchor, top.Hash())
	if err != nil {
		t.Fatal(err)
	}
	receipts, err := view.Receipts(anchor, top.Hash())
	view.Close()
	if err != nil {
		t.Fatal(err)
	}
	config, _ := json.Marshal(fullG.Config)
	db = chaintest.OpenStore(t)
	tmp := t.TempDir()
	si, err := db.NewStateImport(tmp, anchor, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer si.Close()
	ctx := context.Background()
	if _, err := statedump.Load(ctx, bytes.NewReader(dump), si, statedump.Config{TempDir: tmp, Expected: top.Root}); err != nil {
		t.Fatal(err)
	}
	if _, err := si.Commit(ctx, &store.AnchorWrite{Genesis: headers[0], Headers: headers[1:], Body: body, Receipts: receipts,
		Spec: fullG.Spec, Config: config}); err != nil {
		t.Fatal(err)
	}
	view, err = db.View()
	if err != nil {
		t.Fatal(err)
	}
	g, err = chain.LoadGenesis(view)
	view.Close()
	if err != nil {
		t.Fatal(err)
	}
	w := chaintest.StartWriter(t, db, g)
	if err := w.Import(blocks[anchor:], chain.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	w.Stop()
	return db, g, full, fullG
}

// TestAnchoredStoreReads: a node on a store initialised from a state dump
// at block 40 answers every read from 40 to the head as the reference
// archive (history.json) and a node that replayed the chain from genesis
// do; below 40 it answers go-ethereum's pruned-history error (4444) for
// blocks, receipts and logs and its missing-state error, naming the
// anchor, for state; the headers it holds (block 0, the 256 below the
// anchor) it serves with eth_getHeaderByNumber/ByHash.
func TestAnchoredStoreReads(t *testing.T) {
	const anchor = 40
	db, g, full, fullG := anchoredConformanceStore(t, anchor)
	_, url := startNode(t, db, g, nil)
	_, fullURL := startNode(t, full, fullG, nil)
	c, err := gethrpc.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fc, err := gethrpc.Dial(fullURL)
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	raw := func(c *gethrpc.Client, method string, args ...any) (json.RawMessage, error) {
		var r json.RawMessage
		err := c.Call(&r, method, args...)
		return r, err
	}
	same := func(method string, args ...any) {
		t.Helper()
		got, err := raw(c, method, args...)
		if err != nil {
			t.Fatalf("%s %v: %v", method, args, err)
		}
		want, err := raw(fc, method, args...)
		if err != nil {
			t.Fatalf("%s %v on the full node: %v", method, args, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s %v:\n got %s\nwant %s", method, args, got, want)
		}
	}
	// The suggested tip samples the blocks the store has (it read bodies
	// below the history anchor and failed with 4444).
	var tip hexutil.Big
	if err := c.Call(&tip, "eth_gasPrice"); err != nil {
		t.Fatalf("eth_gasPrice on an anchored store: %v", err)
	}
	history := chaintest.LoadHistory(t)
	for n := uint64(anchor); n <= 54; n++ {
		at := hexutil.EncodeUint64(n)
		for addr, want := range history[n] {
			var bal hexutil.Big
			var nonce hexutil.Uint64
			var code hexutil.Bytes
			if err := c.Call(&bal, "eth_getBalance", addr, at); err != nil {
				t.Fatal(err)
			}
			if err := c.Call(&nonce, "eth_getTransactionCount", addr, at); err != nil {
				t.Fatal(err)
			}
			if err := c.Call(&code, "eth_getCode", addr, at); err != nil {
				t.Fatal(err)
			}
			wantBal := want.Balance
			if wantBal == nil {
				wantBal = new(hexutil.Big)
			}
			if bal.ToInt().Cmp(wantBal.ToInt()) != 0 || nonce != want.Nonce || !bytes.Equal(code, want.Code) {
				t.Fatalf("block %d account %s: %s/%d/%d bytes, want %s/%d/%d bytes", n, addr.Hex(), bal.String(), nonce, len(code), wantBal.String(), want.Nonce, len(want.Code))
			}
			for slot, v := range want.Storage {
				var got common.Hash
				if err := c.Call(&got, "eth_getStorageAt", addr, slot, at); err != nil {
					t.Fatal(err)
				}
				if got != v {
					t.Fatalf("block %d slot %s/%s: %s, want %s", n, addr.Hex(), slot.Hex(), got.Hex(), v.Hex())
				}
			}
		}
		same("eth_getBlockByNumber", at, true)
		same("eth_getBlockReceipts", at)
	}
	same("eth_getLogs", map[string]any{"fromBlock": hexutil.EncodeUint64(anchor), "toBlock": "latest"})
	same("eth_getBlockByNumber", "latest", false)

	code := func(err error) int {
		var e gethrpc.Error
		if errors.As(err, &e) {
			return e.ErrorCode()
		}
		return 0
	}
	below := hexutil.EncodeUint64(anchor - 1)
	for _, tc := range []struct {
		method string
		args   []any
		code   int
		msg    string
	}{
		{"eth_getBlockByNumber", []any{below, false}, 4444, "pruned history unavailable"},
		{"eth_getBlockByNumber", []any{"0x1", false}, 4444, "pruned history unavailable"},
		{"eth_getBlockReceipts", []any{below}, 4444, "pruned history unavailable"},
		{"eth_getLogs", []any{map[string]any{"fromBlock": below, "toBlock": "latest"}}, 4444, "pruned history unavailable"},
		{"eth_getLogs", []any{map[string]any{"fromBlock": "0x0"}}, 4444, "pruned history unavailable"},
		{"eth_getBalance", []any{common.Address{}, below}, -32000, "missing trie node"},
		{"eth_getStorageAt", []any{common.Address{}, common.Hash{}, below}, -32000, "state starts at block 40"},
		{"eth_call", []any{map[string]any{"to": common.Address{}}, below}, -32000, "state starts at block 40"},
	} {
		_, err := raw(c, tc.method, tc.args...)
		if code(err) != tc.code || err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s %v: %v (code %d), want %d %q", tc.method, tc.args, err, code(err), tc.code, tc.msg)
		}
	}
	// Headers the store holds are served below the history anchor too
	// (block 0 and the 256 below the anchor), equal to the full node's: a
	// node following this one checks its genesis and anchor with them.
	for _, n := range []uint64{0, 1, anchor - 1, anchor, 54} {
		at := hexutil.EncodeUint64(n)
		same("eth_getHeaderByNumber", at)
		var h struct {
			Hash common.Hash `json:"hash"`
		}
		if err := c.Call(&h, "eth_getHeaderByNumber", at); err != nil {
			t.Fatal(err)
		}
		same("eth_getHeaderByHash", h.Hash)
	}
	same("eth_getHeaderByNumber", "latest")
	var none json.RawMessage
	if err := c.Call(&none, "eth_getHeaderByNumber", "0x1000"); err != nil || string(none) != "null" {
		t.Fatalf("header of a block the node does not have: %s %v, want null", none, err)
	}
	var earliest struct {
		Number hexutil.Uint64 `json:"number"`
	}
	if err := c.Call(&earliest, "eth_getBlockByNumber", "earliest", false); err != nil || earliest.Number != anchor {
		t.Fatalf("earliest: %d, %v; want the anchor %d", earliest.Number, err, anchor)
	}
}
