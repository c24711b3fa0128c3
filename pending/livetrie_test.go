package pending

import (
	"fmt"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// wholeRoot is the root of the open block's whole diff so far on its
// parent's trie, computed from scratch (what the seal computed before
// pending roots).
func (e *builderEnv) wholeRoot() common.Hash {
	e.t.Helper()
	tr, err := e.b.view.StateTrie(e.b.anchor)
	if err != nil {
		e.t.Fatal(err)
	}
	u, err := tr.On(e.b.under...).Update(e.b.state.BlockDiff())
	if err != nil {
		e.t.Fatal(err)
	}
	return u.Root
}

// randomOverride changes the open block's state at random: slots of a few
// contracts written and cleared, balances, nonces, code (accounts grow,
// shrink and come back).
func (e *builderEnv) randomOverride(r *testRand) {
	e.t.Helper()
	addr := common.Address{0xc0, byte(r.intn(4))}
	var o store.PendingOverride
	o.Address = addr
	switch r.intn(6) {
	case 0:
		o.Kind, o.Balance = store.OverrideBalance, big.NewInt(int64(r.intn(3)))
	case 1:
		o.Kind, o.Nonce = store.OverrideNonce, uint64(r.intn(3))
	case 2:
		o.Kind, o.Code = store.OverrideCode, []byte{0x60, byte(r.intn(3))}
	default:
		o.Kind, o.Slot = store.OverrideStorage, common.BigToHash(big.NewInt(int64(r.intn(40))))
		if r.intn(3) != 0 {
			o.Value = common.BigToHash(big.NewInt(int64(1 + r.intn(1000))))
		}
	}
	if err := e.b.Override(o); err != nil {
		e.t.Fatal(err)
	}
}

type testRand struct{ s uint64 }

func (r *testRand) intn(n int) int {
	r.s ^= r.s << 13
	r.s ^= r.s >> 7
	r.s ^= r.s << 17
	return int(r.s % uint64(n))
}

// TestLiveTrieRoots: blocks built from random pre-confirmations
// (transfers and state overrides, cut at random): every snapshot's state
// root, computed from the previous cut's trie and the cut's own diff,
// equals the root of the block's whole diff so far computed from scratch;
// its BlockHash is the hash the block seals with when nothing follows the
// cut; the sealed block's root is the last cut's with the seal's tail, the
// same as from scratch, and after the write the store's root from its flat
// state (go-ethereum's StackTrie over every account and slot) agrees. A
// block opened on a pending parent (Finish, OpenOn) reads its trie through
// the parent's update.
func TestLiveTrieRoots(t *testing.T) {
	e := newBuilderEnv(t)
	r := &testRand{s: 99}
	check := func(s *Snapshot, what string) {
		t.Helper()
		root, ok := s.StateRoot()
		if !ok || root == (common.Hash{}) {
			t.Fatalf("%s: no state root", what)
		}
		if want := e.wholeRoot(); root != want {
			t.Fatalf("%s: root %s, from scratch %s", what, root, want)
		}
	}
	flatCheck := func(b *chaintypes.Block) {
		t.Helper()
		flat, err := e.db.StateRootFromFlat(b.NumberU64(), nil)
		if err != nil || flat.Root != b.Root() {
			t.Fatalf("block %d: root from the flat state %s (%v), sealed %s", b.NumberU64(), flat.Root, err, b.Root())
		}
	}
	check(e.open(""), "block 1 index 0")
	for round := 1; round <= 6; round++ {
		last := e.b.Current()
		for step := range 12 {
			if r.intn(3) == 0 {
				e.transfer()
				last = e.b.Current()
				check(last, fmt.Sprintf("round %d step %d (transfer)", round, step))
				continue
			}
			e.randomOverride(r)
			if r.intn(3) == 0 {
				continue // not cut yet: the seal's tail
			}
			if s := e.b.Cut(e.now); s != nil {
				last = s
				check(s, fmt.Sprintf("round %d step %d", round, step))
			}
		}
		tailed := e.b.dirty
		if round == 3 {
			// The next block opens on this one, pending (not written yet).
			final, sealed, err := e.b.Finish(e.now)
			if err != nil {
				t.Fatal(err)
			}
			if root, _ := final.StateRoot(); root != sealed.Block.Root() || final.BlockHash() != sealed.Block.Hash() {
				t.Fatal("final snapshot's root and hash are not the sealed block's")
			}
			h, view, err := e.w.OpenHead()
			if err != nil {
				t.Fatal(err)
			}
			e.now = e.now.Add(time.Second)
			next, err := e.b.OpenOn(h, view, final, NextHeader(e.g.Config, final.Header(), e.now, HeaderParams{}), e.now)
			if err != nil {
				t.Fatal(err)
			}
			check(next, "index 0 on a pending parent")
			if err := e.w.Seal(sealed.Write, nil, nil); err != nil {
				t.Fatal(err)
			}
			flatCheck(sealed.Block)
			continue
		}
		sealed, err := e.b.Seal()
		if err != nil {
			t.Fatal(err)
		}
		if sealed.Block.Root() != sealed.Write.Trie.Root || sealed.Write.Trie.Parent != e.b.anchor {
			t.Fatalf("round %d: header root %s, update %s on %d", round, sealed.Block.Root(), sealed.Write.Trie.Root, sealed.Write.Trie.Parent)
		}
		if !tailed && last.BlockHash() != sealed.Block.Hash() {
			t.Fatalf("round %d: last cut's hash %s, sealed %s", round, last.BlockHash(), sealed.Block.Hash())
		}
		if err := e.w.Seal(sealed.Write, nil, nil); err != nil {
			t.Fatal(err)
		}
		flatCheck(sealed.Block)
		check(e.open(""), fmt.Sprintf("round %d: the next block's index 0", round))
	}
}
