package replica

import (
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tipnode/tipnode/pending/stream"
)

// recutMsg is message index of source block n (payload id build) holding
// the block's transactions from..to, with the block's totals after them:
// what a sequencer re-emits after a restart, cut where it now cuts.
func recutMsg(f *follower, n uint64, build byte, index uint64, from, to int) *stream.Payload {
	f.t.Helper()
	b := f.src.blocks[n]
	return f.src.message(f.t, b.Header(), payloadID(n+1, build), index, b.Transactions()[from:to], f.src.receipts[n][:to])
}

// TestReplicaSequencerRestart: a sequencer killed with SIGKILL and
// restarted recovers its open block from its journal and re-emits it: the
// same block (same context, so the same payload id for tipnode's), the
// same pre-confirmed transactions, in the same order, but cut elsewhere:
// tipnode's sequencer publishes the block's leading deposits (an OP
// block's L1-info deposit and the user deposits that joined it) all in
// index 0, the rest of the journal in index 1, where the first run had
// published them in several messages. The replica keeps serving what it
// had (no pre-confirmation was revoked): `pending` never goes back, and it
// continues with what the sequencer adds next. Before this, index 0 of the
// re-emitted block was taken for a rebuilt payload (restart): the open
// block was replaced by the shorter index 0 (what TestOPReplicasE2E saw
// once on its proxied replica after the sequencer's kill -9: 3
// transactions, then 2 receipts), and on an L1 chain index 1 froze the
// block (a lower index that differs). A sequencer whose re-emitted block
// holds another transaction where it had pre-confirmed one revoked it:
// the replica rebuilds the block as the stream now has it, counted
// (resets_total revoked).
func TestReplicaSequencerRestart(t *testing.T) {
	src := newSource(t, sourceOpts{Blocks: 3, TxsPer: 12, Keys: 4})
	for _, tc := range []struct {
		name    string
		run     func(f *follower)
		resumed float64
		resets  map[string]float64
	}{
		{
			name: "OP: index 0 re-announces what indexes 0 and 1 held, index 1 the rest",
			run: func(f *follower) {
				f.feed("before the crash", f.sub(1, 4)[:4]...) // index 0 (empty), 1..3: 9 transactions
				f.at(1, 9)
				again := []*stream.Payload{recutMsg(f, 1, 0, 0, 0, 3), recutMsg(f, 1, 0, 1, 3, 9)}
				f.feed("restarted", again...)
				f.at(1, 9)
				f.feed("relay duplicates", again...)
				f.at(1, 9)
				f.feed("next", recutMsg(f, 1, 0, 2, 9, 12))
				f.at(1, 12)
				f.feed("2", f.sub(2, 3)...)
				f.canon(1)
				f.canon(2)
				f.at(2, 12)
			},
			resumed: 1,
		},
		{
			name: "L1: index 0 the same, index 1 re-announces every transaction, and new ones",
			run: func(f *follower) {
				f.feed("before the crash", f.sub(1, 4)[:4]...)
				f.feed("restarted", f.sub(1, 4)[0], recutMsg(f, 1, 0, 1, 0, 9))
				f.at(1, 9)
				f.feed("next", recutMsg(f, 1, 0, 2, 9, 12))
				f.at(1, 12)
				f.feed("2", f.sub(2, 3)...)
				f.canon(1)
				f.canon(2)
			},
			resumed: 1,
		},
		{
			name: "index 1 straddles: what the block held and new transactions",
			run: func(f *follower) {
				f.feed("before the crash", f.sub(1, 4)[:3]...) // 6 transactions
				f.feed("restarted", recutMsg(f, 1, 0, 0, 0, 2), recutMsg(f, 1, 0, 1, 2, 10))
				f.at(1, 10)
				f.feed("next", recutMsg(f, 1, 0, 2, 10, 12))
				f.at(1, 12)
				f.feed("2", f.sub(2, 3)...)
				f.canon(1)
				f.canon(2)
			},
			resumed: 1,
		},
		{
			name: "under another payload id, canonical parent arriving while the stream re-covers the block",
			run: func(f *follower) {
				f.feed("1", f.sub(1, 3)...)
				f.feed("2 before the crash", f.sub(2, 4)[:4]...)
				f.at(2, 9)
				f.feed("restarted", recutMsg(f, 2, 3, 0, 0, 1))
				f.canon(1) // rebased: block 2 keeps all it had
				f.at(2, 9)
				f.feed("restarted", recutMsg(f, 2, 3, 1, 1, 5), recutMsg(f, 2, 3, 2, 5, 12))
				f.at(2, 12)
				f.canon(2)
			},
			resumed: 1,
		},
		{
			name: "the re-emitted block holds another transaction where one was pre-confirmed: revoked",
			run: func(f *follower) {
				f.feed("before the crash", f.sub(1, 4)[:4]...)
				f.feed("restarted", recutMsg(f, 1, 3, 0, 0, 0)) // under another payload id
				f.at(1, 9)
				// Index 1 holds transactions 1 and 0, swapped (both first
				// of their sender; each uses the same gas either way).
				b, rs := f.src.blocks[1], f.src.receipts[1]
				r1, r0 := *rs[1], *rs[0]
				r1.CumulativeGasUsed = rs[1].GasUsed
				r0.CumulativeGasUsed = rs[1].GasUsed + rs[0].GasUsed
				swapped := f.src.message(t, b.Header(), payloadID(2, 3), 1, types.Transactions{b.Transactions()[1], b.Transactions()[0]},
					types.Receipts{&r1, &r0})
				f.r.d.Payload(swapped, time.Now())
				f.r.d.Sync()
				f.at(1, 2) // what the sequencer's block now holds
				f.lastNum, f.lastTxs = f.pending()
				f.canon(1) // the canonical block decides
				f.feed("2", f.sub(2, 3)...)
				f.at(2, 12)
				f.canon(2)
			},
			resumed: 1,
			resets:  map[string]float64{"revoked": 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFollower(t, src)
			tc.run(f)
			if len(f.regression) > 0 {
				t.Fatalf("pending went backwards at %v", f.regression)
			}
			m := f.r.metrics
			if got := counter(t, m.messages, "resume"); got != tc.resumed {
				t.Errorf("messages{resume} = %v, want %v", got, tc.resumed)
			}
			for _, cause := range []string{"restart", "revoked", "mismatch", "execution", "parent_hash", "reorg", "canonical_differs", "canonical_mismatch", "adopted_parent", "disconnected"} {
				if got := counter(t, m.resets, cause); got != tc.resets[cause] {
					t.Errorf("resets{%s} = %v, want %v", cause, got, tc.resets[cause])
				}
			}
			for _, field := range []string{"gas_used", "receipts_root", "parent_hash"} {
				if got := counter(t, m.mismatches, field); got != 0 {
					t.Errorf("mismatches{%s} = %v", field, got)
				}
			}
			for _, cause := range []string{"gap", "lower_index", "malformed", "incomplete"} {
				if got := counter(t, m.frozens, cause); got != 0 {
					t.Errorf("frozen{%s} = %v, want 0", cause, got)
				}
			}
			f.equalToSource(f.r.w.Head().Number())
		})
	}
}

// TestReplicaSilentSequencer: a sequencer with nothing to pre-confirm
// sends nothing until its next block's index 0 (seconds away with a long
// block time, an hour with interval mining), and its pre-confirmations
// stay true. While the stream's connection proves alive (Alive: the server
// answers the client's pings) the replica keeps serving the pending block
// however long the silence; once neither a message nor a pong came for
// MaxAge (2 s) the stream is stale: pending answers the canonical head,
// and the next message serves the block again.
func TestReplicaSilentSequencer(t *testing.T) {
	src := newSource(t, sourceOpts{Blocks: 2, TxsPer: 6, Keys: 2})
	f := newFollower(t, src)
	m := f.sub(1, 2)
	f.feed("1", m...)
	f.at(1, 6)
	for range 10 { // 15 s of silence, the connection alive
		f.r.clock.Advance(1500 * time.Millisecond)
		f.r.d.Alive(time.Time{})
		f.r.d.Sync()
		f.at(1, 6)
	}
	if gauge(t, f.r.metrics.fallback) != 0 {
		t.Fatal("fallback while the connection is alive")
	}
	f.r.clock.Advance(2500 * time.Millisecond) // no pong either: stale
	f.r.d.Sync()
	rd, err := f.r.mgr.Open()
	if err != nil {
		t.Fatal(err)
	}
	served := rd.Snapshot != nil
	rd.Close()
	if served || gauge(t, f.r.metrics.fallback) != 1 {
		t.Fatalf("silent without pongs for 2.5 s: pending block still served (%v), fallback %v", served, gauge(t, f.r.metrics.fallback))
	}
	f.r.d.Payload(m[len(m)-1], time.Now()) // the last message again (a reconnect replays the block)
	f.r.d.Sync()
	f.at(1, 6)
	if gauge(t, f.r.metrics.fallback) != 0 {
		t.Fatal("fallback not cleared by the next message")
	}
}
