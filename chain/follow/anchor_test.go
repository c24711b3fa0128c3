package follow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/chain/follow/followtest"
	"github.com/tipnode/tipnode/chain/statedump"
	"github.com/tipnode/tipnode/store"
)

// gethDump is go-ethereum's own state dump at block n (debug_dumpBlock:
// the one-object form of `geth dump`).
func gethDump(t *testing.T, u *upstreamChain, n uint64) []byte {
	t.Helper()
	c, err := gethrpc.Dial(u.HTTP)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var raw json.RawMessage
	if err := c.Call(&raw, "debug_dumpBlock", hexutil.EncodeUint64(n)); err != nil {
		t.Fatal(err)
	}
	return raw
}

// initAnchored initialises a fresh store at block n from dump, with the
// anchor fetched from url, and starts a writer on it.
func initAnchored(t *testing.T, spec []byte, url string, n uint64, dump []byte) (*store.DB, *chain.Genesis, *chain.Writer) {
	t.Helper()
	ctx := context.Background()
	a, err := FetchAnchor(ctx, url, n, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if a.Body == nil {
		t.Fatalf("anchor without block %d: %s", n, a.NoHistory)
	}
	g, err := chain.ParseGenesisConfig(spec)
	if err != nil {
		t.Fatal(err)
	}
	config, _ := json.Marshal(g.Config)
	db := chaintest.OpenStore(t)
	tmp := t.TempDir()
	si, err := db.NewStateImport(tmp, n, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer si.Close()
	top := a.Headers[len(a.Headers)-1]
	if _, err := statedump.Load(ctx, bytes.NewReader(dump), si, statedump.Config{TempDir: tmp, MemBytes: 1 << 20, Expected: top.Root}); err != nil {
		t.Fatal(err)
	}
	if _, err := si.Commit(ctx, &store.AnchorWrite{Genesis: a.Genesis, Headers: a.Headers, Body: a.Body, Receipts: a.Receipts, Spec: spec, Config: config}); err != nil {
		t.Fatal(err)
	}
	view, err := db.View()
	if err != nil {
		t.Fatal(err)
	}
	lg, err := chain.LoadGenesis(view)
	view.Close()
	if err != nil {
		t.Fatal(err)
	}
	return db, lg, chaintest.StartWriter(t, db, lg)
}

// TestFollowFromStateDump: go-ethereum's dump of its state at block 20
// initialises a store anchored there (its root is block 20's); the
// follower continues from 21 to the upstream's head, through a reorg
// above the anchor. At every height from 20 to the head, balances,
// nonces, code and storage of every account the chain touches are
// go-ethereum's, and so are the receipts; state below 20 is refused
// naming the anchor, and the anchor block's history is kept.
func TestFollowFromStateDump(t *testing.T) {
	u := startUpstream(t, followtest.Options{Preimages: true})
	for i := range 20 {
		u.block(i%7, 'a')
	}
	const anchor = 20
	dump := gethDump(t, u, anchor)
	db, g, w := initAnchored(t, u.Spec, u.HTTP, anchor, dump)
	for i := range 8 {
		u.block(i%5+1, 'b')
	}
	cfg := testConfig(u.HTTP)
	f := startFollower(t, db, g, w, cfg)
	f.waitHead(u.head().Hash(), cfg.PollInterval)
	u.fork(anchor + 5) // a reorg above the anchor
	var last common.Hash
	for i := range 6 {
		last = u.block(i%4+1, 'c')
	}
	f.waitHead(last, cfg.PollInterval)

	view, err := db.View()
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	ctx := context.Background()
	client := u.Client()
	rpcClient, err := gethrpc.Dial(u.HTTP)
	if err != nil {
		t.Fatal(err)
	}
	defer rpcClient.Close()
	head := f.w.Head().Number()
	addrs := []common.Address{loggerAddr, storeAddr, killerAddr}
	for i := range followtest.Accounts {
		addrs = append(addrs, followtest.Address(i))
	}
	for n := uint64(anchor); n <= head; n++ {
		hash, err := view.CanonicalHash(n)
		if err != nil {
			t.Fatal(err)
		}
		if theirs := u.hashAt(n); theirs != hash {
			t.Fatalf("block %d: ours %s, go-ethereum's %s", n, hash.Hex(), theirs.Hex())
		}
		body, err := view.Body(n, hash)
		if err != nil {
			t.Fatalf("body %d: %v", n, err)
		}
		for _, tx := range body.Transactions {
			if tx.Type() != types.LegacyTxType && tx.Type() != types.DynamicFeeTxType {
				continue
			}
			if to := tx.To(); to != nil {
				addrs = append(addrs, *to)
			}
		}
		st, err := view.StateAt(n)
		if err != nil {
			t.Fatal(err)
		}
		bn := new(big.Int).SetUint64(n)
		for _, addr := range addrs {
			acc, err := st.Account(addr)
			if err != nil {
				t.Fatal(err)
			}
			bal, _ := client.BalanceAt(ctx, addr, bn)
			nonce, _ := client.NonceAt(ctx, addr, bn)
			code, _ := client.CodeAt(ctx, addr, bn)
			var ourBal *big.Int = new(big.Int)
			var ourNonce uint64
			var ourCode []byte
			if acc != nil {
				ourBal, ourNonce = acc.Balance.ToBig(), acc.Nonce
				if ourCode, err = st.Code(acc.CodeHash); err != nil {
					t.Fatal(err)
				}
			}
			if ourBal.Cmp(bal) != 0 || ourNonce != nonce || !bytes.Equal(ourCode, code) {
				t.Fatalf("block %d account %s: ours %s/%d/%d bytes, go-ethereum's %s/%d/%d bytes", n, addr.Hex(), ourBal, ourNonce, len(ourCode), bal, nonce, len(code))
			}
		}
		for _, sa := range []struct {
			addr common.Address
			slot common.Hash
		}{{storeAddr, common.Hash{31: 0}}, {storeAddr, common.Hash{31: 1}}, {storeAddr, common.Hash{31: 2}}, {storeAddr, common.Hash{31: 3}}, {storeAddr, common.Hash{31: 4}}, {killerAddr, common.Hash{31: 7}}} {
			ours, err := st.Storage(sa.addr, sa.slot)
			if err != nil {
				t.Fatal(err)
			}
			theirs, _ := client.StorageAt(ctx, sa.addr, sa.slot, bn)
			if ours != common.BytesToHash(theirs) {
				t.Fatalf("block %d slot %s/%s: ours %s, go-ethereum's %x", n, sa.addr.Hex(), sa.slot.Hex(), ours.Hex(), theirs)
			}
		}
		stored, err := view.Receipts(n, hash)
		if err != nil {
			t.Fatalf("receipts %d: %v", n, err)
		}
		var theirs []*types.Receipt
		if err := rpcClient.Call(&theirs, "eth_getBlockReceipts", hash); err != nil {
			t.Fatal(err)
		}
		ours := make(types.Receipts, len(stored))
		for i, r := range stored {
			ours[i] = &r.Receipt
			ours[i].Type = body.Transactions[i].Type() // stored receipts carry no type and no bloom
			ours[i].Bloom = types.CreateBloom(ours[i])
		}
		if types.DeriveSha(ours, trie.NewStackTrie(nil)) != types.DeriveSha(types.Receipts(theirs), trie.NewStackTrie(nil)) {
			t.Fatalf("block %d: receipts differ from go-ethereum's", n)
		}
	}
	// Below the anchor.
	below, err := view.StateAt(anchor - 1)
	if err != nil {
		t.Fatal(err)
	}
	var pe *store.PrunedStateError
	if _, err := below.Account(storeAddr); !errors.As(err, &pe) || pe.Anchor != anchor || pe.Root != u.headerAt(anchor-1).Root {
		t.Fatalf("state below the anchor: %v", err)
	}
	h19, _ := view.CanonicalHash(anchor - 1)
	if _, err := view.Body(anchor-1, h19); !errors.Is(err, store.ErrPrunedHistory) {
		t.Fatalf("body below the anchor: %v", err)
	}
}

func (u *upstreamChain) headerAt(n uint64) *types.Header {
	u.t.Helper()
	h, err := u.Client().HeaderByNumber(context.Background(), new(big.Int).SetUint64(n))
	if err != nil {
		u.t.Fatal(err)
	}
	return h
}

// TestFollowRefusesOtherAnchor: a store anchored at a block the upstream
// does not have (another branch) stops following at once, naming both.
func TestFollowRefusesOtherAnchor(t *testing.T) {
	u := startUpstream(t, followtest.Options{Preimages: true})
	for i := range 6 {
		u.block(i%3, 'a')
	}
	dump := gethDump(t, u, 6)
	db, g, w := initAnchored(t, u.Spec, u.HTTP, 6, dump)
	u.fork(4)
	for i := range 4 {
		u.block(i%3+1, 'z')
	}
	f, err := New(testConfig(u.HTTP), w, g, nil, NewMetrics(nil), zerolog.New(zerolog.NewTestWriter(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	_ = db
	if err := f.Start(); !errors.Is(err, ErrAnchorMismatch) {
		t.Fatalf("start on another branch: %v", err)
	}
}
