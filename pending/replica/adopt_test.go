package replica

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/pendingtest"
	"github.com/tipnode/tipnode/pending/stream"
	"github.com/tipnode/tipnode/store"
)

// newTrielessFollower is newFollower on a store that keeps no state trie
// (store.Config.NoTrie: `--verify.stateroot=off`): the replica computes no
// state root, so a pending block it finishes cannot seal to the
// sequencer's hash, and every block boundary takes the adoption path
// (sealedParent). Its log, from info up, goes to logs.
func newTrielessFollower(t *testing.T, src *source, logs *bytes.Buffer) *follower {
	t.Helper()
	g, err := chain.ParseGenesis(src.spec)
	if err != nil {
		t.Fatal(err)
	}
	cfg := store.DefaultConfig(t.TempDir())
	cfg.SyncWrites, cfg.NoTrie = false, true
	db, err := store.Open(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := chain.InitGenesis(db, g); err != nil {
		t.Fatal(err)
	}
	r := &repSide{t: t, g: g, db: db, w: chaintest.StartWriter(t, db, g), clock: pendingtest.NewClock(), metrics: NewMetrics(prometheus.NewRegistry())}
	r.mgr = pending.NewManager(r.w, g.Config, pending.HeaderParams{}, r.clock, nil)
	if r.d, err = New(DefaultConfig(), r.w, g.Executor(), r.mgr, r.clock, r.metrics, zerolog.New(logs).Level(zerolog.InfoLevel)); err != nil {
		t.Fatal(err)
	}
	r.d.Start()
	t.Cleanup(r.d.Stop)
	f := &follower{t: t, src: src, r: r}
	f.canonical(1)
	return f
}

// TestReplicaAdoptsAcrossBlockBoundaries: a replica without a state trie
// follows 12 blocks of OP subblocks (state_root and block_hash zero),
// each canonical block arriving one or two blocks late. Every block
// boundary builds on the pending parent at once by adopting the hash the
// next block announces for it (the hash-logging transactions' receipts,
// verified against the stream's receipts root, show that BLOCKHASH there
// resolved to it), and every adopted parent verifies against its
// canonical block: adopted = verified = the boundaries crossed, no
// mismatch, no reset, no regression of `pending`, nothing logged above
// debug, and the canonical chain equal to the source's.
func TestReplicaAdoptsAcrossBlockBoundaries(t *testing.T) {
	const blocks = 12
	src := newSource(t, sourceOpts{Blocks: blocks + 1, TxsPer: 9, Keys: 4})
	for _, late := range []uint64{1, 2} {
		var logs bytes.Buffer
		f := newTrielessFollower(t, src, &logs)
		for n := uint64(1); n <= blocks; n++ {
			f.feed("block", f.sub(n, 3)...)
			f.at(n, 9)
			if n > late {
				f.canon(n - late)
				f.at(n, 9)
			}
		}
		for n := blocks - late + 1; n <= blocks; n++ {
			f.canon(n)
		}
		if len(f.regression) > 0 {
			t.Fatalf("canonical %d blocks late: pending went backwards at %v", late, f.regression)
		}
		m := f.r.metrics
		if a, v, x := counter(t, m.parents, "adopted"), counter(t, m.parents, "verified"), counter(t, m.parents, "mismatch"); a != blocks-1 || v != blocks-1 || x != 0 {
			t.Errorf("canonical %d blocks late: adopted %v, verified %v, mismatch %v; want %d, %d, 0", late, a, v, x, blocks-1, blocks-1)
		}
		for _, cause := range []string{"restart", "revoked", "mismatch", "execution", "parent_hash", "reorg", "canonical_differs", "canonical_mismatch", "adopted_parent", "disconnected"} {
			if got := counter(t, m.resets, cause); got != 0 {
				t.Errorf("canonical %d blocks late: resets{%s} = %v", late, cause, got)
			}
		}
		if logs.Len() > 0 {
			t.Errorf("canonical %d blocks late: logged above debug:\n%s", late, logs.String())
		}
		f.equalToSource(blocks + 1)
	}
}

// swapped is source block n (1-based) with its first two transactions
// swapped (both the first of their sender, each using the same gas either
// way) and its receipts as that order makes them.
func swapped(src *source, n uint64) (types.Transactions, types.Receipts) {
	txs := append(types.Transactions{}, src.blocks[n-1].Transactions()...)
	rs := append(types.Receipts{}, src.receipts[n-1]...)
	r0, r1 := *rs[0], *rs[1]
	r1.CumulativeGasUsed = r1.GasUsed
	r0.CumulativeGasUsed = r1.GasUsed + r0.GasUsed
	txs[0], txs[1] = txs[1], txs[0]
	rs[0], rs[1] = &r1, &r0
	return txs, rs
}

// TestReplicaAdoptedParentMismatch: a replica without a state trie is
// streamed a block N that is not the one that becomes canonical (its first
// two transactions swapped: every message's totals agree with its own
// transactions, so it verifies and is served), and N+1, whose index 0
// announces canonical N's hash: N adopts that hash and N+1 is built on it.
// When canonical N arrives it differs from the adopted N (transactions):
// counted once (adopted_parents_total mismatch, mismatches_total
// canonical_transactions, resets_total canonical_mismatch), logged once as
// an error, and N+1 falls back to canonical N: rebuilt on it, verified
// again, and served; the chain ends equal to the source's.
func TestReplicaAdoptedParentMismatch(t *testing.T) {
	src := newSource(t, sourceOpts{Blocks: 4, TxsPer: 9, Keys: 4})
	var logs bytes.Buffer
	f := newTrielessFollower(t, src, &logs)
	// Block 1 (source block 2) as the stream has it: transactions 0 and 1
	// swapped, in index 1..3.
	b := src.blocks[1]
	txs, rs := swapped(src, 2)
	msgs := []*stream.Payload{src.message(t, b.Header(), payloadID(2, 0), 0, nil, nil)}
	for i := range 3 {
		msgs = append(msgs, src.message(t, b.Header(), payloadID(2, 0), uint64(i+1), txs[i*3:i*3+3], rs[:i*3+3]))
	}
	f.feed("1 (another order)", msgs...)
	f.at(1, 9)
	f.feed("2", f.sub(2, 3)...) // announces canonical 1: adopted
	f.at(2, 9)
	if got := counter(t, f.r.metrics.parents, "adopted"); got != 1 {
		t.Fatalf("adopted %v, want 1", got)
	}
	f.canon(1) // differs from the adopted block 1: block 2 rebuilt on it
	f.at(2, 9)
	f.feed("3", f.sub(3, 3)...)
	f.canon(2)
	f.canon(3)
	m := f.r.metrics
	if a, v, x := counter(t, m.parents, "adopted"), counter(t, m.parents, "verified"), counter(t, m.parents, "mismatch"); a != 2 || v != 1 || x != 1 {
		t.Errorf("adopted %v, verified %v, mismatch %v; want 2, 1, 1", a, v, x)
	}
	if got := counter(t, m.mismatches, "canonical_transactions"); got != 1 {
		t.Errorf("mismatches{canonical_transactions} = %v, want 1", got)
	}
	if got := counter(t, m.resets, "canonical_mismatch"); got != 1 {
		t.Errorf("resets{canonical_mismatch} = %v, want 1", got)
	}
	for _, cause := range []string{"restart", "revoked", "mismatch", "execution", "parent_hash", "reorg", "canonical_differs", "adopted_parent", "disconnected"} {
		if got := counter(t, m.resets, cause); got != 0 {
			t.Errorf("resets{%s} = %v", cause, got)
		}
	}
	var errs []string
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if strings.Contains(line, `"level":"error"`) {
			errs = append(errs, line)
		}
	}
	if len(errs) != 1 || !strings.Contains(errs[0], "adopted") || !strings.Contains(errs[0], `"field":"transactions"`) {
		t.Errorf("want one error naming the adopted block's differing field, logged:\n%s", logs.String())
	}
	f.equalToSource(4)
}
