package chain

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/store"
)

// Store is what the importer needs of the store.
type Store interface {
	View() (store.View, error)
	store.Writer
}

// Importer verifies, executes and writes blocks on top of the store's
// latest block. It is not safe for concurrent use (one writer).
type Importer struct {
	db   Store
	exec *Executor
	log  zerolog.Logger
}

// NewImporter returns an importer writing to db.
func NewImporter(db Store, exec *Executor, log zerolog.Logger) *Importer {
	return &Importer{db: db, exec: exec, log: log}
}

// InitGenesis writes g as block 0, or checks that the store already holds
// exactly this genesis (store.ErrGenesisMismatch otherwise).
func (im *Importer) InitGenesis(g *Genesis) error {
	w := &store.BlockWrite{Block: g.Block, Diff: g.Diff(), Tags: []store.Tag{store.TagLatest, store.TagSafe, store.TagFinalized}}
	return im.db.WriteGenesis(w, g.Spec)
}

// ExecutedBlock is a verified block with everything the store needs.
type ExecutedBlock struct {
	Block    *types.Block
	Receipts types.Receipts
	Requests [][]byte
	Diff     *store.StateDiff
}

// Execute verifies block against its parent (the store's latest block) and
// executes it, without writing anything.
func (im *Importer) Execute(block *types.Block) (*ExecutedBlock, error) {
	view, err := im.db.View()
	if err != nil {
		return nil, err
	}
	defer view.Close()
	latest, err := view.Tag(store.TagLatest)
	if err != nil {
		return nil, err
	}
	headers := ViewHeaders{View: view}
	parent := headers.HeaderByNumber(latest)
	if parent == nil {
		return nil, fmt.Errorf("latest header %d: %w", latest, store.ErrNotFound)
	}
	num := block.NumberU64()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w %d (%s): %s", ErrInvalidBlock, num, block.Hash().Hex(), fmt.Sprintf(format, args...))
	}
	if num != latest+1 {
		return nil, bad("number is not latest+1 (latest is %d)", latest)
	}
	if block.ParentHash() != parent.Hash() {
		return nil, bad("parent hash %s does not match block %d hash %s", block.ParentHash().Hex(), latest, parent.Hash().Hex())
	}
	if err := im.verifyBody(block); err != nil {
		return nil, bad("%v", err)
	}
	header := block.Header()
	cc := &chainContext{config: im.exec.config, engine: im.exec.engine, headers: headers, current: parent}
	if err := im.exec.engine.VerifyHeader(cc, header); err != nil {
		return nil, bad("header: %v", err)
	}
	reader, err := view.StateAt(latest)
	if err != nil {
		return nil, err
	}
	state := NewStateDB(reader)
	proc := im.exec.NewBlockProcessor(header, parent, block.Hash(), state, headers, vm.Config{})
	for i, tx := range block.Transactions() {
		if _, err := proc.ApplyTransaction(tx); err != nil {
			if errors.Is(err, ErrStateRead) {
				return nil, err
			}
			return nil, bad("transaction %d: %v", i, err)
		}
	}
	requests, err := proc.Finish(block.Withdrawals(), block.Uncles())
	if err != nil {
		return nil, bad("%v", err)
	}
	receipts := proc.Receipts()
	if got := proc.GasUsed(); got != header.GasUsed {
		return nil, bad("gas used %d, header says %d", got, header.GasUsed)
	}
	if header.BlobGasUsed != nil && proc.BlobGasUsed() != *header.BlobGasUsed {
		return nil, bad("blob gas used %d, header says %d", proc.BlobGasUsed(), *header.BlobGasUsed)
	}
	if root := types.DeriveSha(receipts, trie.NewStackTrie(nil)); root != header.ReceiptHash {
		return nil, bad("receipts root %s, header says %s", root.Hex(), header.ReceiptHash.Hex())
	}
	if bloom := types.MergeBloom(receipts); bloom != header.Bloom {
		return nil, bad("logs bloom mismatch")
	}
	if header.RequestsHash != nil {
		if h := types.CalcRequestsHash(requests); h != *header.RequestsHash {
			return nil, bad("requests hash %s, header says %s", h.Hex(), header.RequestsHash.Hex())
		}
	} else if requests != nil {
		return nil, bad("header lacks requests hash although Prague is active")
	}
	return &ExecutedBlock{Block: block, Receipts: receipts, Requests: requests, Diff: state.BlockDiff()}, nil
}

func (im *Importer) verifyBody(block *types.Block) error {
	h := block.Header()
	if root := types.DeriveSha(block.Transactions(), trie.NewStackTrie(nil)); root != h.TxHash {
		return fmt.Errorf("transactions root %s, header says %s", root.Hex(), h.TxHash.Hex())
	}
	if uh := types.CalcUncleHash(block.Uncles()); uh != h.UncleHash {
		return fmt.Errorf("uncles hash %s, header says %s", uh.Hex(), h.UncleHash.Hex())
	}
	switch {
	case h.WithdrawalsHash == nil && block.Withdrawals() != nil:
		return errors.New("withdrawals present but header has no withdrawals root")
	case h.WithdrawalsHash != nil && block.Withdrawals() == nil:
		return errors.New("header has a withdrawals root but body has no withdrawals")
	case h.WithdrawalsHash != nil:
		if root := types.DeriveSha(block.Withdrawals(), trie.NewStackTrie(nil)); root != *h.WithdrawalsHash {
			return fmt.Errorf("withdrawals root %s, header says %s", root.Hex(), h.WithdrawalsHash.Hex())
		}
	}
	return nil
}

// Write stores an executed block in one atomic batch, moving latest plus
// the given extra tags to it.
func (im *Importer) Write(eb *ExecutedBlock, tags ...store.Tag) error {
	rs := make([]*types.ReceiptForStorage, len(eb.Receipts))
	for i, r := range eb.Receipts {
		rs[i] = (*types.ReceiptForStorage)(r)
	}
	return im.db.WriteBlock(&store.BlockWrite{Block: eb.Block, Receipts: rs, Diff: eb.Diff, Tags: append([]store.Tag{store.TagLatest}, tags...)})
}

// ImportBlock verifies, executes and writes one block.
func (im *Importer) ImportBlock(block *types.Block, tags ...store.Tag) error {
	eb, err := im.Execute(block)
	if err != nil {
		return err
	}
	return im.Write(eb, tags...)
}

// ImportStats summarises an import.
type ImportStats struct {
	Blocks   int
	Skipped  int // already present (same hash at that height)
	Txs      int
	Gas      uint64
	Duration time.Duration
	Head     *types.Header
}

// ImportRLP reads blocks (a plain concatenation of RLP-encoded blocks, the
// `geth export` format) from r and imports them in order. Blocks the store
// already has canonically are skipped. The last imported block also becomes
// safe and finalized. progress is called at most every interval.
func (im *Importer) ImportRLP(r io.Reader, interval time.Duration, progress func(ImportStats)) (ImportStats, error) {
	var (
		stats   ImportStats
		start   = time.Now()
		last    = start
		stream  = rlp.NewStream(r, 0)
		pending *types.Block
	)
	flush := func(b *types.Block, final bool) error {
		var tags []store.Tag
		if final {
			tags = []store.Tag{store.TagSafe, store.TagFinalized}
		}
		if err := im.ImportBlock(b, tags...); err != nil {
			return err
		}
		stats.Blocks++
		stats.Txs += len(b.Transactions())
		stats.Gas += b.GasUsed()
		stats.Head = b.Header()
		if progress != nil && time.Since(last) >= interval {
			last = time.Now()
			stats.Duration = time.Since(start)
			progress(stats)
		}
		return nil
	}
	for {
		b := new(types.Block)
		if err := stream.Decode(b); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return stats, fmt.Errorf("decode block %d of the file: %w", stats.Blocks+stats.Skipped+1, err)
		}
		if have, err := im.have(b); err != nil {
			return stats, err
		} else if have {
			stats.Skipped++
			continue
		}
		if pending != nil {
			if err := flush(pending, false); err != nil {
				return stats, err
			}
		}
		pending = b
	}
	if pending != nil {
		if err := flush(pending, true); err != nil {
			return stats, err
		}
	}
	stats.Duration = time.Since(start)
	return stats, nil
}

func (im *Importer) have(b *types.Block) (bool, error) {
	view, err := im.db.View()
	if err != nil {
		return false, err
	}
	defer view.Close()
	h, err := view.CanonicalHash(b.NumberU64())
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return h == b.Hash(), nil
}
