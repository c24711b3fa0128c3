package pending

import (
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tipnode/tipnode/chain"
)

// Snapshot is one immutable pre-confirmed state: the anchor (the latest
// canonical block the diffs sit on), the pending block's header (the
// execution context of `pending`), the copy-on-write diff layers written by
// the pre-confirmed transactions, and those transactions with their
// receipts. A Snapshot never changes after it is published; readers load the
// current one once per request and use it throughout.
//
// Snapshots are built by a Builder and made current by Manager.Publish.
type Snapshot struct {
	head       *chain.Head // the canonical head it was built on (its anchor)
	anchor     *types.Header
	anchorHash common.Hash
	header     *types.Header
	index      uint64
	layers     *layer // newest first; shared with older snapshots
	txs        []*types.Transaction
	receipts   []*types.Receipt
	newFrom    int       // txs[newFrom:] were pre-confirmed by this snapshot
	created    time.Time // when it was published (sequencer clock)
}

// Anchor is the canonical block the snapshot sits on (store height).
func (s *Snapshot) Anchor() *types.Header { return s.anchor }

// Header is the pending block's header: Number = anchor+1, its timestamp,
// base fee, fee recipient, prev-randao, gas limit, and GasUsed / Bloom /
// BlobGasUsed as of this snapshot. Root is zero and RequestsHash a
// placeholder until sealed. Its hash is not final (the block is not sealed).
// Callers must not modify it.
func (s *Snapshot) Header() *types.Header { return s.header }

// Index is the pre-confirmation index within the pending block (0 = no
// transactions pre-confirmed yet).
func (s *Snapshot) Index() uint64 { return s.index }

// Transactions are the pre-confirmed transactions in block order.
func (s *Snapshot) Transactions() []*types.Transaction { return s.txs }

// Receipts are their receipts (BlockHash zero until sealed). Callers must
// not modify them.
func (s *Snapshot) Receipts() []*types.Receipt { return s.receipts }

// NewTransactions are the transactions this snapshot pre-confirmed (the
// ones the previous snapshot of the same block did not have).
func (s *Snapshot) NewTransactions() []*types.Transaction { return s.txs[s.newFrom:] }

// NewReceipts are the receipts of NewTransactions.
func (s *Snapshot) NewReceipts() []*types.Receipt { return s.receipts[s.newFrom:] }

// Logs returns every log of the pre-confirmed transactions in block order.
func (s *Snapshot) Logs() []*types.Log {
	var logs []*types.Log
	for _, r := range s.receipts {
		logs = append(logs, r.Logs...)
	}
	return logs
}

// Created is when the snapshot was published.
func (s *Snapshot) Created() time.Time { return s.created }

// Depth is the number of diff layers a read may walk (O(log of the pending
// diff size)).
func (s *Snapshot) Depth() int {
	if s.layers == nil {
		return 0
	}
	return s.layers.depth
}

// AnchorHash is the anchor's hash.
func (s *Snapshot) AnchorHash() common.Hash { return s.anchorHash }

// State returns the pending state: the diff layers (newest first) over base,
// which must be the store's state of the anchor (Manager.Open verifies the
// anchor is canonical; Read.PendingState does this pairing).
func (s *Snapshot) State(base chain.Backend) chain.Backend {
	return &overlay{layers: s.layers, base: base}
}

// Transaction finds a pre-confirmed transaction by hash.
func (s *Snapshot) Transaction(hash common.Hash) (tx *types.Transaction, receipt *types.Receipt, index int, ok bool) {
	for l := s.layers; l != nil; l = l.parent {
		if i, found := l.txs[hash]; found && i < len(s.txs) {
			return s.txs[i], s.receipts[i], i, true
		}
	}
	return nil, nil, 0, false
}
