package store

import (
	"context"
	"errors"
	"math/big"
	"path/filepath"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/holiman/uint256"
	"github.com/rs/zerolog"
)

// anchorHeaders returns a genesis header and a linked chain of headers
// from..to (block from's parent is a made-up hash).
func anchorHeaders(from, to uint64) (*types.Header, []*types.Header) {
	g := &types.Header{Number: big.NewInt(0), Difficulty: big.NewInt(1), GasLimit: 30_000_000}
	var hs []*types.Header
	parent := common.Hash{0xaa}
	for n := from; n <= to; n++ {
		h := &types.Header{ParentHash: parent, Number: new(big.Int).SetUint64(n), Difficulty: big.NewInt(1), GasLimit: 30_000_000, Time: n,
			Root: common.BigToHash(new(big.Int).SetUint64(n))}
		hs = append(hs, h)
		parent = h.Hash()
	}
	return g, hs
}

// TestStateImportAnchor: an import at block 300 reads its state at 300,
// refuses state below (naming the anchor and the block's root) and history
// below the history anchor, keeps the anchor across reopen, and refuses
// unwinds below it.
func TestStateImportAnchor(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultConfig(filepath.Join(dir, "db"))
	db, err := Open(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	const anchor = 300
	si, err := db.NewStateImport(filepath.Join(dir, "tmp"), anchor, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	a1, a2 := common.Address{1}, common.Address{2}
	code := []byte{0x60, 0x00}
	codeHash := crypto.Keccak256Hash(code)
	for i := range 5000 { // enough to spill the 1 MiB sort buffer
		slot := common.BigToHash(big.NewInt(int64(i)))
		if err := si.Storage(a2, slot, common.BigToHash(big.NewInt(int64(i+1)))); err != nil {
			t.Fatal(err)
		}
	}
	must(t, si.Account(a1, &Account{Nonce: 3, Balance: uint256.NewInt(7), CodeHash: types.EmptyCodeHash}))
	must(t, si.Account(a2, &Account{Nonce: 1, Balance: uint256.NewInt(0), CodeHash: codeHash}))
	must(t, si.Code(codeHash, code))
	must(t, si.Code(codeHash, code))
	g, hs := anchorHeaders(anchor-256, anchor)
	// The anchor block's header names the imported state's root: the
	// import builds the trie and checks it.
	slots := make(map[common.Hash]common.Hash)
	for i := range 5000 {
		slots[common.BigToHash(big.NewInt(int64(i)))] = common.BigToHash(big.NewInt(int64(i + 1)))
	}
	hs[len(hs)-1].Root = oracleRoot(t, map[common.Address]*Account{
		a1: {Nonce: 3, Balance: uint256.NewInt(7), CodeHash: types.EmptyCodeHash},
		a2: {Nonce: 1, Balance: uint256.NewInt(0), CodeHash: codeHash},
	}, map[common.Address]map[common.Hash]common.Hash{a2: slots})
	stats, err := si.Commit(context.Background(), &AnchorWrite{Genesis: g, Headers: hs, Spec: []byte(`{"config":{}}`), Config: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	must(t, si.Close())
	if stats.Accounts != 2 || stats.Slots != 5000 || stats.Codes != 1 || stats.Tables == 0 {
		t.Fatalf("stats %+v", stats)
	}
	check := func(db *DB) {
		t.Helper()
		if a := db.Anchor(); a.State != anchor || a.History != anchor+1 {
			t.Fatalf("anchor %+v", a)
		}
		v, err := db.View()
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		if n, err := v.Tag(TagFinalized); err != nil || n != anchor {
			t.Fatalf("finalized %d %v", n, err)
		}
		st, err := v.StateAt(anchor)
		if err != nil {
			t.Fatal(err)
		}
		acc, err := st.Account(a1)
		if err != nil || acc.Nonce != 3 || acc.Balance.Uint64() != 7 {
			t.Fatalf("account %+v %v", acc, err)
		}
		val, err := st.Storage(a2, common.BigToHash(big.NewInt(4999)))
		if err != nil || val != common.BigToHash(big.NewInt(5000)) {
			t.Fatalf("slot %s %v", val, err)
		}
		if c, err := st.Code(codeHash); err != nil || len(c) != 2 {
			t.Fatalf("code %x %v", c, err)
		}
		below, err := v.StateAt(anchor - 1)
		if err != nil {
			t.Fatal(err)
		}
		_, err = below.Account(a1)
		var pe *PrunedStateError
		if !errors.As(err, &pe) || pe.Anchor != anchor || pe.Number != anchor-1 || pe.Root != hs[len(hs)-2].Root {
			t.Fatalf("state below the anchor: %v", err)
		}
		h := hs[len(hs)-1]
		if _, err := v.Body(anchor, h.Hash()); !errors.Is(err, ErrPrunedHistory) {
			t.Fatalf("body of the anchor without history: %v", err)
		}
		if hash, err := v.CanonicalHash(anchor - 256); err != nil || hash != hs[0].Hash() {
			t.Fatalf("canonical %d: %s %v", anchor-256, hash, err)
		}
		if _, err := v.CanonicalHash(anchor - 257); !errors.Is(err, ErrNotFound) {
			t.Fatalf("canonical below the headers: %v", err)
		}
	}
	check(db)
	if err := db.UnwindTo(anchor - 1); !errors.Is(err, ErrBelowAnchor) {
		t.Fatalf("unwind below the anchor: %v", err)
	}
	must(t, db.Close())
	db, err = Open(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	check(db)
	if _, err := db.NewStateImport(filepath.Join(dir, "tmp"), anchor, 1<<20); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("second import: %v", err)
	}
}

// TestStateImportDuplicate: an account given twice refuses the import and
// leaves the store empty.
func TestStateImportDuplicate(t *testing.T) {
	db := openTest(t)
	si, err := db.NewStateImport(t.TempDir(), 10, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer si.Close()
	acc := &Account{Balance: uint256.NewInt(1), CodeHash: types.EmptyCodeHash}
	must(t, si.Account(common.Address{9}, acc))
	must(t, si.Account(common.Address{9}, acc))
	g, hs := anchorHeaders(5, 10)
	_, err = si.Commit(context.Background(), &AnchorWrite{Genesis: g, Headers: hs, Spec: []byte(`{}`), Config: []byte(`{}`)})
	if !errors.Is(err, ErrInvalidWrite) {
		t.Fatalf("duplicate account: %v", err)
	}
	if _, err := db.Latest(); !errors.Is(err, ErrNotFound) {
		t.Fatalf("store after a refused import: latest %v", err)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestStateImportSpecWriter: a spec streamed through SpecWriter (in
// pieces of any size) is stored in the same chunks as one given whole in
// AnchorWrite.Spec, for the empty spec, a short one and sizes around
// whole chunks; both at once are refused.
func TestStateImportSpecWriter(t *testing.T) {
	for _, size := range []int{0, 1, genesisSpecChunk - 1, genesisSpecChunk, genesisSpecChunk + 1, 3 * genesisSpecChunk, 3*genesisSpecChunk + 17} {
		spec := make([]byte, size)
		for i := range spec {
			spec[i] = byte(i*7 + i>>9)
		}
		chunks := func(streamed bool) map[string]string {
			db := openTest(t)
			si, err := db.NewStateImport(t.TempDir(), 0, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			defer si.Close()
			g, _ := anchorHeaders(1, 0)
			a := &AnchorWrite{Genesis: g, Headers: []*types.Header{g}, Config: []byte(`{}`)}
			if streamed {
				w := si.SpecWriter()
				for rest, step := spec, 1; len(rest) > 0; step = step*3 + 1 {
					n := min(step, len(rest))
					if k, err := w.Write(rest[:n]); err != nil || k != n {
						t.Fatal(k, err)
					}
					rest = rest[n:]
				}
			} else {
				a.Spec = spec
			}
			if _, err := si.Commit(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			out := make(map[string]string)
			must(t, db.RawScan([]byte{prefixGenesisSpc}, []byte{prefixGenesisSpc + 1}, func(k, v []byte) error {
				out[string(k)] = string(v)
				return nil
			}))
			view, err := db.View()
			if err != nil {
				t.Fatal(err)
			}
			defer view.Close()
			if got, err := view.GenesisSpec(); err != nil || string(got) != string(spec) {
				t.Fatalf("size %d streamed %v: spec read back %d bytes, %v", size, streamed, len(got), err)
			}
			return out
		}
		whole, streamed := chunks(false), chunks(true)
		if len(whole) != len(streamed) || len(whole) == 0 {
			t.Fatalf("size %d: %d chunks streamed, %d given whole", size, len(streamed), len(whole))
		}
		for k, v := range whole {
			if streamed[k] != v {
				t.Fatalf("size %d: chunk %x differs", size, k)
			}
		}
	}
	db := openTest(t)
	si, err := db.NewStateImport(t.TempDir(), 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer si.Close()
	si.SpecWriter().Write([]byte("{}"))
	g, _ := anchorHeaders(1, 0)
	if _, err := si.Commit(context.Background(), &AnchorWrite{Genesis: g, Headers: []*types.Header{g}, Spec: []byte("{}"), Config: []byte(`{}`)}); !errors.Is(err, ErrInvalidWrite) {
		t.Fatalf("spec streamed and given: %v", err)
	}
}
