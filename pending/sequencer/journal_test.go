package sequencer_test

import (
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/pendingtest"
)

// TestPreconfirmationsSurviveCrash: pre-confirmed transactions are
// journaled before they are published. A node that dies without sealing
// (its writer stops; nothing else reaches the store) and restarts on the
// same store rebuilds the same pending block: same header, same
// transactions in the same order, same receipts; and seals it. A
// pre-confirmation that was never published is not needed for that, and the
// journal of a sealed block is gone.
func TestPreconfirmationsSurviveCrash(t *testing.T) {
	n1 := pendingtest.New(t, pendingtest.Options{Keys: 2})
	db := n1.DB
	send := func(h *pendingtest.Harness, i int) *types.Transaction {
		t.Helper()
		return h.Send(i, &common.Address{0xbe}, big.NewInt(int64(h.Nonce(i)+1)), 21_000, nil)
	}
	// Two pre-confirmations in block 1.
	send(n1, 0)
	send(n1, 1)
	n1.Tick(1)
	send(n1, 0)
	n1.Tick(1)
	before := n1.Mgr.Current()
	if before.Header().Number.Uint64() != 1 || len(before.Transactions()) != 3 {
		t.Fatalf("block %d with %d pre-confirmed transactions", before.Header().Number, len(before.Transactions()))
	}
	// Crash: the writer stops, nothing more reaches the store; the old
	// sequencer is abandoned (its Stop would only fail to seal).
	n1.Crash()

	var published pendingtest.Recorder
	n2 := n1.Restart(pending.NewManualClock(n1.Clock.Now().Add(time.Hour)), published.Add)
	w2 := n2.Writer
	after := n2.Mgr.Current()
	if after.Header().Hash() != before.Header().Hash() {
		t.Fatalf("rebuilt header differs:\n%+v\n%+v", after.Header(), before.Header())
	}
	if len(after.Transactions()) != len(before.Transactions()) {
		t.Fatalf("rebuilt %d transactions, had %d", len(after.Transactions()), len(before.Transactions()))
	}
	for i, r := range before.Receipts() {
		got := after.Receipts()[i]
		if after.Transactions()[i].Hash() != before.Transactions()[i].Hash() ||
			got.Status != r.Status || got.GasUsed != r.GasUsed || got.CumulativeGasUsed != r.CumulativeGasUsed ||
			got.TransactionIndex != r.TransactionIndex || got.Bloom != r.Bloom || got.TxHash != r.TxHash {
			t.Fatalf("receipt %d differs: %+v vs %+v", i, got, r)
		}
	}
	// The recovered block opens with index 0 (no transactions), as every
	// block does, then the replay publishes index 1 with all of them.
	if published := published.All(); len(published) != 2 || published[0].Index() != 0 || len(published[0].Transactions()) != 0 ||
		published[1].Index() != 1 || len(published[1].NewTransactions()) != 3 || published[1] != after {
		t.Fatalf("recovery published %d snapshots, want index 0 then index 1 with 3 transactions", len(published))
	}
	// The rebuilt block is sealed with those transactions, and the journal
	// goes with it.
	n2.Tick(n2.PerBlock())
	if h := w2.Head(); h.Number() != 1 {
		t.Fatalf("head %d after the seal", h.Number())
	}
	sealed := chaintest.CanonicalBlock(t, db, 1)
	for i, tx := range before.Transactions() {
		if sealed.Transactions()[i].Hash() != tx.Hash() {
			t.Fatalf("sealed transaction %d differs", i)
		}
	}
	if j, err := db.ReadPending(); err != nil || j != nil {
		t.Fatalf("journal after the seal: %+v, %v", j, err)
	}
	// New pre-confirmations after the recovery journal again.
	send(n2, 0)
	n2.Tick(1)
	if j, err := db.ReadPending(); err != nil || j == nil || len(j.Txs) != 1 || j.Header.Number.Uint64() != 2 {
		t.Fatalf("journal of block 2: %+v, %v", j, err)
	}
}
