package sequencer

import "errors"

// Sentinel errors of the pool and the sequencer. Every error returned by
// the pool and the sequencer wraps one of these (errors.Is), or one of
// package pending's (pending.ErrNoState, pending.ErrOverride,
// pending.ErrHeader), with the transaction or block and the detail;
// JSON-RPC codes are assigned in package rpc/eth.
var (
	// ErrAlreadyKnown: the exact transaction is already in the pool.
	ErrAlreadyKnown = errors.New("already known")
	// ErrChainID: the transaction is signed for another chain id.
	ErrChainID = errors.New("invalid chain id")
	// ErrInvalidSender: the signature does not recover a sender (malformed
	// or non-canonical signature values).
	ErrInvalidSender = errors.New("invalid sender")
	// ErrTxTypeNotSupported: the transaction type is not active on the
	// pending block's fork.
	ErrTxTypeNotSupported = errors.New("transaction type not supported")
	// ErrOversized: the encoded transaction exceeds PoolConfig.MaxTxSize
	// (blob transactions with their sidecar: MaxBlobTxSize).
	ErrOversized = errors.New("oversized data")
	// ErrGasLimit: the transaction's gas exceeds the block gas limit or the
	// per-transaction cap (EIP-7825, Osaka).
	ErrGasLimit = errors.New("exceeds block gas limit")
	// ErrIntrinsicGas: the gas limit is below the intrinsic gas (or the
	// EIP-7623 calldata floor).
	ErrIntrinsicGas = errors.New("intrinsic gas too low")
	// ErrTipAboveFeeCap: max priority fee per gas above max fee per gas.
	ErrTipAboveFeeCap = errors.New("max priority fee per gas higher than max fee per gas")
	// ErrFeeCapTooLow: max fee per gas below the base fee of the pending
	// block. The pool refuses such transactions instead of queueing them.
	ErrFeeCapTooLow = errors.New("max fee per gas less than block base fee")
	// ErrNonceTooLow: the nonce is below the sender's nonce in the pending
	// state.
	ErrNonceTooLow = errors.New("nonce too low")
	// ErrNonceTooHigh: the nonce is more than PoolConfig.MaxNonceGap above
	// the sender's pending nonce.
	ErrNonceTooHigh = errors.New("nonce too high")
	// ErrInsufficientFunds: the sender's pending balance cannot pay
	// gas * max fee + value.
	ErrInsufficientFunds = errors.New("insufficient funds for gas * price + value")
	// ErrReplaceUnderpriced: a transaction with the same sender and nonce is
	// pooled and the new one does not raise both fee cap and tip by
	// PoolConfig.PriceBump percent.
	ErrReplaceUnderpriced = errors.New("replacement transaction underpriced")
	// ErrPoolFull: the pool (or the sender's queue) holds its maximum
	// (PoolConfig.MaxTxs, MaxBytes, MaxNonceGap).
	ErrPoolFull = errors.New("txpool is full")
	// ErrBlobSidecar: a blob transaction without its sidecar, with too few
	// or too many blobs, or whose commitments or KZG proofs do not verify.
	ErrBlobSidecar = errors.New("invalid blob transaction")
	// ErrBlobFeeCapTooLow: max fee per blob gas below the blob base fee of
	// the pending block (refused, not queued).
	ErrBlobFeeCapTooLow = errors.New("max fee per blob gas less than block blob gas fee")
	// ErrConfig: a Config / PoolConfig value is invalid.
	ErrConfig = errors.New("invalid pending configuration")
	// ErrNotMerged: the sequencer only builds post-merge (proof-of-stake
	// style) blocks and the chain has no terminal total difficulty.
	ErrNotMerged = errors.New("chain is not post-merge")
	// ErrSequencer: the sequencer stopped on a fault (store write, state
	// read); see Sequencer.Err.
	ErrSequencer = errors.New("sequencer failed")
	// ErrJournal: the journaled pending block could not be rebuilt after a
	// restart (its transactions no longer execute on its parent).
	ErrJournal = errors.New("pending journal does not replay")
	// ErrDev: a dev-chain method (Sequencer's dev.go) cannot do what it
	// was asked (a timestamp not after the latest block, an impersonated
	// transaction that cannot be executed...); the message says why.
	ErrDev = errors.New("dev chain")
	// ErrStopped: the sequencer is not running.
	ErrStopped = errors.New("sequencer stopped")
)
