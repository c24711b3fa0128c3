package replica

import (
	"errors"
	"fmt"
	"math/big"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/pendingtest"
	"github.com/tipnode/tipnode/store"
)

// TestReplicaChecksAnnouncedRoots: a replica with a state trie computes its
// pending block's state root and hash at every pre-confirmation and they
// are the sequencer's (every message of the pair's sequencer announces
// them, as tipnode's stream does); a message whose state root or block hash
// differs is a divergence like a wrong receipts root (the block dropped as
// soon as its root is computed, counted by field); one announcing zero (OP
// subblocks, --stream.roots=off) is not checked.
func TestReplicaChecksAnnouncedRoots(t *testing.T) {
	p := newPair(t, DefaultConfig())
	s, r := p.s, p.r
	s.Send(0, nil, big.NewInt(0), 300_000, pendingtest.InitCode(contextCode))
	s.Tick(1)
	msgs := s.take()
	for _, m := range msgs {
		if m.p.Diff.StateRoot == (common.Hash{}) || m.p.Diff.BlockHash == (common.Hash{}) {
			t.Fatalf("index %d announces no roots", m.p.Index)
		}
	}
	p.deliver(msgs)
	if root, _ := p.r.mgr.Current().StateRoot(); root != msgs[len(msgs)-1].p.Diff.StateRoot {
		t.Fatalf("replica's root %s, announced %s", root, msgs[len(msgs)-1].p.Diff.StateRoot)
	}

	m := p.preconf()
	bad := *m[0].p
	bad.Diff.StateRoot[0] ^= 1
	r.feed(sent{p: &bad})
	p.notServed("tampered state root")
	if counter(t, r.metrics.mismatches, "state_root") != 1 || counter(t, r.metrics.resets, "mismatch") != 1 {
		t.Fatal("state root mismatch not counted")
	}

	s.Seal()
	open2 := s.take()
	r.importFrom(s, 1)
	p.deliver(open2)
	m = p.preconf()
	bad = *m[0].p
	bad.Diff.BlockHash[0] ^= 1
	r.feed(sent{p: &bad})
	p.notServed("tampered block hash")
	if counter(t, r.metrics.mismatches, "block_hash") != 1 || counter(t, r.metrics.resets, "mismatch") != 2 {
		t.Fatal("block hash mismatch not counted")
	}

	s.Seal()
	open3 := s.take()
	r.importFrom(s, 2)
	p.deliver(open3)
	m = p.preconf()
	zero := *m[0].p
	zero.Diff.StateRoot, zero.Diff.BlockHash = common.Hash{}, common.Hash{}
	p.deliver([]sent{{p: &zero, snap: m[0].snap}})
	if counter(t, r.metrics.mismatches, "state_root") != 1 || counter(t, r.metrics.mismatches, "block_hash") != 1 {
		t.Fatal("a message without roots was checked")
	}
}

// TestReplicaPublishesBeforeRoot: the replica publishes a message's
// snapshot before its state root is computed (the Manager's subscribers
// see it with no root yet), computes it afterwards, when no message waits,
// and it is then the sequencer's, as is the block hash; eth_getProof's
// trie at pending has that root. A tampered root is still detected after
// the publication (the block dropped, counted), also when the next block's
// index 0 follows at once (checked before the block is finished and built
// on).
func TestReplicaPublishesBeforeRoot(t *testing.T) {
	p := newPair(t, DefaultConfig())
	s, r := p.s, p.r
	type seen struct {
		snap  *pending.Snapshot
		ready bool
	}
	var pub []seen
	unsub := r.mgr.SubscribePreconfirmations(func(snap *pending.Snapshot) { pub = append(pub, seen{snap, snap.RootReady()}) })
	t.Cleanup(unsub)
	s.Send(0, nil, big.NewInt(0), 300_000, pendingtest.InitCode(contextCode))
	s.Tick(1)
	msgs := s.take()
	p.deliver(msgs)
	m := p.preconf()
	p.deliver(m)
	if len(pub) != len(msgs)+len(m) {
		t.Fatalf("%d publications, want %d", len(pub), len(msgs)+len(m))
	}
	for i, x := range pub {
		if x.ready {
			t.Fatalf("publication %d (index %d): its root was computed before it was published", i, x.snap.Index())
		}
	}
	cur := r.mgr.Current()
	last := m[len(m)-1]
	if cur != pub[len(pub)-1].snap || !cur.RootReady() {
		t.Fatal("the driver left the published snapshot's root uncomputed while idle")
	}
	want, _ := last.snap.StateRoot()
	if root, ok := cur.StateRoot(); !ok || root != want || root != last.p.Diff.StateRoot || cur.Header().Root != want {
		t.Fatalf("replica's root %s (%v), sequencer's %s, announced %s", root, ok, want, last.p.Diff.StateRoot)
	}
	if cur.BlockHash() != last.snap.BlockHash() {
		t.Fatalf("replica's block hash %s, sequencer's %s", cur.BlockHash(), last.snap.BlockHash())
	}
	rd, err := r.mgr.Open()
	if err != nil {
		t.Fatal(err)
	}
	tr, err := rd.Snapshot.StateTrie(rd.View)
	if err == nil {
		var got common.Hash
		if got, err = tr.Root(); err == nil && got != want {
			err = fmt.Errorf("proof trie root %s, want %s", got, want)
		}
	}
	rd.Close()
	if err != nil {
		t.Fatal(err)
	}

	// Tampered, then served until the root is computed, then dropped.
	m = p.preconf()
	bad := *m[0].p
	bad.Diff.StateRoot[0] ^= 1
	n := len(pub)
	r.feed(sent{p: &bad})
	if len(pub) != n+1 || pub[n].ready {
		t.Fatal("the tampered message was not published before its root was computed")
	}
	p.notServed("tampered state root")
	if counter(t, r.metrics.mismatches, "state_root") != 1 || counter(t, r.metrics.resets, "mismatch") != 1 {
		t.Fatal("state root mismatch not counted")
	}

	// The last message of a block tampered, the next block's index 0 at
	// once: the block is checked before it is finished.
	s.Seal()
	open2 := s.take()
	r.importFrom(s, 1)
	p.deliver(open2)
	m = p.preconf()
	bad = *m[0].p
	bad.Diff.StateRoot[0] ^= 1
	s.Seal()
	open3 := s.take()
	r.d.Payload(&bad, time.Now())
	r.d.Payload(open3[0].p, time.Now())
	r.d.Sync()
	if counter(t, r.metrics.mismatches, "state_root") != 2 {
		t.Fatal("state root mismatch of a block's last message not counted")
	}
	v := pendingOf(t, r.mgr)
	defer v.close()
	if v.served && v.header.Number.Uint64() >= open3[0].snap.Number() {
		t.Fatalf("block %d served on a parent whose root disagreed", v.header.Number)
	}
}

// failingWriter opens heads whose views' state tries cannot be opened
// while fail is set: a store read error or a corrupt node under the
// replica's pending block.
type failingWriter struct {
	*chain.Writer
	fail *atomic.Bool
}

func (w failingWriter) OpenHead() (*chain.Head, store.View, error) {
	h, v, err := w.Writer.OpenHead()
	if err != nil {
		return nil, nil, err
	}
	return h, &failingView{View: v, fail: w.fail}, nil
}

type failingView struct {
	store.View
	fail *atomic.Bool
}

var errInjected = errors.New("injected state trie failure")

func (v *failingView) StateTrie(n uint64) (*store.StateTrie, error) {
	if v.fail.Load() {
		return nil, errInjected
	}
	return v.View.StateTrie(n)
}

// TestReplicaRootFailureCounted: a pending block whose state root the
// replica cannot compute is served without one (its state and context are
// the sequencer's) and counted once (root_failures_total), however many
// messages build on it; the announced roots are not checked against it
// (no mismatch), and a later block that fails again counts again.
func TestReplicaRootFailureCounted(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	p := newPairWith(t, DefaultConfig(), func(w *chain.Writer) Writer { return failingWriter{Writer: w, fail: &fail} })
	s, r := p.s, p.r
	s.Send(0, nil, big.NewInt(0), 300_000, pendingtest.InitCode(contextCode))
	s.Tick(1)
	p.deliver(s.take())
	cur := r.mgr.Current()
	if root, ok := cur.StateRoot(); ok || !errors.Is(cur.RootErr(), errInjected) {
		t.Fatalf("state root %s (%v), RootErr %v: want none, the injected failure", root, ok, cur.RootErr())
	}
	p.deliver(p.preconf())
	p.deliver(p.preconf())
	if got := r.metrics.rootFails; testutil.ToFloat64(got) != 1 {
		t.Fatalf("root_failures_total %v after three messages of one failed block, want 1", testutil.ToFloat64(got))
	}
	if counter(t, r.metrics.mismatches, "state_root") != 0 || counter(t, r.metrics.resets, "mismatch") != 0 {
		t.Fatal("a block without a root here was checked against the announced root")
	}

	// next seals block n-1 (canonical on the replica too), opens block n
	// with its trie reads failing or not, and delivers a pre-confirmation.
	next := func(n uint64, failing bool) []sent {
		fail.Store(failing)
		s.Seal()
		open := s.take()
		r.importFrom(s, n-1)
		p.deliver(open)
		return p.preconf()
	}
	// The next block reads fine: its root is computed and checked.
	m := next(2, false)
	p.deliver(m)
	if root, ok := r.mgr.Current().StateRoot(); !ok || root != m[len(m)-1].p.Diff.StateRoot {
		t.Fatalf("block 2: root %s (%v), announced %s", root, ok, m[len(m)-1].p.Diff.StateRoot)
	}
	if testutil.ToFloat64(r.metrics.rootFails) != 1 {
		t.Fatal("a block with a root counted as a failure")
	}

	// A third block fails again: counted again.
	p.deliver(next(3, true))
	if testutil.ToFloat64(r.metrics.rootFails) != 2 {
		t.Fatalf("root_failures_total %v after a second failed block, want 2", testutil.ToFloat64(r.metrics.rootFails))
	}
}
