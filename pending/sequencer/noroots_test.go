package sequencer_test

import (
	"errors"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/chain/devnet"
	"github.com/tipnode/tipnode/chain/op"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/pendingtest"
	"github.com/tipnode/tipnode/pending/sequencer"
	"github.com/tipnode/tipnode/pending/stream"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// TestNoPendingRoots: with Config.NoPendingRoots (--stream.roots=off), on
// an OP chain from Isthmus, no cut computes a state trie update
// (CutTries stays 0) and every pre-confirmation carries no state root:
// its header's root and withdrawals root are zero, StateRoot reports
// none, its state trie (eth_getProof at pending) is refused, and its
// stream message carries zero state_root, block_hash and
// withdrawals_root. Every sealed block still carries its real roots: the
// root of the whole flat state, the message passer's storage root, and it
// imports on another store with the state root verified. With the
// default configuration the same steps count cut trie updates and every
// pre-confirmation has its root (the counter counts).
func TestNoPendingRoots(t *testing.T) {
	for _, off := range []bool{true, false} {
		name := "off"
		if !off {
			name = "on"
		}
		t.Run(name, func(t *testing.T) { testPendingRoots(t, off) })
	}
}

func testPendingRoots(t *testing.T, off bool) {
	accs := pendingtest.Accounts(t, 2)
	spec, err := devnet.OPGenesis(devnet.GenesisConfig{ChainID: pendingtest.ChainID, Accounts: []common.Address{accs[0].Address, accs[1].Address},
		Timestamp: pendingtest.GenesisTime})
	if err != nil {
		t.Fatal(err)
	}
	pc := chain.DefaultProducerConfig()
	cfg := sequencer.DefaultConfig()
	cfg.Chain, cfg.Coinbase, cfg.NoPendingRoots = &pc, op.SequencerFeeVault, off
	rec := new(pendingtest.Recorder)
	h := pendingtest.New(t, pendingtest.Options{Accounts: accs, Spec: spec, Config: &cfg, OnPublish: rec.Add})

	first := h.Mgr.Current().Number()
	for range 3 {
		h.Send(0, &common.Address{0xbe}, big.NewInt(1), 21_000, nil)
		h.Tick(1)
		// Value sent to the message passer is a withdrawal: its storage,
		// hence the withdrawals root, changes.
		h.Send(1, &op.L2ToL1MessagePasser, big.NewInt(5), 200_000, nil)
		h.Tick(1)
		h.Seal()
	}
	last := h.Mgr.Current().Number() - 1

	snaps := rec.Take()
	if len(snaps) < 9 {
		t.Fatalf("%d pre-confirmations published", len(snaps))
	}
	view, err := h.DB.View()
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	for _, s := range snaps {
		if s.Final() {
			continue
		}
		hd := s.Header()
		root, ok := s.StateRoot()
		msg, err := stream.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		if hd.WithdrawalsHash == nil {
			t.Fatalf("block %d index %d: no withdrawals root (Isthmus)", s.Number(), s.Index())
		}
		if off {
			_, trieErr := s.StateTrie(view)
			if ok || root != (common.Hash{}) || hd.Root != (common.Hash{}) || *hd.WithdrawalsHash != (common.Hash{}) || !errors.Is(trieErr, pending.ErrNoStateTrie) {
				t.Fatalf("roots off, block %d index %d: state root %s (%v), header root %s, withdrawals root %s, state trie %v",
					s.Number(), s.Index(), root, ok, hd.Root, hd.WithdrawalsHash, trieErr)
			}
			if msg.Diff.StateRoot != (common.Hash{}) || msg.Diff.BlockHash != (common.Hash{}) || msg.Diff.WithdrawalsRoot != (common.Hash{}) {
				t.Fatalf("roots off, block %d index %d: message state root %s, block hash %s, withdrawals root %s",
					s.Number(), s.Index(), msg.Diff.StateRoot, msg.Diff.BlockHash, msg.Diff.WithdrawalsRoot)
			}
		} else if !ok || root == (common.Hash{}) || hd.Root != root || msg.Diff.StateRoot != root || msg.Diff.BlockHash == (common.Hash{}) {
			t.Fatalf("roots on, block %d index %d: state root %s (%v), header root %s, message %s %s",
				s.Number(), s.Index(), root, ok, hd.Root, msg.Diff.StateRoot, msg.Diff.BlockHash)
		}
	}
	h.Seq.Sync()
	if n := h.Seq.CutTries(); off && n != 0 {
		t.Fatalf("roots off: %d cut trie updates computed", n)
	} else if !off && n < uint64(len(snaps)) {
		t.Fatalf("roots on: %d cut trie updates for %d pre-confirmations", n, len(snaps))
	}

	// The sealed blocks carry their real roots.
	_, _, w2 := chaintest.InitStore(t, h.Spec)
	changed := 0
	var prevW common.Hash
	for n := uint64(1); n <= last; n++ {
		b := chaintest.CanonicalBlock(t, h.DB, n)
		if err := w2.Import([]*chaintypes.Block{b}, chain.ImportOptions{}); err != nil {
			t.Fatalf("block %d does not import (roots verified): %v", n, err)
		}
		if n < first {
			continue
		}
		st, err := view.StateAt(n)
		if err != nil {
			t.Fatal(err)
		}
		if flat, err := chain.StateRoot(st); err != nil || flat != b.Root() {
			t.Fatalf("block %d: state root %s, the flat state hashes to %s (%v)", n, b.Root(), flat, err)
		}
		slots := map[common.Hash]common.Hash{}
		if err := st.ForEachStorage(op.L2ToL1MessagePasser, func(k, v common.Hash) error { slots[k] = v; return nil }); err != nil {
			t.Fatal(err)
		}
		wroot, _ := chain.SlotsRoot(slots)
		if w := b.Header().WithdrawalsHash; w == nil || *w != wroot {
			t.Fatalf("block %d: withdrawals root %v, the message passer's storage hashes to %s", n, w, wroot)
		}
		if wroot != prevW {
			changed++
		}
		prevW = wroot
	}
	if changed < 3 {
		t.Fatalf("the withdrawals root changed in %d of blocks %d..%d", changed, first, last)
	}
}
