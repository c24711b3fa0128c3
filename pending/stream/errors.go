package stream

import "errors"

// Sentinel errors of the stream package. Errors returned wrap one of these
// (errors.Is) with the detail: the field, the value, the limit.
var (
	// Publisher side.

	// ErrEncode: a snapshot could not be encoded into a message (a
	// transaction that does not marshal).
	ErrEncode = errors.New("stream: cannot encode pre-confirmation")
	// ErrConfig: an invalid publisher configuration.
	ErrConfig = errors.New("stream: invalid configuration")

	// Client side.

	// ErrClientConfig: ClientConfig.Validate failed.
	ErrClientConfig = errors.New("stream: invalid client configuration")

	// Decoding (Decode). A message that fails to decode is counted, logged
	// and skipped; the replica's sequence validator sees the hole.

	// ErrFrameType: a websocket frame that is neither text nor binary.
	ErrFrameType = errors.New("stream: unsupported frame type")
	// ErrTooLarge: the frame, or a binary frame once decompressed, is
	// larger than the message limit.
	ErrTooLarge = errors.New("stream: message too large")
	// ErrMalformed: the frame is not a JSON object of the message shape
	// (nor brotli-compressed JSON, for binary frames), or a field has the
	// wrong type (index as a string, a hash of the wrong length, ...).
	ErrMalformed = errors.New("stream: malformed message")
	// ErrMissingField: a required field is absent or null.
	ErrMissingField = errors.New("stream: missing field")
	// ErrBadIndex: index is not a non-negative integer JSON number no
	// larger than MaxIndex.
	ErrBadIndex = errors.New("stream: bad index")
	// ErrInconsistent: the message does not hold together: base on an
	// index other than 0, metadata.block_number differing from
	// base.block_number, withdrawals in a diff.
	ErrInconsistent = errors.New("stream: inconsistent message")
	// ErrMetadata: metadata.receipts or metadata.new_account_balances do
	// not parse (returned by Metadata.ParseReceipts / ParseBalances; the
	// message itself decodes, the metadata is never needed to follow it).
	ErrMetadata = errors.New("stream: malformed metadata")
	// ErrBadTransaction: an entry of diff.transactions is not a valid
	// EIP-2718 transaction encoding (returned by Payload.Txs).
	ErrBadTransaction = errors.New("stream: bad transaction")

	// Connection (reported to Sink.Down).

	// ErrDial: the stream could not be connected.
	ErrDial = errors.New("stream: cannot connect")
	// ErrConnLost: the connection failed or was closed by the peer.
	ErrConnLost = errors.New("stream: connection lost")
	// ErrPongTimeout: a ping went unanswered for ClientConfig.PongTimeout.
	ErrPongTimeout = errors.New("stream: ping unanswered")
	// ErrIdle: no message arrived for ClientConfig.IdleTimeout.
	ErrIdle = errors.New("stream: no message within the idle timeout")
)
