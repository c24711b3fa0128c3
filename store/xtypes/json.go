package xtypes

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
