package chain_test

import (
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/chain/op"
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

// TestPrepareHeaderEIP1559Params: an OP header carries the producer's
// Holocene eip1559Params in its extraData (an OP fork continues its
// upstream's), the chain's constants when they are zero; one of the two
// zero is refused.
func TestPrepareHeaderEIP1559Params(t *testing.T) {
	g, err := chain.ParseGenesis([]byte(opGenesis))
	if err != nil {
		t.Fatal(err)
	}
	exec := g.Executor()
	parent := types.CopyHeader(g.Block.Header())
	parent.Extra = op.EIP1559Params{Denominator: 250, Elasticity: 6}.Encode(true)
	for _, tc := range []struct {
		den, el uint32
		want    op.EIP1559Params
	}{
		{0, 0, op.EIP1559Params{Denominator: uint32(g.OP.EIP1559DenominatorCanyon), Elasticity: uint32(g.OP.EIP1559Elasticity), MinBaseFee: 7}},
		{8, 2, op.EIP1559Params{Denominator: 8, Elasticity: 2, MinBaseFee: 7}},
	} {
		c := chain.DefaultProducerConfig()
		c.EIP1559Denominator, c.EIP1559Elasticity, c.MinBaseFee = tc.den, tc.el, 7
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		h := &types.Header{Number: big.NewInt(1), Time: parent.Time + 2, GasLimit: parent.GasLimit}
		if err := exec.PrepareHeader(h, parent, c); err != nil {
			t.Fatal(err)
		}
		got, err := op.DecodeExtraData(h.Extra, true)
		if err != nil || got != tc.want {
			t.Fatalf("params (%d, %d): extraData %x = %+v (%v), want %+v", tc.den, tc.el, h.Extra, got, err, tc.want)
		}
	}
	c := chain.DefaultProducerConfig()
	c.EIP1559Denominator = 8
	if err := c.Validate(); err == nil {
		t.Fatal("a denominator without an elasticity accepted")
	}
}
