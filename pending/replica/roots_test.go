package replica

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/tipnode/tipnode/pending/pendingtest"
)

// TestReplicaChecksAnnouncedRoots: a replica with a state trie computes its
// pending block's state root and hash at every pre-confirmation and they
// are the sequencer's (every message of the pair's sequencer announces
// them, as tipnode's stream does); a message whose state root or block hash
// differs is a divergence like a wrong receipts root (never published, the
// block dropped, counted by field); one announcing zero (OP subblocks,
// --stream.roots=off) is not checked.
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
