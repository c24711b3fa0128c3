package store

import (
	"github.com/tipnode/tipnode/store/chaintypes"

	"errors"
	"math/rand/v2"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// reorgBranch is a new branch on block ancestor of c: blocks with salt 1
// (other hashes than c's), random diffs, the first block re-including the
// transactions of c's block ancestor+1 (a transaction on both branches),
// and a wipe of an address whose slot the block before wrote (the wipe
// must see a slot that exists only in the same batch).
func reorgBranch(c *testChain, ancestor uint64, n int, r *rand.Rand) []*BlockWrite {
	var out []*BlockWrite
	parent := c.blocks[ancestor].Header()
	for i := range n {
		num := ancestor + 1 + uint64(i)
		h := &types.Header{ParentHash: parent.Hash(), Number: bigInt(int64(num)), Difficulty: bigInt(1),
			GasLimit: 30_000_000, Time: parent.Time + 12, Extra: []byte{1}}
		var txs chaintypes.Txs
		var rcpts chaintypes.Receipts
		if i == 0 && int(num) < len(c.blocks) {
			txs = c.blocks[num].Transactions()
			for range txs {
				rcpts = append(rcpts, &chaintypes.Receipt{Receipt: types.Receipt{Status: types.ReceiptStatusSuccessful}})
			}
		}
		d := randomDiff(r, num)
		switch i {
		case 1:
			d.Storage[addr(5)] = map[common.Hash]common.Hash{slot(7): val(9)}
		case 2:
			d.Wiped[addr(5)] = struct{}{}
			delete(d.Storage, addr(5))
		}
		b := chaintypes.NewBlockWithHeader(h).WithBody(chaintypes.Body{Transactions: txs})
		out = append(out, &BlockWrite{Block: b, Receipts: rcpts, Diff: d})
		parent = h
	}
	return out
}

// TestReorgEqualsUnwindThenWrite: Reorg(ancestor, branch) leaves the store
// byte-identical to UnwindTo(ancestor) followed by WriteBlock of each new
// block (the two-step path whose correctness TestUnwind establishes): the
// wipes of the new blocks read through the batch, tags move the same way,
// shared transactions look up to the new branch. The wiped slot written
// by the block before reads zero.
func TestReorgEqualsUnwindThenWrite(t *testing.T) {
	const ancestor = 4
	build := func() (*DB, *testChain) {
		db := openTest(t)
		c := newTestChain(t, db, diffOf(map[common.Address]*Account{addr(0): acct(0, 5)}, nil))
		r := rand.New(rand.NewPCG(1, 2))
		for n := uint64(1); n <= 10; n++ {
			b, rc := c.makeBlock(int(n%3)+1, 0)
			tags := []Tag{TagSafe}
			if n == 3 {
				tags = append(tags, TagFinalized)
			}
			c.write(b, rc, randomDiff(r, n), tags...)
		}
		return db, c
	}
	seq, cs := build()
	one, co := build()
	branch := reorgBranch(cs, ancestor, 8, rand.New(rand.NewPCG(3, 4)))
	branch[len(branch)-1].Tags = []Tag{TagSafe}

	if err := seq.UnwindTo(ancestor); err != nil {
		t.Fatal(err)
	}
	for _, w := range branch {
		if err := seq.WriteBlock(w); err != nil {
			t.Fatal(err)
		}
	}
	if err := one.Reorg(ancestor, branch); err != nil {
		t.Fatal(err)
	}
	if a, b := rawDump(t, seq), rawDump(t, one); a != b {
		t.Fatalf("reorg in one batch differs from unwind + writes:\n%s\n---\n%s", a, b)
	}
	withView(t, one, func(v View) {
		if got, err := stateAt(t, v, ancestor+3).Storage(addr(5), slot(7)); err != nil || got != (common.Hash{}) {
			t.Fatalf("slot wiped by the third new block = %s, %v; want zero", got.Hex(), err)
		}
		if got, err := stateAt(t, v, ancestor+2).Storage(addr(5), slot(7)); err != nil || got != val(9) {
			t.Fatalf("slot written by the second new block = %s, %v", got.Hex(), err)
		}
		for tag, want := range map[Tag]uint64{TagLatest: ancestor + 8, TagSafe: ancestor + 8, TagFinalized: 3} {
			if n, err := v.Tag(tag); err != nil || n != want {
				t.Fatalf("tag %s = %d, %v; want %d", tag, n, err, want)
			}
		}
		tx := co.blocks[ancestor+1].Transactions()[0]
		if l, err := v.TxLookup(tx.Hash()); err != nil || l.BlockHash != branch[0].Block.Hash() {
			t.Fatalf("shared transaction looks up to %+v, %v; want the new branch", l, err)
		}
	})
}

// TestReorgRefusesAndWritesNothing: a branch that does not start on the
// canonical ancestor, is not contiguous, or starts above latest is refused
// and the store is byte-identical.
func TestReorgRefusesAndWritesNothing(t *testing.T) {
	db := openTest(t)
	c := newTestChain(t, db, nil)
	r := rand.New(rand.NewPCG(5, 6))
	for n := uint64(1); n <= 6; n++ {
		b, rc := c.makeBlock(1, 0)
		c.write(b, rc, randomDiff(r, n))
	}
	before := rawDump(t, db)
	good := reorgBranch(c, 3, 3, r)
	gap := []*BlockWrite{good[0], good[2]}
	wrongParent := reorgBranch(c, 2, 2, r)
	for name, tc := range map[string]struct {
		ancestor uint64
		blocks   []*BlockWrite
		want     error
	}{
		"other ancestor": {3, wrongParent, ErrNotContiguous},
		"gap":            {3, gap, ErrNotContiguous},
		"no blocks":      {3, nil, ErrInvalidWrite},
		"above latest":   {7, []*BlockWrite{{Block: chaintypes.NewBlockWithHeader(&types.Header{Number: bigInt(8)})}}, ErrNotFound},
		"bad receipts":   {3, []*BlockWrite{{Block: c.blocks[4], Diff: NewStateDiff()}}, ErrInvalidWrite},
	} {
		if err := db.Reorg(tc.ancestor, tc.blocks); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	if after := rawDump(t, db); after != before {
		t.Fatal("a refused reorg changed the store")
	}
}
