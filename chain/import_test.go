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
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/store"
)

func readBlocks(t *testing.T) []*types.Block {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chaintest.Dir(t), "chain", "chain.rlp"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []*types.Block
	s := rlp.NewStream(bytes.NewReader(data), 0)
	for {
		b := new(types.Block)
		if err := s.Decode(b); err != nil {
			break
		}
		blocks = append(blocks, b)
	}
	return blocks
}

type historyAccount struct {
	Balance *hexutil.Big                `json:"balance"`
	Nonce   hexutil.Uint64              `json:"nonce"`
	Code    hexutil.Bytes               `json:"code"`
	Storage map[common.Hash]common.Hash `json:"storage"`
}

type history struct {
	Blocks map[string]map[common.Address]historyAccount `json:"blocks"`
}

func loadHistory(t *testing.T) history {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chaintest.Dir(t), "history.json"))
	if err != nil {
		t.Fatal(err)
	}
	var h history
	if err := json.Unmarshal(data, &h); err != nil {
		t.Fatal(err)
	}
	return h
}

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
		hash, _ := view.CanonicalHash(n)
		h, err := view.Header(n, hash)
		if err != nil {
			t.Fatal(err)
		}
		if root := flatRoot(t, view, n); root != h.Root {
			t.Errorf("block %d: state root of flat state %s, header %s", n, root.Hex(), h.Root.Hex())
		}
	}
}

// TestHistoryAtEveryHeight checks balance, nonce, code and every slot of
// every account in history.json at every block 0..54, and headstate.json at
// the head.
func TestHistoryAtEveryHeight(t *testing.T) {
	db, _ := chaintest.ImportedStore(t)
	h := loadHistory(t)
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
	r, err := view.StateAt(54)
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range dump.Accounts {
		acc, err := r.Account(addr)
		if err != nil || acc == nil {
			t.Fatalf("headstate %s: account missing (%v)", addr, err)
		}
		bal, _ := new(big.Int).SetString(want.Balance, 10)
		if acc.Balance.ToBig().Cmp(bal) != 0 || acc.Nonce != want.Nonce {
			t.Errorf("headstate %s: balance/nonce %s/%d, want %s/%d", addr, acc.Balance, acc.Nonce, bal, want.Nonce)
		}
		code, _ := r.Code(acc.CodeHash)
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

func checkHistory(t *testing.T, view store.View, h history, from, to uint64) {
	t.Helper()
	checked := 0
	for n := from; n <= to; n++ {
		accounts, ok := h.Blocks[hexutil.EncodeUint64(n)]
		if !ok {
			t.Fatalf("history.json has no block %d", n)
		}
		r, err := view.StateAt(n)
		if err != nil {
			t.Fatal(err)
		}
		// Every account and slot named at any height is checked at every
		// height: an absent account is empty, an absent slot zero.
		for addr := range allSlots(h) {
			want, ok := accounts[addr]
			if !ok {
				want = historyAccount{Balance: (*hexutil.Big)(new(big.Int))}
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
				want := h.Blocks[hexutil.EncodeUint64(n)][addr].Storage[slot]
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

func allSlots(h history) map[common.Address]map[common.Hash]bool {
	all := make(map[common.Address]map[common.Hash]bool)
	for _, accounts := range h.Blocks {
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
	blocks := readBlocks(t)
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
			bad := types.NewBlockWithHeader(h).WithBody(*target.Body())
			err := im.ImportBlock(bad)
			if !errors.Is(err, chain.ErrInvalidBlock) || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
				t.Fatalf("got %v, want ErrInvalidBlock mentioning %q", err, tc.want)
			}
			view, _ := db.View()
			defer view.Close()
			if n, _ := view.Tag(store.TagLatest); n != 9 {
				t.Fatalf("latest moved to %d", n)
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
	r, err := view.StateAt(n)
	if err != nil {
		t.Fatal(err)
	}
	root, err := chain.StateRoot(r)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestUnwindAndReimport: unwind to block 40, re-import 41..54, and every
// height reads exactly as history.json says again.
func TestUnwindAndReimport(t *testing.T) {
	db, g := chaintest.ImportedStore(t)
	blocks := readBlocks(t)
	w := chaintest.StartWriter(t, db, g)
	if err := w.UnwindTo(40, nil); err != nil {
		t.Fatal(err)
	}
	if n := w.Head().Number(); n != 40 {
		t.Fatalf("in-memory head after unwind = %d", n)
	}
	view, err := db.View()
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := view.Tag(store.TagLatest); n != 40 {
		t.Fatalf("latest after unwind = %d", n)
	}
	if _, err := view.StateAt(41); err == nil {
		t.Fatal("state at 41 readable after unwind")
	}
	view.Close()
	for _, b := range blocks[40:] {
		if err := w.ImportBlock(b); err != nil {
			t.Fatal(err)
		}
	}
	view, err = db.View()
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	if h, _ := view.CanonicalHash(54); h.Hex() != chaintest.HeadHash {
		t.Fatalf("head after re-import %s", h.Hex())
	}
	checkHistory(t, view, loadHistory(t), 0, 54)
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
