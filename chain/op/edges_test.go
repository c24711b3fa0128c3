package op

import (
	"bytes"
	"errors"
	"math"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// The edge cases of issue 37 part 3: the values a hand-made chain never
// reaches. Each case names the specification section (ethereum-optimism
// specs, specs/protocol/...) and was checked against op-geth v1.101702.3
// (core/types/rollup_cost.go, consensus/misc/eip1559, core/state_transition.go,
// core/block_validator.go), whose behaviour each expectation states.

// TestEdgeL1FeeParamsAtZero: every L1 fee parameter at 0.
func TestEdgeL1FeeParamsAtZero(t *testing.T) {
	cd := CostData{Zeroes: 10, Ones: 90, FastLZSize: 200}
	eco := uint64(10)
	z := uint64(0)
	cfg := &Config{BedrockBlock: new(big.Int), RegolithTime: &z, CanyonTime: &z, EcotoneTime: &eco, FjordTime: &eco,
		EIP1559Elasticity: 6, EIP1559Denominator: 50, EIP1559DenominatorCanyon: 250}
	slots := func(kv ...any) map[common.Hash]common.Hash {
		m := map[common.Hash]common.Hash{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(common.Hash)] = kv[i+1].(common.Hash)
		}
		return m
	}
	scalars := func(base, blob uint32) common.Hash {
		var w common.Hash
		big.NewInt(int64(base)).FillBytes(w[16:20])
		big.NewInt(int64(blob)).FillBytes(w[20:24])
		return w
	}
	one := common.BigToHash(big.NewInt(1))
	cases := []struct {
		name, spec  string
		t           uint64
		storage     map[common.Hash]common.Hash
		wantFormula Formula
		wantFee     int64
	}{
		// exec-engine.md "L1-Cost fees": (dataGas + overhead) * l1BaseFee * scalar / 1e6.
		{"bedrock, all zero", "exec-engine.md#l1-cost-fees", 5, slots(), FormulaBedrock, 0},
		{"bedrock, scalar zero", "exec-engine.md#l1-cost-fees", 5,
			slots(L1BaseFeeSlot, common.BigToHash(big.NewInt(30e9)), L1OverheadSlot, common.BigToHash(big.NewInt(188))), FormulaBedrock, 0},
		// ecotone/l1-attributes.md: the Ecotone slots unset (blob base fee
		// and both scalars zero) means the Ecotone activation block: the
		// Bedrock formula, on the Bedrock slots (op-geth firstEcotoneBlock).
		{"ecotone slots all zero: bedrock formula", "ecotone/l1-attributes.md", 12,
			slots(L1BaseFeeSlot, common.BigToHash(big.NewInt(1000)), L1OverheadSlot, common.BigToHash(big.NewInt(188)),
				L1ScalarSlot, common.BigToHash(big.NewInt(1_000_000))), FormulaBedrock, (10*4 + 90*16 + 188) * 1000},
		// A non-zero blob base fee with both scalars 0: the Fjord formula,
		// fee 0.
		{"fjord, both scalars zero", "fjord/exec-engine.md#fees", 12,
			slots(L1BaseFeeSlot, common.BigToHash(big.NewInt(30e9)), L1BlobBaseFeeSlot, one), FormulaFjord, 0},
		// A scalar set, the L1 base and blob base fees 0: fee 0.
		{"fjord, fees zero", "fjord/exec-engine.md#fees", 12,
			slots(L1ScalarsSlot, scalars(1368, 810949)), FormulaFjord, 0},
		// Only the blob part: estimatedSize(200) = 124e6 (fjord/exec-engine.md
		// "Fjord L1-Cost fee changes"), fee = 124e6 * 1 * 1e6 / 1e12.
		{"fjord, base fee scalar zero", "fjord/exec-engine.md#fees", 12,
			slots(L1ScalarsSlot, scalars(0, 1_000_000), L1BlobBaseFeeSlot, one), FormulaFjord, 124},
	}
	for _, c := range cases {
		p := ReadFeeParams(cfg, c.t, reader(c.storage))
		fee, _ := p.L1Cost(cd)
		if p.Formula != c.wantFormula || fee.Int64() != c.wantFee {
			t.Errorf("%s (%s): formula %v fee %v, want %v %d", c.name, c.spec, p.Formula, fee, c.wantFormula, c.wantFee)
		}
	}
}

// TestEdgeOperatorFee: isthmus/exec-engine.md "Operator Fee" (gas *
// scalar / 1e6 + constant) and Jovian's fix (gas * scalar * 100 +
// constant): zero parameters, the constant at its maximum, and results past
// 64 bits, which op-geth computes in big integers (a uint256 at most 77 and
// 103 bits).
func TestEdgeOperatorFee(t *testing.T) {
	maxC := uint64(math.MaxUint64)
	cases := []struct {
		name       string
		p          FeeParams
		gasLimit   uint64
		gasUsed    uint64
		wantCharge string // OperatorFee(gasLimit)
		wantRefund string // OperatorFeeRefund(gasLimit, gasUsed)
		wantFields bool   // operatorFee* receipt fields shown
	}{
		{"isthmus all zero", FeeParams{Operator: OperatorFeeIsthmus}, 100_000, 21_000, "0", "0", false},
		{"jovian all zero", FeeParams{Operator: OperatorFeeJovian, Jovian: true}, 100_000, 21_000, "0", "0", false},
		// The constant alone (scalar 0): charged in full whatever the gas,
		// nothing refunded.
		{"isthmus constant max", FeeParams{Operator: OperatorFeeIsthmus, OperatorFeeConstant: maxC}, 100_000, 21_000,
			"18446744073709551615", "0", true},
		{"jovian constant max", FeeParams{Operator: OperatorFeeJovian, Jovian: true, OperatorFeeConstant: maxC}, 100_000, 21_000,
			"18446744073709551615", "0", true},
		// Past 64 bits: 30M gas * (2^32-1) * 100 + (2^64-1); the refund
		// (30M - 21000 gas) * (2^32-1) * 100 too.
		{"jovian overflows 64 bits", FeeParams{Operator: OperatorFeeJovian, Jovian: true, OperatorFeeScalar: math.MaxUint32, OperatorFeeConstant: maxC},
			30_000_000, 21_000, "31331645958709551615", "12875882453680500000", true},
		{"isthmus scalar max", FeeParams{Operator: OperatorFeeIsthmus, OperatorFeeScalar: math.MaxUint32, OperatorFeeConstant: 0},
			30_000_000, 21_000, "128849018850", "128758824537", true},
		// Before Isthmus there is no operator fee whatever the slot holds.
		{"pre-isthmus", FeeParams{OperatorFeeScalar: 5, OperatorFeeConstant: 5}, 100_000, 21_000, "0", "0", false},
	}
	cd := CostData{Ones: 100, FastLZSize: 100}
	for _, c := range cases {
		if got := c.p.OperatorFee(c.gasLimit).String(); got != c.wantCharge {
			t.Errorf("%s: charged %s, want %s", c.name, got, c.wantCharge)
		}
		if got := c.p.OperatorFeeRefund(c.gasLimit, c.gasUsed).String(); got != c.wantRefund {
			t.Errorf("%s: refund %s, want %s", c.name, got, c.wantRefund)
		}
		c.p.L1BaseFee, c.p.BlobBaseFee = new(big.Int), new(big.Int)
		c.p.Formula = FormulaFjord
		r := c.p.ReceiptFields(cd)
		if (r.OperatorFeeScalar != nil) != c.wantFields || (r.OperatorFeeConstant != nil) != c.wantFields {
			t.Errorf("%s: receipt operator fields %v %v, shown %v (op-geth: only when scalar or constant is non-zero)",
				c.name, r.OperatorFeeScalar, r.OperatorFeeConstant, c.wantFields)
		}
	}
}

// TestEdgeBaseFee: holocene/exec-engine.md "Dynamic EIP-1559 Parameters"
// and jovian/exec-engine.md "Minimum Base Fee", "DA Footprint Block Limit":
// minBaseFee 0 (no floor), a zero base fee, eip1559Params zero (the chain's
// constants), a DA footprint at the block gas limit.
func TestEdgeBaseFee(t *testing.T) {
	cfg := holoceneConfig(u64p(100), u64p(200))
	jov := func(baseFee int64, gasUsed, blobGasUsed, min uint64) *types.Header {
		return &types.Header{Number: big.NewInt(10), Time: 250, GasLimit: 60_000_000, GasUsed: gasUsed, BlobGasUsed: &blobGasUsed,
			BaseFee: big.NewInt(baseFee), Extra: EIP1559Params{Denominator: 250, Elasticity: 6, MinBaseFee: min}.Encode(true)}
	}
	cases := []struct {
		name   string
		parent *types.Header
		want   int64
	}{
		// minBaseFee 0: no floor; the fee falls as without Jovian.
		{"min base fee 0", jov(1_000_000, 0, 0, 0), 1_000_000 - 1_000_000/250},
		// A zero base fee stays 0 under target and rises by 1 wei above it
		// (EIP-1559's max(1, ...)).
		{"zero base fee, empty", jov(0, 0, 0, 0), 0},
		{"zero base fee, full", jov(0, 60_000_000, 0, 0), 1},
		// The floor: 1 wei base fee, minBaseFee 7.
		{"min base fee floor", jov(1, 0, 0, 7), 7},
		// DA footprint at the gas limit: metered as a full block.
		{"da footprint at gas limit", jov(1_000_000, 21_000, 60_000_000, 0), 1_000_000 + 1_000_000*50_000_000/10_000_000/250},
		// The maximum minBaseFee.
		{"min base fee max", jov(1, 0, 0, math.MaxUint64), -1},
	}
	for _, c := range cases {
		got, err := CalcBaseFee(cfg, c.parent, c.parent.Time+2)
		want := big.NewInt(c.want)
		if c.want < 0 {
			want = new(big.Int).SetUint64(math.MaxUint64)
		}
		if err != nil || got.Cmp(want) != 0 {
			t.Errorf("%s: %v %v, want %v", c.name, got, err, want)
		}
	}
	// eip1559Params zero in the payload attributes: the chain's Canyon
	// denominator and elasticity in the header (holocene/exec-engine.md);
	// with a zero minBaseFee from Jovian.
	if got, err := ExtraDataFromAttributes(cfg, 250, make([]byte, 8), u64p(0)); err != nil ||
		!bytes.Equal(got, EIP1559Params{Denominator: 250, Elasticity: 6}.Encode(true)) {
		t.Errorf("zero eip1559Params in Jovian: %x %v", got, err)
	}
	// A header's extraData cannot carry the zeros: both must be non-zero
	// (op-geth ValidateHoloceneExtraData), the minBaseFee is free.
	for name, extra := range map[string][]byte{
		"holocene zeros": EIP1559Params{}.Encode(false),
		"jovian zeros":   EIP1559Params{MinBaseFee: 5}.Encode(true),
	} {
		if _, err := DecodeExtraData(extra, len(extra) == JovianExtraDataLen); !errors.Is(err, ErrExtraData) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The DA footprint at the gas limit is valid, one above it is not
	// (op-geth block_validator: "DA footprint exceeds block gas limit").
	zero := uint64(0)
	for _, c := range []struct {
		used uint64
		ok   bool
	}{{60_000_000, true}, {60_000_001, false}} {
		h := &types.Header{Time: 250, GasLimit: 60_000_000, BlobGasUsed: &c.used, ExcessBlobGas: &zero}
		if err := VerifyBlobGas(cfg, h, c.used); (err == nil) != c.ok {
			t.Errorf("DA footprint %d at gas limit 60M: %v", c.used, err)
		}
	}
}

// TestEdgeActivationBlocks: the L1-info encoding the first block of each
// fork uses, and the DA footprint rule there. ecotone/l1-attributes.md:
// the Ecotone activation block still calls setL1BlockValues (Bedrock);
// isthmus/l1-attributes.md: the Isthmus activation block uses
// setL1BlockValuesEcotone; jovian/l1-attributes.md: the Jovian activation
// block uses setL1BlockValuesIsthmus and holds no user transaction
// (op-geth CalcDAFootprint); a fork active at genesis has no activation
// block (block 1 uses its encoding).
func TestEdgeActivationBlocks(t *testing.T) {
	z, eco, ist, jov := uint64(0), uint64(10), uint64(20), uint64(30)
	cfg := &Config{BedrockBlock: new(big.Int), RegolithTime: &z, CanyonTime: &z, EcotoneTime: &eco, FjordTime: &eco,
		GraniteTime: &eco, HoloceneTime: &eco, IsthmusTime: &ist, JovianTime: &jov,
		EIP1559Elasticity: 6, EIP1559Denominator: 50, EIP1559DenominatorCanyon: 250}
	// Isthmus and Jovian at once: the activation block of both keeps the
	// Ecotone encoding, which op-geth's Jovian DA footprint refuses (the
	// schedule cannot produce blocks; op-node's config check forbids it).
	same := *cfg
	same.JovianTime = &ist
	cases := []struct {
		name     string
		cfg      *Config
		t, prev  uint64
		want     L1InfoVersion
		userTxOK bool // a user transaction may follow (DA footprint rule)
		daErr    bool // BlockDAFootprint refuses the block even without user transactions
	}{
		{"ecotone activation", cfg, 10, 8, L1InfoBedrock, true, false},
		{"after ecotone", cfg, 12, 10, L1InfoEcotone, true, false},
		{"isthmus activation", cfg, 20, 18, L1InfoEcotone, true, false},
		{"after isthmus", cfg, 22, 20, L1InfoIsthmus, true, false},
		{"jovian activation", cfg, 30, 28, L1InfoIsthmus, false, false},
		{"after jovian", cfg, 32, 30, L1InfoJovian, true, false},
		{"isthmus and jovian at once", &same, 20, 18, L1InfoEcotone, false, true},
	}
	for _, c := range cases {
		v := L1InfoVersionAt(c.cfg, c.t, c.prev)
		if v != c.want {
			t.Errorf("%s: encoding %d, want %d", c.name, v, c.want)
			continue
		}
		if !c.cfg.IsJovian(c.t) {
			continue
		}
		info, err := (&L1Info{Version: v, DAFootprintGasScalar: 400}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		_, errEmpty := BlockDAFootprint(info, nil)
		_, errUser := BlockDAFootprint(info, []CostData{{FastLZSize: 10}})
		if (errEmpty != nil) != c.daErr || (errUser == nil) != c.userTxOK {
			t.Errorf("%s: deposits only: %v; with a user transaction: %v", c.name, errEmpty, errUser)
		}
	}
	// The Jovian default DA scalar (jovian/l1-attributes.md): op-node
	// writes 400 into the L1-info calldata when the SystemConfig holds 0;
	// the engine reads the calldata as it is (op-geth
	// ExtractDAFootprintGasScalar), so a 0 there is a footprint of 0.
	info, _ := (&L1Info{Version: L1InfoJovian}).Marshal()
	if fp, err := BlockDAFootprint(info, []CostData{{FastLZSize: 10}}); err != nil || fp != 0 {
		t.Errorf("scalar 0 in the calldata: footprint %d %v, want 0", fp, err)
	}
	if err := (SyntheticL1{BaseFee: big.NewInt(1), BlobBaseFee: big.NewInt(1), BlockTime: 12}).Validate(); err == nil {
		t.Error("the producer's synthetic L1 accepts a DA scalar of 0 (op-node writes the default 400)")
	}
}
