package rpc

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// JSON-RPC error codes used anywhere in tipnode. Codes are assigned only in
// this package: other packages return sentinel errors, and the method layer
// maps them to these codes (see Server.SetErrorMapper and the ErrorCoder
// interface).
const (
	// CodeParseError: the body is not valid JSON. The response id is null.
	CodeParseError = -32700
	// CodeInvalidRequest: valid JSON that is not a valid JSON-RPC 2.0 request
	// (wrong "jsonrpc", missing or non-string method, bad id type, empty batch,
	// non-object batch element, scalar params).
	CodeInvalidRequest = -32600
	// CodeMethodNotFound: no handler is registered for the method; also
	// eth_subscribe/eth_unsubscribe over HTTP ("notifications not
	// supported"), like go-ethereum.
	CodeMethodNotFound = -32601
	// CodeInvalidParams: a parameter is missing, malformed, of the wrong type,
	// or there are too many; object-form params.
	CodeInvalidParams = -32602
	// CodeInternal: a real fault inside the node: a panicking handler, a
	// result that cannot be marshalled, or a plain (unmapped) error.
	CodeInternal = -32603

	// CodeServerError is the generic implementation-defined server error.
	CodeServerError = -32000
	// CodeHeaderNotFound: the requested block does not exist ("header not
	// found"); same number as CodeServerError, as in go-ethereum.
	CodeHeaderNotFound = -32000
	// CodeCallReverted: a reverted eth_call or eth_estimateGas. tipnode's
	// specification reports reverts with -32000 and the message exactly
	// "execution reverted", with the revert data (hex) in Error.Data (see
	// ErrReverted).
	CodeCallReverted = -32000
	// CodeTimeout: the request exceeded Config.RequestTimeout ("request timed
	// out"), same code as go-ethereum.
	CodeTimeout = -32002
	// CodeLimitExceeded: a configured limit was hit (request body, batch
	// length, response size, connection count, the server's queued output,
	// eth_simulateV1 sizes…), or the server is busy: an execution Limiter's
	// queue is full or its wait passed ("… try again later"). EIP-1474's
	// "limit exceeded"; clients retry later.
	CodeLimitExceeded = -32005
	// CodeVMError: eth_simulateV1 call failed with an EVM error other than
	// revert (out of gas, invalid opcode, …).
	CodeVMError = -32015
	// CodeExecutionReverted is the code go-ethereum (and EIP-1474 style
	// clients) use for a reverted call. tipnode uses it only in the per-call
	// results of eth_simulateV1, with the revert bytes as data; eth_call and
	// eth_estimateGas report a revert as CodeCallReverted (-32000).
	CodeExecutionReverted = 3
	// CodeTxSyncTimeout: eth_sendRawTransactionSync accepted the
	// transaction but no receipt came within its timeout (EIP-7966; data:
	// the transaction hash).
	CodeTxSyncTimeout = 4
	// CodeTxSyncNotReady: eth_sendRawTransactionSync accepted the
	// transaction but it cannot execute now (a nonce gap: EIP-7966's
	// "unreadiness" error; data: the transaction hash).
	CodeTxSyncNotReady = 5
	// CodePrunedHistory: the block, receipts or logs asked for are below
	// the history this node holds (a store initialised from a state dump
	// at a later block): go-ethereum's "pruned history unavailable".
	CodePrunedHistory = 4444

	// eth_simulateV1 codes (execution-apis specification).

	// CodeNonceTooLow: transaction nonce is lower than the account nonce.
	CodeNonceTooLow = -38010
	// CodeNonceTooHigh: transaction nonce is higher than the account nonce.
	CodeNonceTooHigh = -38011
	// CodeBaseFeeTooLow: transaction max fee per gas is below the block base fee.
	CodeBaseFeeTooLow = -38012
	// CodeIntrinsicGas: gas limit below the intrinsic gas of the transaction.
	CodeIntrinsicGas = -38013
	// CodeInsufficientFunds: sender cannot pay gas * price + value.
	CodeInsufficientFunds = -38014
	// CodeBlockGasLimitReached: the block's transactions exceed its gas limit.
	CodeBlockGasLimitReached = -38015
	// CodeBlockNumberInvalid: simulated block numbers do not increase.
	CodeBlockNumberInvalid = -38020
	// CodeBlockTimestampInvalid: simulated block timestamps do not increase.
	CodeBlockTimestampInvalid = -38021
	// CodeMovePrecompileSelfReference: movePrecompileToAddress references itself.
	CodeMovePrecompileSelfReference = -38022
	// CodeMovePrecompileDuplicate: two movePrecompileToAddress target the same address.
	CodeMovePrecompileDuplicate = -38023
	// CodeSenderIsNotEOA: the sender has code (and is not a delegation).
	CodeSenderIsNotEOA = -38024
	// CodeMaxInitCodeSizeExceeded: contract creation init code too large.
	CodeMaxInitCodeSizeExceeded = -38025
	// CodeClientLimitExceeded: a client-adjustable limit (e.g. "too many blocks").
	CodeClientLimitExceeded = -38026
)

// Error is a JSON-RPC 2.0 error object. It implements error, so handlers can
// return it (or wrap it: errors.As is used) to choose the code, message and
// optional data sent to the client. It marshals as
// {"code":…,"message":…,"data":…} with "data" omitted when nil.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
	// overflow marks ErrResponseTooLarge: in a batch it spends the
	// response budget (the elements not started yet are not run).
	overflow bool
}

// Error implements error.
func (e *Error) Error() string {
	if e == nil {
		return "<nil>"
	}
	return e.Message
}

// ErrorCode returns the JSON-RPC code (go-ethereum style accessor).
func (e *Error) ErrorCode() int { return e.Code }

// ErrorData returns the data member (go-ethereum style accessor).
func (e *Error) ErrorData() any { return e.Data }

// ErrorCoder is implemented by errors that carry their own JSON-RPC code. A
// handler error that is not an *Error but (via errors.As) an ErrorCoder is
// sent with that code and its Error() text as message; if it also has an
// ErrorData() any method, that becomes the data member.
type ErrorCoder interface {
	error
	ErrorCode() int
}

type errorDataer interface {
	ErrorData() any
}

// ErrParse returns a -32700 parse error.
func ErrParse(detail string) *Error {
	if detail == "" {
		return &Error{Code: CodeParseError, Message: "parse error"}
	}
	return &Error{Code: CodeParseError, Message: "parse error: " + detail}
}

// ErrInvalidRequest returns a -32600 invalid request error.
func ErrInvalidRequest(detail string) *Error {
	if detail == "" {
		return &Error{Code: CodeInvalidRequest, Message: "invalid request"}
	}
	return &Error{Code: CodeInvalidRequest, Message: "invalid request: " + detail}
}

// ErrMethodNotFound returns a -32601 error naming the method.
func ErrMethodNotFound(method string) *Error {
	return &Error{Code: CodeMethodNotFound, Message: fmt.Sprintf("the method %s does not exist/is not available", method)}
}

// ErrInvalidParams returns a -32602 error with the formatted message.
func ErrInvalidParams(format string, args ...any) *Error {
	return &Error{Code: CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// ErrInternal returns a -32603 error with the given message.
func ErrInternal(msg string) *Error {
	if msg == "" {
		msg = "internal error"
	}
	return &Error{Code: CodeInternal, Message: msg}
}

// ErrServer returns a -32000 generic server error with the given message.
func ErrServer(msg string) *Error { return &Error{Code: CodeServerError, Message: msg} }

// ErrReverted returns the error of a reverted eth_call / eth_estimateGas:
// code -32000, message exactly "execution reverted" (clients such as viem
// recognise a -32000 revert by that exact message and then decode data),
// and data the revert bytes as 0x-hex ("0x" when the revert carried none).
// The decoded reason is deliberately not appended to the message: clients
// decode it, and custom errors, from data.
func ErrReverted(revertData []byte) *Error {
	return &Error{Code: CodeCallReverted, Message: "execution reverted", Data: "0x" + hex.EncodeToString(revertData)}
}

// ErrTimeout returns the -32002 "request timed out" error.
func ErrTimeout() *Error { return &Error{Code: CodeTimeout, Message: "request timed out"} }

// ErrTxSyncTimeout is eth_sendRawTransactionSync's timeout (EIP-7966: code
// 4, data the transaction hash), after waiting d.
func ErrTxSyncTimeout(d time.Duration, txHash string) *Error {
	return &Error{Code: CodeTxSyncTimeout, Message: fmt.Sprintf("The transaction was added to the mempool but wasn't processed in %s.", d), Data: txHash}
}

// ErrTxSyncNotReady is eth_sendRawTransactionSync's "unreadiness" error
// (EIP-7966: code 5): the transaction was pooled but cannot execute yet.
func ErrTxSyncNotReady(detail, txHash string) *Error {
	return &Error{Code: CodeTxSyncNotReady, Message: "The transaction was added to the mempool but wasn't processed: " + detail, Data: txHash}
}

// ErrLimit returns a -32005 limit exceeded error with the formatted message.
func ErrLimit(format string, args ...any) *Error {
	return &Error{Code: CodeLimitExceeded, Message: fmt.Sprintf(format, args...)}
}

// ErrResponseTooLarge returns the -32005 error of a response (or batch
// element) whose encoding does not fit in Config.MaxResponseBytes.
func ErrResponseTooLarge(limit int) *Error {
	e := ErrLimit("response too large (limit %d bytes)", limit)
	e.overflow = true
	return e
}

// errNotExecuted is the -32005 error of a batch element that was not run
// because the batch's response budget was already spent.
func errNotExecuted(limit int64) *Error {
	return ErrLimit("response too large (limit %d bytes): the batch's earlier elements used it up; not executed", limit)
}

// Sentinel errors of the transport.
var (
	// ErrSubscriptionClosed is returned by Subscription.Notify after the
	// subscription ended (unsubscribe, connection closed, or dropped).
	ErrSubscriptionClosed = errors.New("rpc: subscription closed")
	// ErrSlowConsumer is returned by Subscription.Notify when the
	// connection's send queue overflowed; the connection is then closed.
	ErrSlowConsumer = errors.New("rpc: websocket send queue full, connection dropped")
	// ErrServerStopped is returned by Serve/Start after Stop.
	ErrServerStopped = errors.New("rpc: server stopped")
	// ErrNotificationTooLarge is returned by Subscription.Notify when one
	// notification exceeds Config.MaxResponseBytes (it is not sent).
	ErrNotificationTooLarge = errors.New("rpc: notification too large")
)

// Internal errors of the websocket transport (never sent to clients).
var (
	// errConnClosing: enqueue on a connection that no longer accepts
	// output (closing, aborted or closed).
	errConnClosing = errors.New("rpc: websocket closing")
	// errTooBig: readMessage read a message over WSMaxMessageBytes.
	errTooBig = errors.New("rpc: websocket message too big")
)

// toError converts a handler error into the *Error sent to the client:
//  1. an *Error in the chain (errors.As) is used as is;
//  2. the server's ErrorMapper, if set, may return a mapping;
//  3. an ErrorCoder in the chain supplies code, message (and data);
//  4. context.DeadlineExceeded becomes CodeTimeout;
//  5. anything else becomes CodeInternal with the error text as message.
func toError(err error, mapper func(error) *Error) *Error {
	var e *Error
	if errors.As(err, &e) && e != nil {
		return e
	}
	if mapper != nil {
		if m := mapper(err); m != nil {
			return m
		}
	}
	var ec ErrorCoder
	if errors.As(err, &ec) {
		out := &Error{Code: ec.ErrorCode(), Message: ec.Error()}
		if d, ok := ec.(errorDataer); ok {
			out.Data = d.ErrorData()
		}
		return out
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return ErrTimeout()
	}
	return ErrInternal(err.Error())
}
