package store

import (
	"errors"
	"testing"

	"github.com/ethereum/go-ethereum/core/types"
)

// TestPendingJournal: the journal holds the open pending block's header and
// its pre-confirmed transactions in order across appends and a reopen; a
// new block's journal replaces an old one; writing a block (the seal) or
// unwinding drops it in the same batch; a gap in the indexes is corruption.
func TestPendingJournal(t *testing.T) {
	db := openTest(t)
	c := newTestChain(t, db, diffOf(nil, nil))
	next, rcpts := c.makeBlock(3, 7)
	txs := next.Transactions()
	hdr := next.Header()
	if j, err := db.ReadPending(); err != nil || j != nil {
		t.Fatalf("empty store: journal %v, %v", j, err)
	}
	if err := db.AppendPending(hdr, 0, txs[:1]); err != nil {
		t.Fatal(err)
	}
	if err := db.AppendPending(hdr, 1, txs[1:]); err != nil {
		t.Fatal(err)
	}
	check := func(what string, want *types.Header, wantTxs []*types.Transaction) {
		t.Helper()
		j, err := db.ReadPending()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if want == nil {
			if j != nil {
				t.Fatalf("%s: journal of block %d left", what, j.Header.Number)
			}
			return
		}
		if j == nil || j.Header.Hash() != want.Hash() || len(j.Txs) != len(wantTxs) {
			t.Fatalf("%s: journal %+v", what, j)
		}
		for i := range wantTxs {
			if j.Txs[i].Hash() != wantTxs[i].Hash() {
				t.Fatalf("%s: transaction %d differs", what, i)
			}
		}
	}
	check("after two appends", hdr, txs)
	// The block is sealed: the journal goes with the block's own batch.
	c.write(next, rcpts, diffOf(nil, nil))
	check("after the seal", nil, nil)

	// A journal for block 2, then one for a sibling of it with another
	// header: the second replaces the first.
	b2, _ := c.makeBlock(2, 1)
	if err := db.AppendPending(b2.Header(), 0, b2.Transactions()); err != nil {
		t.Fatal(err)
	}
	b2b, _ := c.makeBlock(1, 2)
	if err := db.AppendPending(b2b.Header(), 0, b2b.Transactions()); err != nil {
		t.Fatal(err)
	}
	check("replaced", b2b.Header(), b2b.Transactions())
	if err := db.UnwindTo(0); err != nil {
		t.Fatal(err)
	}
	check("after unwind", nil, nil)

	// A missing index is reported, not skipped.
	if err := db.AppendPending(hdr, 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.AppendPending(hdr, 2, txs[2:]); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ReadPending(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("gap in the journal: %v, want ErrCorrupt", err)
	}
	if err := db.ClearPending(); err != nil {
		t.Fatal(err)
	}
	check("after ClearPending", nil, nil)
}
