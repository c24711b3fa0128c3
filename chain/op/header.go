package op

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/bits"

	"github.com/ethereum/go-ethereum/core/types"
)

// Header extraData versions.
const (
	ExtraDataVersionHolocene = 0 // version ‖ denominator ‖ elasticity (9 bytes)
	ExtraDataVersionJovian   = 1 // ... ‖ minBaseFee (17 bytes)

	HoloceneExtraDataLen = 9
	JovianExtraDataLen   = 17
)

// EIP1559Params are the base fee parameters a Holocene (or later) header
// carries in its extraData for its child. MinBaseFee is Jovian's (0 before).
type EIP1559Params struct {
	Denominator uint32
	Elasticity  uint32
	MinBaseFee  uint64
}

// Encode returns the extraData of a header at a Holocene or Jovian time
// (jovian selects the 17-byte version 1 form).
func (p EIP1559Params) Encode(jovian bool) []byte {
	n, v := HoloceneExtraDataLen, byte(ExtraDataVersionHolocene)
	if jovian {
		n, v = JovianExtraDataLen, ExtraDataVersionJovian
	}
	out := make([]byte, n)
	out[0] = v
	binary.BigEndian.PutUint32(out[1:5], p.Denominator)
	binary.BigEndian.PutUint32(out[5:9], p.Elasticity)
	if jovian {
		binary.BigEndian.PutUint64(out[9:17], p.MinBaseFee)
	}
	return out
}

// DecodeExtraData parses a Holocene (jovian false) or Jovian header's
// extraData and checks it: the version byte, the exact length, non-zero
// denominator and elasticity. Errors wrap ErrExtraData and name the field.
func DecodeExtraData(extra []byte, jovian bool) (EIP1559Params, error) {
	fork, n, v := "Holocene", HoloceneExtraDataLen, byte(ExtraDataVersionHolocene)
	if jovian {
		fork, n, v = "Jovian", JovianExtraDataLen, ExtraDataVersionJovian
	}
	var p EIP1559Params
	if len(extra) != n {
		return p, fmt.Errorf("%w: length %d, %s requires %d bytes (version, denominator, elasticity%s)",
			ErrExtraData, len(extra), fork, n, map[bool]string{true: ", minBaseFee"}[jovian])
	}
	if extra[0] != v {
		return p, fmt.Errorf("%w: version %d, %s requires %d", ErrExtraData, extra[0], fork, v)
	}
	p.Denominator = binary.BigEndian.Uint32(extra[1:5])
	p.Elasticity = binary.BigEndian.Uint32(extra[5:9])
	if p.Denominator == 0 {
		return p, fmt.Errorf("%w: denominator is zero", ErrExtraData)
	}
	if p.Elasticity == 0 {
		return p, fmt.Errorf("%w: elasticity is zero", ErrExtraData)
	}
	if jovian {
		p.MinBaseFee = binary.BigEndian.Uint64(extra[9:17])
	}
	return p, nil
}

// VerifyExtraData checks a header's extraData against its fork: empty before
// Holocene (block 0 excepted, whose extraData is free unless Holocene is
// active at genesis), the Holocene form from Holocene, the Jovian form from
// Jovian.
func VerifyExtraData(cfg *Config, h *types.Header) error {
	switch {
	case cfg.IsJovian(h.Time):
		_, err := DecodeExtraData(h.Extra, true)
		return err
	case cfg.IsHolocene(h.Time):
		_, err := DecodeExtraData(h.Extra, false)
		return err
	case h.Number.Sign() == 0:
		return nil
	case len(h.Extra) != 0:
		return fmt.Errorf("%w: %d bytes, must be empty before Holocene", ErrExtraData, len(h.Extra))
	}
	return nil
}

// ExtraDataFromAttributes builds the extraData of a block at time t from the
// payload attributes' eip1559Params (8 bytes: denominator ‖ elasticity) and,
// from Jovian, minBaseFee. Both parameters zero means the chain's pre-Holocene
// constants (the Canyon denominator and the configured elasticity). Nil
// before Holocene.
func ExtraDataFromAttributes(cfg *Config, t uint64, eip1559Params []byte, minBaseFee *uint64) ([]byte, error) {
	if !cfg.IsHolocene(t) {
		if len(eip1559Params) != 0 {
			return nil, fmt.Errorf("%w: eip1559Params given before Holocene", ErrExtraData)
		}
		return nil, nil
	}
	if len(eip1559Params) != 8 {
		return nil, fmt.Errorf("%w: eip1559Params has %d bytes, want 8", ErrExtraData, len(eip1559Params))
	}
	p := EIP1559Params{
		Denominator: binary.BigEndian.Uint32(eip1559Params[0:4]),
		Elasticity:  binary.BigEndian.Uint32(eip1559Params[4:8]),
	}
	if p.Denominator == 0 && p.Elasticity == 0 {
		p.Denominator = uint32(cfg.BaseFeeChangeDenominator(t))
		p.Elasticity = uint32(cfg.EIP1559Elasticity)
	}
	if p.Denominator == 0 || p.Elasticity == 0 {
		return nil, fmt.Errorf("%w: eip1559Params has one zero parameter (denominator %d, elasticity %d)", ErrExtraData, p.Denominator, p.Elasticity)
	}
	jovian := cfg.IsJovian(t)
	switch {
	case jovian && minBaseFee == nil:
		return nil, fmt.Errorf("%w: minBaseFee is required from Jovian", ErrExtraData)
	case !jovian && minBaseFee != nil:
		return nil, fmt.Errorf("%w: minBaseFee given before Jovian", ErrExtraData)
	case jovian:
		p.MinBaseFee = *minBaseFee
	}
	return p.Encode(jovian), nil
}

// CalcBaseFee returns the base fee of the child at time t of parent:
// EIP-1559 with the chain's elasticity and (Canyon) denominator, or, when
// Holocene is active at the parent's time, the parameters in the parent's
// extraData; when Jovian is active at the parent's time the gas it meters is
// max(gasUsed, blobGasUsed) (the DA footprint) and the result is at least
// the parent's minBaseFee. An error means the parent's extraData is invalid.
func CalcBaseFee(cfg *Config, parent *types.Header, t uint64) (*big.Int, error) {
	if parent.BaseFee == nil {
		return nil, fmt.Errorf("%w: parent %d has no base fee", ErrExtraData, parent.Number)
	}
	denominator, elasticity := cfg.BaseFeeChangeDenominator(t), cfg.EIP1559Elasticity
	var minBaseFee uint64
	gasUsed := parent.GasUsed
	if cfg.IsHolocene(parent.Time) {
		jovian := cfg.IsJovian(parent.Time)
		p, err := DecodeExtraData(parent.Extra, jovian)
		if err != nil {
			return nil, fmt.Errorf("parent %d: %w", parent.Number, err)
		}
		denominator, elasticity, minBaseFee = uint64(p.Denominator), uint64(p.Elasticity), p.MinBaseFee
		if jovian && parent.BlobGasUsed != nil && *parent.BlobGasUsed > gasUsed {
			gasUsed = *parent.BlobGasUsed
		}
	}
	fee := eip1559Next(parent.BaseFee, parent.GasLimit, gasUsed, elasticity, denominator)
	if min := new(big.Int).SetUint64(minBaseFee); fee.Cmp(min) < 0 {
		fee = min
	}
	return fee, nil
}

// eip1559Next is the EIP-1559 update rule with explicit parameters:
// unchanged at the target, up by max(1, fee*delta/target/denominator) above
// it, down by fee*delta/target/denominator (not below 0) under it.
func eip1559Next(baseFee *big.Int, gasLimit, gasUsed, elasticity, denominator uint64) *big.Int {
	target := gasLimit / elasticity
	if gasUsed == target || target == 0 {
		return new(big.Int).Set(baseFee)
	}
	delta := new(big.Int)
	if gasUsed > target {
		delta.SetUint64(gasUsed - target)
	} else {
		delta.SetUint64(target - gasUsed)
	}
	delta.Mul(delta, baseFee)
	delta.Quo(delta, new(big.Int).SetUint64(target))
	delta.Quo(delta, new(big.Int).SetUint64(denominator))
	if gasUsed > target {
		if delta.Sign() == 0 {
			delta.SetUint64(1)
		}
		return delta.Add(baseFee, delta)
	}
	next := new(big.Int).Sub(baseFee, delta)
	if next.Sign() < 0 {
		next.SetUint64(0)
	}
	return next
}

// DAFootprint sums the Jovian DA footprint of a block's non-deposit
// transactions: EstimatedDASize * scalar each (saturating).
func DAFootprint(scalar uint16, costs []CostData) uint64 {
	var total uint64
	for _, cd := range costs {
		hi, f := bits.Mul64(cd.EstimatedDASize(), uint64(scalar))
		if hi != 0 || total+f < total {
			return math.MaxUint64
		}
		total += f
	}
	return total
}

// BlockDAFootprint is a Jovian block's DA footprint (its header's
// blobGasUsed). l1Info is the calldata of the block's first transaction, the
// L1-info deposit, whose Jovian encoding carries the scalar; costs are the
// cost data of the block's non-deposit transactions. In the Jovian
// activation block the deposit still has the Isthmus encoding and the block
// holds deposits only: the footprint is 0.
func BlockDAFootprint(l1Info []byte, costs []CostData) (uint64, error) {
	info, err := ParseL1Info(l1Info)
	if err != nil {
		return 0, fmt.Errorf("%w: first transaction: %v", ErrDAFootprint, err)
	}
	switch info.Version {
	case L1InfoJovian:
		return DAFootprint(info.DAFootprintGasScalar, costs), nil
	case L1InfoIsthmus:
		if len(costs) > 0 {
			return 0, fmt.Errorf("%w: %d non-deposit transactions in the Jovian activation block", ErrDAFootprint, len(costs))
		}
		return 0, nil
	default:
		return 0, fmt.Errorf("%w: L1-info deposit has a pre-Isthmus encoding in a Jovian block", ErrDAFootprint)
	}
}

// BlobGasFields are the header's blobGasUsed and excessBlobGas at time t:
// absent before Ecotone; from Ecotone excessBlobGas is 0 and blobGasUsed 0,
// from Jovian blobGasUsed is the block's DA footprint.
func BlobGasFields(cfg *Config, t, daFootprint uint64) (blobGasUsed, excessBlobGas *uint64) {
	if !cfg.IsEcotone(t) {
		return nil, nil
	}
	used, excess := uint64(0), uint64(0)
	if cfg.IsJovian(t) {
		used = daFootprint
	}
	return &used, &excess
}

// VerifyBlobGas checks a header's blobGasUsed and excessBlobGas against
// BlobGasFields and, from Jovian, that the DA footprint stays within the gas
// limit.
func VerifyBlobGas(cfg *Config, h *types.Header, daFootprint uint64) error {
	used, excess := BlobGasFields(cfg, h.Time, daFootprint)
	name := func(p *uint64) string {
		if p == nil {
			return "absent"
		}
		return fmt.Sprint(*p)
	}
	if (used == nil) != (h.BlobGasUsed == nil) || (used != nil && *used != *h.BlobGasUsed) {
		return fmt.Errorf("%w: blobGasUsed %s, want %s", ErrDAFootprint, name(h.BlobGasUsed), name(used))
	}
	if (excess == nil) != (h.ExcessBlobGas == nil) || (excess != nil && *excess != *h.ExcessBlobGas) {
		return fmt.Errorf("%w: excessBlobGas %s, want %s", ErrDAFootprint, name(h.ExcessBlobGas), name(excess))
	}
	if used != nil && *used > h.GasLimit {
		return fmt.Errorf("%w: DA footprint %d exceeds the gas limit %d", ErrDAFootprint, *used, h.GasLimit)
	}
	return nil
}
