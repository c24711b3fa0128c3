package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/holiman/uint256"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/store/chaintypes"
)

// fakeUpstream is a ForkSource over maps, counting what it is asked.
type fakeUpstream struct {
	mu       sync.Mutex
	accounts map[common.Address]*Account
	codes    map[common.Hash][]byte
	slots    map[common.Address]map[common.Hash]common.Hash
	asked    []string // "a<addr>@<block>", "s<addr>/<slot>@<block>"
	fail     error
}

func newFakeUpstream() *fakeUpstream {
	return &fakeUpstream{accounts: map[common.Address]*Account{}, codes: map[common.Hash][]byte{}, slots: map[common.Address]map[common.Hash]common.Hash{}}
}

func (u *fakeUpstream) Account(block uint64, a common.Address) (*Account, []byte, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.asked = append(u.asked, fmt.Sprintf("a%s@%d", a.Hex(), block))
	if u.fail != nil {
		return nil, nil, fmt.Errorf("upstream http://up: account %s at block %d: %w", a.Hex(), block, u.fail)
	}
	acc := u.accounts[a]
	if acc == nil {
		return nil, nil, nil
	}
	cp := *acc
	return &cp, u.codes[acc.CodeHash], nil
}

func (u *fakeUpstream) Storage(block uint64, a common.Address, s common.Hash) (common.Hash, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.asked = append(u.asked, fmt.Sprintf("s%s/%s@%d", a.Hex(), s.Hex(), block))
	if u.fail != nil {
		return common.Hash{}, fmt.Errorf("upstream http://up: slot %s of %s: %w", s.Hex(), a.Hex(), u.fail)
	}
	return u.slots[a][s], nil
}

func (u *fakeUpstream) take() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	a := u.asked
	u.asked = nil
	return a
}

const forkBlock = 100

// newForkStore makes a forked store at forkBlock in dir (one local
// account, addr(0)) and returns it with a chain whose head is the fork block.
func newForkStore(tb testing.TB, dir string, noCache bool) (*DB, *testChain) {
	tb.Helper()
	cfg := DefaultConfig(filepath.Join(dir, "db"))
	cfg.SyncWrites = false
	if noCache {
		cfg.StateCacheBytes = 0
	}
	db, err := Open(cfg, zerolog.Nop())
	if err != nil {
		tb.Fatal(err)
	}
	si, err := db.NewStateImport(filepath.Join(dir, "tmp"), forkBlock, 1<<20)
	if err != nil {
		tb.Fatal(err)
	}
	must(tb, si.Account(addr(0), acct(5, 1_000)))
	g, hs := anchorHeaders(1, forkBlock)
	if _, err := si.Commit(context.Background(), &AnchorWrite{Genesis: g, Headers: hs, Spec: []byte(`{"config":{}}`), Config: []byte(`{}`), Fork: "http://up"}); err != nil {
		tb.Fatal(err)
	}
	must(tb, si.Close())
	return db, &testChain{tb: tb, db: db, blocks: []*chaintypes.Block{chaintypes.NewBlockWithHeader(hs[len(hs)-1])}}
}

func reopenFork(tb testing.TB, dir string, noCache bool) *DB {
	tb.Helper()
	cfg := DefaultConfig(filepath.Join(dir, "db"))
	cfg.SyncWrites = false
	if noCache {
		cfg.StateCacheBytes = 0
	}
	db, err := Open(cfg, zerolog.Nop())
	if err != nil {
		tb.Fatal(err)
	}
	return db
}

func wantAsked(t *testing.T, u *fakeUpstream, want ...string) {
	t.Helper()
	if got := u.take(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("upstream asked %q, want %q", got, want)
	}
}

// TestForkReads: a forked store reads what it does not hold from its
// upstream at the fork block, once per entity (kept in memory, persisted
// with the next block or at close, so a reopened store asks nothing);
// reads below the fork block go to the upstream at their height, nothing
// kept; a failing upstream is ErrUpstream naming the entity, never zero.
// With and without the state cache (which answers warm reads at the
// latest block before the fork's own bookkeeping does).
func TestForkReads(t *testing.T) {
	for _, noCache := range []bool{false, true} {
		t.Run(fmt.Sprintf("noCache=%v", noCache), func(t *testing.T) { testForkReads(t, noCache) })
	}
}

func testForkReads(t *testing.T, noCache bool) {
	dir := t.TempDir()
	db, c := newForkStore(t, dir, noCache)
	if a := db.Anchor(); a.State != forkBlock || a.Fork != "http://up" {
		t.Fatalf("anchor %+v", a)
	}
	up := newFakeUpstream()
	code := []byte{0x60, 0x01, 0x60, 0x00, 0x55}
	ch := crypto.Keccak256Hash(code)
	up.accounts[addr(1)] = acct(3, 42)
	up.accounts[addr(2)] = &Account{Nonce: 1, Balance: uint256.NewInt(0), CodeHash: ch}
	up.codes[ch] = code
	up.slots[addr(2)] = map[common.Hash]common.Hash{slot(1): val(11), slot(2): val(22)}
	up.accounts[addr(0)] = acct(99, 99) // shadowed by the fork's own version

	// Reads before SetForkSource fail (never a zero).
	withView(t, db, func(v View) {
		if _, err := stateAt(t, v, forkBlock).Account(addr(1)); !errors.Is(err, ErrUpstream) {
			t.Fatalf("read without an upstream: %v", err)
		}
	})
	must(t, db.SetForkSource(up))
	at := func(v View, h uint64) StateReader { return stateAt(t, v, h) }
	withView(t, db, func(v View) {
		s := at(v, forkBlock)
		for range 3 {
			if acc, err := s.Account(addr(0)); err != nil || acc.Nonce != 5 {
				t.Fatalf("local account %+v, %v", acc, err)
			}
			if acc, err := s.Account(addr(1)); err != nil || acc.Nonce != 3 || acc.Balance.Uint64() != 42 {
				t.Fatalf("upstream account %+v, %v", acc, err)
			}
			if acc, err := s.Account(addr(3)); err != nil || acc != nil {
				t.Fatalf("absent upstream account %+v, %v", acc, err)
			}
			if v, err := s.Storage(addr(2), slot(1)); err != nil || v != val(11) {
				t.Fatalf("slot %x, %v", v, err)
			}
			if v, err := s.Storage(addr(2), slot(9)); err != nil || v != (common.Hash{}) {
				t.Fatalf("zero slot %x, %v", v, err)
			}
		}
		acc, err := s.Account(addr(2))
		if err != nil || acc.CodeHash != ch {
			t.Fatalf("contract %+v, %v", acc, err)
		}
		if got, err := s.Code(ch); err != nil || string(got) != string(code) {
			t.Fatalf("code %x, %v", got, err)
		}
	})
	wantAsked(t, up, "a"+addr(1).Hex()+"@100", "a"+addr(3).Hex()+"@100",
		"s"+addr(2).Hex()+"/"+slot(1).Hex()+"@100", "s"+addr(2).Hex()+"/"+slot(9).Hex()+"@100", "a"+addr(2).Hex()+"@100")
	if st := db.ForkStats(); st.Fetched != 5 || st.Unpersisted != 5 {
		t.Fatalf("stats %+v", st)
	}

	// A block writes addr(1) and slot 1: its own versions; the fetched
	// values ride along at the fork block.
	d := NewStateDiff()
	d.Accounts[addr(1)] = acct(4, 40)
	d.Storage[addr(2)] = map[common.Hash]common.Hash{slot(1): val(12)}
	c.add(d)
	if st := db.ForkStats(); st.Unpersisted != 0 {
		t.Fatalf("after a block: %+v", st)
	}
	withView(t, db, func(v View) {
		for _, tc := range []struct {
			h     uint64
			nonce uint64
			slot  common.Hash
		}{{forkBlock, 3, val(11)}, {forkBlock + 1, 4, val(12)}} {
			s := at(v, tc.h)
			if acc, err := s.Account(addr(1)); err != nil || acc.Nonce != tc.nonce {
				t.Fatalf("at %d: account %+v, %v", tc.h, acc, err)
			}
			if got, err := s.Storage(addr(2), slot(1)); err != nil || got != tc.slot {
				t.Fatalf("at %d: slot %x, %v", tc.h, got, err)
			}
		}
		// Never read before: asked at the fork block, from a past height
		// as from the latest.
		if got, err := at(v, forkBlock).Storage(addr(2), slot(2)); err != nil || got != val(22) {
			t.Fatalf("past read of a new slot %x, %v", got, err)
		}
		// Below the fork block: the upstream at that height, nothing kept.
		for range 2 {
			if acc, err := at(v, forkBlock-5).Account(addr(1)); err != nil || acc.Nonce != 3 {
				t.Fatalf("below the fork: %+v, %v", acc, err)
			}
		}
	})
	wantAsked(t, up, "s"+addr(2).Hex()+"/"+slot(2).Hex()+"@100", "a"+addr(1).Hex()+"@95", "a"+addr(1).Hex()+"@95")

	// A failing upstream: ErrUpstream naming the entity; nothing kept.
	up.fail = errors.New("connection refused")
	withView(t, db, func(v View) {
		_, err := at(v, forkBlock+1).Account(addr(7))
		if !errors.Is(err, ErrUpstream) || !strings.Contains(err.Error(), addr(7).Hex()) || !strings.Contains(err.Error(), "http://up") {
			t.Fatalf("failed fetch: %v", err)
		}
		if _, err := at(v, forkBlock+1).Storage(addr(7), slot(1)); !errors.Is(err, ErrUpstream) {
			t.Fatalf("failed slot fetch: %v", err)
		}
	})
	up.fail = nil
	withView(t, db, func(v View) {
		if acc, err := at(v, forkBlock+1).Account(addr(7)); err != nil || acc != nil {
			t.Fatalf("after the upstream recovered: %+v, %v", acc, err)
		}
	})
	up.take()
	must(t, db.Close()) // persists addr(7)

	db = reopenFork(t, dir, noCache)
	defer db.Close()
	up2 := newFakeUpstream()
	must(t, db.SetForkSource(up2))
	withView(t, db, func(v View) {
		s := at(v, forkBlock+1)
		if acc, err := s.Account(addr(7)); err != nil || acc != nil {
			t.Fatalf("reopened: %+v, %v", acc, err)
		}
		if acc, err := at(v, forkBlock).Account(addr(2)); err != nil || acc.CodeHash != ch {
			t.Fatalf("reopened: %+v, %v", acc, err)
		}
		if got, err := s.Code(ch); err != nil || string(got) != string(code) {
			t.Fatalf("reopened code %x, %v", got, err)
		}
		if got, err := s.Storage(addr(2), slot(2)); err != nil || got != val(22) {
			t.Fatalf("reopened slot %x, %v", got, err)
		}
	})
	wantAsked(t, up2)
}

// A store that is not a fork takes no source.
func TestForkSourceNotFork(t *testing.T) {
	db := openTest(t)
	if err := db.SetForkSource(newFakeUpstream()); !errors.Is(err, ErrInvalidWrite) {
		t.Fatalf("SetForkSource on a plain store: %v", err)
	}
}

// BenchmarkWarmAccountRead: an account read that the store already holds
// (on a fork: fetched once from its upstream), at the latest block (a
// state-cache hit) and one block below it (a past-cache hit; on a fork
// after the fetched values were persisted with that block), on a plain
// store and on a fork.
func BenchmarkWarmAccountRead(b *testing.B) {
	const accounts = 1000
	read := func(b *testing.B, db *DB, below uint64) {
		withView(b, db, func(v View) {
			latest, _ := v.Tag(TagLatest)
			s := stateAt(b, v, latest-below)
			for i := range accounts { // warm
				if _, err := s.Account(addr(i)); err != nil {
					b.Fatal(err)
				}
			}
			i := 0
			for b.Loop() {
				acc, err := s.Account(addr(i % accounts))
				if err != nil || acc == nil {
					b.Fatalf("account %d: %+v, %v", i, acc, err)
				}
				i++
			}
		})
	}
	plain := func(b *testing.B) *DB {
		db := openTest(b)
		d := NewStateDiff()
		for i := range accounts {
			d.Accounts[addr(i)] = acct(uint64(i), 1)
		}
		newTestChain(b, db, d)
		return db
	}
	fork := func(b *testing.B) (*DB, *testChain) {
		db, c := newForkStore(b, b.TempDir(), false)
		b.Cleanup(func() { db.Close() })
		up := newFakeUpstream()
		for i := range accounts {
			up.accounts[addr(i)] = acct(uint64(i), 1)
		}
		must(b, db.SetForkSource(up))
		return db, c
	}
	b.Run("latest/plain", func(b *testing.B) { read(b, plain(b), 0) })
	b.Run("latest/fork", func(b *testing.B) {
		db, _ := fork(b)
		read(b, db, 0)
	})
	b.Run("past/plain", func(b *testing.B) {
		db := plain(b)
		c := &testChain{tb: b, db: db}
		withView(b, db, func(v View) {
			h, _ := v.CanonicalHash(0)
			hdr, _ := v.Header(0, h)
			c.blocks = []*chaintypes.Block{chaintypes.NewBlockWithHeader(hdr)}
		})
		c.add(NewStateDiff())
		read(b, db, 1)
	})
	b.Run("past/fork", func(b *testing.B) {
		db, c := fork(b)
		withView(b, db, func(v View) { // fetch everything
			s := stateAt(b, v, forkBlock)
			for i := range accounts {
				if _, err := s.Account(addr(i)); err != nil {
					b.Fatal(err)
				}
			}
		})
		c.add(NewStateDiff())
		if st := db.ForkStats(); st.Unpersisted != 0 {
			b.Fatalf("%+v", st)
		}
		read(b, db, 1)
	})
}
