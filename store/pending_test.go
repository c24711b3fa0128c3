package store

import (
	"github.com/tipnode/tipnode/store/chaintypes"

	"bytes"
	"errors"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
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
	check := func(what string, want *types.Header, wantTxs chaintypes.Txs) {
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

// TestPendingJournalOverrides: dev-chain overrides are journaled with their
// positions beside the transactions, read back in order, and dropped by a
// fresh journal and by the block's write.
func TestPendingJournalOverrides(t *testing.T) {
	db := openTest(t)
	c := newTestChain(t, db, diffOf(nil, nil))
	next, _ := c.makeBlock(2, 7)
	txs := next.Transactions()
	hdr := next.Header()
	ovs := []PendingOverride{
		{At: 0, Kind: OverrideBalance, Address: common.Address{1}, Balance: big.NewInt(5)},
		{At: 1, Kind: OverrideStorage, Address: common.Address{2}, Slot: common.Hash{3}, Value: common.Hash{4}},
		{At: 2, Kind: OverrideCode, Address: common.Address{5}, Code: []byte{0x60, 0x00}},
	}
	if err := db.AppendPendingEntries(PendingAppend{Header: hdr, Fresh: true, Overrides: ovs[:1]}); err != nil {
		t.Fatal(err)
	}
	if err := db.AppendPendingEntries(PendingAppend{Header: hdr, FirstTx: 0, Txs: txs[:1], FirstOverride: 1, Overrides: ovs[1:2]}); err != nil {
		t.Fatal(err)
	}
	if err := db.AppendPendingEntries(PendingAppend{Header: hdr, FirstTx: 1, Txs: txs[1:], FirstOverride: 2, Overrides: ovs[2:]}); err != nil {
		t.Fatal(err)
	}
	j, err := db.ReadPending()
	if err != nil || j == nil {
		t.Fatalf("journal %v, %v", j, err)
	}
	if len(j.Txs) != 2 || len(j.Overrides) != 3 {
		t.Fatalf("journal holds %d txs, %d overrides; want 2, 3", len(j.Txs), len(j.Overrides))
	}
	for i, o := range j.Overrides {
		w := ovs[i]
		if o.At != w.At || o.Kind != w.Kind || o.Address != w.Address || o.Slot != w.Slot || o.Value != w.Value ||
			!bytes.Equal(o.Code, w.Code) || (w.Balance != nil && o.Balance.Cmp(w.Balance) != 0) {
			t.Fatalf("override %d = %+v, want %+v", i, o, w)
		}
	}
	// A fresh journal of the same block (rebuilt) drops the old entries.
	if err := db.AppendPendingEntries(PendingAppend{Header: hdr, Fresh: true, Txs: txs[:1]}); err != nil {
		t.Fatal(err)
	}
	if j, err = db.ReadPending(); err != nil || len(j.Txs) != 1 || len(j.Overrides) != 0 {
		t.Fatalf("fresh journal: %+v, %v", j, err)
	}
	// An override past the journaled transactions is corruption.
	if err := db.AppendPendingEntries(PendingAppend{Header: hdr, FirstTx: 1, Overrides: []PendingOverride{{At: 5, Kind: OverrideNonce}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ReadPending(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("override after the last transaction: %v, want ErrCorrupt", err)
	}
	if err := db.ClearPending(); err != nil {
		t.Fatal(err)
	}
	if j, err := db.ReadPending(); err != nil || j != nil {
		t.Fatalf("cleared: %v, %v", j, err)
	}
}
