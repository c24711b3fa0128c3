package replica

import (
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/pendingtest"
)

// pair is a sequencer and a replica of the same dev chain, with the
// accounts and contracts the checks read.
type pair struct {
	t         testing.TB
	s         *seqSide
	r         *repSide
	addrs     []common.Address
	ctx, burn common.Address
}

func newPair(t testing.TB, cfg Config) *pair { return newPairWith(t, cfg, nil) }

// newPairWith is newPair with the replica driver's Writer wrapped
// (newRepSideWith).
func newPairWith(t testing.TB, cfg Config, wrap func(*chain.Writer) Writer) *pair {
	t.Helper()
	s := newSeqSide(t, 3)
	p := &pair{t: t, s: s, r: newRepSideWith(t, s.Spec, cfg, wrap)}
	for _, a := range s.Accs {
		p.addrs = append(p.addrs, a.Address)
	}
	p.addrs = append(p.addrs, common.Address{0xbb}, p.s.Cfg.Coinbase)
	p.ctx = crypto.CreateAddress(s.Accs[0].Address, 0)
	p.burn = crypto.CreateAddress(s.Accs[0].Address, 1)
	return p
}

// same checks that the replica's `pending` equals the sequencer's snapshot
// of want: the pending block's context and the state of the accounts and
// contracts (whose slots record the context their calls ran in).
func (p *pair) same(want sent) {
	p.t.Helper()
	got := pendingOf(p.t, p.r.mgr)
	defer got.close()
	if !got.served {
		p.t.Fatalf("block %d index %d: the replica serves no pending block (head %d)", want.snap.Number(), want.snap.Index(), got.header.Number)
	}
	wh, gh := want.snap.Header(), got.header
	if gh.Number.Cmp(wh.Number) != 0 || gh.Time != wh.Time || gh.BaseFee.Cmp(wh.BaseFee) != 0 || gh.Coinbase != wh.Coinbase ||
		gh.MixDigest != wh.MixDigest || gh.GasLimit != wh.GasLimit || gh.ParentHash != wh.ParentHash || gh.GasUsed != wh.GasUsed {
		p.t.Fatalf("pending header differs:\n replica   %d t=%d base=%v cb=%s mix=%s gas=%d parent=%s\n sequencer %d t=%d base=%v cb=%s mix=%s gas=%d parent=%s",
			gh.Number, gh.Time, gh.BaseFee, gh.Coinbase.Hex(), gh.MixDigest.Hex(), gh.GasUsed, gh.ParentHash.Hex(),
			wh.Number, wh.Time, wh.BaseFee, wh.Coinbase.Hex(), wh.MixDigest.Hex(), wh.GasUsed, wh.ParentHash.Hex())
	}
	st, release := snapshotState(p.t, p.s.Writer, want.snap)
	defer release()
	for _, a := range p.addrs {
		wb, wn := balanceOf(p.t, st, a)
		gb, gn := balanceOf(p.t, got.state, a)
		if wb.Cmp(gb) != 0 || wn != gn {
			p.t.Fatalf("block %d index %d: account %s: replica %v/%d, sequencer %v/%d", want.snap.Number(), want.snap.Index(), a.Hex(), gb, gn, wb, wn)
		}
	}
	for _, c := range []common.Address{p.ctx, p.burn} {
		for i := range 8 {
			slot := common.BigToHash(big.NewInt(int64(i)))
			wv, err1 := st.Storage(c, slot)
			gv, err2 := got.state.Storage(c, slot)
			if err1 != nil || err2 != nil || wv != gv {
				p.t.Fatalf("block %d index %d: %s slot %d: replica %s (%v), sequencer %s (%v)", want.snap.Number(), want.snap.Index(), c.Hex(), i, gv.Hex(), err2, wv.Hex(), err1)
			}
		}
	}
}

// deliver feeds msgs and checks the replica against each of them.
func (p *pair) deliver(msgs []sent) {
	p.t.Helper()
	for _, m := range msgs {
		p.r.feed(m)
		p.same(m)
	}
}

// preconf pools a context call and a transfer, ticks once and returns the
// messages of that interval.
func (p *pair) preconf() []sent {
	p.t.Helper()
	p.s.Send(1, &p.ctx, big.NewInt(0), 300_000, nil)
	p.s.Send(2, &common.Address{0xbb}, big.NewInt(1), 21_000, nil)
	p.s.Tick(1)
	return p.s.take()
}

func (p *pair) notServed(why string) {
	p.t.Helper()
	v := pendingOf(p.t, p.r.mgr)
	defer v.close()
	if v.served {
		p.t.Fatalf("%s: the replica serves pending block %d", why, v.header.Number)
	}
}

// TestReplicaFollowsSequencer feeds a real sequencer's messages into a
// replica and checks after every message that `pending` on the replica is
// the sequencer's (context, balances, nonces, contract storage that records
// NUMBER, TIMESTAMP, BASEFEE, COINBASE, PREVRANDAO and BLOCKHASH of the
// two previous blocks): blocks ahead of the canonical chain (a window of
// three pending blocks on pending parents), canonical blocks arriving late
// and equal (rebased without re-executing), a canonical block with other
// transactions than the replica pre-confirmed (the next block rebuilt on
// it), duplicates.
func TestReplicaFollowsSequencer(t *testing.T) {
	p := newPair(t, DefaultConfig())
	s, r := p.s, p.r
	// Block 1: index 0 (published at Start), then the contracts.
	s.Send(0, nil, big.NewInt(0), 300_000, pendingtest.InitCode(contextCode))
	s.Send(0, nil, big.NewInt(0), 300_000, pendingtest.InitCode(burnerCode))
	s.Tick(1)
	p.deliver(s.take())
	p.deliver(p.preconf())
	dup := p.preconf()
	p.deliver(dup)
	r.feed(dup...) // a duplicate: ignored
	p.same(dup[len(dup)-1])
	if counter(t, r.metrics.messages, "duplicate") != 1 {
		t.Fatal("duplicate not counted")
	}

	// Blocks 2 and 3 open before canonical 1 and 2 arrive: a window of
	// three pending blocks, each on its pending parent.
	s.Seal()
	p.deliver(s.take()) // index 0 of block 2
	p.deliver(p.preconf())
	s.Seal()
	p.deliver(s.take()) // index 0 of block 3
	last := p.preconf()
	p.deliver(last)
	// The context contract ran in block 3 with block 2 and block 1 (both
	// pending on the replica) as BLOCKHASH(NUMBER-1) and (NUMBER-2).
	{
		v := pendingOf(t, r.mgr)
		for slot, want := range map[int64]common.Hash{0: common.BigToHash(big.NewInt(3)),
			5: chaintest.CanonicalBlock(t, s.DB, 2).Hash(), 7: chaintest.CanonicalBlock(t, s.DB, 1).Hash()} {
			if got, err := v.state.Storage(p.ctx, common.BigToHash(big.NewInt(slot))); err != nil || got != want {
				t.Fatalf("context slot %d on the replica: %s (%v), want %s", slot, got.Hex(), err, want.Hex())
			}
		}
		v.close()
	}
	if d := gauge(t, r.metrics.depth); d != 3 {
		t.Fatalf("window depth %v, want 3", d)
	}
	if r.w.Head().Number() != 0 {
		t.Fatal("test setup: the replica imported blocks")
	}

	// Canonical 1 and 2 arrive, equal to what was pre-confirmed: rebased,
	// nothing re-executed.
	r.importFrom(s, 1)
	p.same(last[len(last)-1])
	r.importFrom(s, 2)
	p.same(last[len(last)-1])
	if got := counter(t, r.metrics.rebases, "rebased"); got != 2 {
		t.Fatalf("rebased %v times, want 2", got)
	}
	if got := counter(t, r.metrics.rebases, "rebuilt"); got != 0 {
		t.Fatalf("rebuilt %v times, want 0", got)
	}
	if snap := r.mgr.Current(); snap.Parent() != nil || snap.Anchor().Number.Uint64() != 2 {
		t.Fatal("the current snapshot was not re-anchored on block 2")
	}

	// Block 3's last message never reaches the replica (lost, or
	// delivered after block 4's index 0): the canonical block 3 holds
	// transactions it did not pre-confirm. Block 4 announces a parent
	// hash block 3 does not seal to here: a loss, not a disagreement
	// (every message of block 3 verified). Block 3 is frozen, still
	// served as far as it got; block 4 waits and is rebuilt on canonical
	// 3, and no mismatch is counted (the canonical block 3 holds more
	// transactions than the replica's).
	p.deliver(p.preconf())
	served3 := r.mgr.Current()
	p.s.Send(1, &p.ctx, big.NewInt(0), 300_000, nil)
	s.Tick(1)
	lost := s.take()
	s.Seal()
	open4 := s.take()
	r.feed(open4...)
	r.feed(lost...) // after the next block's index 0: closed, dropped
	if cur := r.mgr.Current(); cur != served3 {
		t.Fatalf("block 4 on an incomplete block 3: pending serves %v, want block 3 as far as it got", cur)
	}
	if counter(t, r.metrics.mismatches, "parent_hash") != 0 || counter(t, r.metrics.resets, "parent_hash") != 0 {
		t.Fatal("a lost last message counted as a parent hash mismatch")
	}
	if counter(t, r.metrics.frozens, "incomplete") != 1 || counter(t, r.metrics.messages, "closed") != 1 {
		t.Fatal("the incomplete block 3 not frozen, or its late message not dropped")
	}
	m4 := p.preconf()
	r.feed(m4...) // recorded, not executed yet
	if cur := r.mgr.Current(); cur != served3 {
		t.Fatal("block 4 served before its parent is canonical")
	}
	r.importFrom(s, 3)
	p.same(m4[len(m4)-1])
	if got := counter(t, r.metrics.rebases, "rebuilt"); got != 1 {
		t.Fatalf("rebuilt %v times, want 1", got)
	}
	if counter(t, r.metrics.mismatches, "parent_hash") != 0 {
		t.Fatal("the canonical block 3 (more transactions) counted as a mismatch")
	}
	// Canonical 4 arrives while block 4 is the newest: pending answers
	// latest (never older than latest), then block 5 opens on it.
	s.Seal()
	open5 := s.take()
	r.importFrom(s, 4)
	p.notServed("block 4 is canonical")
	p.deliver(open5)
	p.deliver(p.preconf())
}

// TestReplicaRefusesDivergence: a message whose gas used or receipts root
// disagrees with the replica's execution is never published, its block is
// dropped (pending answers the canonical head) and counted; gaps and
// reordered messages drop the block too; the replica recovers at the next
// block. Staleness and a lost stream fall back to the canonical head.
func TestReplicaRefusesDivergence(t *testing.T) {
	p := newPair(t, DefaultConfig())
	s, r := p.s, p.r
	s.Send(0, nil, big.NewInt(0), 300_000, pendingtest.InitCode(contextCode))
	s.Send(0, nil, big.NewInt(0), 300_000, pendingtest.InitCode(burnerCode))
	s.Tick(1)
	p.deliver(s.take())
	good := p.s.Mgr.Current()

	// Tampered gas used.
	m := p.preconf()
	bad := *m[0].p
	bad.Diff.GasUsed++
	r.feed(sent{p: &bad})
	p.notServed("tampered gas used")
	if counter(t, r.metrics.mismatches, "gas_used") != 1 || counter(t, r.metrics.resets, "mismatch") != 1 {
		t.Fatal("gas used mismatch not counted")
	}
	r.feed(p.preconf()...) // the block is gone: not started
	p.notServed("after the mismatch")
	if counter(t, r.metrics.messages, "not_started") != 1 {
		t.Fatal("message for the dropped block not counted")
	}
	_ = good

	// Next block: canonical 1 arrives, block 2 opens on it and is served.
	s.Seal()
	open2 := s.take()
	r.importFrom(s, 1)
	p.deliver(open2)
	// Tampered receipts root.
	m = p.preconf()
	bad = *m[0].p
	bad.Diff.ReceiptsRoot[0] ^= 1
	r.feed(sent{p: &bad})
	p.notServed("tampered receipts root")
	if counter(t, r.metrics.mismatches, "receipts_root") != 1 {
		t.Fatal("receipts root mismatch not counted")
	}

	// Block 3: a gap (index 2 before index 1) freezes it: what it
	// pre-confirmed (index 0) stays served, index 1 then is ignored.
	s.Seal()
	open3 := s.take()
	r.importFrom(s, 2)
	p.deliver(open3)
	m1, m2 := p.preconf(), p.preconf()
	r.feed(m2...)
	p.same(open3[len(open3)-1])
	r.feed(m1...)
	p.same(open3[len(open3)-1])
	if counter(t, r.metrics.frozens, "gap") != 1 || counter(t, r.metrics.messages, "frozen") != 1 {
		t.Fatal("gap not counted")
	}

	// Block 4 recovers; silence beyond MaxAge falls back to latest, the
	// next message resumes.
	s.Seal()
	open4 := s.take()
	r.importFrom(s, 3)
	p.deliver(open4)
	r.clock.Advance(3 * time.Second)
	r.d.Sync()
	p.notServed("stale stream")
	if gauge(t, r.metrics.fallback) != 1 {
		t.Fatal("fallback gauge not set on staleness")
	}
	p.deliver(p.preconf())
	if gauge(t, r.metrics.fallback) != 0 {
		t.Fatal("fallback gauge not cleared")
	}
	// A lost stream: what was pre-confirmed stays served (until MaxAge);
	// the stream resumes with the block's next index, which continues it.
	last := p.preconf()
	p.deliver(last)
	r.d.Down(nil)
	r.d.Sync()
	p.same(last[len(last)-1])
	if gauge(t, r.metrics.fallback) != 0 {
		t.Fatal("fallback gauge set while the window is still served")
	}
	p.deliver(p.preconf())
	s.Seal()
	open5 := s.take()
	r.importFrom(s, 4)
	p.deliver(open5)
	p.deliver(p.preconf())

	// A reorg on the replica's chain (block 4 unwound): block 5 no longer
	// sits on the canonical chain; never served, the window is dropped.
	if err := r.w.UnwindTo(3, nil); err != nil {
		t.Fatal(err)
	}
	r.d.Sync()
	p.notServed("block 5 after its parent was unwound")
	if counter(t, r.metrics.resets, "reorg") != 1 {
		t.Fatal("reorg not counted")
	}
	r.importFrom(s, 4)

	// A message for a block already canonical, and one beyond the window.
	old := *open5[0].p
	old.Metadata.BlockNumber, old.Base = 3, nil
	old.Index = 1
	far := *open5[0].p
	base := *far.Base
	base.BlockNumber = hexutil.Uint64(r.w.Head().Number() + 7)
	far.Base, far.Metadata.BlockNumber = &base, uint64(base.BlockNumber)
	r.feed(sent{p: &old}, sent{p: &far})
	if counter(t, r.metrics.messages, "canonical") != 1 || counter(t, r.metrics.messages, "beyond_window") != 1 {
		t.Fatal("canonical / beyond-window messages not counted")
	}
	_ = pending.Snapshot{}
}

// TestReplicaJoinsAheadOfItsChain: a replica whose canonical chain is far
// behind (it just started and catches up) receives a block beyond its
// window from index 0; the messages are held and replayed when the head
// comes within the window, so the block is served as soon as its parent is
// canonical, not from the next block's index 0.
func TestReplicaJoinsAheadOfItsChain(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Window = 2
	p := newPair(t, cfg)
	s, r := p.s, p.r
	for range 7 {
		s.Seal()
	}
	var msgs []sent
	for _, m := range s.take() {
		if m.snap.Number() == 8 {
			msgs = append(msgs, m)
		}
	}
	msgs = append(msgs, p.preconf()...)
	msgs = append(msgs, p.preconf()...)
	if len(msgs) != 3 || msgs[0].snap.Index() != 0 {
		t.Fatalf("%d messages of block 8", len(msgs))
	}
	r.feed(msgs...)
	p.notServed("block 8 beyond the window")
	for n := uint64(1); n <= 6; n++ {
		r.importFrom(s, n)
		p.notServed("block 8's parent not canonical")
	}
	r.importFrom(s, 7)
	p.same(msgs[2])
	if got := counter(t, r.metrics.messages, "beyond_window"); got != 3 {
		t.Fatalf("beyond-window messages counted %v, want 3", got)
	}
}
