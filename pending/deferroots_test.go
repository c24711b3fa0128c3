package pending

import (
	"fmt"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// deferred is a deferring builder's snapshot with the root of its block's
// whole diff computed from scratch when it was cut.
type deferred struct {
	s    *Snapshot
	want common.Hash
	what string
}

// cutDeferred checks that s, just cut by a deferring builder, is
// published and readable with no root computed yet, and records the root
// it must get.
func (e *builderEnv) cutDeferred(s *Snapshot, what string) deferred {
	e.t.Helper()
	if s.RootReady() {
		e.t.Fatalf("%s: root computed at the cut", what)
	}
	if s.ExecHeader().Root != (common.Hash{}) {
		e.t.Fatalf("%s: execution header carries a root before it is computed", what)
	}
	// Readable before its root is computed: the pending state answers.
	if served, nonce := e.pendingNonce(); !served || nonce != e.nonce {
		e.t.Fatalf("%s: pending serves %v, nonce %d, want %d", what, served, nonce, e.nonce)
	}
	if s.RootReady() {
		e.t.Fatalf("%s: a state read computed the root", what)
	}
	return deferred{s: s, want: e.wholeRoot(), what: what}
}

// checkDeferred resolves d (or finds it resolved) and compares its root,
// header and hash with what an eager cut gives.
func checkDeferred(t *testing.T, d deferred) {
	t.Helper()
	root, ok := d.s.StateRoot()
	if !ok || root != d.want {
		t.Fatalf("%s: deferred root %s (%v), from scratch %s", d.what, root, ok, d.want)
	}
	if !d.s.RootReady() {
		t.Fatalf("%s: root not ready after StateRoot", d.what)
	}
	h := d.s.Header()
	if h.Root != d.want {
		t.Fatalf("%s: Header root %s, want %s", d.what, h.Root, d.want)
	}
	x := types.CopyHeader(d.s.ExecHeader())
	x.Root = h.Root
	if x.Hash() != h.Hash() {
		t.Fatalf("%s: Header differs from ExecHeader beyond the root", d.what)
	}
	hh := types.CopyHeader(h)
	hh.TxHash, hh.ReceiptHash, hh.UncleHash = d.s.TxRoot(), d.s.ReceiptsRoot(), types.EmptyUncleHash
	if d.s.BlockHash() != hh.Hash() {
		t.Fatalf("%s: BlockHash %s, want %s", d.what, d.s.BlockHash(), hh.Hash())
	}
}

// TestDeferredRoots: a deferring builder (DeferRoots, the stream
// follower's) returns its cuts before their state roots are computed; a
// snapshot is served and read then, and its root, computed on first need
// in any order (a later cut's first, then earlier ones; concurrently by
// several readers), equals the whole diff's from scratch, as an eager
// cut's does; the seal computes what is left and seals the same root as
// from scratch; the builder computes the roots of the cuts nobody asked
// before it releases its view (the next Open).
func TestDeferredRoots(t *testing.T) {
	e := newBuilderEnv(t)
	e.b.DeferRoots()
	r := &testRand{s: 7}
	for round := 1; round <= 4; round++ {
		cuts := []deferred{e.cutDeferred(e.open(""), fmt.Sprintf("round %d index 0", round))}
		for step := range 10 {
			if r.intn(2) == 0 {
				s := e.transfer()
				cuts = append(cuts, e.cutDeferred(s, fmt.Sprintf("round %d step %d (transfer)", round, step)))
				continue
			}
			e.randomOverride(r)
			if s := e.b.Cut(e.now); s != nil {
				e.mgr.Publish(s)
				cuts = append(cuts, e.cutDeferred(s, fmt.Sprintf("round %d step %d", round, step)))
			}
		}
		switch round {
		case 1:
			// The newest first (it computes the ones before), then the
			// others, already done.
			checkDeferred(t, cuts[len(cuts)-1])
			for _, d := range cuts {
				if !d.s.RootReady() {
					t.Fatalf("%s: not computed with a later cut's root", d.what)
				}
				checkDeferred(t, d)
			}
		case 2:
			// Readers racing for the roots (and the proof trie).
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range cuts {
						d := cuts[(i+g*3)%len(cuts)]
						if root, _ := d.s.StateRoot(); root != d.want {
							t.Errorf("%s: concurrent root %s, want %s", d.what, root, d.want)
						}
						_ = d.s.Header()
					}
				}()
			}
			wg.Wait()
		case 3:
			// One in the middle only; the seal does the rest.
			checkDeferred(t, cuts[len(cuts)/2])
		case 4:
			// Nobody asks, and the block is given up (a rebuilt payload):
			// the next Open computes them before it releases the view.
			for _, d := range cuts {
				if d.s.RootReady() {
					t.Fatalf("%s: computed before anyone asked", d.what)
				}
			}
			e.open("next")
			for _, d := range cuts {
				if !d.s.RootReady() {
					t.Fatalf("%s: the builder released its view before computing the root", d.what)
				}
				checkDeferred(t, d)
			}
			return
		}
		sealed, err := e.b.Seal()
		if err != nil {
			t.Fatal(err)
		}
		if want := e.wholeRoot(); sealed.Block.Root() != want || sealed.Write.Trie.Root != want {
			t.Fatalf("round %d: sealed root %s, update %s, from scratch %s", round, sealed.Block.Root(), sealed.Write.Trie.Root, want)
		}
		if err := e.w.Seal(sealed.Write, nil, nil); err != nil {
			t.Fatal(err)
		}
		for _, d := range cuts {
			checkDeferred(t, d)
		}
	}
}
