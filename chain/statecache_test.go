package chain_test

import (
	"bytes"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/triedb"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/store"
)

// TestStateCacheMatchesHistory imports the conformance chain block by block
// and, after each block, reads every account, code and slot of history.json
// at the new latest block twice through a fresh view (the first read fills
// the state cache, the second is answered by it), and once more through
// the view of the block before (whose latest the cache has moved past).
// Then it unwinds to block 40 and re-imports the rest with the same checks:
// every answer must equal the oracle, so the cache is never stale across
// block writes, unwinds and re-imports of the same heights.
func TestStateCacheMatchesHistory(t *testing.T) {
	db, _, w := chaintest.GenesisStore(t)
	h := chaintest.LoadHistory(t)
	blocks := chaintest.Blocks(t)
	checkLatest := func(prev store.View) store.View {
		t.Helper()
		view := openView(t, db)
		n, err := view.Tag(store.TagLatest)
		if err != nil {
			t.Fatal(err)
		}
		checkHistory(t, view, h, n, n)
		checkHistory(t, view, h, n, n)
		if prev != nil {
			m, _ := prev.Tag(store.TagLatest)
			checkHistory(t, prev, h, m, m)
		}
		return view
	}
	prev := checkLatest(nil)
	for _, b := range blocks {
		if err := w.ImportBlock(b); err != nil {
			t.Fatal(err)
		}
		prev = checkLatest(prev)
	}
	before := db.StateCacheStats()
	if before.Hits == 0 || before.Entries == 0 {
		t.Fatalf("the state cache was not used: %+v", before)
	}
	if err := w.UnwindTo(40, nil); err != nil {
		t.Fatal(err)
	}
	// The view of block 54 taken before the unwind still reads block 54.
	checkHistory(t, prev, h, 54, 54)
	prev = checkLatest(nil)
	for _, b := range blocks[40:] {
		if err := w.ImportBlock(b); err != nil {
			t.Fatal(err)
		}
		prev = checkLatest(prev)
	}
	if after := db.StateCacheStats(); after.Hits <= before.Hits {
		t.Fatalf("no cache hits after the unwind: %+v then %+v", before, after)
	}
}

// TestStateCacheDisabled: with StateCacheBytes 0 nothing is cached and the
// answers are the same.
func TestStateCacheDisabled(t *testing.T) {
	cfg := store.DefaultConfig(t.TempDir())
	cfg.StateCacheBytes, cfg.MinFreeBytes, cfg.SyncWrites = 0, 0, false
	db, err := store.Open(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	g := chaintest.Genesis(t)
	if err := chain.InitGenesis(db, g); err != nil {
		t.Fatal(err)
	}
	w := chaintest.StartWriter(t, db, g)
	for _, b := range chaintest.Blocks(t) {
		if err := w.ImportBlock(b); err != nil {
			t.Fatal(err)
		}
	}
	view := openView(t, db)
	h := chaintest.LoadHistory(t)
	checkHistory(t, view, h, 54, 54)
	checkHistory(t, view, h, 50, 54)
	if s := db.StateCacheStats(); s.Hits != 0 || s.Entries != 0 || s.MaxBytes != 0 {
		t.Fatalf("disabled cache used: %+v", s)
	}
}

// stateKeys is every account and slot of a state, to read again later.
type stateKeys map[common.Address][]common.Hash

// warmStateCache point-reads every account (with its code) and every slot
// of the view's latest state, which fills the state cache, and returns
// them.
func warmStateCache(t *testing.T, view store.View) stateKeys {
	t.Helper()
	n, err := view.Tag(store.TagLatest)
	if err != nil {
		t.Fatal(err)
	}
	r := stateAt(t, view, n)
	keys := make(stateKeys)
	err = r.ForEachAccount(func(addr common.Address, _ *store.Account) error {
		keys[addr] = nil
		return r.ForEachStorage(addr, func(slot, _ common.Hash) error {
			keys[addr] = append(keys[addr], slot)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	for addr, slots := range keys {
		acc, err := r.Account(addr)
		if err != nil || acc == nil {
			t.Fatalf("warm %s: %v, %v", addr, acc, err)
		}
		if _, err := r.Code(acc.CodeHash); err != nil {
			t.Fatal(err)
		}
		for _, slot := range slots {
			if _, err := r.Storage(addr, slot); err != nil {
				t.Fatal(err)
			}
		}
	}
	return keys
}

// checkPointReadsAgainstGeth point-reads keys (and every account and slot
// of the head itself) at the view's latest block, head, and compares them
// with go-ethereum's state of that block: accounts and slots cached on a
// branch that a reorg replaced must read as the new branch has them.
func checkPointReadsAgainstGeth(t *testing.T, view store.View, gdb ethdb.Database, head *types.Header, keys stateKeys) {
	t.Helper()
	tdb := triedb.NewDatabase(gdb, triedb.HashDefaults)
	defer tdb.Close()
	geth, err := state.New(head.Root, state.NewMPTDatabase(tdb, state.NewCodeDB(gdb)))
	if err != nil {
		t.Fatal(err)
	}
	all := warmStateCache(t, view) // the new branch's own entities, read twice
	for addr, slots := range keys {
		all[addr] = append(all[addr], slots...)
	}
	r := stateAt(t, view, head.Number.Uint64())
	compared := 0
	for addr, slots := range all {
		acc, err := r.Account(addr)
		if err != nil {
			t.Fatal(err)
		}
		if acc == nil {
			if geth.Exist(addr) {
				t.Errorf("%s absent at %d, go-ethereum has it", addr, head.Number)
			}
		} else {
			code, err := r.Code(acc.CodeHash)
			if err != nil {
				t.Fatal(err)
			}
			if !geth.Exist(addr) || acc.Nonce != geth.GetNonce(addr) || !acc.Balance.Eq(geth.GetBalance(addr)) ||
				!bytes.Equal(code, geth.GetCode(addr)) {
				t.Errorf("%s at %d: nonce %d balance %s; go-ethereum exists %v, %d, %s", addr, head.Number,
					acc.Nonce, acc.Balance, geth.Exist(addr), geth.GetNonce(addr), geth.GetBalance(addr))
			}
		}
		for _, slot := range slots {
			got, err := r.Storage(addr, slot)
			if err != nil {
				t.Fatal(err)
			}
			if want := geth.GetState(addr, slot); got != want {
				t.Errorf("%s slot %s at %d = %s, go-ethereum %s", addr, slot.Hex(), head.Number, got.Hex(), want.Hex())
			}
			compared++
		}
		compared++
	}
	if compared == 0 {
		t.Fatal("nothing compared")
	}
}
