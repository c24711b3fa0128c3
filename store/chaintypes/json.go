package chaintypes

import (
	"encoding/json"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
)

// depositJSON is a deposit as JSON-RPC nodes (op-geth, op-reth) serve it.
type depositJSON struct {
	Type       hexutil.Uint64  `json:"type"`
	Hash       *common.Hash    `json:"hash"`
	SourceHash *common.Hash    `json:"sourceHash"`
	From       *common.Address `json:"from"`
	To         *common.Address `json:"to"`
	Mint       *hexutil.Big    `json:"mint"`
	Value      *hexutil.Big    `json:"value"`
	Gas        *hexutil.Uint64 `json:"gas"`
	IsSystemTx *bool           `json:"isSystemTx"`
	Input      *hexutil.Bytes  `json:"input"`
}

// UnmarshalTxJSON decodes a transaction object as eth_getBlockByNumber
// serves it: a deposit (type 0x7e, with sourceHash, from, mint,
// isSystemTx) or any go-ethereum transaction. A deposit's announced hash,
// when present, must be the hash of the decoded fields.
func UnmarshalTxJSON(raw []byte) (Tx, error) {
	var head struct {
		Type hexutil.Uint64 `json:"type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, err
	}
	if head.Type != DepositTxType {
		tx := new(types.Transaction)
		if err := tx.UnmarshalJSON(raw); err != nil {
			return nil, err
		}
		return tx, nil
	}
	var j depositJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, err
	}
	switch {
	case j.SourceHash == nil:
		return nil, fmt.Errorf("%w: missing sourceHash", ErrDepositDecode)
	case j.From == nil:
		return nil, fmt.Errorf("%w: missing from", ErrDepositDecode)
	case j.Gas == nil:
		return nil, fmt.Errorf("%w: missing gas", ErrDepositDecode)
	case j.Input == nil:
		return nil, fmt.Errorf("%w: missing input", ErrDepositDecode)
	}
	f := DepositFields{SourceHash: *j.SourceHash, From: *j.From, To: j.To, Gas: uint64(*j.Gas), Data: *j.Input}
	if j.Mint != nil {
		f.Mint = (*big.Int)(j.Mint)
	}
	if j.Value != nil {
		f.Value = (*big.Int)(j.Value)
	}
	if j.IsSystemTx != nil {
		f.IsSystemTx = *j.IsSystemTx
	}
	d := NewDeposit(f)
	if j.Hash != nil && *j.Hash != d.Hash() {
		return nil, fmt.Errorf("%w: announced hash %s, fields hash to %s", ErrDepositDecode, j.Hash.Hex(), d.Hash().Hex())
	}
	return d, nil
}

// opReceiptJSON are the OP fields of a receipt as JSON-RPC nodes serve it.
type opReceiptJSON struct {
	DepositNonce          *hexutil.Uint64 `json:"depositNonce"`
	DepositReceiptVersion *hexutil.Uint64 `json:"depositReceiptVersion"`
	L1GasPrice            *hexutil.Big    `json:"l1GasPrice"`
	L1GasUsed             *hexutil.Big    `json:"l1GasUsed"`
	L1Fee                 *hexutil.Big    `json:"l1Fee"`
	L1FeeScalar           *string         `json:"l1FeeScalar"`
	L1BaseFeeScalar       *hexutil.Uint64 `json:"l1BaseFeeScalar"`
	L1BlobBaseFee         *hexutil.Big    `json:"l1BlobBaseFee"`
	L1BlobBaseFeeScalar   *hexutil.Uint64 `json:"l1BlobBaseFeeScalar"`
	OperatorFeeScalar     *hexutil.Uint64 `json:"operatorFeeScalar"`
	OperatorFeeConstant   *hexutil.Uint64 `json:"operatorFeeConstant"`
	DAFootprintGasScalar  *hexutil.Uint64 `json:"daFootprintGasScalar"`
}

// UnmarshalJSON decodes a receipt as JSON-RPC nodes serve it
// (eth_getTransactionReceipt, eth_getBlockReceipts): go-ethereum's fields,
// and the OP fields when present (OP is nil without any), so a deposit's
// receipt hashes with its nonce and version.
func (r *Receipt) UnmarshalJSON(b []byte) error {
	if err := r.Receipt.UnmarshalJSON(b); err != nil {
		return err
	}
	var j opReceiptJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	u := func(v *hexutil.Uint64) *uint64 {
		if v == nil {
			return nil
		}
		x := uint64(*v)
		return &x
	}
	bi := func(v *hexutil.Big) *big.Int { return (*big.Int)(v) }
	op := &OPReceipt{
		DepositNonce: u(j.DepositNonce), DepositReceiptVersion: u(j.DepositReceiptVersion),
		L1GasPrice: bi(j.L1GasPrice), L1GasUsed: bi(j.L1GasUsed), L1Fee: bi(j.L1Fee),
		L1BaseFeeScalar: u(j.L1BaseFeeScalar), L1BlobBaseFee: bi(j.L1BlobBaseFee), L1BlobBaseFeeScalar: u(j.L1BlobBaseFeeScalar),
		OperatorFeeScalar: u(j.OperatorFeeScalar), OperatorFeeConstant: u(j.OperatorFeeConstant), DAFootprintGasScalar: u(j.DAFootprintGasScalar),
	}
	if j.L1FeeScalar != nil {
		// A decimal ("0.684"): the raw scalar has 6 decimals.
		f, ok := new(big.Float).SetPrec(256).SetString(*j.L1FeeScalar)
		if !ok || f.Sign() < 0 {
			return fmt.Errorf("l1FeeScalar %q is not a decimal", *j.L1FeeScalar)
		}
		f.Mul(f, big.NewFloat(1e6))
		raw, _ := f.Add(f, big.NewFloat(0.5)).Int(nil) // nearest: 0.684 is not exact in binary
		op.L1FeeScalar = raw
	}
	if *op != (OPReceipt{}) {
		r.OP = op
	}
	return nil
}
