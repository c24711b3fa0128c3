package eth

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
)

// Word is a 32-byte value (storage key or value). It decodes from a JSON
// string of "0x" followed by 1 to 64 hex digits (the prefix may be omitted,
// as go-ethereum allows), left-padded with zeros: "0x0", "0x1", "0x01" and a
// full 32-byte word are all accepted. It encodes as the full 32-byte hex.
// Word implements encoding.TextUnmarshaler, so it can be a JSON map key.
type Word [32]byte

// ParseWord parses s as described on Word. Errors quote the input
// (truncated when long).
func ParseWord(s string) (Word, error) {
	var w Word
	h := s
	if len(h) >= 2 && h[0] == '0' && (h[1] == 'x' || h[1] == 'X') {
		h = h[2:]
	}
	switch {
	case len(h) == 0:
		return w, fmt.Errorf("invalid 32-byte word %s: empty hex", quoteInput(s))
	case len(h) > 64:
		return w, fmt.Errorf("32-byte word too long (want at most 64 hex digits): %s", quoteInput(s))
	}
	if len(h)%2 == 1 {
		h = "0" + h
	}
	b, err := hex.DecodeString(h)
	if err != nil {
		return w, fmt.Errorf("invalid hex in 32-byte word %s", quoteInput(s))
	}
	copy(w[32-len(b):], b)
	return w, nil
}

// quoteInput quotes outside input for an error message, truncated to keep
// messages small.
func quoteInput(s string) string {
	const max = 80
	if len(s) > max {
		return fmt.Sprintf("%q… (%d bytes)", s[:max], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (w *Word) UnmarshalText(text []byte) error {
	v, err := ParseWord(string(text))
	if err != nil {
		return err
	}
	*w = v
	return nil
}

// UnmarshalJSON accepts only a JSON string.
func (w *Word) UnmarshalJSON(data []byte) error {
	if len(data) == 0 || data[0] != '"' {
		return fmt.Errorf("32-byte word must be a hex string, got %s", quoteInput(string(data)))
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	return w.UnmarshalText([]byte(s))
}

// MarshalText implements encoding.TextMarshaler (full 0x-prefixed 32 bytes).
func (w Word) MarshalText() ([]byte, error) { return []byte(hexutil.Encode(w[:])), nil }

// String returns the full 0x-prefixed hex.
func (w Word) String() string { return hexutil.Encode(w[:]) }

// Hash returns w as a common.Hash.
func (w Word) Hash() common.Hash { return common.Hash(w) }

// Big returns w as an unsigned integer.
func (w Word) Big() *big.Int { return new(big.Int).SetBytes(w[:]) }

// CallArgs is the transaction call object of eth_call, eth_estimateGas,
// eth_createAccessList and eth_simulateV1. Absent fields are nil. Unknown
// fields are ignored (like go-ethereum). When both "data" and "input" are
// given they must be equal; Data() returns the call data.
type CallArgs struct {
	From                 *common.Address              `json:"from"`
	To                   *common.Address              `json:"to"`
	Gas                  *hexutil.Uint64              `json:"gas"`
	GasPrice             *hexutil.Big                 `json:"gasPrice"`
	MaxFeePerGas         *hexutil.Big                 `json:"maxFeePerGas"`
	MaxPriorityFeePerGas *hexutil.Big                 `json:"maxPriorityFeePerGas"`
	MaxFeePerBlobGas     *hexutil.Big                 `json:"maxFeePerBlobGas"`
	Value                *hexutil.Big                 `json:"value"`
	Nonce                *hexutil.Uint64              `json:"nonce"`
	Input                *hexutil.Bytes               `json:"input"`
	DataField            *hexutil.Bytes               `json:"data"`
	AccessList           *types.AccessList            `json:"accessList"`
	Type                 *hexutil.Uint64              `json:"type"`
	ChainID              *hexutil.Big                 `json:"chainId"`
	BlobVersionedHashes  []common.Hash                `json:"blobVersionedHashes"`
	AuthorizationList    []types.SetCodeAuthorization `json:"authorizationList"`
}

// UnmarshalJSON decodes a call object and checks data/input consistency.
func (a *CallArgs) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return nil
	}
	var p CallArgs
	if !decodeCallArgsFast(data, &p) {
		return a.unmarshalJSONReflect(data)
	}
	if p.Input != nil && p.DataField != nil && !bytes.Equal(*p.Input, *p.DataField) {
		return ErrDataInputMismatch
	}
	*a = p
	return nil
}

// unmarshalJSONReflect is UnmarshalJSON with encoding/json: every shape
// the fast decoder (decodeCallArgsFast) leaves to it, and the reference
// the fuzz target compares the fast decoder with.
func (a *CallArgs) unmarshalJSONReflect(data []byte) error {
	type plain CallArgs
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	if p.Input != nil && p.DataField != nil && !bytes.Equal(*p.Input, *p.DataField) {
		return ErrDataInputMismatch
	}
	*a = CallArgs(p)
	return nil
}

// Data returns the call data: "input" if set, else "data", else nil.
func (a *CallArgs) Data() []byte {
	if a.Input != nil {
		return *a.Input
	}
	if a.DataField != nil {
		return *a.DataField
	}
	return nil
}
