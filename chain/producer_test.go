package chain_test

import (
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
)

// TestProducerSeamOnL1: on an L1 chain the producer seam changes nothing:
// no header change, no opening transaction, every block takes sequenced
// transactions, no extra cost.
func TestProducerSeamOnL1(t *testing.T) {
	g := chaintest.Genesis(t)
	exec := g.Executor()
	parent := g.Block.Header()
	h := types.CopyHeader(parent)
	h.Number, h.Time = big.NewInt(1), parent.Time+12
	before := h.Hash()
	if err := exec.PrepareHeader(h, parent, chain.DefaultProducerConfig()); err != nil || h.Hash() != before {
		t.Fatalf("PrepareHeader changed an L1 header (%v)", err)
	}
	if txs, err := exec.OpeningTxs(h, parent, nil, chain.DefaultProducerConfig()); err != nil || txs != nil {
		t.Fatalf("opening transactions on L1: %v %v", txs, err)
	}
	if !exec.AcceptsSequencedTxs(h, parent) {
		t.Fatal("an L1 block refuses sequenced transactions")
	}
	if c, err := exec.ExtraTxCost(types.NewTx(&types.LegacyTx{Gas: 21000}), h, nil); err != nil || c.Sign() != 0 {
		t.Fatalf("extra cost on L1: %v %v", c, err)
	}
}

// TestAcceptsSequencedTxs: an OP fork's activation block holds deposits
// only.
func TestAcceptsSequencedTxs(t *testing.T) {
	cfg := strings.Replace(opGenesis, `"jovianTime":0,"karstTime":0`, `"jovianTime":100`, 1)
	g, err := chain.ParseGenesis([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	exec := g.Executor()
	for _, tc := range []struct {
		parent, t uint64
		want      bool
	}{{90, 98, true}, {98, 100, false}, {99, 104, false}, {100, 102, true}, {0, 2, true}} {
		p := &types.Header{Number: big.NewInt(1), Time: tc.parent}
		h := &types.Header{Number: big.NewInt(2), Time: tc.t}
		if got := exec.AcceptsSequencedTxs(h, p); got != tc.want {
			t.Errorf("block at %d on parent at %d: %v, want %v", tc.t, tc.parent, got, tc.want)
		}
	}
}
