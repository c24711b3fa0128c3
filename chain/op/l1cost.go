package op

import (
	"math/big"
)

// Fjord L1 cost and Jovian DA footprint constants (fjord/exec-engine.md),
// scaled by 1e6.
const (
	FjordIntercept          = -42_585_600
	FjordFastLZCoef         = 836_500
	FjordMinTransactionSize = 100
)

var (
	big16        = big.NewInt(16)
	big1e6       = big.NewInt(1_000_000)
	big16e6      = big.NewInt(16_000_000)
	big1e12      = big.NewInt(1_000_000_000_000)
	bigFjordMinS = big.NewInt(FjordMinTransactionSize * 1_000_000)
)

// CostData is what the L1 data fee needs of a transaction: its full EIP-2718
// encoding (signature included) summarised. Deposits have none: they pay no
// L1 fee.
type CostData struct {
	Zeroes, Ones uint64 // zero and non-zero bytes
	FastLZSize   uint64 // FastLZ-compressed length (Fjord, Jovian)
}

// NewCostData summarises a transaction's EIP-2718 encoding
// (MarshalBinary).
func NewCostData(encoded []byte) CostData {
	var cd CostData
	for _, b := range encoded {
		if b == 0 {
			cd.Zeroes++
		} else {
			cd.Ones++
		}
	}
	cd.FastLZSize = FastLZSize(encoded)
	return cd
}

// dataGas is the calldata gas of the encoding: 4 per zero byte, 16 per other
// byte, plus 68 non-zero bytes before Regolith (a signature's worth).
func (cd CostData) dataGas(regolith bool) uint64 {
	g := cd.Zeroes*4 + cd.Ones*16
	if !regolith {
		g += 68 * 16
	}
	return g
}

// EstimatedSizeScaled is the Fjord estimate of the transaction's compressed
// size in bytes, scaled by 1e6: max(100e6, intercept + coef*fastlzSize).
func (cd CostData) EstimatedSizeScaled() *big.Int {
	s := new(big.Int).SetUint64(cd.FastLZSize)
	s.Mul(s, big.NewInt(FjordFastLZCoef))
	s.Add(s, big.NewInt(FjordIntercept))
	if s.Cmp(bigFjordMinS) < 0 {
		s.Set(bigFjordMinS)
	}
	return s
}

// EstimatedDASize is the Jovian DA usage estimate in bytes:
// max(100, (intercept + coef*fastlzSize) / 1e6).
func (cd CostData) EstimatedDASize() uint64 {
	return new(big.Int).Quo(cd.EstimatedSizeScaled(), big1e6).Uint64()
}

func orZero(v *big.Int) *big.Int {
	if v == nil {
		return new(big.Int)
	}
	return v
}

// ecotoneFeeScaled is 16*l1BaseFee*baseFeeScalar + blobBaseFee*blobBaseFeeScalar.
func (p *FeeParams) ecotoneFeeScaled() *big.Int {
	a := new(big.Int).Mul(orZero(p.L1BaseFee), big16)
	a.Mul(a, new(big.Int).SetUint64(uint64(p.BaseFeeScalar)))
	b := new(big.Int).Mul(orZero(p.BlobBaseFee), new(big.Int).SetUint64(uint64(p.BlobBaseFeeScalar)))
	return a.Add(a, b)
}

// L1Cost returns the L1 data fee of a non-deposit transaction (wei) and the
// L1 gas its receipt reports as l1GasUsed:
//   - Bedrock: fee (dataGas + overhead) * l1BaseFee * scalar / 1e6; gas
//     dataGas + overhead;
//   - Ecotone: fee dataGas * ecotoneFeeScaled / 16e6; gas dataGas;
//   - Fjord: fee estimatedSizeScaled * ecotoneFeeScaled / 1e12; gas
//     estimatedSizeScaled * 16 / 1e6.
func (p *FeeParams) L1Cost(cd CostData) (fee, gasUsed *big.Int) {
	switch p.Formula {
	case FormulaBedrock:
		g := new(big.Int).SetUint64(cd.dataGas(p.Regolith))
		g.Add(g, orZero(p.Overhead))
		fee = new(big.Int).Mul(g, orZero(p.L1BaseFee))
		fee.Mul(fee, orZero(p.Scalar))
		fee.Quo(fee, big1e6)
		return fee, g
	case FormulaEcotone:
		g := new(big.Int).SetUint64(cd.dataGas(true))
		fee = new(big.Int).Mul(g, p.ecotoneFeeScaled())
		fee.Quo(fee, big16e6)
		return fee, g
	default:
		size := cd.EstimatedSizeScaled()
		fee = new(big.Int).Mul(size, p.ecotoneFeeScaled())
		fee.Quo(fee, big1e12)
		g := new(big.Int).Mul(size, big16)
		g.Quo(g, big1e6)
		return fee, g
	}
}

// OperatorFee is the operator fee for gas (Isthmus: gas*scalar/1e6 +
// constant; Jovian: gas*scalar*100 + constant; zero before Isthmus).
// Charge OperatorFee(gasLimit) with the gas purchase (it counts in the
// balance check); after execution refund OperatorFeeRefund and credit
// OperatorFee(gasUsed) to OperatorFeeVault. Deposits pay none.
func (p *FeeParams) OperatorFee(gas uint64) *big.Int {
	fee := new(big.Int)
	switch p.Operator {
	case OperatorFeeIsthmus:
		fee.SetUint64(gas)
		fee.Mul(fee, new(big.Int).SetUint64(uint64(p.OperatorFeeScalar)))
		fee.Quo(fee, big1e6)
	case OperatorFeeJovian:
		fee.SetUint64(gas)
		fee.Mul(fee, new(big.Int).SetUint64(uint64(p.OperatorFeeScalar)*100))
	default:
		return fee
	}
	return fee.Add(fee, new(big.Int).SetUint64(p.OperatorFeeConstant))
}

// OperatorFeeRefund is what goes back to the sender after execution:
// OperatorFee(gasLimit) - OperatorFee(gasUsed), gasUsed being the gas the
// transaction is finally charged for (after the EIP-3529 refund and the
// EIP-7623 floor: the receipt's gasUsed).
func (p *FeeParams) OperatorFeeRefund(gasLimit, gasUsed uint64) *big.Int {
	r := p.OperatorFee(gasLimit)
	r.Sub(r, p.OperatorFee(gasUsed))
	if r.Sign() < 0 {
		r.SetInt64(0)
	}
	return r
}

// DAFootprint is a non-deposit transaction's DA footprint from Jovian (its
// receipt's blobGasUsed): EstimatedDASize * daFootprintGasScalar. Zero
// before Jovian.
func (p *FeeParams) DAFootprint(cd CostData) uint64 {
	if !p.Jovian {
		return 0
	}
	return cd.EstimatedDASize() * uint64(p.DAFootprintGasScalar)
}

// ReceiptFields are the OP fields of a non-deposit transaction's receipt
// (JSON names in comments). Nil fields are omitted.
type ReceiptFields struct {
	L1GasPrice *big.Int // l1GasPrice: the L1 base fee
	L1GasUsed  *big.Int // l1GasUsed
	L1Fee      *big.Int // l1Fee
	// l1FeeScalar: Bedrock formula only, the scalar / 1e6 as a decimal
	// string ("0.684"); empty otherwise.
	L1FeeScalar string
	// Ecotone and Fjord formulas.
	L1BaseFeeScalar     *uint64  // l1BaseFeeScalar
	L1BlobBaseFee       *big.Int // l1BlobBaseFee
	L1BlobBaseFeeScalar *uint64  // l1BlobBaseFeeScalar
	// Isthmus, when scalar or constant is non-zero.
	OperatorFeeScalar   *uint64 // operatorFeeScalar
	OperatorFeeConstant *uint64 // operatorFeeConstant
	// Jovian.
	DAFootprintGasScalar *uint64 // daFootprintGasScalar
	BlobGasUsed          *uint64 // blobGasUsed: the transaction's DA footprint
}

// ReceiptFields computes the OP receipt fields of a non-deposit transaction.
func (p *FeeParams) ReceiptFields(cd CostData) ReceiptFields {
	u := func(v uint64) *uint64 { return &v }
	fee, gas := p.L1Cost(cd)
	r := ReceiptFields{L1GasPrice: new(big.Int).Set(orZero(p.L1BaseFee)), L1GasUsed: gas, L1Fee: fee}
	if p.Formula == FormulaBedrock {
		r.L1FeeScalar = FeeScalarText(orZero(p.Scalar))
	} else {
		r.L1BaseFeeScalar = u(uint64(p.BaseFeeScalar))
		r.L1BlobBaseFee = new(big.Int).Set(orZero(p.BlobBaseFee))
		r.L1BlobBaseFeeScalar = u(uint64(p.BlobBaseFeeScalar))
	}
	if p.Operator != OperatorFeeNone && (p.OperatorFeeScalar != 0 || p.OperatorFeeConstant != 0) {
		r.OperatorFeeScalar = u(uint64(p.OperatorFeeScalar))
		r.OperatorFeeConstant = u(p.OperatorFeeConstant)
	}
	if p.Jovian {
		r.DAFootprintGasScalar = u(uint64(p.DAFootprintGasScalar))
		r.BlobGasUsed = u(p.DAFootprint(cd))
	}
	return r
}

// FeeScalarText renders a pre-Ecotone l1FeeScalar (scaled by 1e6) as the
// decimal op-geth's receipts show: scalar/1e6 as a 64-bit-mantissa binary
// float in its shortest round-tripping form ("0.684", "1", "1.5e-05").
func FeeScalarText(scalar *big.Int) string {
	f := new(big.Float).SetInt(scalar)
	f.Quo(f, new(big.Float).SetInt(big1e6))
	return f.Text('g', -1)
}
