package follow

// Decoders of upstream answers (outside input: each has a fuzz target).
// A header is checked for internal consistency here (its fields hash to
// the announced hash); the importer then checks the block against its
// header (transactions, uncles and withdrawals roots, gas, receipts,
// bloom...).

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"
	gojson "github.com/goccy/go-json"

	"github.com/tipnode/tipnode/store/chaintypes"
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

// decodeBlock decodes a block object with full transactions
// (eth_getBlockByNumber(n, true)). It returns the header, the body without
// uncles, and the uncle hashes (their headers are fetched separately).
// null is ErrUnknownBlock. The block JSON is split into its members, and
// the transactions into their objects, by goccy/go-json (with
// encoding/json this splitting cost more than the decoding itself); the
// header is decoded from the members without the transactions, each
// transaction from its own object by go-ethereum. Transactions are not checked against
// their announced hashes here: the importer checks them all at once
// against the header's transactions root.
func decodeBlock(raw json.RawMessage) (*types.Header, *chaintypes.Body, []common.Hash, error) {
	if isNull(raw) {
		return nil, nil, nil, ErrUnknownBlock
	}
	var members map[string]json.RawMessage
	if err := gojson.Unmarshal(raw, &members); err != nil {
		return nil, nil, nil, fmt.Errorf("%w: block: %v", ErrBadResponse, err)
	}
	txs, uncles, withdrawals := members["transactions"], members["uncles"], members["withdrawals"]
	delete(members, "transactions")
	headerJSON, err := json.Marshal(members)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w: block: %v", ErrBadResponse, err)
	}
	h, err := decodeHeader(headerJSON)
	if err != nil {
		return nil, nil, nil, err
	}
	bad := func(what string, err error) (*types.Header, *chaintypes.Body, []common.Hash, error) {
		return nil, nil, nil, fmt.Errorf("%w: block %d %s: %v", ErrBadResponse, h.Number, what, err)
	}
	var rawTxs []json.RawMessage
	if err := gojson.Unmarshal(txs, &rawTxs); err != nil || rawTxs == nil {
		if err == nil {
			err = fmt.Errorf("missing")
		}
		return bad("transactions", err)
	}
	body := &chaintypes.Body{Transactions: make(chaintypes.Txs, len(rawTxs))}
	for i, rawTx := range rawTxs {
		if r := bytes.TrimSpace(rawTx); len(r) == 0 || r[0] != '{' {
			return bad(fmt.Sprintf("transaction %d", i), fmt.Errorf("not an object (transaction hashes instead of full transactions?)"))
		}
		tx, err := chaintypes.UnmarshalTxJSON(rawTx)
		if err != nil {
			return bad(fmt.Sprintf("transaction %d", i), err)
		}
		body.Transactions[i] = tx
	}
	var uncleHashes []common.Hash
	if len(uncles) > 0 {
		if err := json.Unmarshal(uncles, &uncleHashes); err != nil {
			return bad("uncles", err)
		}
	}
	if !isNull(withdrawals) {
		if err := json.Unmarshal(withdrawals, &body.Withdrawals); err != nil {
			return bad("withdrawals", err)
		}
		if body.Withdrawals == nil {
			body.Withdrawals = types.Withdrawals{}
		}
	}
	return h, body, uncleHashes, nil
}

// assembleBlock joins a decoded header, body and uncle headers, checking
// that the uncles are the announced ones.
func assembleBlock(h *types.Header, body *chaintypes.Body, uncleHashes []common.Hash, uncles []*types.Header) (*chaintypes.Block, error) {
	if len(uncles) != len(uncleHashes) {
		return nil, fmt.Errorf("%w: block %d: %d uncles for %d uncle hashes", ErrBadResponse, h.Number, len(uncles), len(uncleHashes))
	}
	for i, u := range uncles {
		if u.Hash() != uncleHashes[i] {
			return nil, fmt.Errorf("%w: block %d uncle %d is not the announced one", ErrBadResponse, h.Number, i)
		}
	}
	body.Uncles = uncles
	return chaintypes.NewBlockWithHeader(h).WithBody(*body), nil
}

// decodeRawBlock decodes a raw block (debug_getRawBlock: the RLP of the
// block, as 0x-hex). null is ErrUnknownBlock.
func decodeRawBlock(raw json.RawMessage) (*chaintypes.Block, error) {
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
	b := new(chaintypes.Block)
	if err := rlp.DecodeBytes(enc, b); err != nil {
		return nil, fmt.Errorf("%w: raw block: %v", ErrBadResponse, err)
	}
	return b, nil
}
