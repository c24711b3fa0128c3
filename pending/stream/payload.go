package stream

import (
	"encoding/json"

	"github.com/ethereum/go-ethereum/beacon/engine"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
)

// Payload is one pre-confirmation message in the flashblocks
// FlashblocksPayloadV1 JSON shape: snake_case keys, quantities as 0x-hex
// strings except Index and Metadata.BlockNumber, which are JSON numbers.
//
// Index 0 opens a block and carries Base (the block's execution context)
// and no transactions of its own beyond what Diff lists (normally none);
// every later index carries only Diff, with the transactions that message
// pre-confirms and the block's cumulative totals after them.
type Payload struct {
	// PayloadID identifies the block being built; constant for all the
	// messages of one block.
	PayloadID engine.PayloadID `json:"payload_id"`
	// Index is the message's position within the block (0 opens it).
	Index uint64 `json:"index"`
	// Base is the block's context; present on index 0 only.
	Base *Base `json:"base,omitempty"`
	// Diff is what this message adds, with cumulative totals.
	Diff Diff `json:"diff"`
	// Metadata carries the block number and, from rollup-boost / op-rbuilder
	// producers, the receipts and balances of the message's transactions
	// (a replica's cross-check only, never served).
	Metadata Metadata `json:"metadata"`
}

// Base is the execution context of a block, sent once with index 0.
type Base struct {
	ParentBeaconBlockRoot common.Hash    `json:"parent_beacon_block_root"`
	ParentHash            common.Hash    `json:"parent_hash"`
	FeeRecipient          common.Address `json:"fee_recipient"`
	PrevRandao            common.Hash    `json:"prev_randao"`
	BlockNumber           hexutil.Uint64 `json:"block_number"`
	GasLimit              hexutil.Uint64 `json:"gas_limit"`
	Timestamp             hexutil.Uint64 `json:"timestamp"`
	ExtraData             hexutil.Bytes  `json:"extra_data"`
	BaseFeePerGas         *hexutil.Big   `json:"base_fee_per_gas"`
}

// Diff is what one message adds to its block: the new transactions
// (EIP-2718 encoded, blob transactions without their sidecar) and the
// block's cumulative gas used, receipts root, logs bloom and blob gas used
// after them. StateRoot and BlockHash are the block's as of the message
// when the sender computes them (tipnode with a state trie: the state
// root after these transactions, the hash of the block sealed with exactly
// them), zero otherwise (OP subblocks, tipnode with --stream.roots=off);
// Withdrawals is always empty.
type Diff struct {
	StateRoot       common.Hash         `json:"state_root"`
	ReceiptsRoot    common.Hash         `json:"receipts_root"`
	LogsBloom       types.Bloom         `json:"logs_bloom"`
	GasUsed         hexutil.Uint64      `json:"gas_used"`
	BlockHash       common.Hash         `json:"block_hash"`
	Transactions    []hexutil.Bytes     `json:"transactions"`
	Withdrawals     []*types.Withdrawal `json:"withdrawals"`
	WithdrawalsRoot common.Hash         `json:"withdrawals_root"`
	BlobGasUsed     *hexutil.Uint64     `json:"blob_gas_used,omitempty"`
	// PostExecTx is Lagoon's cumulative post-execution transaction (type
	// 0x7D, OP specs lagoon/post-exec.md), carried beside Transactions;
	// empty when absent. Recognised, not executed: a replica stops
	// replicating a block that carries one (its gas refunds change the
	// block's receipts and balances).
	PostExecTx hexutil.Bytes `json:"post_exec_tx,omitempty"`
}

// Metadata is the message's metadata. BlockNumber is required when
// metadata is present. Receipts
// and NewAccountBalances are what rollup-boost and op-rbuilder add: the
// receipts of the message's transactions keyed by transaction hash (in
// op-alloy's JSON shape, see ParseReceipts) and the balances of the
// accounts they touched (see ParseBalances). They are kept as received
// (JSON objects, checked to be objects only) and parsed on demand: a
// replica may compare them with its own execution, never serve them.
type Metadata struct {
	// Absent is true when the message had no metadata object (a trimmed
	// producer): BlockNumber is then base.block_number on index 0 and zero
	// on later indexes (the replica takes it from the open block of the
	// same payload id). The encoder always writes metadata.
	Absent             bool            `json:"-"`
	BlockNumber        uint64          `json:"block_number"`
	NewAccountBalances json.RawMessage `json:"new_account_balances,omitempty"`
	Receipts           json.RawMessage `json:"receipts,omitempty"`
}
