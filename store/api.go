package store

import (
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/store/chaintypes"
)

// Account is the flat-state record of one account at one height. There is no
// storage root: tipnode keeps flat state without tries.
type Account struct {
	Nonce    uint64
	Balance  *uint256.Int // never nil in values returned by the store
	CodeHash common.Hash  // types.EmptyCodeHash when the account has no code
}

// StateDiff is the complete state change of one block (or of one pending
// snapshot when it is sealed). Apply order inside the store is:
//  1. for every address in Wiped, every storage slot that is non-zero at the
//     parent height reads zero from this block on (pre-Cancun SELFDESTRUCT, or
//     an account deleted and re-created in the same block);
//  2. Accounts: a nil *Account deletes the account (SELFDESTRUCT, EIP-158
//     empty-account removal); otherwise the account reads as given;
//  3. Storage: each slot reads the given value (the zero hash clears the slot).
//
// Codes holds new contract code by hash (content-addressed, never deleted).
type StateDiff struct {
	Accounts map[common.Address]*Account
	Storage  map[common.Address]map[common.Hash]common.Hash
	Wiped    map[common.Address]struct{}
	Codes    map[common.Hash][]byte
}

// NewStateDiff returns an empty diff with all maps allocated.
func NewStateDiff() *StateDiff {
	return &StateDiff{
		Accounts: make(map[common.Address]*Account),
		Storage:  make(map[common.Address]map[common.Hash]common.Hash),
		Wiped:    make(map[common.Address]struct{}),
		Codes:    make(map[common.Hash][]byte),
	}
}

// BlockWrite is everything one block adds to the store, written in one atomic
// batch by Writer.WriteBlock.
type BlockWrite struct {
	Block    *chaintypes.Block
	Receipts chaintypes.Receipts // consensus (and OP) fields only; derived fields are recomputed on read
	Diff     *StateDiff
	// Tags to move to this block in the same batch ("latest" always moves;
	// list "safe" / "finalized" here to move them too).
	Tags []Tag
	// Trie is the block's state trie update (StateTrie.Update of Diff at
	// the parent), written in the block's batch. nil: the store computes
	// it (a store that keeps no trie writes none).
	Trie *TrieUpdate
}

// Tag names a movable block pointer.
type Tag string

const (
	TagLatest    Tag = "latest"
	TagSafe      Tag = "safe"
	TagFinalized Tag = "finalized"
)

// Anchor says where a store's chain starts. A store initialised from
// genesis has the zero Anchor. One initialised from a state dump at block
// N (DB.NewStateImport) holds the state at N and above (State = N), block
// bodies and receipts from History (N, or N+1 when block N's were not
// given), canonical headers from N-256 and block 0's header; reading below
// answers ErrPrunedState / ErrPrunedHistory.
//
// A forked store (`tipnode dev --fork`, AnchorWrite.Fork) is anchored at
// the fork block F with only the state it wrote itself; Fork names its
// upstream, and what the store does not hold is read from there (see
// "Forked stores" in doc.go, DB.SetForkSource).
type Anchor struct {
	State   uint64
	History uint64
	Fork    string
}

// TxLookup locates a canonical transaction.
type TxLookup struct {
	BlockHash   common.Hash
	BlockNumber uint64
	Index       uint64
}

// StateReader reads flat state at one fixed height. Every method is answered
// from the same consistent view. An absent account is (nil, nil); an absent
// slot reads as the zero hash.
type StateReader interface {
	Account(addr common.Address) (*Account, error)
	Storage(addr common.Address, slot common.Hash) (common.Hash, error)
	// Code returns the code with the given hash (nil for EmptyCodeHash / unknown).
	Code(hash common.Hash) ([]byte, error)
	// ForEachAccount visits every live account in address order.
	ForEachAccount(fn func(addr common.Address, acc *Account) error) error
	// ForEachStorage visits every non-zero slot of addr in slot order.
	ForEachStorage(addr common.Address, fn func(slot, value common.Hash) error) error
}

// ChainReader reads blocks, receipts, tags and transaction lookups.
// A missing item is reported with ErrNotFound (wrapped).
type ChainReader interface {
	CanonicalHash(number uint64) (common.Hash, error)
	NumberByHash(hash common.Hash) (uint64, error)
	Header(number uint64, hash common.Hash) (*types.Header, error)
	Body(number uint64, hash common.Hash) (*chaintypes.Body, error)
	// Receipts returns the stored fields of the block's receipts (see
	// chaintypes.StoredReceipt); Receipts.DeriveFields completes them.
	Receipts(number uint64, hash common.Hash) (chaintypes.Receipts, error)
	TxLookup(txHash common.Hash) (TxLookup, error)
	Tag(tag Tag) (uint64, error)
	// GenesisSpec returns the spec bytes stored by WriteGenesis.
	GenesisSpec() ([]byte, error)
	// ChainConfig returns the chain config bytes stored by WriteGenesis
	// (ErrNotFound in stores initialised before they were stored: read the
	// spec then).
	ChainConfig() ([]byte, error)
	// Anchor returns where the store's chain starts (zero: at genesis).
	Anchor() Anchor
}

// View is a consistent read-only view of the whole store (a Pebble snapshot):
// chain data and state at any height, all from the same instant. Close it.
type View interface {
	ChainReader
	// StateAt returns a reader of the post-state of block number. Reading a
	// height above the view's latest block fails with ErrNotFound; below
	// the store's state anchor every read of the returned reader fails with
	// a *PrunedStateError.
	StateAt(number uint64) (StateReader, error)
	// StateTrie returns the state trie at number (ErrNoTrie: the store
	// keeps none; *TrieWindowError: number is outside its window).
	StateTrie(number uint64) (*StateTrie, error)
	Close() error
}

// Writer mutates the store. Every method is one atomic batch.
type Writer interface {
	// WriteGenesis writes block 0, its state, all three tags and the opaque
	// genesis spec (the genesis JSON, so `run` needs no genesis file). If the
	// store already holds a genesis: the same block 0 hash is a no-op, a
	// different one fails with ErrGenesisMismatch naming both hashes.
	// config (the chain config, opaque) is stored beside the spec so that an
	// open needs no parse of a large genesis alloc.
	WriteGenesis(w *BlockWrite, spec, config []byte) error
	// WriteBlock appends a block on top of the current latest block: its
	// parent must be the latest block, its number latest+1.
	WriteBlock(w *BlockWrite) error
	// WriteBlockYielding is WriteBlock calling yield (when not nil)
	// between its parts (staging, commit, the state cache): a writer on
	// one CPU lets requests run there.
	WriteBlockYielding(w *BlockWrite, yield func()) error
	// SetTag moves a tag to a canonical block.
	SetTag(tag Tag, number uint64) error
	// UnwindTo removes every block above number and their state changes,
	// and moves tags above number down to number. It also drops the
	// pending journal.
	UnwindTo(number uint64) error
	// Reorg replaces the blocks above ancestor with blocks (a new branch
	// on the canonical block at ancestor) in ONE batch: the unwind, the
	// new blocks and the tag moves land together or not at all.
	Reorg(ancestor uint64, blocks []*BlockWrite) error
	// AppendPending durably journals the open pending block's header (when
	// first is 0) and its pre-confirmed transactions first, first+1, ...
	// WriteBlock drops the journal in the block's own batch.
	AppendPending(header *types.Header, first int, txs chaintypes.Txs) error
	// AppendPendingEntries is AppendPending with the dev chain's state
	// overrides (see DB.AppendPendingEntries).
	AppendPendingEntries(a PendingAppend) error
	// ReadPending returns the pending journal (nil: none).
	ReadPending() (*PendingJournal, error)
	// ClearPending drops the pending journal.
	ClearPending() error
}
