package chain_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/consensus"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/triedb"
	"github.com/holiman/uint256"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/migrations"
	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// TestImportConformanceChain imports the 54-block conformance chain and
// checks the head hash, the tags and the state root of every block (our
// flat state hashed into a trie must equal the header's root).
func TestImportConformanceChain(t *testing.T) {
	db, _ := chaintest.ImportedStore(t)
	view, err := db.View()
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	for _, tag := range []store.Tag{store.TagLatest, store.TagSafe, store.TagFinalized} {
		n, err := view.Tag(tag)
		if err != nil || n != 54 {
			t.Fatalf("tag %s = %d, %v; want 54", tag, n, err)
		}
	}
	head, err := view.CanonicalHash(54)
	if err != nil || head.Hex() != chaintest.HeadHash {
		t.Fatalf("head hash %s, %v; want %s", head.Hex(), err, chaintest.HeadHash)
	}
	for n := uint64(0); n <= 54; n++ {
		hash, err := view.CanonicalHash(n)
		if err != nil {
			t.Fatal(err)
		}
		h, err := view.Header(n, hash)
		if err != nil {
			t.Fatal(err)
		}
		if root := flatRoot(t, view, n); root != h.Root {
			t.Errorf("block %d: state root of flat state %s, header %s", n, root.Hex(), h.Root.Hex())
		}
		// The trie kept beside the flat state, at every height.
		tr, err := view.StateTrie(n)
		if err != nil {
			t.Fatal(err)
		}
		if root, err := tr.Root(); err != nil || root != h.Root {
			t.Errorf("block %d: state trie root %s (%v), header %s", n, root.Hex(), err, h.Root.Hex())
		}
	}
}

// TestHistoryAtEveryHeight checks balance, nonce, code and every slot of
// every account in history.json at every block 0..54, and headstate.json at
// the head.
func TestHistoryAtEveryHeight(t *testing.T) {
	db, _ := chaintest.ImportedStore(t)
	h := chaintest.LoadHistory(t)
	view, err := db.View()
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	checkHistory(t, view, h, 0, 54)

	// headstate.json at the head.
	data, err := os.ReadFile(filepath.Join(chaintest.Dir(t), "chain", "headstate.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dump struct {
		Accounts map[common.Address]struct {
			Balance string                 `json:"balance"`
			Nonce   uint64                 `json:"nonce"`
			Code    hexutil.Bytes          `json:"code"`
			Storage map[common.Hash]string `json:"storage"`
		} `json:"accounts"`
	}
	if err := json.Unmarshal(data, &dump); err != nil {
		t.Fatal(err)
	}
	r := stateAt(t, view, 54)
	for addr, want := range dump.Accounts {
		acc, err := r.Account(addr)
		if err != nil || acc == nil {
			t.Fatalf("headstate %s: account missing (%v)", addr, err)
		}
		bal, _ := new(big.Int).SetString(want.Balance, 10)
		if acc.Balance.ToBig().Cmp(bal) != 0 || acc.Nonce != want.Nonce {
			t.Errorf("headstate %s: balance/nonce %s/%d, want %s/%d", addr, acc.Balance, acc.Nonce, bal, want.Nonce)
		}
		code, err := r.Code(acc.CodeHash)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(code, want.Code) {
			t.Errorf("headstate %s: code differs", addr)
		}
		for slot, v := range want.Storage {
			got, err := r.Storage(addr, slot)
			if err != nil {
				t.Fatal(err)
			}
			if got != common.HexToHash(v) {
				t.Errorf("headstate %s slot %s = %s, want %s", addr, slot, got, v)
			}
		}
	}
}

func checkHistory(t *testing.T, view store.View, h chaintest.History, from, to uint64) {
	t.Helper()
	checked := 0
	for n := from; n <= to; n++ {
		accounts, ok := h[n]
		if !ok {
			t.Fatalf("history.json has no block %d", n)
		}
		r := stateAt(t, view, n)
		// Every account and slot named at any height is checked at every
		// height: an absent account is empty, an absent slot zero.
		for addr := range allSlots(h) {
			want, ok := accounts[addr]
			if !ok {
				want = chaintest.HistoryAccount{Balance: (*hexutil.Big)(new(big.Int))}
			}
			acc, err := r.Account(addr)
			if err != nil {
				t.Fatal(err)
			}
			var (
				bal   = new(uint256.Int)
				nonce uint64
				code  []byte
			)
			if acc != nil {
				bal, nonce = acc.Balance, acc.Nonce
				code, err = r.Code(acc.CodeHash)
				if err != nil {
					t.Fatal(err)
				}
			}
			if want.Balance.ToInt().Cmp(bal.ToBig()) != 0 {
				t.Errorf("block %d %s: balance %s, want %s", n, addr, bal, want.Balance.ToInt())
			}
			if uint64(want.Nonce) != nonce {
				t.Errorf("block %d %s: nonce %d, want %d", n, addr, nonce, want.Nonce)
			}
			if !bytes.Equal(code, want.Code) {
				t.Errorf("block %d %s: code %x, want %x", n, addr, code, []byte(want.Code))
			}
			checked++
		}
		for addr, slots := range allSlots(h) {
			for slot := range slots {
				got, err := r.Storage(addr, slot)
				if err != nil {
					t.Fatal(err)
				}
				want := h[n][addr].Storage[slot]
				if got != want {
					t.Errorf("block %d %s slot %s = %s, want %s", n, addr, slot.Hex(), got.Hex(), want.Hex())
				}
				checked++
			}
		}
	}
	if checked == 0 {
		t.Fatal("history check compared nothing")
	}
}

func allSlots(h chaintest.History) map[common.Address]map[common.Hash]bool {
	all := make(map[common.Address]map[common.Hash]bool)
	for _, accounts := range h {
		for addr, a := range accounts {
			if all[addr] == nil {
				all[addr] = make(map[common.Hash]bool)
			}
			for slot := range a.Storage {
				all[addr][slot] = true
			}
		}
	}
	return all
}

// TestTamperedBlockRejected: a block with a wrong gas used or a wrong
// receipts root is rejected naming the mismatch, and head and state stay.
func TestTamperedBlockRejected(t *testing.T) {
	blocks := chaintest.Blocks(t)
	cases := []struct {
		name   string
		mutate func(h *types.Header)
		want   string
	}{
		{"gas used", func(h *types.Header) { h.GasUsed++ }, "gas used"},
		{"receipts root", func(h *types.Header) { h.ReceiptHash[0] ^= 0xff }, "receipts root"},
		{"logs bloom", func(h *types.Header) { h.Bloom[5] ^= 0x01 }, "bloom"},
		{"parent hash", func(h *types.Header) { h.ParentHash[0] ^= 0xff }, "parent hash"},
		{"tx root", func(h *types.Header) { h.TxHash[0] ^= 0xff }, "transactions root"},
		// A forged state root (the header otherwise self-consistent): a
		// divergence naming both roots.
		{"state root", func(h *types.Header) { h.Root[0] ^= 0xff }, "state root"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db, _, im := chaintest.GenesisStore(t)
			for _, b := range blocks[:9] {
				if err := im.ImportBlock(b); err != nil {
					t.Fatal(err)
				}
			}
			target := blocks[9] // block 10: has transactions, post-Byzantium
			if len(target.Transactions()) == 0 {
				t.Fatal("test expects block 10 to hold transactions")
			}
			before := snapshotState(t, db, 9)
			h := target.Header()
			tc.mutate(h)
			bad := chaintypes.NewBlockWithHeader(h).WithBody(*target.Body())
			err := im.ImportBlock(bad)
			if !errors.Is(err, chain.ErrInvalidBlock) || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
				t.Fatalf("got %v, want ErrInvalidBlock mentioning %q", err, tc.want)
			}
			view := openView(t, db)
			if n, err := view.Tag(store.TagLatest); err != nil || n != 9 {
				t.Fatalf("latest moved to %d (%v)", n, err)
			}
			if _, err := view.CanonicalHash(10); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("block 10 half-written: %v", err)
			}
			if after := snapshotState(t, db, 9); after != before {
				t.Fatal("state changed after rejected block")
			}
			// The genuine block still imports.
			if err := im.ImportBlock(target); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// snapshotState hashes the whole flat state at a height.
func snapshotState(t *testing.T, db *store.DB, n uint64) common.Hash {
	view, err := db.View()
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	return flatRoot(t, view, n)
}

// flatRoot is the state root of the flat state at height n.
func flatRoot(t testing.TB, view store.View, n uint64) common.Hash {
	t.Helper()
	root, err := chain.StateRoot(stateAt(t, view, n))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// openView returns a view of db, closed at the end of the test.
func openView(t *testing.T, db *store.DB) store.View {
	t.Helper()
	view, err := db.View()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := view.Close(); err != nil {
			t.Error(err)
		}
	})
	return view
}

// TestUnwindAndReimport: unwind to block 40, re-import 41..54, and every
// height reads exactly as history.json says again.
func TestUnwindAndReimport(t *testing.T) {
	db, g := chaintest.ImportedStore(t)
	blocks := chaintest.Blocks(t)
	w := chaintest.StartWriter(t, db, g)
	if err := w.UnwindTo(40, nil); err != nil {
		t.Fatal(err)
	}
	if n := w.Head().Number(); n != 40 {
		t.Fatalf("in-memory head after unwind = %d", n)
	}
	view := openView(t, db)
	if n, err := view.Tag(store.TagLatest); err != nil || n != 40 {
		t.Fatalf("latest after unwind = %d, %v", n, err)
	}
	if _, err := view.StateAt(41); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("state at 41 after unwind: %v, want ErrNotFound", err)
	}
	for _, b := range blocks[40:] {
		if err := w.ImportBlock(b); err != nil {
			t.Fatal(err)
		}
	}
	view = openView(t, db)
	if h, err := view.CanonicalHash(54); err != nil || h.Hex() != chaintest.HeadHash {
		t.Fatalf("head after re-import %s, %v", h.Hex(), err)
	}
	checkHistory(t, view, chaintest.LoadHistory(t), 0, 54)
}

// TestReorgOntoOtherBranch is a real reorg. go-ethereum's chain maker builds
// a common ancestor and two different branches on it: A (longer, its own
// coinbase, new accounts, SELFDESTRUCTs, a re-creation) and B (other
// transactions, an EIP-158 removal, storage writes A never made). The store
// imports A, unwinds to the ancestor and imports B; it must then hold branch
// B and nothing of A: head, canonical hashes, bodies, receipts and
// transaction lookups are B's, A's blocks and transactions are gone, and the
// state at every height equals go-ethereum's trie-backed state of B.
func TestReorgOntoOtherBranch(t *testing.T) {
	for _, tc := range gethCases() {
		t.Run(tc.name, func(t *testing.T) { runReorg(t, tc.config, tc.engine) })
	}
}

func runReorg(t *testing.T, config *params.ChainConfig, engine consensus.Engine) {
	gg := newGethGenesis(config, engine)
	var (
		killer, factory, empty, child = killerAddr, factoryAddr, emptyAddr, childAddr
		shared                        = common.HexToAddress("0x0000000000000000000000000000000000005a5a")
		aOnly1                        = common.HexToAddress("0x000000000000000000000000000000000000aa01")
		aOnly2                        = common.HexToAddress("0x000000000000000000000000000000000000aa02")
		bOnly                         = common.HexToAddress("0x000000000000000000000000000000000000bb01")
		coinbaseA                     = common.HexToAddress("0x000000000000000000000000000000000000aaaa")
		coinbaseB                     = common.HexToAddress("0x000000000000000000000000000000000000bbbb")
		send                          = gg.send
	)
	const ancestor = 2
	gdb, prefix, _ := core.GenerateChainWithGenesis(gg.gspec, engine, ancestor, func(i int, b *core.BlockGen) {
		switch i {
		case 0: // 1: create child (slot0 = 1), fund shared
			send(b, &factory, 0, childInit)
			send(b, &shared, 1, nil)
		case 1: // 2: killer slot4 = 1
			send(b, &killer, 0, nil)
		}
	})
	branchA, _ := core.GenerateChain(config, prefix[ancestor-1], engine, gdb, 4, func(i int, b *core.BlockGen) {
		b.SetCoinbase(coinbaseA)
		switch i {
		case 0: // 3: new account; child selfdestructs
			send(b, &aOnly1, 1000, nil)
			send(b, &child, 0, []byte{1})
		case 1: // 4: killer selfdestructs (its storage goes pre-Cancun)
			send(b, &killer, 0, []byte{1})
		case 2: // 5: re-create child (fails post-Cancun: it still exists)
			send(b, &factory, 0, childInit)
		case 3: // 6: another new account
			send(b, &aOnly2, 5, nil)
		}
	})
	branchB, _ := core.GenerateChain(config, prefix[ancestor-1], engine, gdb, 3, func(i int, b *core.BlockGen) {
		b.SetCoinbase(coinbaseB)
		switch i {
		case 0: // 3: new account; child slot4 = 1
			send(b, &bOnly, 2000, nil)
			send(b, &child, 0, nil)
		case 1: // 4: touch empty: removed (EIP-158)
			send(b, &empty, 0, nil)
		case 2: // 5: killer gets value and writes slot4 again; shared gets more
			send(b, &killer, 7, nil)
			send(b, &shared, 2, nil)
		}
	})

	db, g, im := gg.initStore(t)
	chainA := append(append([]*types.Block{g.Block}, prefix...), branchA...)
	chainB := append(append([]*types.Block{g.Block}, prefix...), branchB...)
	// The branches really differ: every block above the ancestor and every
	// transaction of A is A's alone.
	for i := range branchB {
		if branchA[i].Hash() == branchB[i].Hash() {
			t.Fatalf("block %d is the same on both branches", branchB[i].NumberU64())
		}
	}
	aOnlyTxs := branchTxs(branchA)
	for h := range branchTxs(branchB) {
		if _, ok := aOnlyTxs[h]; ok {
			t.Fatalf("transaction %s is on both branches", h.Hex())
		}
	}

	for _, b := range chainA[1:] {
		if err := im.ImportBlock(chaintypes.FromEthBlock(b)); err != nil {
			t.Fatalf("import A block %d: %v", b.NumberU64(), err)
		}
	}
	checkCanonicalChain(t, openView(t, db), chainA)
	checkStateAgainstGeth(t, openView(t, db), gdb, chainA)
	cachedA := warmStateCache(t, openView(t, db))

	if err := im.UnwindTo(ancestor, nil); err != nil {
		t.Fatal(err)
	}
	view := openView(t, db)
	checkCanonicalChain(t, view, chainA[:ancestor+1])
	checkGone(t, view, branchA, ancestor)

	for _, b := range branchB {
		if err := im.ImportBlock(chaintypes.FromEthBlock(b)); err != nil {
			t.Fatalf("import B block %d: %v", b.NumberU64(), err)
		}
	}
	view = openView(t, db)
	checkCanonicalChain(t, view, chainB)
	checkGone(t, view, branchA, chainB[len(chainB)-1].NumberU64())
	checkStateAgainstGeth(t, view, gdb, chainB)
	checkPointReadsAgainstGeth(t, view, gdb, chainB[len(chainB)-1].Header(), cachedA)
	// What A changed and B did not is back to B's state (the geth oracle
	// above covers it; these say the scenario's intent).
	r := stateAt(t, view, uint64(len(chainB)-1))
	for _, addr := range []common.Address{aOnly1, aOnly2, coinbaseA, empty} {
		if acc, err := r.Account(addr); err != nil || acc != nil {
			t.Errorf("account %s after the reorg: %+v, %v; want absent", addr, acc, err)
		}
	}
	for _, addr := range []common.Address{bOnly, coinbaseB, killer, child} {
		if acc, err := r.Account(addr); err != nil || acc == nil {
			t.Errorf("account %s after the reorg: %v, %v; want present", addr, acc, err)
		}
	}
	for _, addr := range []common.Address{killer, child} {
		if v, err := r.Storage(addr, common.Hash{31: 4}); err != nil || v != (common.Hash{31: 1}) {
			t.Errorf("%s slot 4 after the reorg = %s, %v; want 1", addr, v.Hex(), err)
		}
	}
}

// branchTxs is the set of transaction hashes of blocks.
func branchTxs(blocks []*types.Block) map[common.Hash]struct{} {
	txs := make(map[common.Hash]struct{})
	for _, b := range blocks {
		for _, tx := range b.Transactions() {
			txs[tx.Hash()] = struct{}{}
		}
	}
	return txs
}

// checkCanonicalChain checks that view holds exactly blocks (blocks[n] is
// block n) as the canonical chain: the latest tag is the last block, every
// height's canonical hash, hash->number entry, header, body and receipts are
// that block's, every transaction looks up to its block and index, and
// nothing is canonical above it.
func checkCanonicalChain(t *testing.T, view store.View, blocks []*types.Block) {
	t.Helper()
	head := uint64(len(blocks) - 1)
	if n, err := view.Tag(store.TagLatest); err != nil || n != head {
		t.Fatalf("latest = %d, %v; want %d", n, err, head)
	}
	for n, b := range blocks {
		num, hash := uint64(n), b.Hash()
		if got, err := view.CanonicalHash(num); err != nil || got != hash {
			t.Fatalf("canonical hash %d = %s, %v; want %s", num, got.Hex(), err, hash.Hex())
		}
		if got, err := view.NumberByHash(hash); err != nil || got != num {
			t.Fatalf("number of %s = %d, %v; want %d", hash.Hex(), got, err, num)
		}
		if h, err := view.Header(num, hash); err != nil || h.Hash() != hash {
			t.Fatalf("header %d: %v", num, err)
		}
		body, err := view.Body(num, hash)
		if err != nil {
			t.Fatalf("body %d: %v", num, err)
		}
		if len(body.Transactions) != len(b.Transactions()) {
			t.Fatalf("body %d has %d transactions, want %d", num, len(body.Transactions), len(b.Transactions()))
		}
		receipts, err := view.Receipts(num, hash)
		if err != nil || len(receipts) != len(b.Transactions()) {
			t.Fatalf("receipts %d: %d, %v; want %d", num, len(receipts), err, len(b.Transactions()))
		}
		for i, tx := range b.Transactions() {
			if body.Transactions[i].Hash() != tx.Hash() {
				t.Fatalf("block %d transaction %d is %s, want %s", num, i, body.Transactions[i].Hash().Hex(), tx.Hash().Hex())
			}
			want := store.TxLookup{BlockHash: hash, BlockNumber: num, Index: uint64(i)}
			if got, err := view.TxLookup(tx.Hash()); err != nil || got != want {
				t.Fatalf("lookup of %s = %+v, %v; want %+v", tx.Hash().Hex(), got, err, want)
			}
		}
	}
	if h, err := view.CanonicalHash(head + 1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("canonical hash above the head %d: %s, %v; want ErrNotFound", head, h.Hex(), err)
	}
	if _, err := view.StateAt(head + 1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("state above the head %d: %v, want ErrNotFound", head, err)
	}
}

// checkGone checks that view holds nothing of the abandoned blocks above
// height: no hash->number entry, no transaction lookup, no canonical hash
// or state above the head.
func checkGone(t *testing.T, view store.View, abandoned []*types.Block, head uint64) {
	t.Helper()
	for _, b := range abandoned {
		if n, err := view.NumberByHash(b.Hash()); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("abandoned block %s still maps to %d (%v)", b.Hash().Hex(), n, err)
		}
		for _, tx := range b.Transactions() {
			if got, err := view.TxLookup(tx.Hash()); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("abandoned transaction %s still looks up to %+v (%v)", tx.Hash().Hex(), got, err)
			}
		}
	}
	last := abandoned[len(abandoned)-1].NumberU64()
	for n := head + 1; n <= last; n++ {
		if h, err := view.CanonicalHash(n); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("canonical hash %d above the head %d: %s, %v; want ErrNotFound", n, head, h.Hex(), err)
		}
		if _, err := view.StateAt(n); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("state %d above the head %d: %v, want ErrNotFound", n, head, err)
		}
	}
}

// checkStateAgainstGeth compares the flat state of view at every height n
// with go-ethereum's trie-backed state after blocks[n] (read from gdb, the
// database of its chain maker): the flat state hashes to the header's root,
// and every account and slot it holds reads as go-ethereum's does.
func checkStateAgainstGeth(t *testing.T, view store.View, gdb ethdb.Database, blocks []*types.Block) {
	t.Helper()
	headers := make([]*types.Header, len(blocks))
	for n, b := range blocks {
		headers[n] = b.Header()
	}
	checkRoots(t, view, headers)
	tdb := triedb.NewDatabase(gdb, triedb.HashDefaults)
	defer tdb.Close()
	sdb := state.NewMPTDatabase(tdb, state.NewCodeDB(gdb))
	for n, h := range headers {
		geth, err := state.New(h.Root, sdb)
		if err != nil {
			t.Fatalf("go-ethereum state of block %d: %v", n, err)
		}
		r := stateAt(t, view, uint64(n))
		accounts := 0
		err = r.ForEachAccount(func(addr common.Address, acc *store.Account) error {
			accounts++
			if !geth.Exist(addr) || acc.Nonce != geth.GetNonce(addr) || !acc.Balance.Eq(geth.GetBalance(addr)) || acc.CodeHash != geth.GetCodeHash(addr) {
				t.Errorf("block %d %s: nonce %d balance %s code %s; go-ethereum exists %v, %d, %s, %s", n, addr,
					acc.Nonce, acc.Balance, acc.CodeHash.Hex(), geth.Exist(addr), geth.GetNonce(addr), geth.GetBalance(addr), geth.GetCodeHash(addr).Hex())
			}
			code, err := r.Code(acc.CodeHash)
			if err != nil {
				return err
			}
			if !bytes.Equal(code, geth.GetCode(addr)) {
				t.Errorf("block %d %s: code differs from go-ethereum's", n, addr)
			}
			return r.ForEachStorage(addr, func(slot, value common.Hash) error {
				if want := geth.GetState(addr, slot); value != want {
					t.Errorf("block %d %s slot %s = %s, go-ethereum %s", n, addr, slot.Hex(), value.Hex(), want.Hex())
				}
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := geth.Error(); err != nil {
			t.Fatalf("go-ethereum state of block %d: %v", n, err)
		}
		if accounts == 0 {
			t.Fatalf("block %d: no accounts compared", n)
		}
	}
}

func TestGenesisMismatchRefused(t *testing.T) {
	db, g, _ := chaintest.GenesisStore(t)
	if err := chain.InitGenesis(db, g); err != nil {
		t.Fatalf("same genesis twice: %v", err)
	}
	var spec map[string]any
	if err := json.Unmarshal(g.Spec, &spec); err != nil {
		t.Fatal(err)
	}
	spec["extraData"] = "0x1234"
	other, _ := json.Marshal(spec)
	g2, err := chain.ParseGenesis(other)
	if err != nil {
		t.Fatal(err)
	}
	if err := chain.InitGenesis(db, g2); !errors.Is(err, store.ErrGenesisMismatch) {
		t.Fatalf("different genesis: %v, want ErrGenesisMismatch", err)
	}
}

// TestLoadGenesis: the chain loaded from a store (stored config + block 0
// header, no alloc parse) is the one parsed from the genesis file; a store
// of format 2, initialised before the config was stored, gets the same
// config from migration 3.
func TestLoadGenesis(t *testing.T) {
	db, g, _ := chaintest.GenesisStore(t)
	check := func(what string) {
		t.Helper()
		view := openView(t, db)
		got, err := chain.LoadGenesis(view)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got.Block.Hash() != g.Block.Hash() || got.Block.Time() != g.Block.Time() {
			t.Fatalf("%s: genesis %s, want %s", what, got.Block.Hash().Hex(), g.Block.Hash().Hex())
		}
		want, _ := json.Marshal(g.Config)
		have, _ := json.Marshal(got.Config)
		if string(want) != string(have) {
			t.Fatalf("%s: config differs:\n%s\n%s", what, have, want)
		}
	}
	check("stored config")
	rb, err := db.NewRawBatch()
	if err != nil {
		t.Fatal(err)
	}
	if err := rb.Delete(store.ChainConfigKey()); err != nil {
		t.Fatal(err)
	}
	// A format-2 store holds the spec as one value (migration 4 chunks it).
	if err := rb.Set(store.LegacyGenesisSpecKey(), g.Spec); err != nil {
		t.Fatal(err)
	}
	if err := rb.SetFormatVersion(store.FormatPendingJournal); err != nil {
		t.Fatal(err)
	}
	if err := rb.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.View(); !errors.Is(err, store.ErrSchemaOutdated) {
		t.Fatalf("view of a format-2 store: %v, want ErrSchemaOutdated", err)
	}
	if err := migrations.Run(db, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	check("config from migration 3")
}
