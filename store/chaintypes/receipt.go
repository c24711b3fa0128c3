package chaintypes

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rlp"
)

// Receipt is go-ethereum's receipt plus the OP Stack fields (OP is nil on
// L1 chains, and on an OP chain for nothing: every OP receipt carries it).
type Receipt struct {
	types.Receipt
	OP *OPReceipt
}

// OPReceipt holds an OP Stack receipt's extra fields. On a deposit's
// receipt only the deposit fields are set; on any other transaction's
// receipt only the fee fields (those the active fork defines).
type OPReceipt struct {
	// DepositNonce is the sender's nonce before the deposit (Regolith on;
	// nil before). Part of the consensus encoding from Canyon.
	DepositNonce *uint64
	// DepositReceiptVersion is 1 from Canyon (nil before). Part of the
	// consensus encoding.
	DepositReceiptVersion *uint64

	// Fee fields of a non-deposit transaction (derived: not in the
	// receipts root, stored so reads need no re-computation).
	L1GasPrice           *big.Int // L1 base fee the fee was computed with
	L1GasUsed            *big.Int // L1 gas attributed to the transaction's data
	L1Fee                *big.Int // L1 data fee charged, in wei
	L1FeeScalar          *big.Int // pre-Ecotone scalar (raw, 6 decimals)
	L1BaseFeeScalar      *uint64  // Ecotone on
	L1BlobBaseFee        *big.Int // Ecotone on
	L1BlobBaseFeeScalar  *uint64  // Ecotone on
	OperatorFeeScalar    *uint64  // Isthmus on
	OperatorFeeConstant  *uint64  // Isthmus on
	DAFootprintGasScalar *uint64  // Jovian on
}

// Receipts is a block's receipts. It is a types.DerivableList, so
// types.DeriveSha gives the receipts root (deposit receipts with their OP
// consensus fields).
type Receipts []*Receipt

// FromEthReceipts wraps go-ethereum receipts (the values are copied into
// the wrappers).
func FromEthReceipts(rs types.Receipts) Receipts {
	out := make(Receipts, len(rs))
	for i, r := range rs {
		out[i] = &Receipt{Receipt: *r}
	}
	return out
}

// Eth returns the go-ethereum receipts (pointers into rs).
func (rs Receipts) Eth() types.Receipts {
	out := make(types.Receipts, len(rs))
	for i, r := range rs {
		out[i] = &r.Receipt
	}
	return out
}

// Len is the number of receipts.
func (rs Receipts) Len() int { return len(rs) }

// statusEncoding is the receipt's post-state or status field.
func statusEncoding(r *types.Receipt) []byte {
	if len(r.PostState) > 0 {
		return r.PostState
	}
	if r.Status == types.ReceiptStatusFailed {
		return []byte{}
	}
	return []byte{0x01}
}

func setStatus(r *types.Receipt, b []byte) error {
	switch {
	case bytes.Equal(b, []byte{0x01}):
		r.Status = types.ReceiptStatusSuccessful
	case len(b) == 0:
		r.Status = types.ReceiptStatusFailed
	case len(b) == common.HashLength:
		r.PostState = b
	default:
		return fmt.Errorf("%w: status %x", ErrReceiptDecode, b)
	}
	return nil
}

// EncodeIndex writes receipt i's consensus encoding (what the receipts
// trie holds): go-ethereum's for every upstream type; for a deposit
// 0x7e ‖ RLP([status, cumulativeGas, bloom, logs]) plus [depositNonce,
// depositReceiptVersion] from Canyon (when the version is set).
func (rs Receipts) EncodeIndex(i int, w *bytes.Buffer) {
	r := rs[i]
	if r.Type != DepositTxType {
		types.Receipts{&r.Receipt}.EncodeIndex(0, w)
		return
	}
	// From Canyon (a receipt version is set) the nonce and version are
	// hashed; a Regolith receipt before Canyon carries its nonce outside the
	// consensus encoding.
	r.encodeDeposit(w, r.OP != nil && r.OP.DepositNonce != nil && r.OP.DepositReceiptVersion != nil)
}

// MarshalBinary is the receipt's binary (EIP-2718) encoding as op-geth's
// debug_getRawReceipts gives it: go-ethereum's for every upstream type; for
// a deposit 0x7e ‖ RLP([status, cumulativeGas, bloom, logs]) plus its
// depositNonce when set (Regolith on) and its depositReceiptVersion when
// set (Canyon on), unlike EncodeIndex which leaves a pre-Canyon nonce out.
func (r *Receipt) MarshalBinary() ([]byte, error) {
	if r.Type != DepositTxType {
		return r.Receipt.MarshalBinary()
	}
	var w bytes.Buffer
	r.encodeDeposit(&w, r.OP != nil && r.OP.DepositNonce != nil)
	return w.Bytes(), nil
}

// encodeDeposit writes a deposit receipt: 0x7e ‖ RLP([status,
// cumulativeGas, bloom, logs]) plus, when withNonce, the depositNonce and
// the depositReceiptVersion if set.
func (r *Receipt) encodeDeposit(w *bytes.Buffer, withNonce bool) {
	w.WriteByte(DepositTxType)
	enc := rlp.NewEncoderBuffer(w)
	l := enc.List()
	enc.WriteBytes(statusEncoding(&r.Receipt))
	enc.WriteUint64(r.CumulativeGasUsed)
	enc.WriteBytes(r.Bloom[:])
	logs := enc.List()
	for _, lg := range r.Logs {
		lg.EncodeRLP(&enc)
	}
	enc.ListEnd(logs)
	if withNonce {
		enc.WriteUint64(*r.OP.DepositNonce)
		if r.OP.DepositReceiptVersion != nil {
			enc.WriteUint64(*r.OP.DepositReceiptVersion)
		}
	}
	enc.ListEnd(l)
	enc.Flush()
}

// Bloom is the OR of every receipt's bloom (the block's logs bloom).
func (rs Receipts) Bloom() types.Bloom {
	var b types.Bloom
	for _, r := range rs {
		for i := range b {
			b[i] |= r.Bloom[i]
		}
	}
	return b
}

// Field presence bits of opStored.
const (
	opDepositNonce = 1 << iota
	opDepositReceiptVersion
	opL1GasPrice
	opL1GasUsed
	opL1Fee
	opL1FeeScalar
	opL1BaseFeeScalar
	opL1BlobBaseFee
	opL1BlobBaseFeeScalar
	opOperatorFeeScalar
	opOperatorFeeConstant
	opDAFootprintGasScalar
)

// opStored is OPReceipt's storage encoding: a presence bitmask, then every
// field (zero when absent).
type opStored struct {
	Present                                         uint64
	DepositNonce, DepositReceiptVersion             uint64
	L1GasPrice, L1GasUsed, L1Fee, L1FeeScalar       *big.Int
	L1BaseFeeScalar                                 uint64
	L1BlobBaseFee                                   *big.Int
	L1BlobBaseFeeScalar                             uint64
	OperatorFeeScalar, OperatorFeeConstant, DAScale uint64
}

func putU(present *uint64, bit uint64, v *uint64) uint64 {
	if v == nil {
		return 0
	}
	*present |= bit
	return *v
}

func putB(present *uint64, bit uint64, v *big.Int) *big.Int {
	if v == nil {
		return new(big.Int)
	}
	*present |= bit
	return v
}

func getU(present, bit, v uint64) *uint64 {
	if present&bit == 0 {
		return nil
	}
	return &v
}

func getB(present, bit uint64, v *big.Int) *big.Int {
	if present&bit == 0 {
		return nil
	}
	if v == nil {
		return new(big.Int)
	}
	return v
}

func (o *OPReceipt) stored() *opStored {
	s := new(opStored)
	p := &s.Present
	s.DepositNonce = putU(p, opDepositNonce, o.DepositNonce)
	s.DepositReceiptVersion = putU(p, opDepositReceiptVersion, o.DepositReceiptVersion)
	s.L1GasPrice = putB(p, opL1GasPrice, o.L1GasPrice)
	s.L1GasUsed = putB(p, opL1GasUsed, o.L1GasUsed)
	s.L1Fee = putB(p, opL1Fee, o.L1Fee)
	s.L1FeeScalar = putB(p, opL1FeeScalar, o.L1FeeScalar)
	s.L1BaseFeeScalar = putU(p, opL1BaseFeeScalar, o.L1BaseFeeScalar)
	s.L1BlobBaseFee = putB(p, opL1BlobBaseFee, o.L1BlobBaseFee)
	s.L1BlobBaseFeeScalar = putU(p, opL1BlobBaseFeeScalar, o.L1BlobBaseFeeScalar)
	s.OperatorFeeScalar = putU(p, opOperatorFeeScalar, o.OperatorFeeScalar)
	s.OperatorFeeConstant = putU(p, opOperatorFeeConstant, o.OperatorFeeConstant)
	s.DAScale = putU(p, opDAFootprintGasScalar, o.DAFootprintGasScalar)
	return s
}

func (s *opStored) receipt() *OPReceipt {
	p := s.Present
	return &OPReceipt{
		DepositNonce:          getU(p, opDepositNonce, s.DepositNonce),
		DepositReceiptVersion: getU(p, opDepositReceiptVersion, s.DepositReceiptVersion),
		L1GasPrice:            getB(p, opL1GasPrice, s.L1GasPrice),
		L1GasUsed:             getB(p, opL1GasUsed, s.L1GasUsed),
		L1Fee:                 getB(p, opL1Fee, s.L1Fee),
		L1FeeScalar:           getB(p, opL1FeeScalar, s.L1FeeScalar),
		L1BaseFeeScalar:       getU(p, opL1BaseFeeScalar, s.L1BaseFeeScalar),
		L1BlobBaseFee:         getB(p, opL1BlobBaseFee, s.L1BlobBaseFee),
		L1BlobBaseFeeScalar:   getU(p, opL1BlobBaseFeeScalar, s.L1BlobBaseFeeScalar),
		OperatorFeeScalar:     getU(p, opOperatorFeeScalar, s.OperatorFeeScalar),
		OperatorFeeConstant:   getU(p, opOperatorFeeConstant, s.OperatorFeeConstant),
		DAFootprintGasScalar:  getU(p, opDAFootprintGasScalar, s.DAScale),
	}
}

// StoredReceipt is a Receipt's storage encoding: go-ethereum's
// ReceiptForStorage ([status, cumulativeGas, logs]) when OP is nil, with a
// fourth element holding the OP fields otherwise. The derived fields are
// recomputed on read (Receipts.DeriveFields).
type StoredReceipt Receipt

type storedRLP struct {
	PostStateOrStatus []byte
	CumulativeGasUsed uint64
	Logs              []*types.Log
	OP                *opStored `rlp:"optional"`
}

// EncodeRLP writes the storage encoding.
func (r *StoredReceipt) EncodeRLP(w io.Writer) error {
	s := storedRLP{PostStateOrStatus: statusEncoding(&r.Receipt), CumulativeGasUsed: r.CumulativeGasUsed, Logs: r.Logs}
	if s.Logs == nil {
		s.Logs = []*types.Log{}
	}
	if r.OP != nil {
		s.OP = r.OP.stored()
	}
	return rlp.Encode(w, &s)
}

// DecodeRLP reads the storage encoding.
func (r *StoredReceipt) DecodeRLP(st *rlp.Stream) error {
	var s storedRLP
	if err := st.Decode(&s); err != nil {
		return err
	}
	*r = StoredReceipt{}
	if err := setStatus(&r.Receipt, s.PostStateOrStatus); err != nil {
		return err
	}
	r.CumulativeGasUsed = s.CumulativeGasUsed
	r.Logs = s.Logs
	if s.OP != nil {
		r.OP = s.OP.receipt()
	}
	return nil
}

// EncodeStored returns the storage encoding of rs (the value of a block's
// receipts key).
func EncodeStored(rs Receipts) ([]byte, error) {
	list := make([]*StoredReceipt, len(rs))
	for i, r := range rs {
		list[i] = (*StoredReceipt)(r)
	}
	return rlp.EncodeToBytes(list)
}

// DecodeStored reads a block's receipts from their storage encoding (the
// consensus fields and OP fields; DeriveFields computes the rest).
func DecodeStored(b []byte) (Receipts, error) {
	var list []*StoredReceipt
	if err := rlp.DecodeBytes(b, &list); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrReceiptDecode, err)
	}
	rs := make(Receipts, len(list))
	for i, r := range list {
		rs[i] = (*Receipt)(r)
	}
	return rs, nil
}

// DeriveFields fills the receipts' derived fields (type, hashes, gas used,
// effective gas price, blob fields, block location, contract address, log
// positions, bloom) from the block's transactions, as go-ethereum's
// Receipts.DeriveFields does; a deposit's effective gas price is 0 and its
// created contract's address comes from its deposit nonce.
func (rs Receipts) DeriveFields(config *params.ChainConfig, blockHash common.Hash, blockNumber, blockTime uint64, baseFee, blobGasPrice *big.Int, txs Txs) error {
	if len(txs) != len(rs) {
		return errors.New("transaction and receipt count mismatch")
	}
	signer := types.MakeSigner(config, new(big.Int).SetUint64(blockNumber), blockTime)
	logIndex := uint(0)
	for i, r := range rs {
		var prev uint64
		if i > 0 {
			prev = rs[i-1].CumulativeGasUsed
		}
		switch tx := txs[i].(type) {
		case *types.Transaction:
			r.Receipt.DeriveFields(signer, types.DeriveReceiptContext{
				BlockHash: blockHash, BlockNumber: blockNumber, BlockTime: blockTime,
				BaseFee: baseFee, BlobGasPrice: blobGasPrice, GasUsed: r.CumulativeGasUsed - prev,
				LogIndex: logIndex, Tx: tx, TxIndex: uint(i),
			})
		case *Deposit:
			r.Type = DepositTxType
			r.TxHash = tx.Hash()
			r.GasUsed = r.CumulativeGasUsed - prev
			r.EffectiveGasPrice = new(big.Int)
			r.BlockHash = blockHash
			r.BlockNumber = new(big.Int).SetUint64(blockNumber)
			r.TransactionIndex = uint(i)
			r.ContractAddress = common.Address{}
			if tx.f.To == nil && r.OP != nil && r.OP.DepositNonce != nil {
				r.ContractAddress = crypto.CreateAddress(tx.f.From, *r.OP.DepositNonce)
			}
			for j, lg := range r.Logs {
				lg.BlockNumber, lg.BlockHash, lg.BlockTimestamp = blockNumber, blockHash, blockTime
				lg.TxHash, lg.TxIndex, lg.Index = r.TxHash, uint(i), logIndex+uint(j)
			}
			r.Bloom = types.CreateBloom(&r.Receipt)
		}
		logIndex += uint(len(r.Logs))
	}
	return nil
}
