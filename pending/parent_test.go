package pending

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// TestPendingParents: a block opened on a pending parent (Finish, OpenOn)
// reads the parent's state under its own, resolves the parent's sealed
// header for BLOCKHASH, and is served while its chain of parents meets the
// canonical chain: before the parent is canonical, and after the
// canonical parent arrives with the same hash (Rebased then cuts the
// parent off without re-executing). A canonical parent with another hash
// makes it stale at once (never served), and a head that reaches the
// pending block supersedes it (served no more, not counted stale).
func TestPendingParents(t *testing.T) {
	for _, sameParent := range []bool{true, false} {
		e := newBuilderEnv(t)
		e.open("1")
		e.transfer()
		final, sealed, err := e.b.Finish(e.now)
		if err != nil {
			t.Fatal(err)
		}
		if !final.Final() || final.Hash() != sealed.Block.Hash() || final.Header().Hash() != final.Hash() {
			t.Fatal("final snapshot does not carry the sealed block")
		}
		h, view, err := e.w.OpenHead()
		if err != nil {
			t.Fatal(err)
		}
		e.now = e.now.Add(time.Second)
		tmpl := NextHeader(e.g.Config, final.Header(), e.now, HeaderParams{})
		if _, err := e.b.OpenOn(h, view, final, tmpl, e.now); err != nil {
			t.Fatal(err)
		}
		snap := e.transfer()
		if snap.Parent() != final || snap.Anchor().Number.Uint64() != 0 || snap.Number() != 2 {
			t.Fatal("block 2 does not sit on pending block 1 anchored on genesis")
		}
		if served, n := e.pendingNonce(); !served || n != 2 {
			t.Fatalf("block 2 on pending 1: served %v nonce %d", served, n)
		}
		r, err := e.mgr.Open()
		if err != nil {
			t.Fatal(err)
		}
		if hdr, err := r.PendingHeaders().HeaderByHash(final.Hash()); err != nil || hdr.Number.Uint64() != 1 {
			t.Fatalf("pending parent's header: %v %v", hdr, err)
		}
		r.Close()
		stale := func() float64 {
			var m dto.Metric
			if err := e.metrics.staleReads.Write(&m); err != nil {
				t.Fatal(err)
			}
			return m.GetCounter().GetValue()
		}
		if sameParent {
			if err := e.w.Seal(sealed.Write, nil, nil); err != nil {
				t.Fatal(err)
			}
			if served, n := e.pendingNonce(); !served || n != 2 {
				t.Fatalf("block 2 after canonical 1: served %v nonce %d", served, n)
			}
			rb, ok := snap.Rebased(e.w.Head())
			if !ok || rb.Parent() != nil || rb.AnchorHash() != final.Hash() {
				t.Fatal("not rebased on canonical block 1")
			}
			e.mgr.Publish(rb)
			if served, n := e.pendingNonce(); !served || n != 2 || e.mgr.Current() != rb {
				t.Fatalf("rebased block 2: served %v nonce %d", served, n)
			}
			// The head reaches block 2: superseded, not stale.
			other := NewBuilder(e.b.exec)
			hh, v2, err := e.w.OpenHead()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := other.Open(hh, v2, NextHeader(e.g.Config, hh.Header(), e.now.Add(time.Second), HeaderParams{}), e.now); err != nil {
				t.Fatal(err)
			}
			s2, err := other.Seal()
			if err != nil {
				t.Fatal(err)
			}
			if err := e.w.Seal(s2.Write, nil, nil); err != nil {
				t.Fatal(err)
			}
			other.Close()
			if served, _ := e.pendingNonce(); served || stale() != 0 {
				t.Fatalf("block 2 after the head reached it: served %v, stale %v", served, stale())
			}
			continue
		}
		// A sibling block 1 becomes canonical: block 2 sits on the wrong
		// block and is never served.
		other := NewBuilder(e.b.exec)
		hh, v2, err := e.w.OpenHead()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.Open(hh, v2, NextHeader(e.g.Config, hh.Header(), e.now.Add(5*time.Second), HeaderParams{Extra: []byte("sibling")}), e.now); err != nil {
			t.Fatal(err)
		}
		s1, err := other.Seal()
		if err != nil {
			t.Fatal(err)
		}
		if err := e.w.Seal(s1.Write, nil, nil); err != nil {
			t.Fatal(err)
		}
		other.Close()
		if served, n := e.pendingNonce(); served || n != 0 || stale() != 1 {
			t.Fatalf("block 2 on a replaced parent: served %v nonce %d stale %v", served, n, stale())
		}
		if _, ok := snap.Rebased(e.w.Head()); ok {
			t.Fatal("rebased on a sibling")
		}
	}
}
