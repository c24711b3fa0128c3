package chain

import "errors"

// Sentinel errors of the chain package. Callers match them with errors.Is;
// every returned error wraps one of these with the block and detail.
var (
	// ErrInvalidBlock: a block failed verification (linkage, body roots,
	// gas used, receipts root, bloom, requests hash, blob gas). Nothing of
	// it was written.
	ErrInvalidBlock = errors.New("invalid block")
	// ErrGenesis: the genesis spec is unusable (bad JSON, missing config).
	ErrGenesis = errors.New("invalid genesis")
	// ErrNoStateRoot: a state root was required but the backend cannot
	// enumerate its state.
	ErrNoStateRoot = errors.New("state root unavailable")
	// ErrStateRead: the backend failed while executing (I/O, corruption).
	ErrStateRead = errors.New("state read failed")
	// ErrTxInvalid: a transaction cannot be applied (nonce, funds, gas...).
	// The sequencer drops such transactions; import rejects the block.
	ErrTxInvalid = errors.New("invalid transaction")
)

// ErrOverride: a state override was refused (see OverrideError for the kind).
var ErrOverride = errors.New("invalid state override")
