package follow

// Decoders of upstream answers (outside input: each has a fuzz target).
// Everything an upstream says about a block is checked for internal
// consistency here — header fields hash to the announced hash, every
// transaction hashes to its announced hash — and the importer then checks
// the block against its header (roots, gas, receipts, bloom...).

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"
)

// isNull reports whether a JSON result is absent or null.
func isNull(raw json.RawMessage) bool {
	r := bytes.TrimSpace(raw)
	return len(r) == 0 || bytes.Equal(r, []byte("null"))
}

// decodeHeader decodes a header object (eth_getBlockByNumber without
// transactions, a newHeads notification, an uncle) and checks that its
// fields hash to its "hash" member. null is ErrUnknownBlock.
func decodeHeader(raw json.RawMessage) (*types.Header, error) {
	if isNull(raw) {
		return nil, ErrUnknownBlock
	}
	var h types.Header
	if err := json.Unmarshal(raw, &h); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrBadResponse, err)
	}
	var announced struct {
		Hash *common.Hash `json:"hash"`
	}
	if err := json.Unmarshal(raw, &announced); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrBadResponse, err)
	}
	if announced.Hash == nil {
		return nil, fmt.Errorf("%w: header %d has no hash", ErrBadResponse, h.Number)
	}
	if got := h.Hash(); got != *announced.Hash {
		return nil, fmt.Errorf("%w: header %d: fields hash to %s, upstream says %s (a header field we do not know?)",
			ErrBadResponse, h.Number, got.Hex(), announced.Hash.Hex())
	}
	return &h, nil
}

// rpcBody is the body part of a block object with full transactions.
type rpcBody struct {
	Transactions []json.RawMessage  `json:"transactions"`
	Uncles       []common.Hash      `json:"uncles"`
	Withdrawals  *types.Withdrawals `json:"withdrawals"`
}

// decodeBlock decodes a block object with full transactions
// (eth_getBlockByNumber(n, true)). It returns the header, the body without
// uncles, and the uncle hashes (their headers are fetched separately).
// null is ErrUnknownBlock.
func decodeBlock(raw json.RawMessage) (*types.Header, *types.Body, []common.Hash, error) {
	h, err := decodeHeader(raw)
	if err != nil {
		return nil, nil, nil, err
	}
	var b rpcBody
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, nil, nil, fmt.Errorf("%w: block %d body: %v", ErrBadResponse, h.Number, err)
	}
	body := &types.Body{Transactions: make([]*types.Transaction, len(b.Transactions))}
	for i, rawTx := range b.Transactions {
		if r := bytes.TrimSpace(rawTx); len(r) == 0 || r[0] != '{' {
			return nil, nil, nil, fmt.Errorf("%w: block %d transaction %d is not an object (transaction hashes instead of full transactions?)", ErrBadResponse, h.Number, i)
		}
		tx := new(types.Transaction)
		if err := tx.UnmarshalJSON(rawTx); err != nil {
			return nil, nil, nil, fmt.Errorf("%w: block %d transaction %d: %v", ErrBadResponse, h.Number, i, err)
		}
		var announced struct {
			Hash *common.Hash `json:"hash"`
		}
		if err := json.Unmarshal(rawTx, &announced); err != nil || announced.Hash == nil || *announced.Hash != tx.Hash() {
			return nil, nil, nil, fmt.Errorf("%w: block %d transaction %d: fields hash to %s, not to the announced hash", ErrBadResponse, h.Number, i, tx.Hash().Hex())
		}
		body.Transactions[i] = tx
	}
	if b.Withdrawals != nil {
		body.Withdrawals = *b.Withdrawals
	}
	return h, body, b.Uncles, nil
}

// assembleBlock joins a decoded header, body and uncle headers, checking
// that the uncles are the announced ones.
func assembleBlock(h *types.Header, body *types.Body, uncleHashes []common.Hash, uncles []*types.Header) (*types.Block, error) {
	if len(uncles) != len(uncleHashes) {
		return nil, fmt.Errorf("%w: block %d: %d uncles for %d uncle hashes", ErrBadResponse, h.Number, len(uncles), len(uncleHashes))
	}
	for i, u := range uncles {
		if u.Hash() != uncleHashes[i] {
			return nil, fmt.Errorf("%w: block %d uncle %d is not the announced one", ErrBadResponse, h.Number, i)
		}
	}
	body.Uncles = uncles
	return types.NewBlockWithHeader(h).WithBody(*body), nil
}

// decodeRawBlock decodes a raw block (debug_getRawBlock: the RLP of the
// block, as 0x-hex). null is ErrUnknownBlock.
func decodeRawBlock(raw json.RawMessage) (*types.Block, error) {
	if isNull(raw) {
		return nil, ErrUnknownBlock
	}
	var enc hexutil.Bytes
	if err := json.Unmarshal(raw, &enc); err != nil {
		return nil, fmt.Errorf("%w: raw block: %v", ErrBadResponse, err)
	}
	if len(enc) == 0 {
		return nil, ErrUnknownBlock
	}
	b := new(types.Block)
	if err := rlp.DecodeBytes(enc, b); err != nil {
		return nil, fmt.Errorf("%w: raw block: %v", ErrBadResponse, err)
	}
	return b, nil
}
