package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/rs/zerolog"
)

// openUncached opens a fresh store with the state cache (and so the past
// cache) disabled: every state read is a Pebble seek, the oracle of the
// cached store's answers (pointReads reads its blocks past the caches).
func openUncached(tb testing.TB) *DB {
	tb.Helper()
	cfg := DefaultConfig(tb.TempDir())
	cfg.SyncWrites = false
	cfg.StateCacheBytes = 0
	db, err := Open(cfg, zerolog.Nop())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := db.Close(); err != nil && !errors.Is(err, ErrClosed) {
			tb.Error(err)
		}
	})
	return db
}

// pointReads renders the point reads of a view at h: the canonical hash and
// header, and every account, code and slot of the small address space
// randomDiff writes.
func pointReads(tb testing.TB, v View, h uint64) string {
	tb.Helper()
	var sb strings.Builder
	if vv := v.(*view); vv.db.state.fc == nil {
		// The oracle: the canonical hash and header straight from the
		// view's snapshot, past the canonical and header caches.
		hash, err := vv.mustGet(canonicalKey(h), "canonical")
		if err != nil {
			tb.Fatal(err)
		}
		enc, err := vv.mustGet(headerKey(h, common.BytesToHash(hash)), "header")
		if err != nil {
			tb.Fatal(err)
		}
		fmt.Fprintf(&sb, "block %d %x %x\n", h, hash, crypto.Keccak256(enc))
	} else {
		hash, err := v.CanonicalHash(h)
		if err != nil {
			tb.Fatal(err)
		}
		hdr, err := v.Header(h, hash)
		if err != nil {
			tb.Fatal(err)
		}
		fmt.Fprintf(&sb, "block %d %x %x\n", h, hash, hdr.Hash())
	}
	s := stateAt(tb, v, h)
	for i := 0; i < 7; i++ {
		a := addr(i)
		acc, err := s.Account(a)
		if err != nil {
			tb.Fatal(err)
		}
		if acc != nil {
			code, err := s.Code(acc.CodeHash)
			if err != nil {
				tb.Fatal(err)
			}
			fmt.Fprintf(&sb, "acct %d n=%d b=%s code=%x\n", i, acc.Nonce, acc.Balance, code)
		}
		for k := 0; k < 8; k++ {
			val, err := s.Storage(a, slot(k))
			if err != nil {
				tb.Fatal(err)
			}
			fmt.Fprintf(&sb, "slot %d/%d %x\n", i, k, val)
		}
	}
	return sb.String()
}

// pastPair is the store under test and the uncached oracle, written the
// same way.
type pastPair struct {
	tb       testing.TB
	db, ref  *DB
	c, cref  *testChain
	oldViews [][2]View // views taken earlier, still open
}

func (p *pastPair) view(db *DB) View {
	p.tb.Helper()
	v, err := db.View()
	if err != nil {
		p.tb.Fatal(err)
	}
	p.tb.Cleanup(func() { v.Close() })
	return v
}

// check reads every height of fresh views of both stores, in random order,
// twice on the cached store (the second answer comes from the caches), and
// once more through every older view pair, and compares.
func (p *pastPair) check(r *rand.Rand) {
	p.tb.Helper()
	v, vref := p.view(p.db), p.view(p.ref)
	latest, err := v.Tag(TagLatest)
	if err != nil {
		p.tb.Fatal(err)
	}
	compare := func(v, vref View, h uint64, what string) {
		p.tb.Helper()
		want := pointReads(p.tb, vref, h)
		for pass := 0; pass < 2; pass++ {
			if got := pointReads(p.tb, v, h); got != want {
				p.tb.Fatalf("%s at %d (pass %d):\n got %s\nwant %s", what, h, pass, got, want)
			}
		}
	}
	for _, h := range r.Perm(int(latest) + 1) {
		compare(v, vref, uint64(h), fmt.Sprintf("view at %d", latest))
	}
	for _, old := range p.oldViews {
		n, err := old[1].Tag(TagLatest)
		if err != nil {
			p.tb.Fatal(err)
		}
		h := r.Uint64N(n + 1)
		compare(old[0], old[1], h, fmt.Sprintf("older view at %d", n))
	}
	p.oldViews = append(p.oldViews, [2]View{v, vref})
}

func (p *pastPair) add(r1, r2 *rand.Rand, n uint64) {
	p.tb.Helper()
	b, rc := p.c.makeBlock(int(n%3)+1, 0)
	p.c.write(b, rc, randomDiff(r1, n))
	b, rc = p.cref.makeBlock(int(n%3)+1, 0)
	p.cref.write(b, rc, randomDiff(r2, n))
}

// TestPastReadsMatchUncached: reads at every past height (accounts,
// deleted accounts, code, slots, wiped and zeroed slots, canonical hashes
// and headers), through views of every age, after each new block, after
// an unwind and a rewrite of the same heights with other values, and after
// a reorg, equal those of a store without caches. With the default bounds
// every entity's versions fit its head entry; with small ones most reads
// go through pages (and pages cross the unwind and the reorg).
func TestPastReadsMatchUncached(t *testing.T) {
	for _, tc := range []struct {
		name        string
		maxVersions int
		pageBlocks  uint64
	}{
		{"default", defaultPastVersions, defaultPastPage},
		{"pages", 3, 4},
		{"page of one block", 1, 1},
		{"pages longer than the head", 1, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testPastReadsMatchUncached(t, tc.maxVersions, tc.pageBlocks)
		})
	}
}

func testPastReadsMatchUncached(t *testing.T, maxVersions int, pageBlocks uint64) {
	db, ref := openTest(t), openUncached(t)
	db.past.maxVersions, db.past.pageBlocks = maxVersions, pageBlocks
	g := diffOf(map[common.Address]*Account{addr(0): acct(0, 5)}, nil)
	p := &pastPair{tb: t, db: db, ref: ref, c: newTestChain(t, db, g), cref: newTestChain(t, ref, g)}
	r := rand.New(rand.NewPCG(7, 8))
	w1, w2 := rand.New(rand.NewPCG(1, 2)), rand.New(rand.NewPCG(1, 2))
	p.check(r)
	for n := uint64(1); n <= 30; n++ {
		p.add(w1, w2, n)
		p.check(r)
	}
	// Unwind and write other values at the same heights.
	for _, d := range []*DB{db, ref} {
		if err := d.UnwindTo(12); err != nil {
			t.Fatal(err)
		}
	}
	p.c.blocks, p.cref.blocks = p.c.blocks[:13], p.cref.blocks[:13]
	p.check(r)
	w1, w2 = rand.New(rand.NewPCG(3, 4)), rand.New(rand.NewPCG(3, 4))
	for n := uint64(13); n <= 35; n++ {
		b, rc := p.c.makeBlock(int(n%3), 2)
		p.c.write(b, rc, randomDiff(w1, n))
		b, rc = p.cref.makeBlock(int(n%3), 2)
		p.cref.write(b, rc, randomDiff(w2, n))
		p.check(r)
	}
	// A reorg replacing blocks 26..35 with a longer branch.
	w1, w2 = rand.New(rand.NewPCG(5, 6)), rand.New(rand.NewPCG(5, 6))
	if err := db.Reorg(25, reorgBranch(p.c, 25, 12, w1)); err != nil {
		t.Fatal(err)
	}
	if err := ref.Reorg(25, reorgBranch(p.cref, 25, 12, w2)); err != nil {
		t.Fatal(err)
	}
	p.check(r)
	if db.past.hits.load() == 0 || db.past.misses.load() == 0 {
		t.Fatalf("past cache not used: %d hits, %d misses", db.past.hits.load(), db.past.misses.load())
	}
}

// TestPastReadsManyVersions: an entity with more versions than its head
// entry holds (defaultPastVersions) reads right at every height, before
// and after its entries are cached, and the second pass is served from the
// past cache at every height below the latest block (the newest versions
// from the head entry, the older ones from pages).
func TestPastReadsManyVersions(t *testing.T) {
	db := openTest(t)
	c := newTestChain(t, db, nil)
	const blocks = 2*defaultPastVersions + 10
	a, k := addr(1), slot(1)
	for n := 1; n <= blocks; n++ {
		d := NewStateDiff()
		if n%2 == 0 { // slot versions at even heights only
			d.Storage[a] = map[common.Hash]common.Hash{k: val(n)}
		}
		d.Accounts[a] = acct(uint64(n), uint64(n))
		c.add(d)
	}
	withView(t, db, func(v View) {
		for pass := 0; pass < 2; pass++ {
			misses := db.past.misses.load()
			if pass == 1 {
				defer func() {
					if n := db.past.misses.load() - misses; n != 0 {
						t.Errorf("second pass: %d past cache misses", n)
					}
				}()
			}
			for h := uint64(0); h <= blocks; h++ {
				s := stateAt(t, v, h)
				got, err := s.Storage(a, k)
				want := val(int(h &^ 1))
				if h < 2 {
					want = common.Hash{}
				}
				if err != nil || got != want {
					t.Fatalf("pass %d: slot at %d = %x, %v; want %x", pass, h, got, err, want)
				}
				acc, err := s.Account(a)
				if h == 0 {
					if err != nil || acc != nil {
						t.Fatalf("pass %d: account at 0 = %+v, %v; want none", pass, acc, err)
					}
					continue
				}
				if err != nil || acc == nil || acc.Nonce != h {
					t.Fatalf("pass %d: account at %d = %+v, %v", pass, h, acc, err)
				}
			}
		}
	})
	if db.past.hits.load() == 0 {
		t.Fatal("past cache never hit")
	}
}

// TestLookupPastRejects: entries of another epoch, heights above the
// entry's, heights below an incomplete entry and truncated entries are
// misses (heights below an incomplete entry of the right epoch say so).
func TestLookupPastRejects(t *testing.T) {
	entry := func(epoch, through uint64, all bool, versions ...uint64) []byte {
		b := make([]byte, pastHeaderLen)
		putBE := func(dst []byte, x uint64) {
			for i := 7; i >= 0; i-- {
				dst[i] = byte(x)
				x >>= 8
			}
		}
		putBE(b, epoch)
		putBE(b[8:], through)
		if all {
			b[16] = pastFlagAll
		}
		for _, from := range versions {
			var f [8]byte
			putBE(f[:], from)
			b = append(b, f[:]...)
			b = append(b, 1, byte(from))
		}
		return b
	}
	absent := []byte{0xab}
	for _, tc := range []struct {
		name   string
		buf    []byte
		height uint64
		want   []byte
		res    pastLookup
	}{
		{"hit newest", entry(3, 20, false, 15, 9), 17, []byte{15}, pastHit},
		{"hit older", entry(3, 20, false, 15, 9), 12, []byte{9}, pastHit},
		{"hit at through", entry(3, 20, false, 15, 9), 20, []byte{15}, pastHit},
		{"below listed, incomplete", entry(3, 20, false, 15, 9), 8, nil, pastBelowHead},
		{"below listed, complete", entry(3, 20, true, 15, 9), 8, absent, pastHit},
		{"no versions, complete", entry(3, 20, true), 5, absent, pastHit},
		{"above through", entry(3, 20, true, 15), 21, nil, pastMiss},
		{"other epoch", entry(4, 20, true, 15), 16, nil, pastMiss},
		{"other epoch, below listed", entry(4, 20, false, 15), 8, nil, pastMiss},
		{"truncated", entry(3, 20, true, 15)[:pastHeaderLen+5], 16, nil, pastMiss},
		{"short", []byte{1, 2}, 1, nil, pastMiss},
	} {
		got, res := lookupPast(tc.buf, 3, tc.height, absent)
		if res != tc.res || string(got) != string(tc.want) {
			t.Errorf("%s: got %x, %v; want %x, %v", tc.name, got, res, tc.want, tc.res)
		}
	}
}
