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
// Encoding is done once per snapshot and shared by every subscriber; a
// subscriber's Notify never blocks (a connection that falls too far behind
// is dropped by the rpc server, as for every subscription).
//
// newFlashblocks' whole block carries the snapshot's state root, which a
// replica computes after it publishes the snapshot
// (pending.Builder.DeferRoots). So its publication callback, which runs
// on the driver's goroutine, only queues the snapshot: one goroutine
// (flashBlocks, running while a newFlashblocks subscription is open)
// encodes each snapshot once, waiting for its root (or computing it), and
// notifies every subscriber, in publication order. A slow root then never
// delays the driver, its next publication or the other subscriptions, and
// no notification is encoded before its root is known. At most
// maxFlashBacklog snapshots wait for it; beyond that the oldest waiting
// is skipped (each notification is the block's latest state, so a
// subscriber misses an intermediate state, never the newest one).
// newFlashblockTransactions needs no root: it is encoded in the callback.

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"

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

// flashEncoded is one snapshot's shared newFlashblockTransactions
// encodings, made on first use.
type flashEncoded struct {
	snap *pending.Snapshot
	txs  []json.RawMessage // the new transactions' full objects
}

// flashCache holds the encodings of the latest snapshot.
type flashCache struct {
	mu  sync.Mutex
	cur flashEncoded
}

// flashTxs returns the shared encodings of s's new transactions (full
// objects).
func (a *API) flashTxs(s *pending.Snapshot) []json.RawMessage {
	c := &a.flash
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur.snap != s {
		c.cur = flashEncoded{snap: s}
	}
	if c.cur.txs == nil {
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
	return c.cur.txs
}

// flashBlock encodes s's pending block as eth_getBlockByNumber("pending",
// true) answers it, its state root included (waiting for it, or computing
// it: Snapshot.Header). nil when it cannot be encoded, and when its state
// root could not be computed (Snapshot.RootErr: eth_getBlockByNumber
// answers that error; a notification has no error to carry, and one with
// a zero root would read as a node without roots): the snapshot is
// skipped and the failure logged, once per block (the block's later
// snapshots fail with it). The next block's notifications resume.
func (a *API) flashBlock(s *pending.Snapshot) json.RawMessage {
	if err := s.RootErr(); err != nil {
		if n := s.Number(); a.flashBlocks.failed.Swap(n) != n {
			a.log.Error().Err(err).Uint64("block", n).Uint64("index", s.Index()).
				Msg("newFlashblocks: the pending block has no state root; its notifications are skipped")
		}
		return nil
	}
	b, err := json.Marshal(marshalPendingBlock(pendingBlock(s), true, a.genesis.Config, s.Receipts()))
	if err != nil {
		a.log.Warn().Err(err).Msg("newFlashblocks: encoding the pending block")
		return nil
	}
	return b
}

// maxFlashBacklog bounds the snapshots waiting for newFlashblocks'
// encoder (about 13 s of pre-confirmations at the 200 ms interval).
const maxFlashBacklog = 64

// flashBlocks runs newFlashblocks' encoder while a subscription is open.
type flashBlocks struct {
	mu sync.Mutex
	w  *flashWorker // nil: no newFlashblocks subscription
	// failed is the last block whose state root failed (logged once).
	failed atomic.Uint64
}

// flashWorker is one run of newFlashblocks' encoder: it is subscribed to
// the feed (enqueue, on the driver's goroutine) and its goroutine (run)
// encodes the queued snapshots in order and notifies the subscribers.
type flashWorker struct {
	encode func(*pending.Snapshot) json.RawMessage
	log    func(skipped int)
	unsub  func()
	wake   chan struct{}
	quit   chan struct{}

	mu      sync.Mutex
	queue   []flashQueued
	seq     uint64                       // the sequence number of the next snapshot queued
	skipped int                          // snapshots skipped since the queue was last empty
	subs    map[*rpc.Subscription]uint64 // -> the first sequence number it is sent
}

// flashQueued is a published snapshot waiting for the encoder.
type flashQueued struct {
	snap *pending.Snapshot
	seq  uint64
}

// enqueue runs on the publishing driver's goroutine: queue, never block,
// never compute.
func (w *flashWorker) enqueue(s *pending.Snapshot) {
	w.mu.Lock()
	if len(w.queue) >= maxFlashBacklog {
		w.queue[0] = flashQueued{}
		w.queue = w.queue[1:]
		w.skipped++
	}
	w.queue = append(w.queue, flashQueued{snap: s, seq: w.seq})
	w.seq++
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run encodes and delivers the queued snapshots, oldest first, until quit.
func (w *flashWorker) run() {
	var subs []*rpc.Subscription
	for {
		select {
		case <-w.quit:
			return
		case <-w.wake:
		}
		for {
			w.mu.Lock()
			if len(w.queue) == 0 {
				if w.skipped > 0 {
					w.log(w.skipped)
					w.skipped = 0
				}
				w.mu.Unlock()
				break
			}
			q := w.queue[0]
			w.queue[0] = flashQueued{}
			w.queue = w.queue[1:]
			w.mu.Unlock()
			b := w.encode(q.snap) // waits for the root: no lock held
			select {
			case <-w.quit:
				return
			default:
			}
			if b == nil {
				continue
			}
			subs = subs[:0]
			w.mu.Lock()
			for sub, from := range w.subs {
				if q.seq >= from { // published after it subscribed
					subs = append(subs, sub)
				}
			}
			w.mu.Unlock()
			for _, sub := range subs {
				_ = sub.Notify(b)
			}
			clear(subs)
		}
	}
}

// add registers sub with newFlashblocks' encoder, starting it (subscribed
// to feed) for the first subscription; sub is removed when it ends, and
// the encoder stops with the last one.
func (a *API) addFlashBlocks(feed preconfFeed, sub *rpc.Subscription) {
	f := &a.flashBlocks
	f.mu.Lock()
	w := f.w
	if w == nil {
		w = &flashWorker{
			encode: a.flashBlock,
			log: func(n int) {
				a.log.Warn().Int("skipped", n).Msg("newFlashblocks: the encoder fell behind; the oldest waiting pre-confirmations were skipped")
			},
			wake: make(chan struct{}, 1),
			quit: make(chan struct{}),
			subs: make(map[*rpc.Subscription]uint64),
		}
		w.unsub = feed.SubscribePreconfirmations(w.enqueue)
		f.w = w
		go w.run()
	}
	w.mu.Lock()
	w.subs[sub] = w.seq
	w.mu.Unlock()
	f.mu.Unlock()
	go func() {
		<-sub.Done()
		f.mu.Lock()
		defer f.mu.Unlock()
		w.mu.Lock()
		delete(w.subs, sub)
		last := len(w.subs) == 0
		w.mu.Unlock()
		if last && f.w == w {
			f.w = nil
			w.unsub()
			close(w.quit)
		}
	}()
}

func (a *API) subscribeFlashblocks(ctx context.Context, sub *rpc.Subscription, p rpc.Params) error {
	if err := p.AtMost(0); err != nil {
		return err
	}
	feed := a.preconfFeed()
	if feed == nil {
		return &rpc.Error{Code: rpc.CodeServerError, Message: errNoPendingFeed.Error()}
	}
	a.addFlashBlocks(feed, sub)
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
		txs := a.flashTxs(s)
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
