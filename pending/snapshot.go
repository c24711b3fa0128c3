package pending

import (
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
// (The public method set below is what the rpc package codes against.)
type Snapshot struct {
	anchor   *types.Header
	header   *types.Header
	index    uint64
	layers   *layer // newest first; shared with older snapshots
	txs      []*types.Transaction
	receipts []*types.Receipt
}

// Anchor is the canonical block the snapshot sits on (store height).
func (s *Snapshot) Anchor() *types.Header { return s.anchor }

// Header is the pending block's header: Number = anchor+1, its timestamp,
// base fee, fee recipient, prev-randao, gas limit, and GasUsed / Bloom as of
// this snapshot. Its hash is not final (the block is not sealed).
func (s *Snapshot) Header() *types.Header { return s.header }

// Index is the pre-confirmation index within the pending block (0 = no
// transactions pre-confirmed yet).
func (s *Snapshot) Index() uint64 { return s.index }

// Transactions are the pre-confirmed transactions in block order.
func (s *Snapshot) Transactions() []*types.Transaction { return s.txs }

// Receipts are their receipts (BlockHash zero until sealed).
func (s *Snapshot) Receipts() []*types.Receipt { return s.receipts }

// State returns the pending state: the diff layers (newest first) over base,
// which must be the store's state at Anchor().Number.
func (s *Snapshot) State(base chain.Backend) chain.Backend {
	return &overlay{layers: s.layers, base: base}
}

// Transaction finds a pre-confirmed transaction by hash.
func (s *Snapshot) Transaction(hash common.Hash) (tx *types.Transaction, receipt *types.Receipt, index int, ok bool) {
	for i, t := range s.txs {
		if t.Hash() == hash {
			return t, s.receipts[i], i, true
		}
	}
	return nil, nil, 0, false
}
