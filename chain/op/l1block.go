package op

import (
	"encoding/binary"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
)

// OP Stack predeploys and special accounts the execution rules name.
var (
	// L1BlockAddr is the L1Block predeploy: the L1 attributes (and the fee
	// parameters) of the current L2 block, set by the L1-info deposit.
	L1BlockAddr = common.HexToAddress("0x4200000000000000000000000000000000000015")
	// L1InfoDepositor is the sender of the L1-info deposit.
	L1InfoDepositor = common.HexToAddress("0xDeaDDEaDDeAdDeAdDEAdDEaddeAddEAdDEAd0001")
	// SequencerFeeVault receives the priority fee (it is the coinbase).
	SequencerFeeVault = common.HexToAddress("0x4200000000000000000000000000000000000011")
	// BaseFeeVault receives the base fee (not burned on OP).
	BaseFeeVault = common.HexToAddress("0x4200000000000000000000000000000000000019")
	// L1FeeVault receives the L1 data fee.
	L1FeeVault = common.HexToAddress("0x420000000000000000000000000000000000001A")
	// OperatorFeeVault receives the operator fee (Isthmus).
	OperatorFeeVault = common.HexToAddress("0x420000000000000000000000000000000000001B")
	// L2ToL1MessagePasser's storage root is the header withdrawalsRoot
	// from Isthmus.
	L2ToL1MessagePasser = common.HexToAddress("0x4200000000000000000000000000000000000016")
)

// Storage slots of the L1Block predeploy (L1Block.sol's layout; packed
// fields are at Solidity offsets counted from the low-order end of the word).
var (
	// slot 0: number (uint64, offset 0) | timestamp (uint64, offset 8)
	L1BlockNumberSlot = common.BigToHash(big.NewInt(0))
	// slot 1: basefee (uint256)
	L1BaseFeeSlot = common.BigToHash(big.NewInt(1))
	// slot 2: hash (bytes32)
	L1BlockHashSlot = common.BigToHash(big.NewInt(2))
	// slot 3: sequenceNumber (uint64, offset 0) | blobBaseFeeScalar
	// (uint32, offset 8) | baseFeeScalar (uint32, offset 12)
	L1ScalarsSlot = common.BigToHash(big.NewInt(3))
	// slot 4: batcherHash (bytes32)
	L1BatcherHashSlot = common.BigToHash(big.NewInt(4))
	// slot 5: l1FeeOverhead (uint256, pre-Ecotone)
	L1OverheadSlot = common.BigToHash(big.NewInt(5))
	// slot 6: l1FeeScalar (uint256, pre-Ecotone)
	L1ScalarSlot = common.BigToHash(big.NewInt(6))
	// slot 7: blobBaseFee (uint256, Ecotone)
	L1BlobBaseFeeSlot = common.BigToHash(big.NewInt(7))
	// slot 8: operatorFeeConstant (uint64, offset 0) | operatorFeeScalar
	// (uint32, offset 8); L1Block 1.7.0 (Jovian) as released also packs
	// daFootprintGasScalar (uint16, offset 12) here, a pre-release 1.7.0
	// kept it in slot 9 (offset 0). ReadFeeParams reads neither: the
	// scalar is taken from the block's L1-info deposit (see FeeParams).
	L1OperatorFeeSlot = common.BigToHash(big.NewInt(8))
)

// Byte ranges, in the 32-byte big-endian word, of the packed fields.
const (
	baseFeeScalarAt     = 16 // slot 3 [16,20)
	blobBaseFeeScalarAt = 20 // slot 3 [20,24)
	operatorScalarAt    = 20 // slot 8 [20,24)
	operatorConstantAt  = 24 // slot 8 [24,32)
)

// Formula is the L1 data fee function in force for a block.
type Formula uint8

const (
	// FormulaBedrock: (dataGas + overhead) * l1BaseFee * scalar / 1e6.
	// Before Ecotone, and in the Ecotone activation block.
	FormulaBedrock Formula = iota
	// FormulaEcotone: dataGas * (16*l1BaseFee*baseFeeScalar +
	// blobBaseFee*blobBaseFeeScalar) / 16e6.
	FormulaEcotone
	// FormulaFjord: max(100e6, -42_585_600 + 836_500*fastlzSize) *
	// (16*l1BaseFee*baseFeeScalar + blobBaseFee*blobBaseFeeScalar) / 1e12.
	FormulaFjord
)

func (f Formula) String() string {
	switch f {
	case FormulaBedrock:
		return "bedrock"
	case FormulaEcotone:
		return "ecotone"
	default:
		return "fjord"
	}
}

// OperatorFeeFormula is the operator fee function in force for a block.
type OperatorFeeFormula uint8

const (
	// OperatorFeeNone: before Isthmus there is no operator fee.
	OperatorFeeNone OperatorFeeFormula = iota
	// OperatorFeeIsthmus: gas * scalar / 1e6 + constant.
	OperatorFeeIsthmus
	// OperatorFeeJovian: gas * scalar * 100 + constant.
	OperatorFeeJovian
)

// FeeParams are the L1 data fee and operator fee parameters of one block, as
// the L1Block predeploy holds them after the block's deposits ran. They are
// the same for every non-deposit transaction of the block. Immutable once
// built; safe for concurrent use.
type FeeParams struct {
	Formula  Formula
	Regolith bool // Bedrock formula: no 68 extra non-zero bytes from Regolith

	L1BaseFee *big.Int
	// Bedrock formula.
	Overhead *big.Int
	Scalar   *big.Int
	// Ecotone and Fjord formulas.
	BaseFeeScalar     uint32
	BlobBaseFeeScalar uint32
	BlobBaseFee       *big.Int

	Operator            OperatorFeeFormula
	OperatorFeeScalar   uint32
	OperatorFeeConstant uint64

	// Jovian: the DA footprint gas scalar (receipts, block DA footprint).
	// ReadFeeParams leaves it 0: like op-geth, the executor takes it from
	// the block's L1-info deposit (the Jovian encoding's last 2 bytes), the
	// source the spec makes interchangeable with L1Block's storage and the
	// one that does not depend on the contract version's storage layout.
	Jovian               bool
	DAFootprintGasScalar uint16
}

// ReadFeeParams reads the fee parameters of a block at time t from the
// L1Block predeploy's storage (the slots op-geth reads: 1, 3, 5, 6, 7, 8);
// read returns a slot's value (zero when unset) in the state after the
// block's deposits. DAFootprintGasScalar stays 0 (see FeeParams). The formula follows the forks,
// except that an Ecotone block whose Ecotone slots are still unset (blob
// base fee and both scalars zero: the Ecotone activation block, where the
// L1-info deposit still calls setL1BlockValues) uses the Bedrock formula.
func ReadFeeParams(cfg *Config, t uint64, read func(slot common.Hash) common.Hash) *FeeParams {
	p := &FeeParams{
		Regolith:  cfg.IsRegolith(t),
		L1BaseFee: read(L1BaseFeeSlot).Big(),
	}
	bedrock := true
	if cfg.IsEcotone(t) {
		blob := read(L1BlobBaseFeeSlot)
		scalars := read(L1ScalarsSlot)
		p.BaseFeeScalar = binary.BigEndian.Uint32(scalars[baseFeeScalarAt:])
		p.BlobBaseFeeScalar = binary.BigEndian.Uint32(scalars[blobBaseFeeScalarAt:])
		p.BlobBaseFee = blob.Big()
		if blob != (common.Hash{}) || p.BaseFeeScalar != 0 || p.BlobBaseFeeScalar != 0 {
			bedrock = false
			p.Formula = FormulaEcotone
			if cfg.IsFjord(t) {
				p.Formula = FormulaFjord
			}
		}
	}
	if bedrock {
		p.Formula = FormulaBedrock
		p.Overhead = read(L1OverheadSlot).Big()
		p.Scalar = read(L1ScalarSlot).Big()
	}
	if cfg.IsIsthmus(t) {
		op := read(L1OperatorFeeSlot)
		p.Operator = OperatorFeeIsthmus
		if cfg.IsJovian(t) {
			p.Operator = OperatorFeeJovian
			p.Jovian = true
		}
		p.OperatorFeeScalar = binary.BigEndian.Uint32(op[operatorScalarAt:])
		p.OperatorFeeConstant = binary.BigEndian.Uint64(op[operatorConstantAt:])
	}
	return p
}

// L1InfoVersion is the encoding of an L1-attributes deposit's calldata.
type L1InfoVersion uint8

const (
	L1InfoBedrock L1InfoVersion = iota // setL1BlockValues, ABI-encoded (Bedrock..Delta, Ecotone activation block)
	L1InfoEcotone                      // setL1BlockValuesEcotone, packed (Ecotone..Holocene, Isthmus activation block)
	L1InfoIsthmus                      // setL1BlockValuesIsthmus (Isthmus, Jovian activation block)
	L1InfoJovian                       // setL1BlockValuesJovian (Jovian..)
)

// Function selectors and calldata lengths of the L1-attributes calls.
var (
	SelectorBedrock = [4]byte{0x01, 0x5d, 0x8e, 0xb9} // setL1BlockValues(uint64,uint64,uint256,bytes32,uint64,bytes32,uint256,uint256)
	SelectorEcotone = [4]byte{0x44, 0x0a, 0x5e, 0x20} // setL1BlockValuesEcotone()
	SelectorIsthmus = [4]byte{0x09, 0x89, 0x99, 0xbe} // setL1BlockValuesIsthmus()
	SelectorJovian  = [4]byte{0x3d, 0xb6, 0xbe, 0x2b} // setL1BlockValuesJovian()
)

const (
	L1InfoBedrockLen = 4 + 8*32 // 260
	L1InfoEcotoneLen = 164
	L1InfoIsthmusLen = 176
	L1InfoJovianLen  = 178
)

// L1Info is the content of an L1-attributes deposit (the first transaction
// of every OP block). Fields an encoding lacks are zero (nil for big ints).
type L1Info struct {
	Version        L1InfoVersion
	Number         uint64      // L1 origin number
	Time           uint64      // L1 origin timestamp
	BaseFee        *big.Int    // L1 origin base fee
	BlockHash      common.Hash // L1 origin hash
	SequenceNumber uint64      // L2 blocks since the epoch started
	BatcherHash    common.Hash
	// Bedrock encoding only.
	L1FeeOverhead *big.Int
	L1FeeScalar   *big.Int
	// Ecotone encoding and later.
	BaseFeeScalar     uint32
	BlobBaseFeeScalar uint32
	BlobBaseFee       *big.Int
	// Isthmus encoding and later.
	OperatorFeeScalar   uint32
	OperatorFeeConstant uint64
	// Jovian encoding.
	DAFootprintGasScalar uint16
}

// ParseL1Info decodes L1-attributes deposit calldata in any of the four
// encodings, chosen by selector; the length must be exact.
func ParseL1Info(data []byte) (*L1Info, error) {
	if len(data) < 4 {
		return nil, fmt.Errorf("%w: %d bytes, no selector", ErrL1Info, len(data))
	}
	var sel [4]byte
	copy(sel[:], data)
	want := map[[4]byte]struct {
		v L1InfoVersion
		n int
	}{
		SelectorBedrock: {L1InfoBedrock, L1InfoBedrockLen},
		SelectorEcotone: {L1InfoEcotone, L1InfoEcotoneLen},
		SelectorIsthmus: {L1InfoIsthmus, L1InfoIsthmusLen},
		SelectorJovian:  {L1InfoJovian, L1InfoJovianLen},
	}[sel]
	if want.n == 0 {
		return nil, fmt.Errorf("%w: unknown selector %x", ErrL1Info, sel)
	}
	if len(data) != want.n {
		return nil, fmt.Errorf("%w: selector %x needs %d bytes, have %d", ErrL1Info, sel, want.n, len(data))
	}
	info := &L1Info{Version: want.v}
	if want.v == L1InfoBedrock {
		word := func(i int) []byte { return data[4+32*i : 4+32*(i+1)] }
		u64 := func(i int, name string) (uint64, error) {
			w := word(i)
			if common.BytesToHash(w[:24]) != (common.Hash{}) {
				return 0, fmt.Errorf("%w: %s does not fit uint64", ErrL1Info, name)
			}
			return binary.BigEndian.Uint64(w[24:]), nil
		}
		var err error
		if info.Number, err = u64(0, "number"); err != nil {
			return nil, err
		}
		if info.Time, err = u64(1, "timestamp"); err != nil {
			return nil, err
		}
		info.BaseFee = new(big.Int).SetBytes(word(2))
		info.BlockHash = common.BytesToHash(word(3))
		if info.SequenceNumber, err = u64(4, "sequenceNumber"); err != nil {
			return nil, err
		}
		info.BatcherHash = common.BytesToHash(word(5))
		info.L1FeeOverhead = new(big.Int).SetBytes(word(6))
		info.L1FeeScalar = new(big.Int).SetBytes(word(7))
		return info, nil
	}
	info.BaseFeeScalar = binary.BigEndian.Uint32(data[4:8])
	info.BlobBaseFeeScalar = binary.BigEndian.Uint32(data[8:12])
	info.SequenceNumber = binary.BigEndian.Uint64(data[12:20])
	info.Time = binary.BigEndian.Uint64(data[20:28])
	info.Number = binary.BigEndian.Uint64(data[28:36])
	info.BaseFee = new(big.Int).SetBytes(data[36:68])
	info.BlobBaseFee = new(big.Int).SetBytes(data[68:100])
	info.BlockHash = common.BytesToHash(data[100:132])
	info.BatcherHash = common.BytesToHash(data[132:164])
	if want.v >= L1InfoIsthmus {
		info.OperatorFeeScalar = binary.BigEndian.Uint32(data[164:168])
		info.OperatorFeeConstant = binary.BigEndian.Uint64(data[168:176])
	}
	if want.v == L1InfoJovian {
		info.DAFootprintGasScalar = binary.BigEndian.Uint16(data[176:178])
	}
	return info, nil
}

// Marshal encodes the L1-attributes calldata in info.Version's encoding. It
// fails when a uint256 field does not fit 32 bytes.
func (info *L1Info) Marshal() ([]byte, error) {
	put256 := func(dst []byte, v *big.Int, name string) error {
		if v == nil {
			return nil
		}
		if v.Sign() < 0 || v.BitLen() > 256 {
			return fmt.Errorf("%w: %s out of uint256 range", ErrL1Info, name)
		}
		v.FillBytes(dst)
		return nil
	}
	if info.Version == L1InfoBedrock {
		out := make([]byte, L1InfoBedrockLen)
		copy(out, SelectorBedrock[:])
		w := func(i int) []byte { return out[4+32*i : 4+32*(i+1)] }
		binary.BigEndian.PutUint64(w(0)[24:], info.Number)
		binary.BigEndian.PutUint64(w(1)[24:], info.Time)
		if err := put256(w(2), info.BaseFee, "basefee"); err != nil {
			return nil, err
		}
		copy(w(3), info.BlockHash[:])
		binary.BigEndian.PutUint64(w(4)[24:], info.SequenceNumber)
		copy(w(5), info.BatcherHash[:])
		if err := put256(w(6), info.L1FeeOverhead, "l1FeeOverhead"); err != nil {
			return nil, err
		}
		if err := put256(w(7), info.L1FeeScalar, "l1FeeScalar"); err != nil {
			return nil, err
		}
		return out, nil
	}
	var out []byte
	switch info.Version {
	case L1InfoEcotone:
		out = make([]byte, L1InfoEcotoneLen)
		copy(out, SelectorEcotone[:])
	case L1InfoIsthmus:
		out = make([]byte, L1InfoIsthmusLen)
		copy(out, SelectorIsthmus[:])
	case L1InfoJovian:
		out = make([]byte, L1InfoJovianLen)
		copy(out, SelectorJovian[:])
	default:
		return nil, fmt.Errorf("%w: unknown version %d", ErrL1Info, info.Version)
	}
	binary.BigEndian.PutUint32(out[4:8], info.BaseFeeScalar)
	binary.BigEndian.PutUint32(out[8:12], info.BlobBaseFeeScalar)
	binary.BigEndian.PutUint64(out[12:20], info.SequenceNumber)
	binary.BigEndian.PutUint64(out[20:28], info.Time)
	binary.BigEndian.PutUint64(out[28:36], info.Number)
	if err := put256(out[36:68], info.BaseFee, "basefee"); err != nil {
		return nil, err
	}
	if err := put256(out[68:100], info.BlobBaseFee, "blobBaseFee"); err != nil {
		return nil, err
	}
	copy(out[100:132], info.BlockHash[:])
	copy(out[132:164], info.BatcherHash[:])
	if info.Version >= L1InfoIsthmus {
		binary.BigEndian.PutUint32(out[164:168], info.OperatorFeeScalar)
		binary.BigEndian.PutUint64(out[168:176], info.OperatorFeeConstant)
	}
	if info.Version == L1InfoJovian {
		binary.BigEndian.PutUint16(out[176:178], info.DAFootprintGasScalar)
	}
	return out, nil
}

// L1InfoVersionAt is the encoding the L1-info deposit of a block at time t
// must use: a fork's new encoding starts in the block after its activation
// block (the predeploy is upgraded by that block's upgrade deposits), unless
// the fork is active at genesis. prevTime is the parent's timestamp (for
// block 1 pass the genesis time: a fork active at genesis is not
// "activating").
func L1InfoVersionAt(cfg *Config, t, prevTime uint64) L1InfoVersion {
	since := func(is func(uint64) bool) bool { return is(t) && is(prevTime) }
	switch {
	case since(cfg.IsJovian):
		return L1InfoJovian
	case since(cfg.IsIsthmus):
		return L1InfoIsthmus
	case since(cfg.IsEcotone):
		return L1InfoEcotone
	default:
		return L1InfoBedrock
	}
}

// FeeParams are the fee parameters the L1Block predeploy holds once this
// L1-info deposit ran, for a block at time t (the receipts' view, as op-geth
// derives receipt fields from the L1-info calldata). It agrees with
// ReadFeeParams on the state after the deposit, except that operator-fee and
// DA-footprint parameters not carried by this encoding read as zero.
func (info *L1Info) FeeParams(cfg *Config, t uint64) *FeeParams {
	p := &FeeParams{Regolith: cfg.IsRegolith(t), L1BaseFee: info.BaseFee}
	if p.L1BaseFee == nil {
		p.L1BaseFee = new(big.Int)
	}
	if info.Version == L1InfoBedrock {
		p.Formula = FormulaBedrock
		p.Overhead, p.Scalar = info.L1FeeOverhead, info.L1FeeScalar
	} else {
		p.Formula = FormulaEcotone
		if cfg.IsFjord(t) {
			p.Formula = FormulaFjord
		}
		p.BaseFeeScalar, p.BlobBaseFeeScalar, p.BlobBaseFee = info.BaseFeeScalar, info.BlobBaseFeeScalar, info.BlobBaseFee
	}
	if cfg.IsIsthmus(t) {
		p.Operator = OperatorFeeIsthmus
		if cfg.IsJovian(t) {
			p.Operator = OperatorFeeJovian
			p.Jovian = true
			p.DAFootprintGasScalar = info.DAFootprintGasScalar
		}
		p.OperatorFeeScalar, p.OperatorFeeConstant = info.OperatorFeeScalar, info.OperatorFeeConstant
	}
	return p
}
