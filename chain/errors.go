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

// Errors of the Writer.
var (
	// ErrWriterStopped: the writer is not running (not started, or
	// stopped); nothing was written.
	ErrWriterStopped = errors.New("chain writer stopped")
	// ErrNotOnHead: a locally built block does not extend the current head
	// (the head moved while it was built); nothing was written.
	ErrNotOnHead = errors.New("block does not extend the head")
	// ErrWriterFault: a write landed but the writer could not open the
	// store afterwards to publish its head.
	ErrWriterFault = errors.New("chain writer fault")
	// ErrWriterConfig: a WriterConfig out of range.
	ErrWriterConfig = errors.New("invalid writer config")
)

// ErrInvalidReorg: a Writer.Reorg request is malformed (no blocks, an
// ancestor above the head); nothing was written.
var ErrInvalidReorg = errors.New("invalid reorg")

// ErrPreBedrock: the genesis of an OP chain whose history starts before
// Bedrock (bedrockBlock > 0, OP Mainnet): its legacy blocks cannot be
// executed, so it cannot be initialised at genesis; its chain config serves
// an init at a recent block (init --state, --snapshot-from). Returned
// wrapped with ErrGenesis; the message says how to start.
var ErrPreBedrock = errors.New("the chain's history starts before Bedrock")

// ErrGenesisUnstreamable: a genesis spec that go-ethereum's decoder
// accepts but the streamed reader (ReadGenesis, tipnode init --genesis)
// refuses: "alloc" or an account's "storage" given twice (go-ethereum
// merges or drops them), or a negative balance (go-ethereum panics on
// it). It is returned wrapped with ErrGenesis.
var ErrGenesisUnstreamable = errors.New("genesis member the streamed reader refuses")
