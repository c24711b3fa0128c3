package pending

import (
	"fmt"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/trie"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/store"
)

// Builder builds pending blocks, one at a time, for a driver: Open starts a
// block with the header the driver chose on top of a canonical head, Add /
// Apply execute transactions with the shared chain.Executor, Cut returns
// the next immutable Snapshot (which the driver hands to Manager.Publish),
// and Seal produces the block's single store write (which the driver hands
// to chain.Writer.Seal). The builder has no policy of its own: which
// transactions, in which order, with which header, is the driver's choice
// (the Sequencer picks from the pool; a stream follower replays what a
// sequencer published).
//
// A Builder belongs to one goroutine at a time (its driver's, or the
// writer's while it runs the driver's Rebase and the driver waits).
type Builder struct {
	exec *chain.Executor

	view     store.View // the anchor head's view; released by the next Open / Close
	anchor   *types.Header
	base     *types.Header // the driver's header template
	state    *chain.StateDB
	proc     *chain.BlockProcessor
	txs      []*types.Transaction
	receipts []*types.Receipt
	bloom    types.Bloom
	snap     *Snapshot // the last cut
}

// NewBuilder returns a builder executing with exec.
func NewBuilder(exec *chain.Executor) *Builder { return &Builder{exec: exec} }

// Open starts a pending block on head with the header template tmpl
// (number head+1, parent hash head's hash; timestamp, fee recipient,
// prev-randao, gas limit, base fee, parent beacon root, extra data as the
// driver chose them; see NextHeader). view must be head's store view
// (chain.Writer.OpenHead); the builder keeps it until the next Open or
// Close. The pre-execution system calls run here; the returned index-0
// snapshot holds their state and no transactions.
func (b *Builder) Open(head *chain.Head, view store.View, tmpl *types.Header, now time.Time) (*Snapshot, error) {
	parent := head.Header()
	if tmpl.ParentHash != head.Hash() || tmpl.Number.Uint64() != parent.Number.Uint64()+1 {
		return nil, fmt.Errorf("%w: header %d (parent %s) does not extend head %d %s", ErrHeader,
			tmpl.Number, tmpl.ParentHash.Hex(), parent.Number, head.Hash().Hex())
	}
	reader, err := view.StateAt(parent.Number.Uint64())
	if err != nil {
		return nil, fmt.Errorf("open block %d: %w", tmpl.Number, err)
	}
	state := chain.NewStateDB(reader)
	proc := b.exec.NewBlockProcessor(tmpl, parent, common.Hash{}, state, chain.ViewHeaders{Head: head, View: view}, vm.Config{})
	if err := state.Error(); err != nil {
		return nil, fmt.Errorf("open block %d: %w", tmpl.Number, err)
	}
	b.Close()
	b.view, b.anchor, b.base, b.state, b.proc = view, parent, tmpl, state, proc
	b.txs, b.receipts, b.bloom = nil, nil, types.Bloom{}
	b.snap = &Snapshot{
		head:       head,
		anchor:     parent,
		anchorHash: head.Hash(),
		header:     b.pendingHeader(),
		layers:     pushLayer(nil, state.TakeDiff(), nil), // pre-execution system calls
		created:    now,
	}
	return b.snap, nil
}

// Close releases the store view of the open block (if any).
func (b *Builder) Close() {
	if b.view != nil {
		b.view.Close()
		b.view = nil
	}
	b.proc, b.state = nil, nil
}

// Header is the open block's header template (nil when none is open).
func (b *Builder) Header() *types.Header { return b.base }

// Len is the number of transactions in the open block.
func (b *Builder) Len() int { return len(b.txs) }

// GasLeft is the gas still available in the open block.
func (b *Builder) GasLeft() uint64 { return b.proc.GasLeft() }

// BlobGasLeft is the blob gas still available in the open block.
func (b *Builder) BlobGasLeft() uint64 { return b.proc.BlobGasLeft() }

// Nonce is addr's nonce in the open block's current state.
func (b *Builder) Nonce(addr common.Address) (uint64, error) {
	n := b.state.GetNonce(addr)
	return n, b.state.Error()
}

// Add executes tx as the next transaction of the open block (a blob
// transaction without its sidecar: the block holds the canonical form). A
// transaction
// that cannot be included returns an error wrapping chain.ErrTxInvalid and
// changes nothing (the driver may go on with others); an error wrapping
// chain.ErrStateRead means the block can no longer be trusted.
func (b *Builder) Add(tx *types.Transaction) (*types.Receipt, error) {
	r, err := b.proc.ApplyTransaction(tx)
	if err != nil {
		return nil, err
	}
	b.txs = append(b.txs, tx)
	b.receipts = append(b.receipts, r)
	for i := range r.Bloom {
		b.bloom[i] |= r.Bloom[i]
	}
	return r, nil
}

// Apply executes txs in order. It stops at the first transaction that
// fails (returning its error, the ones before it stay applied) and returns
// the snapshot of what was applied (nil if nothing was).
func (b *Builder) Apply(txs []*types.Transaction, now time.Time) (*Snapshot, error) {
	var err error
	for _, tx := range txs {
		if _, err = b.Add(tx); err != nil {
			err = fmt.Errorf("transaction %s: %w", tx.Hash().Hex(), err)
			break
		}
	}
	return b.Cut(now), err
}

// Cut returns the next snapshot: one new copy-on-write layer with the state
// written since the previous cut, over that snapshot's layers. It returns
// nil when no transaction was added since.
func (b *Builder) Cut(now time.Time) *Snapshot {
	first := len(b.snap.txs)
	if len(b.txs) == first {
		return nil
	}
	txIdx := make(map[common.Hash]int, len(b.txs)-first)
	for i := first; i < len(b.txs); i++ {
		txIdx[b.txs[i].Hash()] = i
	}
	n := len(b.txs)
	b.snap = &Snapshot{
		head:       b.snap.head,
		anchor:     b.anchor,
		anchorHash: b.snap.anchorHash,
		header:     b.pendingHeader(),
		index:      b.snap.index + 1,
		layers:     pushLayer(b.snap.layers, b.state.TakeDiff(), txIdx),
		txs:        b.txs[:n:n],
		receipts:   b.receipts[:n:n],
		newFrom:    first,
		created:    now,
	}
	return b.snap
}

// pendingHeader is the published copy of the template with the running
// totals.
func (b *Builder) pendingHeader() *types.Header {
	h := types.CopyHeader(b.base)
	h.GasUsed = b.proc.GasUsed()
	h.Bloom = b.bloom
	if h.BlobGasUsed != nil {
		v := b.proc.BlobGasUsed()
		h.BlobGasUsed = &v
	}
	return h
}

// Sealed is a finished pending block: the store write for chain.Writer.Seal
// and the receipts with the final block hash.
type Sealed struct {
	Write    *store.BlockWrite
	Block    *types.Block
	Receipts types.Receipts
}

// Seal finishes the open block (withdrawals: none; EIP-7002/7251 requests;
// header totals and requests hash) with every transaction added so far and
// returns its store write, moving latest, safe and finalized to it (a
// locally sealed block is final). The block stays open; the next Open
// replaces it.
func (b *Builder) Seal() (*Sealed, error) {
	var withdrawals types.Withdrawals
	if b.base.WithdrawalsHash != nil {
		withdrawals = types.Withdrawals{}
	}
	requests, err := b.proc.Finish(withdrawals, nil)
	if err != nil {
		return nil, err
	}
	header := types.CopyHeader(b.base)
	header.GasUsed = b.proc.GasUsed()
	if header.BlobGasUsed != nil {
		v := b.proc.BlobGasUsed()
		header.BlobGasUsed = &v
	}
	if header.RequestsHash != nil {
		rh := types.CalcRequestsHash(requests)
		header.RequestsHash = &rh
	}
	receipts := b.proc.Receipts()
	block := types.NewBlock(header, &types.Body{Transactions: b.txs, Withdrawals: withdrawals}, receipts, trie.NewStackTrie(nil))
	rs := make([]*types.ReceiptForStorage, len(receipts))
	for i, r := range receipts {
		rs[i] = (*types.ReceiptForStorage)(r)
	}
	return &Sealed{
		Write: &store.BlockWrite{
			Block: block, Receipts: rs, Diff: b.state.BlockDiff(),
			Tags: []store.Tag{store.TagLatest, store.TagSafe, store.TagFinalized},
		},
		Block:    block,
		Receipts: finalReceipts(receipts, block),
	}, nil
}

// finalReceipts copies the pending receipts (which published snapshots
// still share) and stamps the sealed block's hash into them and their logs.
func finalReceipts(receipts types.Receipts, block *types.Block) types.Receipts {
	out := make(types.Receipts, len(receipts))
	hash := block.Hash()
	for i, r := range receipts {
		cp := *r
		cp.BlockHash = hash
		cp.Logs = make([]*types.Log, len(r.Logs))
		for j, l := range r.Logs {
			lc := *l
			lc.BlockHash = hash
			cp.Logs[j] = &lc
		}
		out[i] = &cp
	}
	return out
}
