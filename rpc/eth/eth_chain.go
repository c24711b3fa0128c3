package eth

// Chain data methods: identity (eth_chainId, net_version,
// web3_clientVersion, eth_syncing), head, blocks, transactions, receipts and
// uncles. A block the node does not have answers null (as go-ethereum does);
// only state methods answer "header not found".

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/rpc"
	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// registerChain installs the chain data methods.
func (a *API) registerChain(s *rpc.Server) {
	// Constants and the in-memory head: nothing to wait for, no goroutine
	// of their own (in a batch, eth_blockNumber opens the batch's read,
	// which is in memory too).
	s.RegisterInline("eth_chainId", a.ethChainID)
	s.RegisterInline("net_version", a.netVersion)
	s.RegisterInline("web3_clientVersion", a.web3ClientVersion)
	s.Register("eth_syncing", a.ethSyncing)
	s.RegisterInline("eth_blockNumber", a.ethBlockNumber)
	s.Register("eth_getBlockByNumber", blockMethod(2, false, a.blockResult), rpc.HonoursContext)
	s.Register("eth_getBlockByHash", blockMethod(2, true, a.blockResult), rpc.HonoursContext)
	s.Register("eth_getHeaderByNumber", blockMethod(1, false, a.headerResult))
	s.Register("eth_getHeaderByHash", blockMethod(1, true, a.headerResult))
	s.Register("eth_getBlockTransactionCountByNumber", blockMethod(1, false, a.txCount))
	s.Register("eth_getBlockTransactionCountByHash", blockMethod(1, true, a.txCount))
	s.Register("eth_getTransactionByHash", a.txMethod(a.transactionByHash), rpc.HonoursContext)
	s.Register("eth_getTransactionByBlockNumberAndIndex", blockMethod(2, false, a.txByIndex))
	s.Register("eth_getTransactionByBlockHashAndIndex", blockMethod(2, true, a.txByIndex))
	s.Register("eth_getTransactionReceipt", a.txMethod(a.transactionReceipt), rpc.HonoursContext)
	s.Register("eth_getBlockReceipts", blockMethod(1, false, a.blockReceipts), rpc.HonoursContext)
	s.Register("eth_getUncleCountByBlockNumber", blockMethod(1, false, a.uncleCount))
	s.Register("eth_getUncleCountByBlockHash", blockMethod(1, true, a.uncleCount))
	s.Register("eth_getUncleByBlockNumberAndIndex", blockMethod(2, false, a.uncleByIndex))
	s.Register("eth_getUncleByBlockHashAndIndex", blockMethod(2, true, a.uncleByIndex))
}

func (a *API) ethChainID(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(0); err != nil {
		return nil, err
	}
	return a.chainIDJSON, nil
}

// quantityJSON encodes n as a JSON hex quantity string (null for nil), as
// hexutil.Big marshals it.
func quantityJSON(n *big.Int) rpc.RawResult {
	if n == nil {
		return rpc.RawResult("null")
	}
	return rpc.RawResult(`"` + hexutil.EncodeBig(n) + `"`)
}

// uint64JSON encodes n as a JSON hex quantity string, as hexutil.Uint64
// marshals it, without encoding/json's reflection.
func uint64JSON(n uint64) rpc.RawResult {
	b := make([]byte, 0, 20)
	b = append(b, `"0x`...)
	b = strconv.AppendUint(b, n, 16)
	return append(b, '"')
}

func (a *API) netVersion(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(0); err != nil {
		return nil, err
	}
	return a.genesis.Config.ChainID.String(), nil
}

func (a *API) web3ClientVersion(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(0); err != nil {
		return nil, err
	}
	return a.cfg.ClientVersion, nil
}

// ethSyncing is false unless a follower catches up (see SetSyncProgress).
func (a *API) ethSyncing(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(0); err != nil {
		return nil, err
	}
	return a.syncing(), nil
}

func (a *API) ethBlockNumber(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(0); err != nil {
		return nil, err
	}
	h, err := a.head(ctx)
	if err != nil {
		return nil, err
	}
	return uint64JSON(h.Number()), nil
}

// chainBlock is a block loaded with the view it was read from. For the
// pending block, Snap is set and Block is assembled from the snapshot.
type chainBlock struct {
	res   *ReadContext
	Block *chaintypes.Block
	Snap  *pending.Snapshot
}

func (c *chainBlock) Close() { c.res.Close() }

// loadBlock resolves sel and loads the whole block. (nil, nil) means the node
// does not have the block.
func (a *API) loadBlock(ctx context.Context, sel BlockSelector) (*chainBlock, error) {
	res, err := a.Resolve(ctx, sel)
	if errors.Is(err, errBlockNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if res.Pending != nil {
		return &chainBlock{res: res, Block: pendingBlock(res.Pending), Snap: res.Pending}, nil
	}
	h := res.Header
	body, err := res.View.Body(h.Number.Uint64(), h.Hash())
	if errors.Is(err, store.ErrNotFound) {
		res.Close()
		return nil, nil
	}
	if err != nil {
		res.Close()
		return nil, err
	}
	return &chainBlock{res: res, Block: chaintypes.NewBlockWithHeader(h).WithBody(*body)}, nil
}

// pendingBlock assembles the pending block of snap.
func pendingBlock(snap *pending.Snapshot) *chaintypes.Block {
	// The snapshot header carries running totals; its transactions and
	// receipts roots are derived on demand, once per snapshot.
	h := types.CopyHeader(snap.Header())
	h.TxHash, h.ReceiptHash = snap.TxRoot(), snap.ReceiptsRoot()
	body := chaintypes.Body{Transactions: snap.Transactions()}
	if h.WithdrawalsHash != nil {
		// The sequencer's blocks carry no withdrawals: shown as [] like a
		// sealed block of the fork.
		body.Withdrawals = types.Withdrawals{}
	}
	return chaintypes.NewBlockWithHeader(h).WithBody(body)
}

// receipts returns the derived receipts of the loaded block.
func (a *API) receipts(c *chainBlock) (chaintypes.Receipts, error) {
	if c.Snap != nil {
		return chaintypes.Receipts(c.Snap.Receipts()), nil
	}
	stored, err := c.res.View.Receipts(c.Block.NumberU64(), c.Block.Hash())
	if err != nil {
		return nil, fmt.Errorf("receipts of block %d: %w", c.Block.NumberU64(), err)
	}
	return deriveReceipts(a.genesis.Config, c.Block, stored)
}

// depositReceipts are the receipts of the loaded block when it holds a
// deposit (their nonces and versions show in its transaction objects, as
// op-geth shows them), else nil: no receipt is read for an L1 block.
func (a *API) depositReceipts(c *chainBlock) (chaintypes.Receipts, error) {
	if !slices.ContainsFunc(c.Block.Transactions(), chaintypes.IsDeposit) {
		return nil, nil
	}
	if c.Snap != nil {
		return c.Snap.Receipts(), nil
	}
	rs, err := c.res.View.Receipts(c.Block.NumberU64(), c.Block.Hash())
	if err != nil {
		return nil, fmt.Errorf("receipts of block %d: %w", c.Block.NumberU64(), err)
	}
	return rs, nil
}

func (a *API) marshalChainBlock(c *chainBlock, fullTx bool) (map[string]any, error) {
	var rs chaintypes.Receipts
	if fullTx {
		var err error
		if rs, err = a.depositReceipts(c); err != nil {
			return nil, err
		}
	}
	if c.Snap != nil {
		if err := c.Snap.RootErr(); err != nil {
			// Its state root failed: an error, never a zero stateRoot
			// (pending.ErrStateRoot, mapped by MapError).
			return nil, err
		}
		return marshalPendingBlock(c.Block, fullTx, a.genesis.Config, rs), nil
	}
	return marshalBlock(c.Block, true, fullTx, a.genesis.Config, rs), nil
}

// blockMethod builds the handler of a method whose argument 0 names a block:
// a block selector (…ByNumber, getBlockReceipts) or, byHash, a block hash
// (…ByHash). nargs is the most arguments it takes; fn answers it.
func blockMethod(nargs int, byHash bool, fn func(ctx context.Context, sel BlockSelector, p rpc.Params) (any, error)) rpc.Handler {
	return func(ctx context.Context, p rpc.Params) (any, error) {
		if err := p.AtMost(nargs); err != nil {
			return nil, err
		}
		var sel BlockSelector
		if byHash {
			var h common.Hash
			if err := p.Decode(0, "blockHash", &h); err != nil {
				return nil, err
			}
			sel = SelectHash(h, false)
		} else if err := p.Decode(0, "block", &sel); err != nil {
			return nil, err
		}
		return fn(ctx, sel, p)
	}
}

// withBlock loads the block sel names and answers fn of it, or null when
// the node does not have the block.
func (a *API) withBlock(ctx context.Context, sel BlockSelector, fn func(c *chainBlock) (any, error)) (any, error) {
	c, err := a.loadBlock(ctx, sel)
	if err != nil || c == nil {
		return nil, err
	}
	defer c.Close()
	return fn(c)
}

// blockResult: eth_getBlockBy…(block, fullTransactions).
func (a *API) blockResult(ctx context.Context, sel BlockSelector, p rpc.Params) (any, error) {
	var full bool
	if err := p.Decode(1, "fullTransactions", &full); err != nil {
		return nil, err
	}
	return a.withBlock(ctx, sel, func(c *chainBlock) (any, error) {
		return a.marshalChainBlock(c, full)
	})
}

// headerResult: eth_getHeaderBy…(block), go-ethereum's header methods. A
// header the node holds is answered even when the block's body is not
// (block 0 and the headers below the history anchor of an anchored store:
// a node following this one checks its genesis and anchor with them); a
// block the node never had is null, one below the headers it holds is the
// pruned-history error (4444).
func (a *API) headerResult(ctx context.Context, sel BlockSelector, _ rpc.Params) (any, error) {
	res, err := a.Resolve(ctx, sel)
	if errors.Is(err, errBlockNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer res.Close()
	if res.Pending != nil {
		if err := res.Pending.RootErr(); err != nil {
			return nil, err // as eth_getBlockByNumber (marshalChainBlock)
		}
		m := marshalHeader(pendingBlock(res.Pending).Header())
		for _, k := range []string{"hash", "nonce", "miner"} {
			m[k] = nil // not sealed yet, as in the pending block
		}
		return m, nil
	}
	return marshalHeader(res.Header), nil
}

// decodeRequiredSelector decodes a required block selector argument.
func decodeRequiredSelector(p rpc.Params, i int, name string) (BlockSelector, error) {
	var s BlockSelector
	if err := p.Decode(i, name, &s); err != nil {
		return BlockSelector{}, err
	}
	return s, nil
}

func (a *API) txCount(ctx context.Context, sel BlockSelector, _ rpc.Params) (any, error) {
	return a.withBlock(ctx, sel, func(c *chainBlock) (any, error) {
		return hexutil.Uint(len(c.Block.Transactions())), nil
	})
}

// foundTx is a transaction hash looked up in one consistent read: the
// canonical block holding it and its index (Block nil when the store does
// not have it), the view it was read from, the pending snapshot (nil
// without a pending layer), and the pool's copy (looked up before the read,
// nil when not pooled then).
type foundTx struct {
	Hash   common.Hash
	Block  *chaintypes.Block
	Index  uint64
	View   store.View
	Snap   *pending.Snapshot
	Pooled *types.Transaction
}

// txMethod builds the handler of a method whose one argument is a
// transaction hash; fn answers it from the lookup.
func (a *API) txMethod(fn func(t *foundTx) (any, error)) rpc.Handler {
	return func(ctx context.Context, p rpc.Params) (any, error) {
		if err := p.AtMost(1); err != nil {
			return nil, err
		}
		var h common.Hash
		if err := p.Decode(0, "transactionHash", &h); err != nil {
			return nil, err
		}
		t, release, err := a.findTx(ctx, h)
		if err != nil {
			return nil, err
		}
		defer release()
		return fn(t)
	}
}

// findTx looks hash up in one consistent read (the pool first, see
// txMethod); release closes the read.
func (a *API) findTx(ctx context.Context, hash common.Hash) (*foundTx, func(), error) {
	t := &foundTx{Hash: hash}
	// The pool first: a transaction leaves it only after the snapshot
	// holding it is published (and a snapshot only after the head holding
	// its anchor), so the read opened next finds whatever the pool no
	// longer had.
	if a.pool != nil {
		t.Pooled = a.pool.Get(hash)
	}
	r, err := a.open(ctx)
	if err != nil {
		return nil, nil, err
	}
	t.Snap, t.View = r.Snapshot, r.View
	if t.Block, t.Index, err = a.lookupTx(r.View, hash); err != nil {
		r.Close()
		return nil, nil, err
	}
	return t, r.Close, nil
}

func (a *API) transactionByHash(t *foundTx) (any, error) {
	if b := t.Block; b != nil {
		tx := b.Transactions()[t.Index]
		out := newRPCTransaction(tx, blockLocation(b, t.Index), b.BaseFee(), a.genesis.Config)
		if chaintypes.IsDeposit(tx) { // its nonce and receipt version are in its receipt
			rs, err := t.View.Receipts(b.NumberU64(), b.Hash())
			if err != nil {
				return nil, fmt.Errorf("receipts of block %d: %w", b.NumberU64(), err)
			}
			if int(t.Index) < len(rs) {
				out.withDepositReceipt(rs[t.Index])
			}
		}
		return out, nil
	}
	// Pre-confirmed transactions: in the pending block (its number, the
	// zero hash: see pendingLocation), as the receipt shows them.
	if t.Snap != nil {
		if tx, r, i, ok := t.Snap.Transaction(t.Hash); ok {
			h := t.Snap.ExecHeader()
			return newRPCTransaction(tx, pendingLocation(h, uint64(i)), h.BaseFee, a.genesis.Config).withDepositReceipt(r), nil
		}
	}
	// Pooled (accepted by eth_sendRawTransaction, not pre-confirmed yet):
	// the same shape, blockHash and blockNumber null.
	if t.Pooled != nil {
		return newRPCTransaction(t.Pooled, nil, nil, a.genesis.Config), nil
	}
	return nil, nil
}

// lookupTx finds a canonical transaction: its block and index, or a nil
// block when unknown.
func (a *API) lookupTx(view store.View, h common.Hash) (*chaintypes.Block, uint64, error) {
	loc, err := view.TxLookup(h)
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	header, err := view.Header(loc.BlockNumber, loc.BlockHash)
	if err != nil {
		return nil, 0, fmt.Errorf("header of transaction %s: %w", h.Hex(), err)
	}
	body, err := view.Body(loc.BlockNumber, loc.BlockHash)
	if err != nil {
		return nil, 0, fmt.Errorf("body of transaction %s: %w", h.Hex(), err)
	}
	b := chaintypes.NewBlockWithHeader(header).WithBody(*body)
	if loc.Index >= uint64(len(b.Transactions())) {
		return nil, 0, fmt.Errorf("transaction %s: index %d out of range in block %d", h.Hex(), loc.Index, loc.BlockNumber)
	}
	return b, loc.Index, nil
}

func (a *API) txByIndex(ctx context.Context, sel BlockSelector, p rpc.Params) (any, error) {
	var idx hexutil.Uint64
	if err := p.Decode(1, "index", &idx); err != nil {
		return nil, err
	}
	return a.withBlock(ctx, sel, func(c *chainBlock) (any, error) {
		txs := c.Block.Transactions()
		if uint64(idx) >= uint64(len(txs)) {
			return nil, nil
		}
		var loc *txLocation
		if c.Snap != nil {
			loc = pendingLocation(c.Block.Header(), uint64(idx))
		} else {
			loc = blockLocation(c.Block, uint64(idx))
		}
		out := newRPCTransaction(txs[idx], loc, c.Block.BaseFee(), a.genesis.Config)
		if chaintypes.IsDeposit(txs[idx]) { // its nonce and receipt version are in its receipt
			rs, err := a.depositReceipts(c)
			if err != nil {
				return nil, err
			}
			out.withReceiptAt(rs, int(idx))
		}
		return out, nil
	})
}

func (a *API) transactionReceipt(t *foundTx) (any, error) {
	b, idx := t.Block, t.Index
	if b == nil {
		// A pre-confirmed transaction has a receipt before its block is
		// sealed (block hash zero until then).
		if t.Snap != nil {
			if tx, r, _, ok := t.Snap.Transaction(t.Hash); ok && r != nil {
				return marshalReceipt(r, tx, a.signerFor(t.Snap.ExecHeader())), nil
			}
		}
		return nil, nil
	}
	stored, err := t.View.Receipts(b.NumberU64(), b.Hash())
	if err != nil {
		return nil, fmt.Errorf("receipts of block %d: %w", b.NumberU64(), err)
	}
	rs, err := deriveReceipts(a.genesis.Config, b, stored)
	if err != nil {
		return nil, err
	}
	return marshalReceipt(rs[idx], b.Transactions()[idx], a.signerFor(b.Header())), nil
}

func (a *API) signerFor(h *types.Header) types.Signer {
	return types.MakeSigner(a.genesis.Config, h.Number, h.Time)
}

func (a *API) blockReceipts(ctx context.Context, sel BlockSelector, _ rpc.Params) (any, error) {
	return a.withBlock(ctx, sel, func(c *chainBlock) (any, error) {
		rs, err := a.receipts(c)
		if err != nil {
			return nil, err
		}
		txs := c.Block.Transactions()
		if len(rs) != len(txs) {
			return nil, fmt.Errorf("block %d: %d receipts for %d transactions", c.Block.NumberU64(), len(rs), len(txs))
		}
		signer := a.signerFor(c.Block.Header())
		out := make([]map[string]any, len(rs))
		for i, r := range rs {
			out[i] = marshalReceipt(r, txs[i], signer)
		}
		return out, nil
	})
}

func (a *API) uncleCount(ctx context.Context, sel BlockSelector, _ rpc.Params) (any, error) {
	return a.withBlock(ctx, sel, func(c *chainBlock) (any, error) {
		return hexutil.Uint(len(c.Block.Uncles())), nil
	})
}

func (a *API) uncleByIndex(ctx context.Context, sel BlockSelector, p rpc.Params) (any, error) {
	var idx hexutil.Uint64
	if err := p.Decode(1, "index", &idx); err != nil {
		return nil, err
	}
	return a.withBlock(ctx, sel, func(c *chainBlock) (any, error) {
		uncles := c.Block.Uncles()
		if uint64(idx) >= uint64(len(uncles)) {
			return nil, nil
		}
		return marshalBlock(chaintypes.NewBlockWithHeader(uncles[idx]), false, false, a.genesis.Config, nil), nil
	})
}
