package chain

import (
	"github.com/tipnode/tipnode/chain/op"
	"github.com/tipnode/tipnode/store/chaintypes"

	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/trie"

	"github.com/tipnode/tipnode/store"
)

// Store is what the Writer needs of the store (*store.DB).
type Store interface {
	View() (store.View, error)
	store.Writer
}

// InitGenesis writes g as block 0, or checks that the store already holds
// exactly this genesis (store.ErrGenesisMismatch otherwise). It runs before
// a Writer is opened on the store.
func InitGenesis(db store.Writer, g *Genesis) error {
	w := &store.BlockWrite{Block: chaintypes.FromEthBlock(g.Block), Diff: g.Diff(), Tags: []store.Tag{store.TagLatest, store.TagSafe, store.TagFinalized}}
	var raw struct {
		Config json.RawMessage `json:"config"`
	}
	if g.OP != nil {
		if err := json.Unmarshal(g.Spec, &raw); err != nil {
			return fmt.Errorf("%w: %v", ErrGenesis, err)
		}
	}
	config, err := g.ConfigJSON(raw.Config)
	if err != nil {
		return fmt.Errorf("%w: encode chain config: %v", ErrGenesis, err)
	}
	return db.WriteGenesis(w, g.Spec, config)
}

// ExecutedBlock is a verified block with everything the store needs.
type ExecutedBlock struct {
	Block    *chaintypes.Block
	Receipts chaintypes.Receipts
	Requests [][]byte
	Diff     *store.StateDiff
	// Trie is the block's state trie update, set by VerifyStateRoot (nil:
	// the store computes it, or keeps no trie).
	Trie *store.TrieUpdate
}

// BlockWrite is the store write of the block, moving latest plus tags to it.
func (eb *ExecutedBlock) BlockWrite(tags ...store.Tag) *store.BlockWrite {
	return &store.BlockWrite{Block: eb.Block, Receipts: eb.Receipts, Diff: eb.Diff, Trie: eb.Trie, Tags: append([]store.Tag{store.TagLatest}, tags...)}
}

// ExecuteBlock verifies block against parent (its parent: the canonical
// head the caller will write it on) and executes it on parent's post-state
// read from view, without writing anything; when the store keeps a state
// trie, the block's state root (and OP withdrawals root) is verified too
// (VerifyStateRoot). A block that fails verification returns an error
// wrapping ErrInvalidBlock naming the block and the mismatch; a failed
// read returns that error (not ErrInvalidBlock).
func (e *Executor) ExecuteBlock(block *chaintypes.Block, parent *types.Header, headers HeaderSource, view store.View) (*ExecutedBlock, error) {
	reader, err := view.StateAt(parent.Number.Uint64())
	if err != nil {
		return nil, err
	}
	eb, err := e.ExecuteBlockOn(block, parent, headers, reader)
	if err != nil {
		return nil, err
	}
	if err := e.verifyStateRootAt(eb, view, parent.Number.Uint64()); err != nil {
		return nil, err
	}
	return eb, nil
}

// ExecuteBlockOn is ExecuteBlock on parent's post-state given as a Backend
// (the store at the parent's height, or the parent's state stacked in
// memory on an ancestor's, as Writer.Reorg executes a new branch). headers
// must resolve parent's chain.
func (e *Executor) ExecuteBlockOn(block *chaintypes.Block, parent *types.Header, headers HeaderSource, reader Backend) (*ExecutedBlock, error) {
	num := block.NumberU64()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w %d (%s): %s", ErrInvalidBlock, num, block.Hash().Hex(), fmt.Sprintf(format, args...))
	}
	latest := parent.Number.Uint64()
	if num != latest+1 {
		return nil, bad("number is not latest+1 (latest is %d)", latest)
	}
	if block.ParentHash() != parent.Hash() {
		return nil, bad("parent hash %s does not match block %d hash %s", block.ParentHash().Hex(), latest, parent.Hash().Hex())
	}
	if err := e.verifyBody(block); err != nil {
		return nil, bad("%v", err)
	}
	if e.op != nil {
		if err := verifyOPBody(block.Transactions()); err != nil {
			return nil, bad("%v", err)
		}
	}
	header := block.Header()
	state := NewStateDB(reader)
	if e.op != nil {
		if err := e.verifyOPHeader(header, parent); err != nil {
			return nil, bad("header: %v", err)
		}
	} else {
		cc := &chainContext{config: e.config, engine: e.engine, headers: headers, current: parent, fail: state.setErr}
		if err := e.engine.VerifyHeader(cc, header); err != nil {
			if rerr := state.Error(); rerr != nil {
				return nil, rerr
			}
			return nil, bad("header: %v", err)
		}
		// Uncles (before the merge): at most two, each a valid header of a
		// recent ancestor's sibling, none included before. A block without
		// any has nothing to check (after the merge VerifyHeader refuses
		// uncles).
		if len(block.Uncles()) > 0 {
			if err := e.engine.VerifyUncles(cc, types.NewBlockWithHeader(header).WithBody(types.Body{Uncles: block.Uncles()})); err != nil {
				if rerr := state.Error(); rerr != nil {
					return nil, rerr
				}
				return nil, bad("uncles: %v", err)
			}
		}
	}
	proc := e.NewBlockProcessor(header, parent, block.Hash(), state, headers, vm.Config{})
	for i, tx := range block.Transactions() {
		if _, err := proc.ApplyTx(tx); err != nil {
			if errors.Is(err, ErrStateRead) {
				return nil, err
			}
			return nil, bad("transaction %d: %v", i, err)
		}
	}
	requests, err := proc.Finish(block.Withdrawals(), block.Uncles())
	if errors.Is(err, ErrStateRead) {
		return nil, err
	}
	if err != nil {
		return nil, bad("%v", err)
	}
	receipts := proc.Receipts()
	if got := proc.GasUsed(); got != header.GasUsed {
		return nil, bad("gas used %d, header says %d", got, header.GasUsed)
	}
	if e.op != nil {
		if err := op.VerifyBlobGas(e.op.cfg, header, proc.BlobGasUsed()); err != nil {
			return nil, bad("%v", err)
		}
	}
	if header.BlobGasUsed != nil && proc.BlobGasUsed() != *header.BlobGasUsed {
		return nil, bad("blob gas used %d, header says %d", proc.BlobGasUsed(), *header.BlobGasUsed)
	}
	if root := types.DeriveSha(receipts, trie.NewStackTrie(nil)); root != header.ReceiptHash {
		return nil, bad("receipts root %s, header says %s", root.Hex(), header.ReceiptHash.Hex())
	}
	if bloom := receipts.Bloom(); bloom != header.Bloom {
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

func (e *Executor) verifyBody(block *chaintypes.Block) error {
	h := block.Header()
	if root := types.DeriveSha(block.Transactions(), trie.NewStackTrie(nil)); root != h.TxHash {
		return fmt.Errorf("transactions root %s, header says %s", root.Hex(), h.TxHash.Hex())
	}
	if uh := types.CalcUncleHash(block.Uncles()); uh != h.UncleHash {
		return fmt.Errorf("uncles hash %s, header says %s", uh.Hex(), h.UncleHash.Hex())
	}
	// A blob transaction is in a block without its blobs (the sidecar
	// travels only with the network form of a transaction).
	for i, tx := range block.Transactions() {
		if t, ok := tx.(*types.Transaction); ok && t.BlobTxSidecar() != nil {
			return fmt.Errorf("unexpected blob sidecar in transaction %d (%s)", i, t.Hash().Hex())
		}
	}
	switch {
	case h.WithdrawalsHash == nil && block.Withdrawals() != nil:
		return errors.New("withdrawals present but header has no withdrawals root")
	case h.WithdrawalsHash != nil && block.Withdrawals() == nil:
		return errors.New("header has a withdrawals root but body has no withdrawals")
	case h.WithdrawalsHash != nil && e.op != nil && e.op.cfg.IsIsthmus(h.Time):
		// OP from Isthmus: the root is the L2ToL1MessagePasser's storage
		// root, verified with the state root after execution
		// (VerifyStateRoot); the body carries no withdrawals.
		if len(block.Withdrawals()) != 0 {
			return errors.New("an OP block carries withdrawals")
		}
	case h.WithdrawalsHash != nil:
		if root := types.DeriveSha(block.Withdrawals(), trie.NewStackTrie(nil)); root != *h.WithdrawalsHash {
			return fmt.Errorf("withdrawals root %s, header says %s", root.Hex(), h.WithdrawalsHash.Hex())
		}
	}
	return nil
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
