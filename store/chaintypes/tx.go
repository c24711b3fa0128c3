package chaintypes

import (
	"bytes"
	"fmt"
	"io"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"
)

// DepositTxType is the EIP-2718 type of an OP Stack deposit transaction.
const DepositTxType = 0x7e

// Tx is a transaction of a block: a *types.Transaction (every upstream
// type, signed) or a *Deposit. The methods are those both share; a
// deposit has no nonce in its encoding (Nonce is 0: the sender's nonce is
// read from state) and no gas price (GasPrice is 0).
type Tx interface {
	Type() uint8
	Hash() common.Hash
	Nonce() uint64
	Gas() uint64
	GasPrice() *big.Int
	To() *common.Address
	Value() *big.Int
	Data() []byte
	Size() uint64
	// MarshalBinary is the EIP-2718 encoding (the legacy RLP list for a
	// legacy transaction, type ‖ payload otherwise).
	MarshalBinary() ([]byte, error)
	// EncodeRLP is the encoding inside a block's transaction list.
	EncodeRLP(w io.Writer) error
}

var (
	_ Tx = (*types.Transaction)(nil)
	_ Tx = (*Deposit)(nil)
)

// Deposit is an OP Stack deposit transaction (type 0x7e): a transaction
// derived from L1, executed without a signature, nonce check or fee. Its
// encoding is 0x7e ‖ RLP([sourceHash, from, to, mint, value, gas,
// isSystemTx, data]) and its hash is the keccak of that encoding. It is
// immutable: build it with NewDeposit.
type Deposit struct {
	f    DepositFields
	hash common.Hash
	size uint64
}

// DepositFields are a deposit's fields, in the order of its encoding.
type DepositFields struct {
	SourceHash common.Hash
	From       common.Address
	To         *common.Address `rlp:"nil"` // nil: contract creation
	Mint       *big.Int        `rlp:"nil"` // nil or zero: nothing minted
	Value      *big.Int
	Gas        uint64
	IsSystemTx bool
	Data       []byte
}

// NewDeposit returns the deposit with fields f (copied), its hash computed.
// A nil Value is zero.
func NewDeposit(f DepositFields) *Deposit {
	d := &Deposit{f: DepositFields{SourceHash: f.SourceHash, From: f.From, Gas: f.Gas, IsSystemTx: f.IsSystemTx, Data: common.CopyBytes(f.Data), Value: new(big.Int)}}
	if f.To != nil {
		t := *f.To
		d.f.To = &t
	}
	if f.Mint != nil && f.Mint.Sign() != 0 {
		d.f.Mint = new(big.Int).Set(f.Mint)
	}
	if f.Value != nil {
		d.f.Value.Set(f.Value)
	}
	enc, _ := d.MarshalBinary() // encoding an in-memory deposit cannot fail
	d.hash = crypto.Keccak256Hash(enc)
	d.size = uint64(len(enc))
	return d
}

// Fields returns a copy of the deposit's fields.
func (d *Deposit) Fields() DepositFields {
	f := d.f
	f.To = d.To()
	f.Mint = d.MintValue()
	f.Value = d.Value()
	f.Data = d.Data()
	return f
}

// Type is DepositTxType.
func (d *Deposit) Type() uint8 { return DepositTxType }

// Hash is keccak256(0x7e ‖ RLP(payload)).
func (d *Deposit) Hash() common.Hash { return d.hash }

// SourceHash identifies the deposit's L1 origin.
func (d *Deposit) SourceHash() common.Hash { return d.f.SourceHash }

// From is the sender (no signature: given by L1).
func (d *Deposit) From() common.Address { return d.f.From }

// IsSystemTx reports a pre-Regolith system transaction.
func (d *Deposit) IsSystemTx() bool { return d.f.IsSystemTx }

// Nonce is 0: a deposit's encoding has no nonce.
func (d *Deposit) Nonce() uint64 { return 0 }

// Gas is the gas limit.
func (d *Deposit) Gas() uint64 { return d.f.Gas }

// GasPrice is 0: a deposit buys no gas.
func (d *Deposit) GasPrice() *big.Int { return new(big.Int) }

// To is the recipient (nil: contract creation).
func (d *Deposit) To() *common.Address {
	if d.f.To == nil {
		return nil
	}
	t := *d.f.To
	return &t
}

// Value is the value transferred from From.
func (d *Deposit) Value() *big.Int { return new(big.Int).Set(d.f.Value) }

// MintValue is the ETH minted to From before execution (never nil).
func (d *Deposit) MintValue() *big.Int {
	if d.f.Mint == nil {
		return new(big.Int)
	}
	return new(big.Int).Set(d.f.Mint)
}

// Data is the call data (or init code).
func (d *Deposit) Data() []byte { return common.CopyBytes(d.f.Data) }

// Size is the length of the EIP-2718 encoding.
func (d *Deposit) Size() uint64 { return d.size }

// MarshalBinary is 0x7e ‖ RLP(payload).
func (d *Deposit) MarshalBinary() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte(DepositTxType)
	if err := rlp.Encode(&buf, &d.f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// EncodeRLP writes the deposit as an element of a block's transaction
// list: an RLP string holding its EIP-2718 encoding.
func (d *Deposit) EncodeRLP(w io.Writer) error {
	enc, err := d.MarshalBinary()
	if err != nil {
		return err
	}
	return rlp.Encode(w, enc)
}

// decodeDeposit decodes 0x7e ‖ RLP(payload).
func decodeDeposit(b []byte) (*Deposit, error) {
	if len(b) < 2 || b[0] != DepositTxType {
		return nil, fmt.Errorf("%w: missing 0x7e type byte", ErrDepositDecode)
	}
	d := new(Deposit)
	if err := rlp.DecodeBytes(b[1:], &d.f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDepositDecode, err)
	}
	if d.f.Value == nil {
		d.f.Value = new(big.Int)
	}
	if d.f.Mint != nil && d.f.Mint.Sign() == 0 {
		d.f.Mint = nil
	}
	d.hash = crypto.Keccak256Hash(b)
	d.size = uint64(len(b))
	return d, nil
}

// DecodeTx decodes an EIP-2718 transaction encoding: a deposit when the
// first byte is 0x7e, a go-ethereum transaction otherwise.
func DecodeTx(b []byte) (Tx, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrTxDecode)
	}
	if b[0] == DepositTxType {
		return decodeDeposit(b)
	}
	tx := new(types.Transaction)
	if err := tx.UnmarshalBinary(b); err != nil {
		return nil, err
	}
	return tx, nil
}

// IsDeposit reports whether tx is a deposit.
func IsDeposit(tx Tx) bool {
	_, ok := tx.(*Deposit)
	return ok
}

// Txs is a block's transaction list. It is a types.DerivableList, so
// types.DeriveSha gives its transactions root.
type Txs []Tx

// Len is the number of transactions.
func (s Txs) Len() int { return len(s) }

// EncodeIndex writes transaction i's EIP-2718 encoding (what the
// transactions trie holds).
func (s Txs) EncodeIndex(i int, w *bytes.Buffer) {
	switch tx := s[i].(type) {
	case *types.Transaction:
		types.Transactions{tx}.EncodeIndex(0, w)
	case *Deposit:
		w.WriteByte(DepositTxType)
		rlp.Encode(w, &tx.f)
	}
}

// FromEth returns txs as a Txs (the same values, no copy of them).
func FromEth(txs types.Transactions) Txs {
	out := make(Txs, len(txs))
	for i, tx := range txs {
		out[i] = tx
	}
	return out
}

// Eth returns the transactions as go-ethereum transactions, and false when
// the list holds a deposit.
func (s Txs) Eth() (types.Transactions, bool) {
	out := make(types.Transactions, len(s))
	for i, tx := range s {
		t, ok := tx.(*types.Transaction)
		if !ok {
			return nil, false
		}
		out[i] = t
	}
	return out, true
}

// EncodeRLP writes the list as in a block body.
func (s Txs) EncodeRLP(w io.Writer) error {
	buf := rlp.NewEncoderBuffer(w)
	l := buf.List()
	for _, tx := range s {
		if err := tx.EncodeRLP(&buf); err != nil {
			return err
		}
	}
	buf.ListEnd(l)
	return buf.Flush()
}

// DecodeRLP reads a body's transaction list: an RLP list element is a
// legacy transaction, a string element a typed one (a deposit when it
// starts with 0x7e).
func (s *Txs) DecodeRLP(st *rlp.Stream) error {
	if _, err := st.List(); err != nil {
		return err
	}
	var out Txs
	for {
		kind, _, err := st.Kind()
		if err == rlp.EOL {
			break
		}
		if err != nil {
			return err
		}
		switch kind {
		case rlp.List:
			tx := new(types.Transaction)
			if err := st.Decode(tx); err != nil {
				return err
			}
			out = append(out, tx)
		default:
			b, err := st.Bytes()
			if err != nil {
				return err
			}
			tx, err := DecodeTx(b)
			if err != nil {
				return fmt.Errorf("transaction %d: %w", len(out), err)
			}
			out = append(out, tx)
		}
	}
	if err := st.ListEnd(); err != nil {
		return err
	}
	*s = out
	return nil
}
