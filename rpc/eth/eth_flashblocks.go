package eth

// Base's flashblocks subscriptions (node-reth's names and payloads), fed by
// the pre-confirmation feed: one published snapshot is one flashblock.
//
//   - newFlashblocks: on every published snapshot, the whole pending block
//     as eth_getBlockByNumber("pending", true) answers it then (hydrated
//     transactions; tipnode's pending shape: hash, nonce and miner null,
//     transactions at the pending number with the zero block hash). The
//     same number repeats as the block grows; each notification is the
//     block's latest state, not a diff.
//   - newFlashblockTransactions [false | true | filter]: one notification
//     per newly pre-confirmed transaction, in inclusion order, never
//     repeated: its hash (default, false); with true the transaction
//     object (pendingLocation) with its receipt fields flattened in
//     (logs, gasUsed, status, cumulativeGasUsed, contractAddress,
//     logsBloom); with a log filter {address, topics} the same objects,
//     only for transactions with at least one matching log (all their
//     logs included).
//
// Encoding is done once per snapshot and shared by every subscriber (the
// callbacks run on the publisher's goroutine, one after another); a
// subscriber's Notify never blocks.

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/rpc"
)

// registerFlashblocks installs the flashblocks subscriptions.
func (a *API) registerFlashblocks(s *rpc.Server) {
	s.RegisterSubscription("newFlashblocks", a.subscribeFlashblocks)
	s.RegisterSubscription("newFlashblockTransactions", a.subscribeFlashblockTxs)
}

// flashblockTx is a newFlashblockTransactions full notification: the
// transaction with its receipt's fields.
type flashblockTx struct {
	*rpcTransaction
	Logs              []*types.Log    `json:"logs"`
	GasUsed           hexutil.Uint64  `json:"gasUsed"`
	Status            *hexutil.Uint64 `json:"status,omitempty"`
	Root              hexutil.Bytes   `json:"root,omitempty"`
	CumulativeGasUsed hexutil.Uint64  `json:"cumulativeGasUsed"`
	ContractAddress   *common.Address `json:"contractAddress"`
	LogsBloom         types.Bloom     `json:"logsBloom"`
}

// flashEncoded is one snapshot's shared encodings, made on first use.
type flashEncoded struct {
	snap  *pending.Snapshot
	block json.RawMessage
	txs   []json.RawMessage // the new transactions' full objects
}

// flashCache holds the encodings of the latest snapshot.
type flashCache struct {
	mu  sync.Mutex
	cur flashEncoded
}

// encoded returns the shared encodings of s (block when block, the new
// transactions when txs).
func (a *API) flashEncoded(s *pending.Snapshot, block, txs bool) (json.RawMessage, []json.RawMessage) {
	c := &a.flash
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur.snap != s {
		c.cur = flashEncoded{snap: s}
	}
	if block && c.cur.block == nil {
		b, err := json.Marshal(marshalPendingBlock(pendingBlock(s), true, a.genesis.Config, s.Receipts()))
		if err != nil {
			a.log.Warn().Err(err).Msg("newFlashblocks: encoding the pending block")
		}
		c.cur.block = b
	}
	if txs && c.cur.txs == nil {
		h := s.ExecHeader()
		all, news, receipts := s.Transactions(), s.NewTransactions(), s.NewReceipts()
		first := len(all) - len(news)
		c.cur.txs = make([]json.RawMessage, len(news))
		for i, tx := range news {
			r := receipts[i]
			ft := flashblockTx{
				rpcTransaction:    newRPCTransaction(tx, pendingLocation(h, uint64(first+i)), h.BaseFee, a.genesis.Config).withDepositReceipt(r),
				Logs:              r.Logs,
				GasUsed:           hexutil.Uint64(r.GasUsed),
				CumulativeGasUsed: hexutil.Uint64(r.CumulativeGasUsed),
				LogsBloom:         r.Bloom,
			}
			if ft.Logs == nil {
				ft.Logs = []*types.Log{}
			}
			if len(r.PostState) > 0 {
				ft.Root = r.PostState
			} else {
				st := hexutil.Uint64(r.Status)
				ft.Status = &st
			}
			if r.ContractAddress != (common.Address{}) {
				addr := r.ContractAddress
				ft.ContractAddress = &addr
			}
			b, err := json.Marshal(ft)
			if err != nil {
				a.log.Warn().Err(err).Msg("newFlashblockTransactions: encoding a transaction")
			}
			c.cur.txs[i] = b
		}
	}
	return c.cur.block, c.cur.txs
}

func (a *API) subscribeFlashblocks(ctx context.Context, sub *rpc.Subscription, p rpc.Params) error {
	if err := p.AtMost(0); err != nil {
		return err
	}
	feed := a.preconfFeed()
	if feed == nil {
		return &rpc.Error{Code: rpc.CodeServerError, Message: errNoPendingFeed.Error()}
	}
	attach(sub, feed.SubscribePreconfirmations(func(s *pending.Snapshot) {
		if b, _ := a.flashEncoded(s, true, false); b != nil {
			_ = sub.Notify(b)
		}
	}))
	return nil
}

func (a *API) subscribeFlashblockTxs(ctx context.Context, sub *rpc.Subscription, p rpc.Params) error {
	if err := p.AtMost(1); err != nil {
		return err
	}
	var (
		full   bool
		filter *LogFilter
	)
	if raw := bytes.TrimSpace(p.Raw(0)); p.Present(0) && len(raw) > 0 && raw[0] == '{' {
		filter = new(LogFilter)
		if err := p.Decode(0, "filter", filter); err != nil {
			return err
		}
		if filter.BlockHash != nil || filter.FromBlock != nil || filter.ToBlock != nil {
			return p.ArgError(0, "filter", "newFlashblockTransactions takes only address and topics")
		}
		full = true
	} else if _, err := p.DecodeOptional(0, "full", &full); err != nil {
		return err
	}
	feed := a.preconfFeed()
	if feed == nil {
		return &rpc.Error{Code: rpc.CodeServerError, Message: errNoPendingFeed.Error()}
	}
	attach(sub, feed.SubscribePreconfirmations(func(s *pending.Snapshot) {
		news := s.NewTransactions()
		if len(news) == 0 {
			return
		}
		if !full {
			for _, tx := range news {
				if sub.Notify(tx.Hash()) != nil {
					return
				}
			}
			return
		}
		_, txs := a.flashEncoded(s, false, true)
		receipts := s.NewReceipts()
		for i, b := range txs {
			if filter != nil && !anyLogMatches(filter, receipts[i].Logs) {
				continue
			}
			if b != nil && sub.Notify(b) != nil {
				return
			}
		}
	}))
	return nil
}

func anyLogMatches(f *LogFilter, logs []*types.Log) bool {
	for _, l := range logs {
		if f.matches(l) {
			return true
		}
	}
	return false
}
