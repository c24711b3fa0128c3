package eth

import (
	"errors"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/rpc"
	"github.com/tipnode/tipnode/store"
)

// Sentinel errors of the method layer. JSON-RPC codes are assigned only by
// package rpc's constants and constructors: MapError (installed with
// rpc.Server.SetErrorMapper) gives the mapped sentinels theirs; the others
// reach the client inside an *rpc.Error built where they are detected.
var (
	// errBlockNotFound: the selected block (or its state) is not in the
	// store. Mapped to -32000 "header not found" (rpc.CodeHeaderNotFound).
	errBlockNotFound = errors.New("header not found")

	// Refusals of eth_sendRawTransaction, mapped to -32000
	// (rpc.CodeServerError) with their text.

	// ErrNoTxPool: the node runs without a transaction pool.
	ErrNoTxPool = errors.New("transaction submission is not available: this node runs without a transaction pool")
	// ErrUnprotectedTx: a legacy transaction without EIP-155 replay protection.
	ErrUnprotectedTx = errors.New("only replay-protected (EIP-155) transactions allowed over RPC")
	// ErrTxFeeTooHigh: gas * price exceeds APIConfig.TxFeeCap.
	ErrTxFeeTooHigh = errors.New("tx fee exceeds the configured cap")
	// ErrTxRejected wraps the pool's refusal.
	ErrTxRejected = errors.New("transaction rejected")
	// ErrForward: a follower could not reach the sequencer it forwards
	// transactions to (-32000 naming it; a refusal BY the sequencer is
	// passed through with its own code instead).
	ErrForward = errors.New("cannot forward the transaction to the sequencer")
	// ErrForwardConfig: an invalid ForwardConfig.
	ErrForwardConfig = errors.New("invalid transaction forwarding configuration")

	// Node-held accounts (eth_accounts.go), mapped to -32000.

	// ErrNoAccounts: a signing method on a node without node-held accounts.
	ErrNoAccounts = errors.New("this node holds no accounts (only `tipnode dev` has dev accounts): sign the transaction or message yourself and send it with eth_sendRawTransaction")
	// ErrUnknownAccount: the address is not one of the node's accounts.
	ErrUnknownAccount = errors.New("unknown account")

	// ErrDataInputMismatch: a call object's "data" and "input" are both set
	// and differ (a decoding error: -32602 naming the argument).
	ErrDataInputMismatch = errors.New(`both "data" and "input" are set and not equal; use "input" to pass transaction call data`)

	// Log filter decoding errors (-32602 naming the argument).
	errFilterBothHashAndRange = errors.New("cannot specify both BlockHash and FromBlock/ToBlock, choose one or the other")
	errFilterTooManyTopics    = errors.New("exceed max topics")
	errFilterLimit            = errors.New("exceed max addresses or topics per search position")

	// errInvalidPercentile prefixes eth_feeHistory's rewardPercentiles
	// errors (-32602).
	errInvalidPercentile = errors.New("invalid reward percentile")

	// errFilterNotFound: an unknown, expired or uninstalled filter id
	// (-32000, go-ethereum's message).
	errFilterNotFound = errors.New("filter not found")

	// Subscriptions that need a feed the node does not run (-32000).
	errNoPendingFeed = errors.New("no pre-confirmation feed: this node runs without a sequencer")
	errNoPoolFeed    = errors.New("no pending-transaction feed: this node runs without a transaction pool")
)

// MapError assigns JSON-RPC codes to the sentinels of this package. Install
// it on the server with SetErrorMapper; it returns nil for any other error.
func (a *API) MapError(err error) *rpc.Error {
	switch {
	case errors.Is(err, errBlockNotFound):
		return &rpc.Error{Code: rpc.CodeHeaderNotFound, Message: "header not found"}
	case errors.Is(err, store.ErrPrunedHistory):
		// Below a state-dump store's history anchor, as go-ethereum
		// answers for pruned history.
		return &rpc.Error{Code: rpc.CodePrunedHistory, Message: store.ErrPrunedHistory.Error()}
	case errors.Is(err, store.ErrPrunedState):
		// State below the anchor: go-ethereum's missing-state answer,
		// naming the anchor.
		var pe *store.PrunedStateError
		if errors.As(err, &pe) {
			return &rpc.Error{Code: rpc.CodeServerError, Message: pe.Error()}
		}
		return &rpc.Error{Code: rpc.CodeServerError, Message: err.Error()}
	case errors.Is(err, pending.ErrStateRoot):
		// The pending block's state root could not be computed (a store
		// read error, a corrupt trie node): pending's block and header,
		// eth_getProof at pending answer this, naming the cause, rather
		// than a zero root.
		return &rpc.Error{Code: rpc.CodeServerError, Message: err.Error()}
	case errors.Is(err, store.ErrUpstream):
		// A fork (tipnode dev --fork) could not read state from its
		// upstream: the message names the upstream and the entity.
		return &rpc.Error{Code: rpc.CodeServerError, Message: err.Error()}
	case errors.Is(err, ErrNoTxPool), errors.Is(err, ErrUnprotectedTx),
		errors.Is(err, ErrTxFeeTooHigh), errors.Is(err, ErrTxRejected):
		// eth_sendRawTransaction refusals (eth_send.go).
		return &rpc.Error{Code: rpc.CodeServerError, Message: err.Error()}
	case errors.Is(err, ErrNoAccounts), errors.Is(err, ErrUnknownAccount), errors.Is(err, errFilterNotFound):
		return &rpc.Error{Code: rpc.CodeServerError, Message: err.Error()}
	}
	return nil
}

// callError is a refused call (bad arguments or a consensus error from
// execution such as insufficient funds): -32000 with the message.
type callError struct{ msg string }

func (e *callError) Error() string  { return e.msg }
func (e *callError) ErrorCode() int { return rpc.CodeServerError }

func invalidCall(msg string) error { return &callError{msg} }

// overrideError maps a refused state override (eth_call, eth_simulateV1):
// the spec's codes for moving a precompile onto itself or onto an address
// already used; moving a non-precompile is -32000 as the reference records.
func overrideError(err error) error {
	var oe *chain.OverrideError
	if !errors.As(err, &oe) {
		return err
	}
	switch oe.Kind {
	case chain.OverrideMoveToSelf:
		return &rpc.Error{Code: rpc.CodeMovePrecompileSelfReference, Message: oe.Msg}
	case chain.OverrideMoveDuplicate:
		return &rpc.Error{Code: rpc.CodeMovePrecompileDuplicate, Message: oe.Msg}
	case chain.OverrideNotPrecompile:
		return rpc.ErrServer(oe.Msg)
	default:
		return &rpc.Error{Code: rpc.CodeInvalidParams, Message: oe.Msg}
	}
}
