package eth

// Websocket subscriptions for pre-confirmed state:
//
//   - newPendingTransactions [fullTx?]: the hash (or, with true, the
//     transaction object) of every transaction admitted to the pool.
//   - pendingLogs [filter?]: every log of newly pre-confirmed transactions
//     matching the filter's address/topics (blockHash zero: the block is not
//     sealed), one notification per log.
//   - newPreconfirmations: one notification per published snapshot:
//     {blockNumber, index, parentHash, timestamp, transactions: [hashes]} with
//     the hashes pre-confirmed by that snapshot (index 0, no hashes: the
//     pending block restarted on a freshly sealed block).
//
// The feeds are the pending package's: callbacks run on the publisher's
// goroutine after the snapshot swap (or pool admission), so a client reacting
// to a notification reads state at least that new. Subscription.Notify never
// blocks. Without a pending layer (plain `tipnode run`) pendingLogs and
// newPreconfirmations are refused; without a pool newPendingTransactions is.

import (
	"context"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/rpc"
)

// registerPending installs the pre-confirmation subscriptions.
func (a *API) registerPending(s *rpc.Server) {
	s.RegisterSubscription("newPendingTransactions", a.subscribePendingTxs)
	s.RegisterSubscription("pendingLogs", a.subscribePendingLogs)
	s.RegisterSubscription("newPreconfirmations", a.subscribePreconfirmations)
}

// poolTxFeed is implemented by pools that announce admitted transactions
// (*sequencer.Pool).
type poolTxFeed interface {
	SubscribeTxs(fn func(*types.Transaction)) (unsubscribe func())
}

// preconfFeed is implemented by pending sources that announce published
// snapshots (*pending.Manager).
type preconfFeed interface {
	SubscribePreconfirmations(fn func(*pending.Snapshot)) (unsubscribe func())
}

// preconfFeed is the pre-confirmation feed, nil when the node runs no
// pending driver (APIConfig.Preconfirmations).
func (a *API) preconfFeed() preconfFeed {
	if !a.cfg.Preconfirmations {
		return nil
	}
	return a.reads
}

// attach runs unsubscribe when the subscription ends.
func attach(sub *rpc.Subscription, unsubscribe func()) {
	go func() {
		<-sub.Done()
		unsubscribe()
	}()
}

func (a *API) subscribePendingTxs(ctx context.Context, sub *rpc.Subscription, p rpc.Params) error {
	if err := p.AtMost(1); err != nil {
		return err
	}
	var full bool
	if _, err := p.DecodeOptional(0, "fullTx", &full); err != nil {
		return err
	}
	feed, ok := a.pool.(poolTxFeed)
	if !ok || a.pool == nil {
		return &rpc.Error{Code: rpc.CodeServerError, Message: errNoPoolFeed.Error()}
	}
	config := a.genesis.Config
	attach(sub, feed.SubscribeTxs(func(tx *types.Transaction) {
		if full {
			_ = sub.Notify(newRPCTransaction(tx, nil, nil, config))
			return
		}
		_ = sub.Notify(tx.Hash())
	}))
	return nil
}

func (a *API) subscribePendingLogs(ctx context.Context, sub *rpc.Subscription, p rpc.Params) error {
	if err := p.AtMost(1); err != nil {
		return err
	}
	var f LogFilter
	if _, err := p.DecodeOptional(0, "filter", &f); err != nil {
		return err
	}
	if f.BlockHash != nil || f.FromBlock != nil || f.ToBlock != nil {
		return p.ArgError(0, "filter", "pendingLogs takes only address and topics")
	}
	feed := a.preconfFeed()
	if feed == nil {
		return &rpc.Error{Code: rpc.CodeServerError, Message: errNoPendingFeed.Error()}
	}
	attach(sub, feed.SubscribePreconfirmations(func(s *pending.Snapshot) {
		for _, r := range s.NewReceipts() {
			for _, l := range r.Logs {
				if f.matches(l) {
					if sub.Notify(l) != nil {
						return
					}
				}
			}
		}
	}))
	return nil
}

// preconfirmation is the newPreconfirmations notification.
type preconfirmation struct {
	BlockNumber  hexutil.Uint64 `json:"blockNumber"`
	Index        hexutil.Uint64 `json:"index"`
	ParentHash   common.Hash    `json:"parentHash"`
	Timestamp    hexutil.Uint64 `json:"timestamp"`
	Transactions []common.Hash  `json:"transactions"`
}

func (a *API) subscribePreconfirmations(ctx context.Context, sub *rpc.Subscription, p rpc.Params) error {
	if err := p.AtMost(0); err != nil {
		return err
	}
	feed := a.preconfFeed()
	if feed == nil {
		return &rpc.Error{Code: rpc.CodeServerError, Message: errNoPendingFeed.Error()}
	}
	attach(sub, feed.SubscribePreconfirmations(func(s *pending.Snapshot) {
		h := s.ExecHeader()
		txs := s.NewTransactions()
		hashes := make([]common.Hash, len(txs))
		for i, tx := range txs {
			hashes[i] = tx.Hash()
		}
		_ = sub.Notify(preconfirmation{
			BlockNumber:  hexutil.Uint64(h.Number.Uint64()),
			Index:        hexutil.Uint64(s.Index()),
			ParentHash:   h.ParentHash,
			Timestamp:    hexutil.Uint64(h.Time),
			Transactions: hashes,
		})
	}))
	return nil
}
