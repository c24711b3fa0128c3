package stream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/ethereum/go-ethereum/beacon/engine"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/gorilla/websocket"

	"github.com/tipnode/tipnode/store/chaintypes"
)

const (
	// DefaultMaxMessageBytes bounds one message: the frame as read and, for
	// a brotli-compressed binary frame, its decompressed JSON. 16 MiB holds
	// a 30 Mgas block of calldata-heavy transactions in hex twice over.
	DefaultMaxMessageBytes = 16 << 20
	// MaxIndex is the largest index accepted: a block of 65,536
	// pre-confirmations (one per millisecond for a minute) is far beyond
	// any producer; a larger index is refused as corrupt.
	MaxIndex = 1 << 16
)

// Decode decodes one websocket frame into a message, with the
// DefaultMaxMessageBytes limit. See DecodeLimit.
func Decode(messageType int, data []byte) (*Payload, error) {
	return DecodeLimit(messageType, data, DefaultMaxMessageBytes)
}

// DecodeLimit decodes one websocket frame of at most limit bytes (and, for
// brotli, at most limit bytes once decompressed) into a message.
//
// Frames: a text frame holds the JSON message; a binary frame holds either
// the raw JSON (its first non-whitespace byte is '{') or the JSON
// compressed with brotli, as the flashblocks websocket proxy sends it (a
// binary frame that does not parse as JSON is tried as brotli).
//
// Validation (every failure wraps one sentinel of errors.go):
//   - payload_id (8-byte hex), index and diff are required; metadata may
//     be absent (a trimmed producer: Metadata.Absent, the block number is
//     base.block_number on index 0, the replica's open block's later), and
//     when present its block_number is required; in diff, gas_used,
//     receipts_root and transactions (may be empty) are required, the
//     other fields default to zero (OP subblocks send state_root,
//     block_hash and withdrawals_root as zero: they are never trusted).
//   - diff.blob_gas_used (optional) is the cumulative blob gas used, on an
//     OP chain from Jovian its DA footprint; diff.post_exec_tx (Lagoon,
//     optional) is kept as received (Diff.PostExecTx).
//   - index and metadata.block_number must be JSON integer numbers (a
//     string, a negative, fractional or exponent number is refused: the
//     base's block_number, gas_limit and timestamp are hex quantities); index
//     is at most MaxIndex.
//   - base is required on index 0, with all nine of its fields, and
//     metadata.block_number must equal base.block_number; base is refused
//     on any other index (the format sends it once per block: a base on a
//     later index would be a second, possibly different, block context);
//     without metadata, base.block_number is the block number.
//   - diff.withdrawals must be absent, null or empty.
//   - metadata.receipts and metadata.new_account_balances (rollup-boost,
//     op-rbuilder) must be JSON objects when present; they are kept as
//     received and parsed on demand (Metadata.ParseReceipts,
//     ParseBalances): a replica executes every transaction itself and
//     may only cross-check them.
//   - unknown keys, anywhere, are ignored.
//
// Transactions are checked to be hex strings only; Payload.Txs decodes
// them (EIP-2718), so that the replica decodes each transaction once.
func DecodeLimit(messageType int, data []byte, limit int) (*Payload, error) {
	if len(data) > limit {
		return nil, fmt.Errorf("%w: frame of %d bytes, limit %d", ErrTooLarge, len(data), limit)
	}
	switch messageType {
	case websocket.TextMessage:
		return decodeJSON(data)
	case websocket.BinaryMessage:
		if looksLikeJSON(data) {
			p, err := decodeJSON(data)
			var syntax *json.SyntaxError
			if err == nil || !errors.As(err, &syntax) {
				return p, err
			}
			// A brotli stream can begin with '{' too: try it before
			// reporting the JSON error.
			if plain, berr := unbrotli(data, limit); berr == nil {
				return decodeJSON(plain)
			}
			return nil, err
		}
		plain, err := unbrotli(data, limit)
		if err != nil {
			return nil, err
		}
		return decodeJSON(plain)
	default:
		return nil, fmt.Errorf("%w: websocket message type %d", ErrFrameType, messageType)
	}
}

// looksLikeJSON reports whether the first non-whitespace byte is '{'.
func looksLikeJSON(data []byte) bool {
	for _, c := range data {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return true
		default:
			return false
		}
	}
	return false
}

// brotliReaders recycles decoders: a fresh one costs ~50 KB of state.
var brotliReaders = sync.Pool{New: func() any { return brotli.NewReader(nil) }}

// unbrotli decompresses data, refusing output beyond limit bytes.
func unbrotli(data []byte, limit int) ([]byte, error) {
	br := brotliReaders.Get().(*brotli.Reader)
	defer brotliReaders.Put(br)
	if err := br.Reset(bytes.NewReader(data)); err != nil {
		return nil, fmt.Errorf("%w: brotli: %v", ErrMalformed, err)
	}
	out, err := io.ReadAll(io.LimitReader(br, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("%w: binary frame is neither JSON nor brotli: %v", ErrMalformed, err)
	}
	if len(out) > limit {
		return nil, fmt.Errorf("%w: brotli frame of %d bytes decompresses beyond the limit of %d", ErrTooLarge, len(data), limit)
	}
	return out, nil
}

// The wire shapes: pointers and raw values tell absent (or null) fields
// from zero ones.
type wireMessage struct {
	PayloadID *engine.PayloadID `json:"payload_id"`
	Index     json.RawMessage   `json:"index"`
	Base      *wireBase         `json:"base"`
	Diff      *wireDiff         `json:"diff"`
	Metadata  *wireMetadata     `json:"metadata"`
}

type wireBase struct {
	ParentBeaconBlockRoot *common.Hash    `json:"parent_beacon_block_root"`
	ParentHash            *common.Hash    `json:"parent_hash"`
	FeeRecipient          *common.Address `json:"fee_recipient"`
	PrevRandao            *common.Hash    `json:"prev_randao"`
	BlockNumber           *hexutil.Uint64 `json:"block_number"`
	GasLimit              *hexutil.Uint64 `json:"gas_limit"`
	Timestamp             *hexutil.Uint64 `json:"timestamp"`
	ExtraData             *hexutil.Bytes  `json:"extra_data"`
	BaseFeePerGas         *hexutil.Big    `json:"base_fee_per_gas"`
}

type wireDiff struct {
	StateRoot       *common.Hash        `json:"state_root"`
	ReceiptsRoot    *common.Hash        `json:"receipts_root"`
	LogsBloom       *types.Bloom        `json:"logs_bloom"`
	GasUsed         *hexutil.Uint64     `json:"gas_used"`
	BlockHash       *common.Hash        `json:"block_hash"`
	Transactions    []hexutil.Bytes     `json:"transactions"`
	Withdrawals     []*types.Withdrawal `json:"withdrawals"`
	WithdrawalsRoot *common.Hash        `json:"withdrawals_root"`
	BlobGasUsed     *hexutil.Uint64     `json:"blob_gas_used"`
	PostExecTx      *hexutil.Bytes      `json:"post_exec_tx"`
}

type wireMetadata struct {
	BlockNumber        json.RawMessage `json:"block_number"`
	NewAccountBalances json.RawMessage `json:"new_account_balances"`
	Receipts           json.RawMessage `json:"receipts"`
}

func missing(field string) error { return fmt.Errorf("%w: %s", ErrMissingField, field) }

func decodeJSON(data []byte) (*Payload, error) {
	var w wireMessage
	if err := json.Unmarshal(data, &w); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	switch {
	case w.PayloadID == nil:
		return nil, missing("payload_id")
	case isNull(w.Index):
		return nil, missing("index")
	case w.Diff == nil:
		return nil, missing("diff")
	case w.Metadata != nil && isNull(w.Metadata.BlockNumber):
		return nil, missing("metadata.block_number")
	}
	index, err := jsonUint(w.Index)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadIndex, err)
	}
	if index > MaxIndex {
		return nil, fmt.Errorf("%w: %d above the limit of %d", ErrBadIndex, index, MaxIndex)
	}
	p := &Payload{PayloadID: *w.PayloadID, Index: index}
	if w.Metadata == nil {
		p.Metadata.Absent = true
	} else {
		number, err := jsonUint(w.Metadata.BlockNumber)
		if err != nil {
			return nil, fmt.Errorf("%w: metadata.block_number: %v", ErrMalformed, err)
		}
		p.Metadata.BlockNumber = number
		if p.Metadata.Receipts, err = jsonObject("metadata.receipts", w.Metadata.Receipts); err != nil {
			return nil, err
		}
		if p.Metadata.NewAccountBalances, err = jsonObject("metadata.new_account_balances", w.Metadata.NewAccountBalances); err != nil {
			return nil, err
		}
	}
	if err := w.Diff.into(&p.Diff); err != nil {
		return nil, err
	}
	switch {
	case index == 0 && w.Base == nil:
		return nil, missing("base (required on index 0)")
	case index > 0 && w.Base != nil:
		return nil, fmt.Errorf("%w: base on index %d (only index 0 carries it)", ErrInconsistent, index)
	case index == 0:
		if p.Base, err = w.Base.decode(); err != nil {
			return nil, err
		}
		if p.Metadata.Absent {
			p.Metadata.BlockNumber = uint64(p.Base.BlockNumber)
		} else if uint64(p.Base.BlockNumber) != p.Metadata.BlockNumber {
			return nil, fmt.Errorf("%w: metadata.block_number %d, base.block_number %d", ErrInconsistent, p.Metadata.BlockNumber, uint64(p.Base.BlockNumber))
		}
	}
	return p, nil
}

func (w *wireBase) decode() (*Base, error) {
	switch {
	case w.ParentBeaconBlockRoot == nil:
		return nil, missing("base.parent_beacon_block_root")
	case w.ParentHash == nil:
		return nil, missing("base.parent_hash")
	case w.FeeRecipient == nil:
		return nil, missing("base.fee_recipient")
	case w.PrevRandao == nil:
		return nil, missing("base.prev_randao")
	case w.BlockNumber == nil:
		return nil, missing("base.block_number")
	case w.GasLimit == nil:
		return nil, missing("base.gas_limit")
	case w.Timestamp == nil:
		return nil, missing("base.timestamp")
	case w.ExtraData == nil:
		return nil, missing("base.extra_data")
	case w.BaseFeePerGas == nil:
		return nil, missing("base.base_fee_per_gas")
	}
	if w.BaseFeePerGas.ToInt().Sign() < 0 {
		return nil, fmt.Errorf("%w: negative base.base_fee_per_gas", ErrMalformed)
	}
	return &Base{
		ParentBeaconBlockRoot: *w.ParentBeaconBlockRoot,
		ParentHash:            *w.ParentHash,
		FeeRecipient:          *w.FeeRecipient,
		PrevRandao:            *w.PrevRandao,
		BlockNumber:           *w.BlockNumber,
		GasLimit:              *w.GasLimit,
		Timestamp:             *w.Timestamp,
		ExtraData:             *w.ExtraData,
		BaseFeePerGas:         w.BaseFeePerGas,
	}, nil
}

func (w *wireDiff) into(d *Diff) error {
	switch {
	case w.GasUsed == nil:
		return missing("diff.gas_used")
	case w.ReceiptsRoot == nil:
		return missing("diff.receipts_root")
	case w.Transactions == nil:
		return missing("diff.transactions")
	case len(w.Withdrawals) > 0:
		return fmt.Errorf("%w: %d withdrawals in diff (a pre-confirmation carries none)", ErrInconsistent, len(w.Withdrawals))
	}
	d.GasUsed, d.ReceiptsRoot, d.Transactions = *w.GasUsed, *w.ReceiptsRoot, w.Transactions
	d.Withdrawals = []*types.Withdrawal{}
	if w.StateRoot != nil {
		d.StateRoot = *w.StateRoot
	}
	if w.LogsBloom != nil {
		d.LogsBloom = *w.LogsBloom
	}
	if w.BlockHash != nil {
		d.BlockHash = *w.BlockHash
	}
	if w.WithdrawalsRoot != nil {
		d.WithdrawalsRoot = *w.WithdrawalsRoot
	}
	d.BlobGasUsed = w.BlobGasUsed
	if w.PostExecTx != nil {
		d.PostExecTx = *w.PostExecTx
	}
	return nil
}

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// jsonObject keeps an optional metadata field as received: absent or null
// is nil, a JSON object is kept (its content parsed on demand), anything
// else is malformed.
func jsonObject(field string, raw json.RawMessage) (json.RawMessage, error) {
	if isNull(raw) {
		return nil, nil
	}
	if raw[0] != '{' {
		return nil, fmt.Errorf("%w: %s is not a JSON object", ErrMalformed, field)
	}
	return raw, nil
}

// jsonUint parses a JSON number that is a plain non-negative integer
// (digits only: no sign, fraction, exponent or quotes).
func jsonUint(raw json.RawMessage) (uint64, error) {
	if len(raw) == 0 || len(raw) > 20 {
		return 0, fmt.Errorf("%.40s is not an integer JSON number of at most 20 digits", raw)
	}
	for _, c := range raw {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%.40s is not an integer JSON number", raw)
		}
	}
	n, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%.40s does not fit 64 bits", raw)
	}
	return n, nil
}

// Txs decodes the message's new transactions (EIP-2718 binary encodings:
// a typed transaction or a legacy RLP list). Every failure wraps
// ErrBadTransaction and names the transaction's position.
func (p *Payload) Txs() (chaintypes.Txs, error) {
	txs := make(chaintypes.Txs, len(p.Diff.Transactions))
	for i, raw := range p.Diff.Transactions {
		tx, err := chaintypes.DecodeTx(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: transaction %d of message %d (block %d): %v", ErrBadTransaction, i, p.Index, p.Metadata.BlockNumber, err)
		}
		txs[i] = tx
	}
	return txs, nil
}
