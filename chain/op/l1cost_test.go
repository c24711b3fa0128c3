package op

import (
	"encoding/binary"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/rlp"
)

// Published receipts (reth crates/optimism/rpc/src/eth/receipt.rs tests,
// values from the chains' explorers; see ../shared/op/README.md): the
// L1-info deposit of the block and one user transaction, both as EIP-2718
// bytes.
const (
	// OP Mainnet block 124665056 (Fjord), tx 0 and tx 1.
	opMainnetL1Info = "0x7ef8f8a0683079df94aa5b9cf86687d739a60a9b4f0835e520ec4d664e2e415dca17a6df94deaddeaddeaddeaddeaddeaddeaddeaddead00019442000000000000000000000000000000000000158080830f424080b8a4440a5e200000146b000f79c500000000000000040000000066d052e700000000013ad8a3000000000000000000000000000000000000000000000000000000003ef1278700000000000000000000000000000000000000000000000000000000000000012fdf87b89884a61e74b322bbcf60386f543bfae7827725efaaf0ab1de2294a590000000000000000000000006887246668a3b87f54deb3b94ba47a6f63f32985"
	opMainnetTx     = "0x02f904940a8303fba78401d6d2798401db2b6d830493e0943e6f4f7866654c18f536170780344aa8772950b680b904246a761202000000000000000000000000087000a300de7200382b55d40045000000e5d60e0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000014000000000000000000000000000000000000000000000000000000000000000010000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000003a0000000000000000000000000000000000000000000000000000000000000022482ad56cb0000000000000000000000000000000000000000000000000000000000000020000000000000000000000000000000000000000000000000000000000000000200000000000000000000000000000000000000000000000000000000000000400000000000000000000000000000000000000000000000000000000000000120000000000000000000000000dc6ff44d5d932cbd77b52e5612ba0529dc6226f1000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000600000000000000000000000000000000000000000000000000000000000000044095ea7b300000000000000000000000021c4928109acb0659a88ae5329b5374a3024694c0000000000000000000000000000000000000000000000049b9ca9a6943400000000000000000000000000000000000000000000000000000000000000000000000000000000000021c4928109acb0659a88ae5329b5374a3024694c000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000600000000000000000000000000000000000000000000000000000000000000024b6b55f250000000000000000000000000000000000000000000000049b9ca9a694340000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000415ec214a3950bea839a7e6fbb0ba1540ac2076acd50820e2d5ef83d0902cdffb24a47aff7de5190290769c4f0a9c6fabf63012986a0d590b1b571547a8c7050ea1b00000000000000000000000000000000000000000000000000000000000000c080a06db770e6e25a617fe9652f0958bd9bd6e49281a53036906386ed39ec48eadf63a07f47cf51a4a40b4494cf26efc686709a9b03939e20ee27e59682f5faa536667e"
	// Base mainnet block 21713817 (Fjord by then), L1-info deposit and a
	// user transaction.
	baseL1Info = "0x7ef8f8a0389e292420bcbf9330741f72074e39562a09ff5a00fd22e4e9eee7e34b81bca494deaddeaddeaddeaddeaddeaddeaddeaddead00019442000000000000000000000000000000000000158080830f424080b8a4440a5e20000008dd00101c120000000000000004000000006721035b00000000014189960000000000000000000000000000000000000000000000000000000349b4dcdc000000000000000000000000000000000000000000000000000000004ef9325cc5991ce750960f636ca2ffbb6e209bb3ba91412f21dd78c14ff154d1930f1f9a0000000000000000000000005050f69a9786f081509234f1a7f4684b5e5b76c9"
	baseTx     = "0x02f86c8221058034839a4ae283021528942f16386bb37709016023232523ff6d9daf444be380841249c58bc080a001b927eda2af9b00b52a57be0885e0303c39dd2831732e14051c2336470fd468a0681bf120baf562915841a48601c2b54a6742511e535cf8f71c95115af7ff63bd"
)

// depositFields is the RLP payload of a deposit (0x7e ‖ RLP), enough for the
// tests to take an L1-info deposit's calldata out.
type depositFields struct {
	SourceHash common.Hash
	From       common.Address
	To         *common.Address `rlp:"nil"`
	Mint       *big.Int
	Value      *big.Int
	Gas        uint64
	IsSystemTx bool
	Data       []byte
}

func depositData(t *testing.T, enc string) []byte {
	t.Helper()
	b := hexutil.MustDecode(enc)
	if b[0] != 0x7e {
		t.Fatalf("not a deposit: type %#x", b[0])
	}
	var d depositFields
	if err := rlp.DecodeBytes(b[1:], &d); err != nil {
		t.Fatal(err)
	}
	if d.From != L1InfoDepositor || d.To == nil || *d.To != L1BlockAddr {
		t.Fatalf("not an L1-info deposit: from %s to %v", d.From, d.To)
	}
	return d.Data
}

// infoSlots is the L1Block storage setL1BlockValues* leaves for info (test
// model of L1Block.sol's layout, written from the specs' slot table).
func infoSlots(info *L1Info) map[common.Hash]common.Hash {
	s := map[common.Hash]common.Hash{}
	var w common.Hash
	binary.BigEndian.PutUint64(w[24:], info.Number)
	binary.BigEndian.PutUint64(w[16:], info.Time)
	s[L1BlockNumberSlot] = w
	s[L1BaseFeeSlot] = common.BigToHash(orZero(info.BaseFee))
	s[L1BlockHashSlot] = info.BlockHash
	w = common.Hash{}
	binary.BigEndian.PutUint64(w[24:], info.SequenceNumber)
	if info.Version != L1InfoBedrock {
		binary.BigEndian.PutUint32(w[20:], info.BlobBaseFeeScalar)
		binary.BigEndian.PutUint32(w[16:], info.BaseFeeScalar)
		s[L1BlobBaseFeeSlot] = common.BigToHash(orZero(info.BlobBaseFee))
	} else {
		s[L1OverheadSlot] = common.BigToHash(orZero(info.L1FeeOverhead))
		s[L1ScalarSlot] = common.BigToHash(orZero(info.L1FeeScalar))
	}
	s[L1ScalarsSlot] = w
	s[L1BatcherHashSlot] = info.BatcherHash
	if info.Version >= L1InfoIsthmus {
		w = common.Hash{}
		binary.BigEndian.PutUint64(w[24:], info.OperatorFeeConstant)
		binary.BigEndian.PutUint32(w[20:], info.OperatorFeeScalar)
		binary.BigEndian.PutUint16(w[18:], info.DAFootprintGasScalar)
		s[L1OperatorFeeSlot] = w
	}
	return s
}

func reader(m map[common.Hash]common.Hash) func(common.Hash) common.Hash {
	return func(k common.Hash) common.Hash { return m[k] }
}

// fjordConfig has every fork up to Granite at genesis (OP Mainnet and Base at
// the published blocks).
func fjordConfig() *Config {
	z := uint64(0)
	return &Config{BedrockBlock: new(big.Int), RegolithTime: &z, CanyonTime: &z, DeltaTime: &z,
		EcotoneTime: &z, FjordTime: &z, GraniteTime: &z,
		EIP1559Elasticity: 6, EIP1559Denominator: 50, EIP1559DenominatorCanyon: 250}
}

func TestPublishedReceiptL1Fees(t *testing.T) {
	cases := []struct {
		name                  string
		l1Info, tx            string
		time                  uint64
		gasPrice, gasUsed     uint64
		fee                   string
		baseScalar, blobFee   uint64
		blobScalar, fastlzLen uint64
	}{
		{"op mainnet 124665056 tx 1", opMainnetL1Info, opMainnetTx, 1724928889, 1055991687, 4471, "24681034813", 5227, 1, 1014213, 385},
		{"base 21713817", baseL1Info, baseTx, 1730216981, 14121491676, 1600, "191150293412", 2269, 1324954204, 1055762, 0},
	}
	cfg := fjordConfig()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			info, err := ParseL1Info(depositData(t, c.l1Info))
			if err != nil {
				t.Fatal(err)
			}
			if info.Version != L1InfoEcotone {
				t.Fatalf("version %d", info.Version)
			}
			cd := NewCostData(hexutil.MustDecode(c.tx))
			if c.fastlzLen != 0 && cd.FastLZSize != c.fastlzLen {
				t.Errorf("FastLZ size %d, want %d (the only size giving l1GasUsed %d)", cd.FastLZSize, c.fastlzLen, c.gasUsed)
			}
			// Both sources of the parameters: the predeploy's storage
			// (execution) and the L1-info calldata (receipts).
			for src, p := range map[string]*FeeParams{
				"storage":  ReadFeeParams(cfg, c.time, reader(infoSlots(info))),
				"calldata": info.FeeParams(cfg, c.time),
			} {
				if p.Formula != FormulaFjord {
					t.Fatalf("%s: formula %s", src, p.Formula)
				}
				r := p.ReceiptFields(cd)
				if r.L1GasPrice.Uint64() != c.gasPrice || r.L1GasUsed.Uint64() != c.gasUsed || r.L1Fee.String() != c.fee ||
					*r.L1BaseFeeScalar != c.baseScalar || r.L1BlobBaseFee.Uint64() != c.blobFee || *r.L1BlobBaseFeeScalar != c.blobScalar {
					t.Errorf("%s: got l1GasPrice %v l1GasUsed %v l1Fee %v l1BaseFeeScalar %d l1BlobBaseFee %v l1BlobBaseFeeScalar %d",
						src, r.L1GasPrice, r.L1GasUsed, r.L1Fee, *r.L1BaseFeeScalar, r.L1BlobBaseFee, *r.L1BlobBaseFeeScalar)
				}
				if r.L1FeeScalar != "" || r.OperatorFeeScalar != nil || r.DAFootprintGasScalar != nil || r.BlobGasUsed != nil {
					t.Errorf("%s: fields of other forks set: %+v", src, r)
				}
			}
		})
	}
}

// TestL1CostFormulas checks each formula on hand-computed values.
func TestL1CostFormulas(t *testing.T) {
	cd := CostData{Zeroes: 10, Ones: 90, FastLZSize: 200}
	// dataGas = 10*4 + 90*16 = 1480 (Regolith), +68*16 = 2568 before.
	cases := []struct {
		name    string
		p       FeeParams
		fee     int64
		gasUsed int64
	}{
		{"bedrock regolith", FeeParams{Formula: FormulaBedrock, Regolith: true, L1BaseFee: big.NewInt(1000), Overhead: big.NewInt(188), Scalar: big.NewInt(684000)},
			(1480 + 188) * 1000 * 684000 / 1_000_000, 1480 + 188},
		{"bedrock pre-regolith", FeeParams{Formula: FormulaBedrock, L1BaseFee: big.NewInt(1000), Overhead: big.NewInt(188), Scalar: big.NewInt(684000)},
			(2568 + 188) * 1000 * 684000 / 1_000_000, 2568 + 188},
		{"ecotone", FeeParams{Formula: FormulaEcotone, L1BaseFee: big.NewInt(1000), BaseFeeScalar: 5000, BlobBaseFee: big.NewInt(7), BlobBaseFeeScalar: 900000},
			1480 * (16*1000*5000 + 7*900000) / 16_000_000, 1480},
		// estimated size: 836500*200 - 42585600 = 124714400 (> 100e6).
		{"fjord", FeeParams{Formula: FormulaFjord, L1BaseFee: big.NewInt(1000), BaseFeeScalar: 5000, BlobBaseFee: big.NewInt(7), BlobBaseFeeScalar: 900000},
			124714400 * (16*1000*5000 + 7*900000) / 1_000_000_000_000, 124714400 * 16 / 1_000_000},
	}
	for _, c := range cases {
		fee, gas := c.p.L1Cost(cd)
		if fee.Int64() != c.fee || gas.Int64() != c.gasUsed {
			t.Errorf("%s: fee %v gas %v, want %d %d", c.name, fee, gas, c.fee, c.gasUsed)
		}
	}
	// Fjord floor: a tiny transaction counts as 100 bytes.
	small := CostData{FastLZSize: 10}
	if got := small.EstimatedSizeScaled(); got.Int64() != 100e6 {
		t.Errorf("min size %v", got)
	}
	if got := small.EstimatedDASize(); got != 100 {
		t.Errorf("DA size %d", got)
	}
	if got := cd.EstimatedDASize(); got != 124 {
		t.Errorf("DA size %d, want 124", got)
	}
}

func TestOperatorFee(t *testing.T) {
	isthmus := FeeParams{Operator: OperatorFeeIsthmus, OperatorFeeScalar: 1_500_000, OperatorFeeConstant: 7}
	jovian := FeeParams{Operator: OperatorFeeJovian, OperatorFeeScalar: 3, OperatorFeeConstant: 7}
	none := FeeParams{OperatorFeeScalar: 3, OperatorFeeConstant: 7}
	cases := []struct {
		name string
		p    FeeParams
		gas  uint64
		want string
	}{
		{"isthmus", isthmus, 100_001, "150008"}, // 100001*1.5 = 150001.5 -> 150001, + 7
		{"jovian", jovian, 100_001, "30000307"}, // 100001*3*100 + 7
		{"none", none, 100_001, "0"},
		// Maximum inputs: no overflow (77 and 103 bits).
		{"isthmus max", FeeParams{Operator: OperatorFeeIsthmus, OperatorFeeScalar: ^uint32(0), OperatorFeeConstant: ^uint64(0)}, ^uint64(0), "79246609239891303067154"},
		{"jovian max", FeeParams{Operator: OperatorFeeJovian, OperatorFeeScalar: ^uint32(0), OperatorFeeConstant: ^uint64(0)}, ^uint64(0), "7922816249600206095627652694115"},
	}
	for _, c := range cases {
		if got := c.p.OperatorFee(c.gas).String(); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	// Refund: charged at the gas limit, kept at gas used.
	if got := isthmus.OperatorFeeRefund(100_001, 40_000).String(); got != "90001" { // 150001 - 60000
		t.Errorf("isthmus refund %s", got)
	}
	if got := jovian.OperatorFeeRefund(100_001, 40_000).String(); got != "18000300" {
		t.Errorf("jovian refund %s", got)
	}
}

func TestReceiptFieldsByFork(t *testing.T) {
	cd := CostData{Zeroes: 10, Ones: 90, FastLZSize: 200}
	bedrock := FeeParams{Formula: FormulaBedrock, Regolith: true, L1BaseFee: big.NewInt(1000), Overhead: big.NewInt(188), Scalar: big.NewInt(684000)}
	r := bedrock.ReceiptFields(cd)
	if r.L1FeeScalar != "0.684" || r.L1BaseFeeScalar != nil || r.L1BlobBaseFee != nil {
		t.Errorf("bedrock: %+v", r)
	}
	jov := FeeParams{Formula: FormulaFjord, L1BaseFee: big.NewInt(1), BlobBaseFee: big.NewInt(1), Operator: OperatorFeeJovian, Jovian: true, DAFootprintGasScalar: 400}
	r = jov.ReceiptFields(cd)
	if r.OperatorFeeScalar != nil || r.OperatorFeeConstant != nil {
		t.Errorf("zero operator params must be omitted: %+v", r)
	}
	if r.DAFootprintGasScalar == nil || *r.DAFootprintGasScalar != 400 || r.BlobGasUsed == nil || *r.BlobGasUsed != 124*400 {
		t.Errorf("jovian DA fields: %+v", r)
	}
	jov.OperatorFeeConstant = 2
	r = jov.ReceiptFields(cd)
	if r.OperatorFeeScalar == nil || *r.OperatorFeeScalar != 0 || *r.OperatorFeeConstant != 2 {
		t.Errorf("non-zero operator params must be shown: %+v", r)
	}
	for in, want := range map[int64]string{684000: "0.684", 1000000: "1", 15: "1.5e-05", 2500000: "2.5"} {
		if got := FeeScalarText(big.NewInt(in)); got != want {
			t.Errorf("FeeScalarText(%d) = %s, want %s", in, got, want)
		}
	}
}

// TestReadFeeParamsEcotoneActivation: in the Ecotone activation block the
// L1-info deposit still calls setL1BlockValues, the Ecotone slots are unset
// and the Bedrock formula applies; from the next block the Ecotone one.
func TestReadFeeParamsEcotoneActivation(t *testing.T) {
	ten := uint64(10)
	z := uint64(0)
	cfg := &Config{BedrockBlock: new(big.Int), RegolithTime: &z, CanyonTime: &z, DeltaTime: &z, EcotoneTime: &ten,
		EIP1559Elasticity: 6, EIP1559Denominator: 50, EIP1559DenominatorCanyon: 250}
	bed := &L1Info{Version: L1InfoBedrock, BaseFee: big.NewInt(30e9), L1FeeOverhead: big.NewInt(188), L1FeeScalar: big.NewInt(684000), SequenceNumber: 3}
	slots := infoSlots(bed)
	if p := ReadFeeParams(cfg, 9, reader(slots)); p.Formula != FormulaBedrock || p.Scalar.Int64() != 684000 {
		t.Fatalf("pre-ecotone: %+v", p)
	}
	if p := ReadFeeParams(cfg, 10, reader(slots)); p.Formula != FormulaBedrock || p.Overhead.Int64() != 188 {
		t.Fatalf("activation block: %+v", p)
	}
	eco := &L1Info{Version: L1InfoEcotone, BaseFee: big.NewInt(30e9), BaseFeeScalar: 684000, BlobBaseFee: big.NewInt(1), SequenceNumber: 4}
	if p := ReadFeeParams(cfg, 12, reader(infoSlots(eco))); p.Formula != FormulaEcotone || p.BaseFeeScalar != 684000 {
		t.Fatalf("after activation: %+v", p)
	}
	// The calldata path agrees: the Bedrock encoding means the Bedrock formula.
	if p := bed.FeeParams(cfg, 10); p.Formula != FormulaBedrock {
		t.Fatalf("calldata activation block: %+v", p)
	}
}

// BenchmarkNewCostData is the per-transaction cost of the L1 fee inputs on an
// OP chain (byte counts and FastLZ) for the 1.2 kB OP Mainnet transaction.
func BenchmarkNewCostData(b *testing.B) {
	tx := hexutil.MustDecode(opMainnetTx)
	b.SetBytes(int64(len(tx)))
	for b.Loop() {
		_ = NewCostData(tx)
	}
}
