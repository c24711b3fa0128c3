package op

import (
	"encoding/binary"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// Defaults of SyntheticL1 (OP Mainnet-like values).
const (
	DefaultL1BlockTime          = 12
	DefaultBaseFeeScalar        = 1368
	DefaultBlobBaseFeeScalar    = 810949
	DefaultDAFootprintGasScalar = 400 // the spec's default (jovian/l1-attributes.md)
	// SystemTxGas is the gas limit of the L1-info deposit (from Regolith).
	SystemTxGas = 1_000_000
)

// SyntheticL1 is the L1 chain a local OP sequencer (tipnode dev --op, run
// --sequencer on an OP genesis) pretends to build on: the L1-info deposit
// of every block carries these fee parameters and an L1 origin that
// advances every BlockTime seconds of L2 time. There is no real L1 behind
// it: the origin's hash is derived (SyntheticL1Hash). Start from
// DefaultSyntheticL1; immutable once in use.
type SyntheticL1 struct {
	// BaseFee is the L1 base fee (wei). Default 1 gwei.
	BaseFee *big.Int
	// BlobBaseFee is the L1 blob base fee (wei). Default 1.
	BlobBaseFee *big.Int
	// BaseFeeScalar and BlobBaseFeeScalar are the Ecotone L1 fee scalars.
	// Defaults 1368 and 810949.
	BaseFeeScalar     uint32
	BlobBaseFeeScalar uint32
	// OperatorFeeScalar and OperatorFeeConstant are the Isthmus operator
	// fee parameters (Jovian formula: gas * scalar * 100 + constant).
	// Default 0 (no operator fee).
	OperatorFeeScalar   uint32
	OperatorFeeConstant uint64
	// DAFootprintGasScalar is Jovian's DA footprint gas scalar. Default
	// 400 (0 is not allowed: the spec reads 0 as 400).
	DAFootprintGasScalar uint16
	// BlockTime is the L1 block time in seconds. Default 12.
	BlockTime uint64
	// BatcherHash is the L1-info deposit's batcher hash. Default zero.
	BatcherHash common.Hash
}

// DefaultSyntheticL1 returns the documented defaults.
func DefaultSyntheticL1() SyntheticL1 {
	return SyntheticL1{
		BaseFee: big.NewInt(1_000_000_000), BlobBaseFee: big.NewInt(1),
		BaseFeeScalar: DefaultBaseFeeScalar, BlobBaseFeeScalar: DefaultBlobBaseFeeScalar,
		DAFootprintGasScalar: DefaultDAFootprintGasScalar, BlockTime: DefaultL1BlockTime,
	}
}

// Validate checks the values.
func (s SyntheticL1) Validate() error {
	switch {
	case s.BaseFee == nil || s.BaseFee.Sign() < 0 || s.BaseFee.BitLen() > 256:
		return fmt.Errorf("%w: L1 base fee %v is not a uint256", ErrConfig, s.BaseFee)
	case s.BlobBaseFee == nil || s.BlobBaseFee.Sign() < 0 || s.BlobBaseFee.BitLen() > 256:
		return fmt.Errorf("%w: L1 blob base fee %v is not a uint256", ErrConfig, s.BlobBaseFee)
	case s.BlockTime == 0:
		return fmt.Errorf("%w: L1 block time must be > 0 seconds", ErrConfig)
	case s.DAFootprintGasScalar == 0:
		return fmt.Errorf("%w: DA footprint gas scalar must be > 0 (the spec reads 0 as %d)", ErrConfig, DefaultDAFootprintGasScalar)
	}
	return nil
}

// SyntheticL1Hash is the block hash tipnode gives synthetic L1 block n.
func SyntheticL1Hash(n uint64) common.Hash {
	return crypto.Keccak256Hash([]byte("tipnode synthetic L1 block"), binary.BigEndian.AppendUint64(nil, n))
}

// L1Origin is the L1 block an L2 block builds on, with the L2 block's
// position in that L1 block's epoch.
type L1Origin struct {
	Number, Time   uint64
	Hash           common.Hash
	SequenceNumber uint64
}

// NextOrigin is the L1 origin of the L2 block at time t whose parent's
// origin was prev (as the L1Block predeploy holds it after the parent: its
// number, timestamp and sequence number). The origin advances by whole L1
// blocks while a full BlockTime fits between its time and t; the sequence
// number restarts at 0 in a new epoch. A parent without an origin (the
// predeploy never set: timestamp 0) starts the synthetic L1 chain at
// number prev.Number, time t.
func (s SyntheticL1) NextOrigin(prev L1Origin, t uint64) L1Origin {
	if prev.Time == 0 || prev.Time > t {
		return L1Origin{Number: prev.Number, Time: t, Hash: SyntheticL1Hash(prev.Number)}
	}
	steps := (t - prev.Time) / s.BlockTime
	if steps == 0 {
		return L1Origin{Number: prev.Number, Time: prev.Time, Hash: SyntheticL1Hash(prev.Number), SequenceNumber: prev.SequenceNumber + 1}
	}
	n := prev.Number + steps
	return L1Origin{Number: n, Time: prev.Time + steps*s.BlockTime, Hash: SyntheticL1Hash(n)}
}

// Info is the L1-info deposit content of an L2 block with origin o, in
// encoding v.
func (s SyntheticL1) Info(o L1Origin, v L1InfoVersion) *L1Info {
	info := &L1Info{
		Version: v, Number: o.Number, Time: o.Time, BaseFee: new(big.Int).Set(s.BaseFee), BlockHash: o.Hash,
		SequenceNumber: o.SequenceNumber, BatcherHash: s.BatcherHash,
	}
	if v == L1InfoBedrock {
		info.L1FeeOverhead, info.L1FeeScalar = new(big.Int), big.NewInt(1_000_000)
		return info
	}
	info.BaseFeeScalar, info.BlobBaseFeeScalar, info.BlobBaseFee = s.BaseFeeScalar, s.BlobBaseFeeScalar, new(big.Int).Set(s.BlobBaseFee)
	if v >= L1InfoIsthmus {
		info.OperatorFeeScalar, info.OperatorFeeConstant = s.OperatorFeeScalar, s.OperatorFeeConstant
	}
	if v == L1InfoJovian {
		info.DAFootprintGasScalar = s.DAFootprintGasScalar
	}
	return info
}

// ReadOrigin reads the L1 origin the L1Block predeploy holds (read returns
// a slot's value).
func ReadOrigin(read func(slot common.Hash) common.Hash) L1Origin {
	w0, w3 := read(L1BlockNumberSlot), read(L1ScalarsSlot)
	return L1Origin{
		Number:         binary.BigEndian.Uint64(w0[24:32]),
		Time:           binary.BigEndian.Uint64(w0[16:24]),
		Hash:           read(L1BlockHashSlot),
		SequenceNumber: binary.BigEndian.Uint64(w3[24:32]),
	}
}

// ReadL1Info reads the L1 origin and fee parameters the L1Block predeploy
// holds (read returns a slot's value) as an L1Info in the Isthmus
// encoding's fields: origin number, time, hash and sequence number, L1
// base fee, batcher hash, the Ecotone scalars, blob base fee and the
// operator fee parameters. DAFootprintGasScalar stays 0: take it from a
// block's Jovian L1-info deposit (see FeeParams).
func ReadL1Info(read func(slot common.Hash) common.Hash) *L1Info {
	o := ReadOrigin(read)
	scalars, opw := read(L1ScalarsSlot), read(L1OperatorFeeSlot)
	return &L1Info{
		Version: L1InfoIsthmus, Number: o.Number, Time: o.Time, BlockHash: o.Hash, SequenceNumber: o.SequenceNumber,
		BaseFee: read(L1BaseFeeSlot).Big(), BatcherHash: read(L1BatcherHashSlot),
		BaseFeeScalar:       binary.BigEndian.Uint32(scalars[baseFeeScalarAt:]),
		BlobBaseFeeScalar:   binary.BigEndian.Uint32(scalars[blobBaseFeeScalarAt:]),
		BlobBaseFee:         read(L1BlobBaseFeeSlot).Big(),
		OperatorFeeScalar:   binary.BigEndian.Uint32(opw[operatorScalarAt:]),
		OperatorFeeConstant: binary.BigEndian.Uint64(opw[operatorConstantAt:]),
	}
}

// Continuing returns s carrying on the L1 of info (the L1-info content of
// the block a fork continues, tipnode dev --fork): its L1 base fee, blob
// base fee, Ecotone scalars, operator fee parameters, batcher hash and,
// when info has one (the Jovian encoding), its DA footprint gas scalar.
// BlockTime is s's. The origin itself needs nothing here: NextOrigin
// continues from the one the parent's L1Block predeploy holds.
func (s SyntheticL1) Continuing(info *L1Info) SyntheticL1 {
	if info.BaseFee != nil {
		s.BaseFee = new(big.Int).Set(info.BaseFee)
	}
	if info.BlobBaseFee != nil {
		s.BlobBaseFee = new(big.Int).Set(info.BlobBaseFee)
	}
	s.BaseFeeScalar, s.BlobBaseFeeScalar = info.BaseFeeScalar, info.BlobBaseFeeScalar
	s.OperatorFeeScalar, s.OperatorFeeConstant = info.OperatorFeeScalar, info.OperatorFeeConstant
	s.BatcherHash = info.BatcherHash
	if info.DAFootprintGasScalar != 0 {
		s.DAFootprintGasScalar = info.DAFootprintGasScalar
	}
	return s
}
