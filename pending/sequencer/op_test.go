package sequencer_test

import (
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/chain/devnet"
	"github.com/tipnode/tipnode/chain/op"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/pendingtest"
	"github.com/tipnode/tipnode/pending/sequencer"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// opHarness is a dev sequencer on the OP dev genesis with operator fees
// on.
func opHarness(t *testing.T) (*pendingtest.Harness, chain.ProducerConfig) {
	t.Helper()
	accs := pendingtest.Accounts(t, 2)
	spec, err := devnet.OPGenesis(devnet.GenesisConfig{ChainID: pendingtest.ChainID, Accounts: []common.Address{accs[0].Address, accs[1].Address},
		Timestamp: pendingtest.GenesisTime})
	if err != nil {
		t.Fatal(err)
	}
	pc := chain.DefaultProducerConfig()
	pc.L1.BaseFee, pc.L1.OperatorFeeScalar, pc.L1.OperatorFeeConstant = big.NewInt(20*params.GWei), 7, 1000
	cfg := sequencer.DefaultConfig()
	cfg.Dev, cfg.Chain, cfg.Coinbase = true, &pc, op.SequencerFeeVault
	return pendingtest.New(t, pendingtest.Options{Accounts: accs, Spec: spec, Config: &cfg}), pc
}

// l1Info parses the L1-info deposit that opens snapshot s's block.
func l1Info(t *testing.T, s *pending.Snapshot) (*chaintypes.Deposit, *op.L1Info) {
	t.Helper()
	txs := s.Transactions()
	if len(txs) == 0 {
		t.Fatalf("block %d has no transaction", s.Header().Number)
	}
	d, ok := txs[0].(*chaintypes.Deposit)
	if !ok || d.From() != op.L1InfoDepositor || *d.To() != op.L1BlockAddr {
		t.Fatalf("block %d opens with %T, not the L1-info deposit", s.Header().Number, txs[0])
	}
	info, err := op.ParseL1Info(d.Data())
	if err != nil {
		t.Fatal(err)
	}
	return d, info
}

// TestOPSequencer: on an OP chain every pending block opens (index 0) with
// the Jovian L1-info deposit of the synthetic L1 (the configured fees; the
// origin advancing every 12 s of the sequencer's clock, the sequence
// number restarting with it); sequenced transactions pay L1 and operator
// fees; a dev deposit joins the open block while it holds deposits only,
// else opens the next; every sealed block imports on another store with
// the importer's full OP verification, its withdrawals root being the
// message passer's storage root; a crash keeps the pre-confirmed deposits.
func TestOPSequencer(t *testing.T) {
	h, pc := opHarness(t)
	other, _, w2 := chaintest.InitStore(t, h.Spec)
	_ = other
	imported := uint64(0)
	importAll := func() {
		t.Helper()
		head := h.Writer.Head().Number()
		for n := imported + 1; n <= head; n++ {
			b := chaintest.CanonicalBlock(t, h.DB, n)
			if err := w2.Import([]*chaintypes.Block{b}, chain.ImportOptions{}); err != nil {
				t.Fatalf("block %d does not import: %v", n, err)
			}
		}
		imported = head
	}

	open := h.Mgr.Current()
	d, info := l1Info(t, open)
	if len(open.Transactions()) != 1 || open.Receipts()[0].Status != types.ReceiptStatusSuccessful {
		t.Fatalf("index 0 holds %d transactions", len(open.Transactions()))
	}
	if info.Version != op.L1InfoJovian || info.BaseFee.Cmp(pc.L1.BaseFee) != 0 || info.OperatorFeeScalar != 7 || info.OperatorFeeConstant != 1000 ||
		info.DAFootprintGasScalar != op.DefaultDAFootprintGasScalar || info.BlobBaseFeeScalar != op.DefaultBlobBaseFeeScalar {
		t.Fatalf("L1 info %+v", info)
	}
	if d.SourceHash() != op.L1InfoDepositSourceHash(info.BlockHash, info.SequenceNumber) || info.BlockHash != op.SyntheticL1Hash(info.Number) {
		t.Fatal("L1-info deposit source hash / origin hash")
	}

	// A deposit while the block holds deposits only: index 1, at once.
	minted := common.Address{0xd0}
	dep, num, err := h.Seq.SendDeposit(chaintypes.DepositFields{From: minted, To: &minted, Mint: big.NewInt(params.Ether), Gas: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	cur := h.Mgr.Current()
	if num != cur.Header().Number.Uint64() || len(cur.Transactions()) != 2 || cur.Transactions()[1].Hash() != dep.Hash() {
		t.Fatalf("deposit into block %d, pending block %d holds %d transactions", num, cur.Header().Number, len(cur.Transactions()))
	}
	// A sequenced transaction pays the L1 and operator fees.
	tx := h.Send(0, &common.Address{0xbe}, big.NewInt(1), 21_000, nil)
	h.Tick(1)
	cur = h.Mgr.Current()
	r := cur.Receipts()[len(cur.Receipts())-1]
	if r.TxHash != tx.Hash() || r.OP == nil || r.OP.L1Fee == nil || r.OP.L1Fee.Sign() <= 0 || cur.Header().BlobGasUsed == nil || *cur.Header().BlobGasUsed == 0 {
		t.Fatalf("receipt %+v, DA footprint %v", r.OP, cur.Header().BlobGasUsed)
	}
	// Now a deposit waits for the next block, which it opens after the
	// L1-info deposit.
	dep2, num2, err := h.Seq.SendDeposit(chaintypes.DepositFields{From: minted, To: &op.L2ToL1MessagePasser, Value: big.NewInt(5), Gas: 200_000})
	if err != nil {
		t.Fatal(err)
	}
	if num2 != cur.Header().Number.Uint64()+1 {
		t.Fatalf("queued deposit for block %d, want %d", num2, cur.Header().Number.Uint64()+1)
	}
	h.Seal()
	next := h.Mgr.Current()
	if txs := next.Transactions(); len(txs) != 2 || txs[1].Hash() != dep2.Hash() || next.Receipts()[1].Status != types.ReceiptStatusSuccessful {
		t.Fatalf("block %d opens with %d transactions", next.Header().Number, len(txs))
	}
	importAll()

	// The withdrawal the deposit made (value sent to the message passer)
	// changes the withdrawals root: the sealed header's is the passer's
	// storage root as the store holds it.
	last := h.Mgr.Current()
	h.Seal()
	importAll()
	sealed := chaintest.CanonicalBlock(t, h.DB, next.Header().Number.Uint64())
	// The pending block's last snapshot had the sealed block's state and
	// withdrawals roots and hash already (the live trie; nothing was added
	// after it and an OP seal runs no post-block system call).
	if last.Number() != sealed.NumberU64() || len(last.Transactions()) != len(sealed.Transactions()) ||
		last.Header().Root != sealed.Root() || last.Header().WithdrawalsHash == nil || *last.Header().WithdrawalsHash != *sealed.Header().WithdrawalsHash ||
		last.BlockHash() != sealed.Hash() {
		t.Fatalf("last pre-confirmation of block %d: root %s withdrawals %v hash %s; sealed %s %v %s", last.Number(),
			last.Header().Root, last.Header().WithdrawalsHash, last.BlockHash(), sealed.Root(), sealed.Header().WithdrawalsHash, sealed.Hash())
	}
	view, err := h.DB.View()
	if err != nil {
		t.Fatal(err)
	}
	st, err := view.StateAt(sealed.NumberU64())
	if err != nil {
		t.Fatal(err)
	}
	slots := map[common.Hash]common.Hash{}
	if err := st.ForEachStorage(op.L2ToL1MessagePasser, func(k, v common.Hash) error { slots[k] = v; return nil }); err != nil {
		t.Fatal(err)
	}
	// And its state root is the root of the whole flat state.
	if flat, err := chain.StateRoot(st); err != nil || flat != sealed.Root() {
		t.Fatalf("sealed state root %s, the flat state hashes to %s (%v)", sealed.Root(), flat, err)
	}
	view.Close()
	root, _ := chain.SlotsRoot(slots)
	if len(slots) < 2 || sealed.Header().WithdrawalsHash == nil || *sealed.Header().WithdrawalsHash != root {
		t.Fatalf("withdrawals root %v, the message passer's storage (%d slots) hashes to %s", sealed.Header().WithdrawalsHash, len(slots), root)
	}

	// The L1 origin advances every 12 s of L2 time (2 s blocks: every 6
	// blocks), the sequence number counting the blocks of its epoch.
	prevNum, prevSeq := uint64(0), uint64(0)
	advanced := 0
	for i := range 14 {
		s := h.Mgr.Current()
		_, info := l1Info(t, s)
		if i > 0 {
			switch {
			case info.Number == prevNum && info.SequenceNumber == prevSeq+1:
			case info.Number == prevNum+1 && info.SequenceNumber == 0 && info.Time <= s.Header().Time:
				advanced++
			default:
				t.Fatalf("block %d: origin %d seq %d after origin %d seq %d", s.Header().Number, info.Number, info.SequenceNumber, prevNum, prevSeq)
			}
		}
		prevNum, prevSeq = info.Number, info.SequenceNumber
		h.Seal()
	}
	if advanced < 2 {
		t.Fatalf("the L1 origin advanced %d times in 14 blocks of 2 s", advanced)
	}
	importAll()

	// A crash keeps a pre-confirmed deposit and transaction.
	dep3, _, err := h.Seq.SendDeposit(chaintypes.DepositFields{From: minted, To: &minted, Mint: big.NewInt(42), Gas: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	h.Send(1, &common.Address{0xcc}, big.NewInt(1), 21_000, nil)
	h.Tick(1)
	before := h.Mgr.Current()
	h.Crash()
	n2 := h.Restart(pending.NewManualClock(h.Clock.Now().Add(time.Minute)), nil)
	after := n2.Mgr.Current()
	if after.Header().Hash() != before.Header().Hash() || len(after.Transactions()) != 3 || after.Transactions()[1].Hash() != dep3.Hash() {
		t.Fatalf("after the crash: block %d with %d transactions, had %d", after.Header().Number, len(after.Transactions()), len(before.Transactions()))
	}
	for i, r := range before.Receipts() {
		if got := after.Receipts()[i]; got.TxHash != r.TxHash || got.CumulativeGasUsed != r.CumulativeGasUsed {
			t.Fatalf("receipt %d differs after the crash", i)
		}
	}
}
