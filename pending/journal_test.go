package pending

import (
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/pending/devnet"
	"github.com/tipnode/tipnode/store"
)

// seqNode is a writer, a manager, a pool and a started sequencer on db,
// driven by a manual clock.
type seqNode struct {
	w     *chain.Writer
	mgr   *Manager
	pool  *Pool
	seq   *Sequencer
	clock *ManualClock
	cfg   Config
}

func startSeqNode(t *testing.T, db *store.DB, g *chain.Genesis, w *chain.Writer, clock *ManualClock, published ...*[]*Snapshot) *seqNode {
	t.Helper()
	n := &seqNode{w: w, clock: clock, cfg: DefaultConfig()}
	n.mgr = NewManager(w, g.Config, n.cfg.HeaderParams(), clock, nil)
	for _, p := range published { // record every publication from Start on
		n.mgr.SubscribePreconfirmations(func(s *Snapshot) { *p = append(*p, s) })
	}
	var err error
	if n.pool, err = NewPool(DefaultPoolConfig(), g.Config, n.mgr, clock, nil, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	if n.seq, err = New(n.cfg, w, chain.NewExecutor(g.Config), n.pool, n.mgr, clock, nil, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	if err := n.seq.Start(); err != nil {
		t.Fatal(err)
	}
	return n
}

func (n *seqNode) tick(t *testing.T, k int) {
	t.Helper()
	for range k {
		n.clock.Advance(n.cfg.PreconfInterval)
	}
	n.seq.Sync()
	if err := n.seq.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestPreconfirmationsSurviveCrash: pre-confirmed transactions are
// journaled before they are published. A node that dies without sealing
// (its writer stops; nothing else reaches the store) and restarts on the
// same store rebuilds the same pending block: same header, same
// transactions in the same order, same receipts; and seals it. A
// pre-confirmation that was never published is not needed for that, and the
// journal of a sealed block is gone.
func TestPreconfirmationsSurviveCrash(t *testing.T) {
	accs, err := devnet.Accounts(devnet.Mnemonic, 2)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := devnet.Genesis(devnet.GenesisConfig{ChainID: 1337, Accounts: []common.Address{accs[0].Address, accs[1].Address}, Timestamp: 1_700_000_000})
	if err != nil {
		t.Fatal(err)
	}
	db, g, w1 := chaintest.InitStore(t, spec)
	clock := NewManualClock(time.Unix(1_700_000_010, 0))
	n1 := startSeqNode(t, db, g, w1, clock)
	signer := types.LatestSigner(g.Config)
	send := func(pool *Pool, acc devnet.Account, nonce uint64) *types.Transaction {
		t.Helper()
		tx, err := types.SignNewTx(acc.Key, signer, &types.DynamicFeeTx{ChainID: g.Config.ChainID, Nonce: nonce,
			GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(10 * params.GWei), Gas: 21_000, To: &common.Address{0xbe}, Value: big.NewInt(int64(nonce + 1))})
		if err != nil {
			t.Fatal(err)
		}
		if err := pool.Add(tx); err != nil {
			t.Fatal(err)
		}
		return tx
	}
	// Two pre-confirmations in block 1.
	send(n1.pool, accs[0], 0)
	send(n1.pool, accs[1], 0)
	n1.tick(t, 1)
	send(n1.pool, accs[0], 1)
	n1.tick(t, 1)
	before := n1.mgr.Current()
	if before.Header().Number.Uint64() != 1 || len(before.Transactions()) != 3 {
		t.Fatalf("block %d with %d pre-confirmed transactions", before.Header().Number, len(before.Transactions()))
	}
	// Crash: the writer stops, nothing more reaches the store; the old
	// sequencer is abandoned (its Stop would only fail to seal).
	w1.Stop()
	t.Cleanup(func() { _ = n1.seq.Stop() })

	w2 := chaintest.StartWriter(t, db, g)
	var published []*Snapshot
	n2 := startSeqNode(t, db, g, w2, NewManualClock(clock.Now().Add(time.Hour)), &published)
	t.Cleanup(func() {
		if err := n2.seq.Stop(); err != nil {
			t.Error(err)
		}
	})
	after := n2.mgr.Current()
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
	if len(published) != 2 || published[0].Index() != 0 || len(published[0].Transactions()) != 0 ||
		published[1].Index() != 1 || len(published[1].NewTransactions()) != 3 || published[1] != after {
		t.Fatalf("recovery published %d snapshots, want index 0 then index 1 with 3 transactions", len(published))
	}
	// The rebuilt block is sealed with those transactions, and the journal
	// goes with it.
	n2.tick(t, n2.seq.perBlock)
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
	send(n2.pool, accs[0], 2)
	n2.tick(t, 1)
	if j, err := db.ReadPending(); err != nil || j == nil || len(j.Txs) != 1 || j.Header.Number.Uint64() != 2 {
		t.Fatalf("journal of block 2: %+v, %v", j, err)
	}
}
