package replica

import (
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/tipnode/tipnode/pending/stream"
)

// follower is a replica of a source chain with a monotonicity watch: after
// every step it reads `pending` and records when it went backwards (a
// lower block, or fewer transactions in the same block).
type follower struct {
	t          *testing.T
	src        *source
	r          *repSide
	lastNum    uint64
	lastTxs    int
	regression []string
}

// newFollower starts a replica of src with block 1 canonical (a replica
// whose head is the genesis cannot tell whether the upstream computes
// state roots, so it adopts no hash: sealedParent), and block 1 the
// highest position seen. The rows then number blocks from there: sub,
// canon and at take numbers relative to block 1 (their 1 is block 2).
func newFollower(t *testing.T, src *source) *follower {
	f := &follower{t: t, src: src, r: newRepSide(t, src.spec, DefaultConfig())}
	f.canonical(1)
	return f
}

func (f *follower) sub(n uint64, parts int) []*stream.Payload {
	return f.src.subblocks(f.t, n+1, parts)
}
func (f *follower) canon(n uint64)       { f.canonical(n + 1) }
func (f *follower) at(n uint64, txs int) { f.t.Helper(); f.want(n+1, txs) }

// pending is what a read of `pending` sees: the block number and how many
// of its transactions (a canonical head counts as complete).
func (f *follower) pending() (uint64, int) {
	rd, err := f.r.mgr.Open()
	if err != nil {
		f.t.Fatal(err)
	}
	defer rd.Close()
	if rd.Snapshot != nil {
		return rd.Snapshot.Number(), len(rd.Snapshot.Transactions())
	}
	n := rd.Head.Number()
	if n == 0 {
		return 0, 0
	}
	return n, len(f.src.blocks[n-1].Transactions())
}

func (f *follower) watch(step string) {
	n, k := f.pending()
	if n < f.lastNum || (n == f.lastNum && k < f.lastTxs) {
		f.regression = append(f.regression, step)
		f.t.Logf("%s: pending went back from block %d (%d txs) to %d (%d txs)", step, f.lastNum, f.lastTxs, n, k)
	}
	f.lastNum, f.lastTxs = n, k
}

func (f *follower) feed(step string, msgs ...*stream.Payload) {
	for _, p := range msgs {
		f.r.d.Payload(p, time.Now())
		f.r.d.Sync()
		f.watch(step)
	}
}

// downAfter feeds block 1's msgs, then the stream goes down.
func (f *follower) downAfter(msgs []*stream.Payload) {
	f.feed("1", msgs...)
	f.r.d.Down(nil)
	f.r.d.Sync()
	f.watch("down")
}

// thenBlock2 feeds block 2 in four messages after a complete block 1 and
// makes both canonical.
func (f *follower) thenBlock2() {
	f.t.Helper()
	f.feed("2", f.sub(2, 4)...)
	f.canon(1)
	f.canon(2)
}

// thenBlock2Frozen feeds block 2 in four messages while block 1 is frozen
// at txs transactions: block 2 waits for canonical 1, then is built on it.
func (f *follower) thenBlock2Frozen(txs int) {
	f.t.Helper()
	f.feed("2", f.sub(2, 4)...)
	f.at(1, txs)
	f.canon(1)
	f.at(2, 12)
	f.canon(2)
}

func (f *follower) canonical(n uint64) {
	f.t.Helper()
	if err := f.r.w.ImportBlock(f.src.block(n)); err != nil {
		f.t.Fatal(err)
	}
	f.r.d.Sync()
	f.watch("canonical")
}

// want checks what `pending` serves.
func (f *follower) want(n uint64, txs int) {
	f.t.Helper()
	gn, gk := f.pending()
	if gn != n || gk != txs {
		f.t.Fatalf("pending is block %d with %d transactions, want block %d with %d", gn, gk, n, txs)
	}
}

// equalToSource checks the replica's canonical blocks 1..n against the
// source's: hashes (which cover state roots, receipts roots, everything).
func (f *follower) equalToSource(n uint64) {
	f.t.Helper()
	h := f.r.w.Head()
	for i := uint64(1); i <= n; i++ {
		_, hash, ok := h.Recent(i)
		if !ok || hash != f.src.blocks[i-1].Hash() {
			f.t.Fatalf("canonical block %d: %s, source %s", i, hash.Hex(), f.src.blocks[i-1].Hash().Hex())
		}
	}
}

// TestReplicaAcrossBlockBoundaries: a go-ethereum-built chain with real
// state roots, streamed as OP subblocks (state_root and block_hash zero),
// its canonical blocks reaching the replica after the next block's first
// messages (as on Base: 31-276 ms after). One row per thing a real stream
// does at a block boundary. In every row `pending` never goes backwards
// where the issue requires it (rows with want regressions 0), and the
// canonical chain ends equal to the source. The replica computes state
// roots (its store keeps the trie), so its sealed hashes are exact: no
// block adopts an announced hash (adopted, verified 0), and a block whose
// last message never came seals to another hash than announced and is
// frozen (ErrIncomplete), not counted as a mismatch.
func TestReplicaAcrossBlockBoundaries(t *testing.T) {
	src := newSource(t, sourceOpts{Blocks: 5, TxsPer: 12, Keys: 4})
	for _, tc := range []struct {
		name string
		run  func(f *follower)
		// counters at the end
		adopted, verified, mismatch float64
		resets                      map[string]float64
	}{
		{
			name: "in order, canonical after the next block's index 1",
			run: func(f *follower) {
				for n := uint64(1); n <= 4; n++ {
					m := f.sub(n, 4)
					f.feed("block", m...)
					f.at(n, 12)
					if n > 1 {
						f.canon(n - 1)
						f.at(n, 12)
					}
				}
				f.canon(4)
			},
		},
		{
			name: "canonical after the next block's index 0 (empty heartbeat)",
			run: func(f *follower) {
				m1, m2 := f.sub(1, 3), f.sub(2, 3)
				f.feed("1", m1...)
				f.feed("2.0", m2[0])
				f.at(2, 0)
				f.canon(1)
				f.at(2, 0)
				f.feed("2", m2[1:]...)
				f.at(2, 12)
				f.canon(2)
			},
		},
		{
			name: "heartbeats with no transactions",
			run: func(f *follower) {
				m := f.sub(1, 24) // 12 messages carry one transaction, 12 none
				f.feed("1", m...)
				f.at(1, 12)
				f.feed("2", f.sub(2, 2)...)
				f.canon(1)
				f.canon(2)
			},
		},
		{
			name: "block abandoned without its last index",
			run: func(f *follower) {
				m1 := f.sub(1, 4)
				f.feed("1", m1[:4]...) // index 4 never comes
				f.at(1, 9)
				f.feed("2", f.sub(2, 4)...) // block 1 seals to another hash than announced: frozen, block 2 waits
				f.at(1, 9)
				f.canon(1) // block 1 had 12: block 2 rebuilt on it
				f.at(2, 12)
				f.canon(2)
				if got := counter(f.t, f.r.metrics.frozens, "incomplete"); got != 1 {
					f.t.Fatalf("frozen{incomplete} = %v, want 1", got)
				}
				if got := counter(f.t, f.r.metrics.mismatches, "parent_hash"); got != 0 {
					f.t.Fatalf("mismatches{parent_hash} = %v, want 0: a lost tail is no disagreement", got)
				}
			},
		},
		{
			name: "a new index 0 for the same height (rebuilt payload)",
			run: func(f *follower) {
				// A first build of block 1 under another context (a
				// later timestamp), abandoned for the block that seals.
				first := f.sub(1, 4)[:3]
				for i, p := range first {
					cp := *p
					cp.PayloadID = payloadID(2, 7)
					if i == 0 {
						b := *cp.Base
						b.Timestamp++
						cp.Base = &b
					}
					first[i] = &cp
				}
				f.feed("1 (first build)", first...)
				f.at(1, 6)
				rebuilt := f.sub(1, 4)
				f.r.d.Payload(rebuilt[0], time.Now()) // revokes what the first build pre-confirmed: not a boundary
				f.r.d.Sync()
				f.lastNum, f.lastTxs = f.pending()
				f.feed("1'", rebuilt[1:]...)
				f.at(1, 12)
				f.feed("2", f.sub(2, 3)...)
				f.canon(1)
				f.canon(2)
			}, resets: map[string]float64{"restart": 1},
		},
		{
			name: "a new index 0 for the same height re-announcing the block (a recut: nothing revoked)",
			run: func(f *follower) {
				m1 := f.sub(1, 4)
				f.feed("1", m1[:3]...)
				recut := f.sub(1, 2) // the same block in 2 slices, under another payload id
				for _, p := range recut {
					p.PayloadID = payloadID(2, 7)
				}
				f.feed("1'", recut...)
				f.at(1, 12)
				f.feed("2", f.sub(2, 3)...)
				f.canon(1)
				f.canon(2)
			},
		},
		{
			name: "payload id reused: the same messages again (a relay replaying the block) are duplicates",
			run: func(f *follower) {
				m1 := f.sub(1, 4)
				f.feed("1", m1[:3]...)
				f.feed("replay", m1[:3]...)
				f.feed("1", m1[3:]...)
				f.at(1, 12)
				f.thenBlock2()
			},
		},
		{
			name: "payload id reused by a rebuilt payload with other transactions",
			run: func(f *follower) {
				m1 := f.sub(1, 4)
				f.feed("1", m1[:3]...)
				// Same id, index 1 holds other transactions (the first two
				// swapped): the block is frozen where it was.
				b := f.src.blocks[1]
				txs, rs := swapped(f.src, 2)
				f.feed("1", f.src.message(f.t, b.Header(), payloadID(2, 0), 1, txs[:3], rs[:3]))
				f.at(1, 6)
				if got := counter(f.t, f.r.metrics.frozens, "lower_index"); got != 1 {
					f.t.Fatalf("frozen{lower_index} = %v, want 1", got)
				}
				f.feed("1", m1[3:]...) // ignored
				f.at(1, 6)
				f.thenBlock2Frozen(6) // waits for canonical 1
			},
			resets: map[string]float64{},
		},
		{
			name: "stream restarts mid-block: a reconnect resuming at a later index",
			run: func(f *follower) {
				m1 := f.sub(1, 4)
				f.downAfter(m1[:2])
				f.feed("1", m1[3:]...) // index 2 was lost: frozen at index 1
				f.at(1, 3)
				f.thenBlock2Frozen(3)
			},
		},
		{
			name: "stream restarts mid-block: a reconnect resuming at the next index",
			run: func(f *follower) {
				m1 := f.sub(1, 4)
				f.downAfter(m1[:2])
				f.feed("1", m1[2:]...)
				f.at(1, 12)
				f.thenBlock2()
			},
		},
		{
			name: "indexes that skip",
			run: func(f *follower) {
				m1 := f.sub(1, 4)
				f.feed("1", m1[0], m1[1], m1[3], m1[2], m1[4])
				f.at(1, 3)
				f.feed("2", f.sub(2, 4)...)
				f.at(1, 3)
				f.canon(1)
				f.at(2, 12)
				f.feed("3", f.sub(3, 4)...)
				f.canon(2)
				f.at(3, 12)
				f.canon(3)
			},
		},
		{
			name: "metadata absent (a trimmed producer)",
			run: func(f *follower) {
				for n := uint64(1); n <= 2; n++ {
					m := f.sub(n, 3)
					for _, p := range m {
						p.Metadata = stream.Metadata{Absent: true}
						if p.Base != nil {
							p.Metadata.BlockNumber = uint64(p.Base.BlockNumber)
						}
					}
					f.feed("block", m...)
					f.at(n, 12)
				}
				f.canon(1)
				f.canon(2)
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFollower(t, src)
			tc.run(f)
			if len(f.regression) > 0 {
				t.Fatalf("pending went backwards at %v", f.regression)
			}
			m := f.r.metrics
			if got := counter(t, m.parents, "adopted"); got != tc.adopted {
				t.Errorf("adopted %v, want %v", got, tc.adopted)
			}
			if got := counter(t, m.parents, "verified"); got != tc.verified {
				t.Errorf("verified %v, want %v", got, tc.verified)
			}
			if got := counter(t, m.parents, "mismatch"); got != tc.mismatch {
				t.Errorf("mismatch %v, want %v", got, tc.mismatch)
			}
			for _, cause := range []string{"restart", "mismatch", "execution", "parent_hash", "reorg", "canonical_differs", "canonical_mismatch", "adopted_parent", "disconnected"} {
				if got := counter(t, m.resets, cause); got != tc.resets[cause] {
					t.Errorf("resets{%s} = %v, want %v", cause, got, tc.resets[cause])
				}
			}
			f.equalToSource(f.r.w.Head().Number())
		})
	}
}

// TestReplicaRefusesPostExecTx: a Lagoon block carrying diff.post_exec_tx
// (0x7D) is not replicated: counted and named, never served, pending
// answers up to its parent; the block after it waits for it to be
// canonical and is then replicated again.
func TestReplicaRefusesPostExecTx(t *testing.T) {
	src := newSource(t, sourceOpts{Blocks: 4, TxsPer: 6, Keys: 3})
	for _, at := range []uint64{0, 2} { // on index 0, on a later index
		f := newFollower(t, src)
		f.feed("1", f.sub(1, 3)...)
		m2 := f.sub(2, 3)
		cp := *m2[at]
		cp.Diff.PostExecTx = hexutil.Bytes{0x7d, 0xc0}
		m2[at] = &cp
		f.feed("2", m2...)
		if got := counter(t, f.r.metrics.refused, "post_exec_tx"); got != 1 {
			t.Fatalf("post_exec_tx at index %d counted %v", at, got)
		}
		rd, err := f.r.mgr.Open()
		if err != nil {
			t.Fatal(err)
		}
		if rd.Snapshot == nil || rd.Snapshot.Number() != 2 {
			t.Fatalf("post_exec_tx at index %d: pending serves %v, want block 2 (its parent)", at, rd.Snapshot)
		}
		rd.Close()
		f.feed("3", f.sub(3, 3)...)
		f.at(1, 6)
		f.canon(1)
		f.canon(2)
		f.at(3, 6)
		f.canon(3)
		f.equalToSource(4)
	}
}
