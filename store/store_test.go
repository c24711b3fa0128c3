package store

import (
	"github.com/tipnode/tipnode/store/chaintypes"

	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/holiman/uint256"
	"github.com/rs/zerolog"
)

// TestComparer checks the comparer against Pebble v2's Comparer contract
// over our key space: Split on every key shape, prefix-then-suffix ordering,
// empty suffix first, Equal agreeing with Compare, and safe separators.
// pebble.CheckComparer also demands that prefixes stay valid after dropping
// leading bytes (synthetic prefixes, which tipnode never uses); a split that
// recognises versioned keys by table byte and length cannot meet that, so it
// is run on the unversioned key space and the rest is checked here.
func TestComparer(t *testing.T) {
	c := newComparer()
	a1, a2 := common.Address{1}, common.Address{2}
	s1, s2 := common.Hash{1}, common.Hash{0xff}
	prefixes := [][]byte{
		accountKey(a1, 0)[:accountEntityLen], accountKey(a2, 0)[:accountEntityLen],
		storageEntity(a1, s1), storageEntity(a1, s2), storageEntity(a2, s1),
		appendTrieEntity(nil, common.Hash{}, []byte{1, 2}), appendTrieEntity(nil, common.Hash{}, []byte{1}),
		appendTrieEntity(nil, s1, nil), appendTrieEntity(nil, s2, []byte{15, 0, 3}),
	}
	var suffixes [][]byte
	for _, n := range []uint64{0, 1, 7, 1 << 40, ^uint64(0)} {
		suffixes = append(suffixes, be8(^n))
	}
	suffixes = append(suffixes, nil) // the bare entity (seek/bound key)
	plain := [][]byte{
		headerKey(5, common.Hash{3}), canonicalKey(9), tagKey(TagLatest), keySchemaVersion,
		{prefixAccount}, {prefixStorage}, storageAddrPrefix(a1), prefixEnd(storageAddrPrefix(a1)),
	}
	var keys [][]byte
	for _, p := range prefixes {
		for _, s := range suffixes {
			k := append(append([]byte{}, p...), s...)
			if got := c.Split(k); got != len(p) {
				t.Fatalf("Split(%x) = %d, want %d", k, got, len(p))
			}
			keys = append(keys, k)
		}
	}
	for _, k := range plain {
		if got := c.Split(k); got != len(k) {
			t.Fatalf("Split(%x) = %d, want %d (unversioned)", k, got, len(k))
		}
		keys = append(keys, k)
	}
	for _, a := range keys {
		pa := a[:c.Split(a)]
		if c.Split(a) < len(a) && c.Compare(pa, a) >= 0 {
			t.Fatalf("bare prefix %x does not sort before %x", pa, a)
		}
		for _, b := range keys {
			pb := b[:c.Split(b)]
			got := c.Compare(a, b)
			want := bytes.Compare(pa, pb)
			if want == 0 {
				want = c.ComparePointSuffixes(a[len(pa):], b[len(pb):])
			}
			if got != want {
				t.Fatalf("Compare(%x, %x) = %d, want %d", a, b, got, want)
			}
			if c.Equal(a, b) != (got == 0) {
				t.Fatalf("Equal(%x, %x) disagrees with Compare", a, b)
			}
			if got < 0 {
				sep := c.Separator(nil, a, b)
				if c.Compare(a, sep) > 0 || c.Compare(sep, b) >= 0 {
					t.Fatalf("Separator(%x, %x) = %x out of range", a, b, sep)
				}
			}
			if succ := c.Successor(nil, a); c.Compare(a, succ) > 0 {
				t.Fatalf("Successor(%x) = %x sorts before it", a, succ)
			}
		}
	}
	if err := pebble.CheckComparer(c, [][]byte{{prefixHeader}, {prefixTag}, {prefixCode}}, nil); err != nil {
		t.Fatalf("pebble.CheckComparer: %v", err)
	}
}

// TestOrderingContract writes versions of a slot and an account at 3, 7 and
// 12 and reads them at every height 0..15: the read returns the newest
// version at or below the height, or absence before 3.
func TestOrderingContract(t *testing.T) {
	db := openTest(t)
	c := newTestChain(t, db, nil)
	a := addr(1)
	for n := uint64(1); n <= 15; n++ {
		d := NewStateDiff()
		if n == 3 || n == 7 || n == 12 {
			d.Accounts[a] = acct(n, n*100)
			d.Storage[a] = map[common.Hash]common.Hash{slot(1): val(int(n))}
		}
		c.add(d)
	}
	want := func(h uint64) uint64 {
		switch {
		case h >= 12:
			return 12
		case h >= 7:
			return 7
		case h >= 3:
			return 3
		}
		return 0
	}
	withView(t, db, func(v View) {
		for h := uint64(0); h <= 15; h++ {
			t.Run(fmt.Sprint(h), func(t *testing.T) {
				s := stateAt(t, v, h)
				w := want(h)
				got, err := s.Storage(a, slot(1))
				if err != nil || got != val(int(w)) {
					t.Fatalf("storage at %d = %x, %v; want version %d", h, got, err, w)
				}
				acc, err := s.Account(a)
				if err != nil {
					t.Fatal(err)
				}
				if w == 0 {
					if acc != nil {
						t.Fatalf("account at %d = %+v, want absent", h, acc)
					}
				} else if acc == nil || acc.Nonce != w || acc.Balance.Uint64() != w*100 {
					t.Fatalf("account at %d = %+v, want version %d", h, acc, w)
				}
			})
		}
		if _, err := v.StateAt(16); !errors.Is(err, ErrNotFound) {
			t.Fatalf("StateAt(16) above latest: %v, want ErrNotFound", err)
		}
	})
	// The raw order of the slot's versions is newest first.
	var versions []uint64
	if err := db.RawScan(storageEntity(a, slot(1)), prefixEnd(storageEntity(a, slot(1))), func(k, _ []byte) error {
		versions = append(versions, keyVersion(k))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(versions) != "[12 7 3]" {
		t.Fatalf("raw version order %v, want [12 7 3]", versions)
	}
}

// TestAccountDeleteRecreate: created at 2, deleted at 4, re-created at 6.
func TestAccountDeleteRecreate(t *testing.T) {
	db := openTest(t)
	a, other := addr(1), addr(2)
	c := newTestChain(t, db, diffOf(map[common.Address]*Account{other: acct(0, 1)}, nil))
	code := []byte{0x60, 0x00}
	codeHash := crypto.Keccak256Hash(code)
	for n := 1; n <= 8; n++ {
		d := NewStateDiff()
		switch n {
		case 2:
			d.Accounts[a] = &Account{Nonce: 1, Balance: uint256.NewInt(10), CodeHash: codeHash}
			d.Codes[codeHash] = code
		case 4:
			d.Accounts[a] = nil
		case 6:
			d.Accounts[a] = acct(9, 0)
		}
		c.add(d)
	}
	tests := []struct {
		h     uint64
		nonce int // -1 = absent
		code  bool
	}{{0, -1, false}, {1, -1, false}, {2, 1, true}, {3, 1, true}, {4, -1, false}, {5, -1, false}, {6, 9, false}, {7, 9, false}, {8, 9, false}}
	withView(t, db, func(v View) {
		for _, tt := range tests {
			s := stateAt(t, v, tt.h)
			acc, err := s.Account(a)
			if err != nil {
				t.Fatal(err)
			}
			var listed []common.Address
			if err := s.ForEachAccount(func(x common.Address, _ *Account) error {
				listed = append(listed, x)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if tt.nonce < 0 {
				if acc != nil || len(listed) != 1 {
					t.Fatalf("h=%d: account %+v, listed %v; want absent", tt.h, acc, listed)
				}
				continue
			}
			if acc == nil || acc.Nonce != uint64(tt.nonce) || len(listed) != 2 || listed[0] != a {
				t.Fatalf("h=%d: account %+v listed %v, want nonce %d", tt.h, acc, listed, tt.nonce)
			}
			got, err := s.Code(acc.CodeHash)
			if err != nil || (len(got) > 0) != tt.code || (tt.code && !bytes.Equal(got, code)) {
				t.Fatalf("h=%d: code %x, %v", tt.h, got, err)
			}
			if acc.Balance == nil {
				t.Fatalf("h=%d: nil balance", tt.h)
			}
		}
	})
}

// TestStorageWipe: slots set at 3, wiped at 5 (one slot re-set by the same
// diff), another slot re-set at 7; a second address is untouched.
func TestStorageWipe(t *testing.T) {
	db := openTest(t)
	a, b := addr(1), addr(2)
	c := newTestChain(t, db, nil)
	for n := 1; n <= 8; n++ {
		d := NewStateDiff()
		switch n {
		case 3:
			d.Storage[a] = map[common.Hash]common.Hash{slot(1): val(31), slot(2): val(32), slot(3): val(33)}
			d.Storage[b] = map[common.Hash]common.Hash{slot(1): val(41)}
		case 4:
			d.Storage[a] = map[common.Hash]common.Hash{slot(3): {}} // cleared before the wipe
		case 5:
			d.Wiped[a] = struct{}{}
			d.Accounts[a] = acct(0, 1)
			d.Storage[a] = map[common.Hash]common.Hash{slot(2): val(52)}
		case 7:
			d.Storage[a] = map[common.Hash]common.Hash{slot(1): val(71)}
		}
		c.add(d)
	}
	type want struct{ s1, s2, s3 int }
	tests := []struct {
		h uint64
		w want
	}{
		{0, want{}}, {1, want{}}, {2, want{}},
		{3, want{31, 32, 33}}, {4, want{31, 32, 0}},
		{5, want{0, 52, 0}}, {6, want{0, 52, 0}},
		{7, want{71, 52, 0}}, {8, want{71, 52, 0}},
	}
	withView(t, db, func(v View) {
		for _, tt := range tests {
			s := stateAt(t, v, tt.h)
			var listed []string
			if err := s.ForEachStorage(a, func(k, x common.Hash) error {
				listed = append(listed, fmt.Sprintf("%d=%d", k.Big(), x.Big()))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			var wantListed []string
			for i, w := range []int{tt.w.s1, tt.w.s2, tt.w.s3} {
				got, err := s.Storage(a, slot(i+1))
				if err != nil || got != val(w) {
					t.Fatalf("h=%d slot %d = %x, %v; want %d", tt.h, i+1, got, err, w)
				}
				if w != 0 {
					wantListed = append(wantListed, fmt.Sprintf("%d=%d", i+1, w))
				}
			}
			if fmt.Sprint(listed) != fmt.Sprint(wantListed) {
				t.Fatalf("h=%d ForEachStorage %v, want %v", tt.h, listed, wantListed)
			}
			if has := hasStorage(t, s, a); has != (len(wantListed) > 0) {
				t.Fatalf("h=%d hasStorage = %v", tt.h, has)
			}
			other, err := s.Storage(b, slot(1))
			if err != nil || (tt.h >= 3) != (other == val(41)) {
				t.Fatalf("h=%d untouched address reads %x, %v", tt.h, other, err)
			}
		}
	})
}

// randomDiff builds a deterministic diff touching a small address space with
// deletions, wipes, storage writes and code.
func randomDiff(r *rand.Rand, n uint64) *StateDiff {
	d := NewStateDiff()
	for i := 0; i < 4; i++ {
		a := addr(r.IntN(6))
		if r.IntN(5) == 0 {
			d.Accounts[a] = nil
		} else {
			code := []byte{byte(n), byte(i)}
			h := crypto.Keccak256Hash(code)
			d.Accounts[a] = &Account{Nonce: n, Balance: uint256.NewInt(r.Uint64()), CodeHash: h}
			d.Codes[h] = code
		}
	}
	for i := 0; i < 6; i++ {
		a := addr(r.IntN(6))
		if d.Storage[a] == nil {
			d.Storage[a] = map[common.Hash]common.Hash{}
		}
		v := val(r.IntN(4)) // zero a quarter of the time
		d.Storage[a][slot(r.IntN(5))] = v
	}
	if r.IntN(3) == 0 {
		d.Wiped[addr(r.IntN(6))] = struct{}{}
	}
	return d
}

// TestUnwind writes blocks 1..10, snapshots every observable read, unwinds to
// 4, checks 0..4 are unchanged and 5+ gone, rewrites 5..10 and compares.
func TestUnwind(t *testing.T) {
	db := openTest(t)
	c := newTestChain(t, db, diffOf(map[common.Address]*Account{addr(0): acct(0, 5)}, nil))
	r := rand.New(rand.NewPCG(1, 2))
	type written struct {
		block *chaintypes.Block
		rcpts chaintypes.Receipts
		diff  *StateDiff
	}
	var ws []written
	for n := uint64(1); n <= 10; n++ {
		b, rc := c.makeBlock(int(n%3)+1, 0)
		d := randomDiff(r, n)
		c.write(b, rc, d, TagSafe)
		ws = append(ws, written{b, rc, d})
	}
	var addrs []common.Address
	var slots []common.Hash
	for i := 0; i < 6; i++ {
		addrs = append(addrs, addr(i))
	}
	for i := 0; i < 5; i++ {
		slots = append(slots, slot(i))
	}
	dumpAll := func(upTo uint64) []string {
		var out []string
		withView(t, db, func(v View) {
			for h := uint64(0); h <= upTo; h++ {
				s := dumpState(t, stateAt(t, v, h), addrs, slots)
				hash, err := v.CanonicalHash(h)
				if err != nil {
					t.Fatal(err)
				}
				rs, err := v.Receipts(h, hash)
				if err != nil {
					t.Fatal(err)
				}
				body, err := v.Body(h, hash)
				if err != nil {
					t.Fatal(err)
				}
				for i, tx := range body.Transactions {
					l, err := v.TxLookup(tx.Hash())
					if err != nil || l != (TxLookup{hash, h, uint64(i)}) {
						t.Fatalf("tx lookup %s: %+v, %v", tx.Hash(), l, err)
					}
				}
				out = append(out, fmt.Sprintf("%s\nblock %d %s receipts=%d txs=%d", s, h, hash, len(rs), len(body.Transactions)))
			}
		})
		return out
	}
	before := dumpAll(10)
	if err := db.UnwindTo(4); err != nil {
		t.Fatal(err)
	}
	after := dumpAll(4)
	for h := range after {
		if after[h] != before[h] {
			t.Fatalf("height %d changed by unwind:\n%s\n---\n%s", h, before[h], after[h])
		}
	}
	withView(t, db, func(v View) {
		if _, err := v.StateAt(5); !errors.Is(err, ErrNotFound) {
			t.Fatalf("StateAt(5) after unwind: %v", err)
		}
		for _, tag := range []Tag{TagLatest, TagSafe} {
			if n, err := v.Tag(tag); err != nil || n != 4 {
				t.Fatalf("tag %s = %d, %v; want 4", tag, n, err)
			}
		}
		for _, w := range ws[4:] {
			n, h := w.block.NumberU64(), w.block.Hash()
			if _, err := v.CanonicalHash(n); !errors.Is(err, ErrNotFound) {
				t.Fatalf("canonical %d after unwind: %v", n, err)
			}
			if _, err := v.NumberByHash(h); !errors.Is(err, ErrNotFound) {
				t.Fatalf("hash->num %d after unwind: %v", n, err)
			}
			if _, err := v.Header(n, h); !errors.Is(err, ErrNotFound) {
				t.Fatalf("header %d after unwind: %v", n, err)
			}
			if _, err := v.Receipts(n, h); !errors.Is(err, ErrNotFound) {
				t.Fatalf("receipts %d after unwind: %v", n, err)
			}
			for _, tx := range w.block.Transactions() {
				if _, err := v.TxLookup(tx.Hash()); !errors.Is(err, ErrNotFound) {
					t.Fatalf("tx lookup of block %d after unwind: %v", n, err)
				}
			}
		}
	})
	// No state version above 4 survives.
	for _, p := range []byte{prefixAccount, prefixStorage} {
		if err := db.RawScan([]byte{p}, []byte{p + 1}, func(k, _ []byte) error {
			if keyVersion(k) > 4 {
				return fmt.Errorf("version key %x at %d survived", k, keyVersion(k))
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	c.blocks = c.blocks[:5]
	for _, w := range ws[4:] {
		c.write(w.block, w.rcpts, w.diff, TagSafe)
	}
	again := dumpAll(10)
	for h := range again {
		if again[h] != before[h] {
			t.Fatalf("height %d differs after rewrite:\n%s\n---\n%s", h, before[h], again[h])
		}
	}
}

// TestWriteBlockAtomicity: rejected blocks leave the store byte-identical.
func TestWriteBlockAtomicity(t *testing.T) {
	db := openTest(t)
	c := newTestChain(t, db, nil)
	c.add(diffOf(map[common.Address]*Account{addr(1): acct(1, 1)}, nil))
	good, rcpts := c.makeBlock(2, 0)
	skip := chaintypes.NewBlockWithHeader(&types.Header{ParentHash: good.Hash(), Number: bigInt(3), Difficulty: bigInt(1)})
	wrongParent := chaintypes.NewBlockWithHeader(&types.Header{ParentHash: common.Hash{9}, Number: bigInt(2), Difficulty: bigInt(1)})
	bigDiff := diffOf(map[common.Address]*Account{addr(2): acct(5, 5)},
		map[common.Address]map[common.Hash]common.Hash{addr(2): {slot(1): val(1)}}, addr(1))
	tests := []struct {
		name string
		w    *BlockWrite
		want error
	}{
		{"gap", &BlockWrite{Block: skip, Diff: bigDiff}, ErrNotContiguous},
		{"wrong parent", &BlockWrite{Block: wrongParent, Diff: bigDiff}, ErrNotContiguous},
		{"receipts mismatch", &BlockWrite{Block: good, Receipts: rcpts[:1], Diff: bigDiff}, ErrInvalidWrite},
		{"bad tag", &BlockWrite{Block: good, Receipts: rcpts, Diff: bigDiff, Tags: []Tag{"pending"}}, ErrInvalidWrite},
		{"nil block", &BlockWrite{}, ErrInvalidWrite},
		{"genesis again via WriteBlock", &BlockWrite{Block: c.blocks[0]}, ErrNotContiguous},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := rawDump(t, db)
			err := db.WriteBlock(tt.w)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if after := rawDump(t, db); after != before {
				t.Fatal("rejected write changed the store")
			}
		})
	}
	c.write(good, rcpts, bigDiff) // the valid one still goes through
	if n, err := db.Latest(); err != nil || n != 2 {
		t.Fatalf("latest = %d, %v", n, err)
	}
}

func TestWriteGenesis(t *testing.T) {
	db := openTest(t)
	if err := db.WriteBlock(&BlockWrite{Block: chaintypes.NewBlockWithHeader(&types.Header{Number: bigInt(1)})}); !errors.Is(err, ErrNoGenesis) {
		t.Fatalf("WriteBlock without genesis: %v", err)
	}
	withView(t, db, func(v View) {
		if _, err := v.StateAt(0); !errors.Is(err, ErrNotFound) {
			t.Fatalf("StateAt(0) on empty store: %v", err)
		}
		if _, err := v.Tag(TagEarliest); !errors.Is(err, ErrNotFound) {
			t.Fatalf("earliest on empty store: %v", err)
		}
	})
	a := addr(1)
	c := newTestChain(t, db, diffOf(map[common.Address]*Account{a: acct(0, 7)},
		map[common.Address]map[common.Hash]common.Hash{a: {slot(1): val(2)}}))
	g := c.blocks[0]
	if err := db.WriteGenesis(&BlockWrite{Block: g}, []byte("other spec"), nil); err != nil {
		t.Fatalf("same genesis again: %v", err)
	}
	other := chaintypes.NewBlockWithHeader(&types.Header{Number: bigInt(0), Difficulty: bigInt(2)})
	err := db.WriteGenesis(&BlockWrite{Block: other}, nil, nil)
	if !errors.Is(err, ErrGenesisMismatch) || !strings.Contains(err.Error(), g.Hash().Hex()) || !strings.Contains(err.Error(), other.Hash().Hex()) {
		t.Fatalf("different genesis: %v", err)
	}
	if err := db.WriteGenesis(&BlockWrite{Block: c.makeBlockOnly()}, nil, nil); !errors.Is(err, ErrInvalidWrite) {
		t.Fatalf("non-zero genesis: %v", err)
	}
	withView(t, db, func(v View) {
		spec, err := v.GenesisSpec()
		if err != nil || string(spec) != `{"config":{}}` {
			t.Fatalf("spec %q, %v", spec, err)
		}
		for _, tag := range []Tag{TagLatest, TagSafe, TagFinalized, TagEarliest} {
			if n, err := v.Tag(tag); err != nil || n != 0 {
				t.Fatalf("tag %s = %d, %v", tag, n, err)
			}
		}
		h, err := v.Header(0, g.Hash())
		if err != nil || h.Hash() != g.Hash() {
			t.Fatalf("genesis header: %v", err)
		}
		s := stateAt(t, v, 0)
		acc, err := s.Account(a)
		if err != nil || acc == nil || acc.Balance.Uint64() != 7 {
			t.Fatalf("genesis account %+v, %v", acc, err)
		}
		x, err := s.Storage(a, slot(1))
		if err != nil || x != val(2) {
			t.Fatalf("genesis slot %x, %v", x, err)
		}
	})
	if v, err := db.FormatVersion(); err != nil || v != FormatCurrent {
		t.Fatalf("format version after genesis %d, %v; want %d", v, err, FormatCurrent)
	}
}

// makeBlockOnly returns a child block of the head without writing it.
func (c *testChain) makeBlockOnly() *chaintypes.Block {
	b, _ := c.makeBlock(0, 1)
	return b
}

func TestViewConsistency(t *testing.T) {
	db := openTest(t)
	a := addr(1)
	c := newTestChain(t, db, diffOf(map[common.Address]*Account{a: acct(0, 1)}, nil))
	old, err := db.View()
	if err != nil {
		t.Fatal(err)
	}
	b := c.add(diffOf(map[common.Address]*Account{a: acct(1, 2)},
		map[common.Address]map[common.Hash]common.Hash{a: {slot(1): val(1)}}))
	if n, err := old.Tag(TagLatest); err != nil || n != 0 {
		t.Fatalf("old view latest = %d, %v", n, err)
	}
	if _, err := old.StateAt(1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("old view StateAt(1): %v", err)
	}
	if _, err := old.Header(1, b.Hash()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("old view sees new header: %v", err)
	}
	s := stateAt(t, old, 0)
	if x, err := s.Storage(a, slot(1)); err != nil || x != (common.Hash{}) {
		t.Fatalf("old view slot %x, %v", x, err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Account(a); !errors.Is(err, ErrClosed) {
		t.Fatalf("read from closed view: %v", err)
	}
	if err := old.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("double close: %v", err)
	}
	withView(t, db, func(v View) {
		acc, err := stateAt(t, v, 1).Account(a)
		if err != nil || acc.Nonce != 1 {
			t.Fatalf("new view account %+v, %v", acc, err)
		}
	})
}

func TestTags(t *testing.T) {
	db := openTest(t)
	c := newTestChain(t, db, nil)
	for i := 0; i < 5; i++ {
		c.add(nil)
	}
	c.add(nil, TagFinalized) // 6
	steps := []struct {
		name string
		do   func() error
		want error
		tags [3]uint64 // latest, safe, finalized after the step
	}{
		{"block tags", func() error { return nil }, nil, [3]uint64{6, 0, 6}},
		{"safe 4", func() error { return db.SetTag(TagSafe, 4) }, nil, [3]uint64{6, 4, 6}},
		{"finalized 3", func() error { return db.SetTag(TagFinalized, 3) }, nil, [3]uint64{6, 4, 3}},
		{"above latest", func() error { return db.SetTag(TagSafe, 7) }, ErrNotFound, [3]uint64{6, 4, 3}},
		{"move latest", func() error { return db.SetTag(TagLatest, 2) }, ErrInvalidWrite, [3]uint64{6, 4, 3}},
		{"latest noop", func() error { return db.SetTag(TagLatest, 6) }, nil, [3]uint64{6, 4, 3}},
		{"earliest", func() error { return db.SetTag(TagEarliest, 0) }, ErrInvalidWrite, [3]uint64{6, 4, 3}},
		{"unwind 3", func() error { return db.UnwindTo(3) }, nil, [3]uint64{3, 3, 3}},
		{"unwind noop", func() error { return db.UnwindTo(9) }, nil, [3]uint64{3, 3, 3}},
		{"unwind 1", func() error { return db.UnwindTo(1) }, nil, [3]uint64{1, 1, 1}},
	}
	for _, st := range steps {
		if err := st.do(); !errors.Is(err, st.want) || (st.want == nil && err != nil) {
			t.Fatalf("%s: err %v, want %v", st.name, err, st.want)
		}
		withView(t, db, func(v View) {
			for i, tag := range []Tag{TagLatest, TagSafe, TagFinalized} {
				if n, err := v.Tag(tag); err != nil || n != st.tags[i] {
					t.Fatalf("%s: tag %s = %d, %v; want %d", st.name, tag, n, err, st.tags[i])
				}
			}
		})
	}
}

func TestReopenSchemaAndClose(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultConfig(dir)
	db, err := Open(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	c := newTestChain(t, db, diffOf(map[common.Address]*Account{addr(1): acct(3, 3)}, nil))
	c.add(nil)
	leaked, err := db.View() // left open on purpose: Close must release it
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := leaked.Tag(TagLatest); !errors.Is(err, ErrClosed) {
		t.Fatalf("view after DB close: %v", err)
	}
	if _, err := db.View(); !errors.Is(err, ErrClosed) {
		t.Fatalf("View after close: %v", err)
	}
	if err := db.WriteBlock(&BlockWrite{Block: c.makeBlockOnly()}); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after close: %v", err)
	}

	ro := cfg
	ro.ReadOnly = true
	db, err = Open(ro, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if n, err := db.Latest(); err != nil || n != 1 {
		t.Fatalf("reopened latest %d, %v", n, err)
	}
	if err := db.WriteBlock(&BlockWrite{Block: c.makeBlockOnly()}); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("write on read-only: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = Open(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	rb, err := db.NewRawBatch()
	if err != nil {
		t.Fatal(err)
	}
	if err := rb.SetFormatVersion(FormatCurrent + 1); err != nil {
		t.Fatal(err)
	}
	if err := rb.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = Open(cfg, zerolog.Nop())
	if !errors.Is(err, ErrSchemaTooNew) || !strings.Contains(err.Error(), fmt.Sprintf("version %d", FormatCurrent+1)) ||
		!strings.Contains(err.Error(), fmt.Sprintf("up to %d", FormatCurrent)) {
		t.Fatalf("newer schema: %v", err)
	}
}

// TestCheckFormat: the version check of Open accepts a new store and every
// version in min..current, and refuses one outside naming the store's
// version and the bound it crosses. A hypothetical range 3..5 exercises the
// too-old side, which the real range (1..1, where only FormatNone is below)
// cannot reach through Open.
func TestCheckFormat(t *testing.T) {
	tests := []struct {
		v, min, cur FormatVersion
		want        error // nil: accepted
		names       []string
	}{
		{FormatNone, 3, 5, nil, nil},
		{1, 3, 5, ErrSchemaTooOld, []string{"version 1", "from 3"}},
		{2, 3, 5, ErrSchemaTooOld, []string{"version 2", "from 3"}},
		{3, 3, 5, nil, nil},
		{4, 3, 5, nil, nil},
		{5, 3, 5, nil, nil},
		{6, 3, 5, ErrSchemaTooNew, []string{"version 6", "up to 5"}},
		{FormatNone, FormatMinSupported, FormatCurrent, nil, nil},
		{FormatMinSupported, FormatMinSupported, FormatCurrent, nil, nil},
		{FormatCurrent, FormatMinSupported, FormatCurrent, nil, nil},
		{FormatCurrent + 1, FormatMinSupported, FormatCurrent, ErrSchemaTooNew,
			[]string{fmt.Sprintf("version %d", FormatCurrent+1), fmt.Sprintf("up to %d", FormatCurrent)}},
	}
	for _, tt := range tests {
		err := checkFormat(tt.v, tt.min, tt.cur)
		if tt.want == nil {
			if err != nil {
				t.Errorf("checkFormat(%d, %d..%d) = %v, want accepted", tt.v, tt.min, tt.cur, err)
			}
			continue
		}
		if !errors.Is(err, tt.want) {
			t.Errorf("checkFormat(%d, %d..%d) = %v, want %v", tt.v, tt.min, tt.cur, err, tt.want)
			continue
		}
		for _, n := range tt.names {
			if !strings.Contains(err.Error(), n) {
				t.Errorf("checkFormat(%d, %d..%d) = %q, does not name %q", tt.v, tt.min, tt.cur, err, n)
			}
		}
	}
	if FormatNone >= FormatMinSupported || FormatMinSupported > FormatCurrent {
		t.Fatalf("format bounds out of order: none %d, min %d, current %d", FormatNone, FormatMinSupported, FormatCurrent)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"default", DefaultConfig("/tmp/x"), true},
		{"zero sizes use defaults", Config{Dir: "/tmp/x"}, true},
		{"no dir", Config{}, false},
		{"tiny cache", Config{Dir: "d", CacheBytes: 10}, false},
		{"tiny memtable", Config{Dir: "d", MemtableBytes: 10}, false},
		{"cache smaller than memtables", Config{Dir: "d", CacheBytes: 64 << 20, MemtableBytes: 32 << 20}, false},
		{"huge memtable", Config{Dir: "d", MemtableBytes: 8 << 30}, false},
	}
	for _, tt := range tests {
		if err := tt.cfg.Validate(); (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalidConfig)) {
			t.Errorf("%s: Validate() = %v", tt.name, err)
		}
	}
}

func TestAccountEncoding(t *testing.T) {
	max := new(uint256.Int).SetAllOne()
	tests := []*Account{
		acct(0, 0), acct(1, 1), {Nonce: ^uint64(0), Balance: max, CodeHash: common.Hash{1}},
	}
	for _, a := range tests {
		got, err := decodeAccount(encodeAccount(a))
		if err != nil || got.Nonce != a.Nonce || !got.Balance.Eq(a.Balance) || got.CodeHash != a.CodeHash {
			t.Fatalf("roundtrip %+v -> %+v, %v", a, got, err)
		}
	}
	if got, err := decodeAccount([]byte{deletedMarker}); got != nil || err != nil {
		t.Fatalf("deleted marker: %+v, %v", got, err)
	}
}

// FuzzDecodeAccount: decoding never panics and re-encodes canonically.
func FuzzDecodeAccount(f *testing.F) {
	f.Add(encodeAccount(acct(5, 1000)))
	f.Add([]byte{deletedMarker})
	f.Add([]byte{1, 0, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		acc, err := decodeAccount(b)
		if err != nil || acc == nil {
			return
		}
		if again := encodeAccount(acc); !bytes.Equal(again, b) {
			t.Fatalf("non-canonical encoding %x accepted (re-encodes to %x)", b, again)
		}
	})
}

// FuzzDecodeChangeList: decoding never panics and round-trips.
func FuzzDecodeChangeList(f *testing.F) {
	f.Add(encodeChangeList(&changeList{accounts: []common.Address{{1}}, slots: []slotRef{{common.Address{2}, common.Hash{3}}}}))
	f.Add([]byte{0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		cl, err := decodeChangeList(b)
		if err != nil {
			return
		}
		if again := encodeChangeList(cl); !bytes.Equal(again, b) {
			t.Fatalf("change list %x re-encodes to %x", b, again)
		}
	})
}

// TestConcurrentReadsAndWrites runs readers on views while blocks are written
// (meaningful under -race): every view sees a consistent prefix of the chain.
func TestConcurrentReadsAndWrites(t *testing.T) {
	db := openTest(t)
	a := addr(1)
	c := newTestChain(t, db, diffOf(map[common.Address]*Account{a: acct(0, 0)}, nil))
	const blocks = 30
	errs := make(chan error, 4)
	stop := make(chan struct{})
	for r := 0; r < 3; r++ {
		go func() {
			for {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				v, err := db.View()
				if err != nil {
					errs <- err
					return
				}
				latest, err := v.Tag(TagLatest)
				if err == nil {
					var s StateReader
					if s, err = v.StateAt(latest); err == nil {
						var acc *Account
						if acc, err = s.Account(a); err == nil && acc.Nonce != latest {
							err = fmt.Errorf("view at %d sees nonce %d", latest, acc.Nonce)
						}
					}
				}
				if err = errors.Join(err, v.Close()); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for n := uint64(1); n <= blocks; n++ {
		c.add(diffOf(map[common.Address]*Account{a: acct(n, n)}, nil))
	}
	close(stop)
	for r := 0; r < 3; r++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestGenesisSpecChunks: specs of 0, 1, exactly one chunk, and several
// chunks plus one byte read back byte for byte; block 0 has no change list.
func TestGenesisSpecChunks(t *testing.T) {
	for _, n := range []int{0, 1, genesisSpecChunk, 3*genesisSpecChunk + 1} {
		db := openTest(t)
		spec := make([]byte, n)
		for i := range spec {
			spec[i] = byte(i * 7)
		}
		g := chaintypes.NewBlockWithHeader(&types.Header{Number: bigInt(0), Difficulty: bigInt(1)})
		if err := db.WriteGenesis(&BlockWrite{Block: g, Diff: NewStateDiff()}, spec, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		withView(t, db, func(v View) {
			got, err := v.GenesisSpec()
			if err != nil || !bytes.Equal(got, spec) {
				t.Fatalf("%d bytes: read %d bytes, %v", n, len(got), err)
			}
		})
		if _, found, err := db.RawGet(GenesisChangeListKey()); err != nil || found {
			t.Fatalf("block 0 change list: found %v, %v", found, err)
		}
	}
}

// TestWriteGenesisLargeSettled: a genesis above half a memtable (Pebble
// writes it as its own L0 tables) leaves L0 empty after WriteGenesis, its
// tables moved down the LSM; a small one stays in the memtable (nothing is
// flushed for it). Both read back.
func TestWriteGenesisLargeSettled(t *testing.T) {
	for _, tc := range []struct {
		slots  int
		tables bool
	}{{slots: 100}, {slots: 100_000, tables: true}} {
		db := openTest(t) // 8 MiB memtables
		diff := NewStateDiff()
		addr := common.Address{0xab}
		diff.Accounts[addr] = &Account{Balance: uint256.NewInt(1), CodeHash: types.EmptyCodeHash}
		slots := make(map[common.Hash]common.Hash, tc.slots)
		for i := range tc.slots {
			slots[common.BigToHash(bigInt(int64(i)))] = common.BigToHash(bigInt(int64(i + 1)))
		}
		diff.Storage[addr] = slots
		g := chaintypes.NewBlockWithHeader(&types.Header{Number: bigInt(0), Difficulty: bigInt(1)})
		if err := db.WriteGenesis(&BlockWrite{Block: g, Diff: diff}, []byte(`{}`), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		m := db.pdb.Metrics()
		var below int64
		for _, l := range m.Levels[1:] {
			below += l.TablesCount
		}
		if l0 := m.Levels[0].TablesCount; l0 != 0 || (below > 0) != tc.tables {
			t.Fatalf("%d slots: %d tables in L0, %d below, want 0 and some=%v", tc.slots, l0, below, tc.tables)
		}
		withView(t, db, func(v View) {
			r, err := v.StateAt(0)
			if err != nil {
				t.Fatal(err)
			}
			last := common.BigToHash(bigInt(int64(tc.slots - 1)))
			if got, err := r.Storage(addr, last); err != nil || got != common.BigToHash(bigInt(int64(tc.slots))) {
				t.Fatalf("%d slots: last slot %x, %v", tc.slots, got, err)
			}
		})
	}
}

// TestWriteBlockYielding: the yield comes three times, twice while the
// batch is staged and nothing of the block is readable, once with it
// committed; reads during the last (the state cache takes no fill then)
// and after the write see the block's state, the same as WriteBlock's.
func TestWriteBlockYielding(t *testing.T) {
	db := openTest(t)
	a := addr(1)
	c := newTestChain(t, db, &StateDiff{Accounts: map[common.Address]*Account{a: acct(0, 1)},
		Storage: map[common.Address]map[common.Hash]common.Hash{a: {slot(1): val(1)}}})
	b, rcpts := c.makeBlock(2, 0)
	diff := NewStateDiff()
	diff.Accounts[a] = acct(1, 2)
	diff.Storage[a] = map[common.Hash]common.Hash{slot(1): val(2)}
	var seen []string
	read := func() string {
		v, err := db.View()
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		latest, err := v.Tag(TagLatest)
		if err != nil {
			t.Fatal(err)
		}
		got, err := stateAt(t, v, latest).Storage(a, slot(1))
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("latest %d slot %d", latest, got.Big())
	}
	err := db.WriteBlockYielding(&BlockWrite{Block: b, Receipts: rcpts, Diff: diff, Tags: []Tag{TagSafe}}, func() { seen = append(seen, read()) })
	if err != nil {
		t.Fatal(err)
	}
	seen = append(seen, read())
	if got, want := strings.Join(seen, "; "), "latest 0 slot 1; latest 0 slot 1; latest 1 slot 2; latest 1 slot 2"; got != want {
		t.Fatalf("reads at the yields and after: %s; want %s", got, want)
	}
	withView(t, db, func(v View) {
		if n, err := v.Tag(TagSafe); err != nil || n != 1 {
			t.Fatalf("safe tag %d %v, want 1", n, err)
		}
	})
}
