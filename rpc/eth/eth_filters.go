package eth

// Polled filters, go-ethereum's semantics: eth_newFilter,
// eth_newBlockFilter, eth_newPendingTransactionFilter return an id;
// eth_getFilterChanges returns what arrived since the previous poll (block
// hashes, transaction hashes, or logs); eth_getFilterLogs runs the log
// filter's query as eth_getLogs; eth_uninstallFilter removes one. A filter
// not polled for APIConfig.FilterTimeout (5 min) is removed: at the next
// event it would receive, or at the next filter call of any client,
// whichever comes first (no background loop; the clock is API.now).
//
// Each filter is fed like a subscription (heads.go, eth_pending.go):
//
//   - block filter: the hash of every new canonical block (followHeads);
//   - pending transaction filter: the hash of every transaction admitted
//     to the pool (on a replica: forwarded, or first seen pre-confirmed);
//   - log filter: the matching logs of every new canonical block
//     (followChain), with the logs of blocks that left the chain again
//     with removed=true; a block number fromBlock/toBlock bounds the
//     blocks, a tag does not (go-ethereum). When toBlock is "pending",
//     the matching logs of newly pre-confirmed transactions come at their
//     pre-confirmation (blockHash zero, as pendingLogs), and the same
//     logs are not repeated when their block is sealed. fromBlock
//     "pending" too: only pre-confirmed logs.
//
// Limits (APIConfig): FilterMax filters on the node and FilterMaxPerClient
// per client address (rpc.ClientAddr), one more refused with -32005; each
// filter holds at most FilterMaxBuffered items between two polls, beyond
// which the oldest are dropped (and counted in the log).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/rpc"
	"github.com/tipnode/tipnode/store"
)

// registerFilters installs the filter methods.
func (a *API) registerFilters(s *rpc.Server) {
	s.Register("eth_newFilter", a.ethNewFilter)
	s.Register("eth_newBlockFilter", a.ethNewBlockFilter)
	s.Register("eth_newPendingTransactionFilter", a.ethNewPendingTxFilter)
	s.Register("eth_getFilterChanges", a.ethGetFilterChanges)
	s.Register("eth_getFilterLogs", a.ethGetFilterLogs)
	s.Register("eth_uninstallFilter", a.ethUninstallFilter)
}

type filterKind int

const (
	logsFilter filterKind = iota
	blocksFilter
	pendingTxFilter
)

// filter is one installed filter.
type filter struct {
	id    string
	kind  filterKind
	owner string
	crit  LogFilter
	// Block bounds of a log filter (nil: unbounded), and whether it
	// reaches (toPending) or starts at (fromPending) the pending block.
	from, to               *uint64
	toPending, fromPending bool
	done                   chan struct{}

	mu       sync.Mutex
	lastPoll time.Time
	hashes   []common.Hash
	logs     []*types.Log
	dropped  int
	// preconf: transactions whose logs were delivered pre-confirmed (not
	// repeated when sealed).
	preconf map[common.Hash]struct{}
}

// filters is the API's table of filters.
type filters struct {
	mu        sync.Mutex
	byID      map[string]*filter
	perClient map[string]int
	lastSweep time.Time
}

// maxPreconfTracked bounds a log filter's set of pre-confirmed
// transactions (entries normally leave it when their block is sealed).
const maxPreconfTracked = 65_536

func (a *API) clock() time.Time {
	if a.now != nil {
		return a.now()
	}
	return time.Now()
}

func newFilterID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "0x" + hex.EncodeToString(b[:])
}

// install adds f (refused over the limits) and starts its feeds.
func (a *API) install(ctx context.Context, f *filter) (string, error) {
	a.sweepFilters(false)
	f.id, f.owner, f.done, f.lastPoll = newFilterID(), rpc.ClientAddr(ctx), make(chan struct{}), a.clock()
	t := &a.filters
	t.mu.Lock()
	if len(t.byID) >= a.cfg.FilterMax {
		t.mu.Unlock()
		return "", rpc.ErrLimit("too many filters on this node (limit %d): uninstall unused ones", a.cfg.FilterMax)
	}
	if t.perClient[f.owner] >= a.cfg.FilterMaxPerClient {
		t.mu.Unlock()
		return "", rpc.ErrLimit("too many filters from your address (limit %d): uninstall unused ones", a.cfg.FilterMaxPerClient)
	}
	if t.byID == nil {
		t.byID, t.perClient = make(map[string]*filter), make(map[string]int)
	}
	t.byID[f.id] = f
	t.perClient[f.owner]++
	t.mu.Unlock()
	switch f.kind {
	case blocksFilter:
		a.followHeads(f.done, func(h *types.Header) bool {
			return a.feed(f, func() { f.hashes = append(f.hashes, h.Hash()) })
		})
	case pendingTxFilter:
		attachDone(f.done, a.pool.(poolTxFeed).SubscribeTxs(func(tx *types.Transaction) {
			a.feed(f, func() { f.hashes = append(f.hashes, tx.Hash()) })
		}))
	case logsFilter:
		if !f.fromPending {
			a.followChain(f.done, func(h *types.Header, view store.View) bool {
				n := h.Number.Uint64()
				if (f.from != nil && n < *f.from) || (f.to != nil && n > *f.to) {
					return a.feed(f, func() {})
				}
				logs, err := a.blockLogs(view, n, h.Hash(), &f.crit, nil)
				if err != nil {
					a.log.Warn().Err(err).Uint64("block", n).Msg("log filter: reading block")
				}
				return a.feed(f, func() {
					for _, l := range logs {
						if _, ok := f.preconf[l.TxHash]; ok {
							continue
						}
						f.logs = append(f.logs, l)
					}
					for _, l := range logs {
						delete(f.preconf, l.TxHash)
					}
				})
			}, func(removed []*types.Log) bool {
				return a.feed(f, func() {
					for _, l := range removed {
						if f.crit.matches(l) {
							f.logs = append(f.logs, l)
						}
					}
				})
			})
		}
		if f.toPending && a.cfg.Preconfirmations {
			attachDone(f.done, a.reads.SubscribePreconfirmations(func(s *pending.Snapshot) {
				a.feed(f, func() {
					for _, r := range s.NewReceipts() {
						for _, l := range r.Logs {
							if f.crit.matches(l) {
								f.logs = append(f.logs, l)
								if f.preconf == nil {
									f.preconf = make(map[common.Hash]struct{})
								}
								if len(f.preconf) < maxPreconfTracked {
									f.preconf[l.TxHash] = struct{}{}
								}
							}
						}
					}
				})
			}))
		}
	}
	return f.id, nil
}

// attachDone runs unsubscribe when done is closed.
func attachDone(done <-chan struct{}, unsubscribe func()) {
	go func() {
		<-done
		unsubscribe()
	}()
}

// feed applies add to f's buffer (under its lock) and trims it; false when
// f expired (it is then removed) or was removed: its feed stops.
func (a *API) feed(f *filter, add func()) bool {
	select {
	case <-f.done:
		return false
	default:
	}
	f.mu.Lock()
	if a.clock().Sub(f.lastPoll) > a.cfg.FilterTimeout {
		f.mu.Unlock()
		a.removeFilter(f.id)
		return false
	}
	add()
	limit := a.cfg.FilterMaxBuffered
	if over := len(f.hashes) - limit; over > 0 {
		f.hashes = append(f.hashes[:0:0], f.hashes[over:]...)
		f.dropped += over
	}
	if over := len(f.logs) - limit; over > 0 {
		f.logs = append(f.logs[:0:0], f.logs[over:]...)
		f.dropped += over
	}
	f.mu.Unlock()
	return true
}

// removeFilter removes id (false if unknown) and stops its feeds.
func (a *API) removeFilter(id string) bool {
	t := &a.filters
	t.mu.Lock()
	f, ok := t.byID[id]
	if ok {
		delete(t.byID, id)
		if t.perClient[f.owner]--; t.perClient[f.owner] <= 0 {
			delete(t.perClient, f.owner)
		}
	}
	t.mu.Unlock()
	if ok {
		close(f.done)
	}
	return ok
}

// sweepFilters removes the filters not polled within FilterTimeout (at
// most once a second unless force).
func (a *API) sweepFilters(force bool) {
	now := a.clock()
	t := &a.filters
	t.mu.Lock()
	if !force && now.Sub(t.lastSweep) < time.Second {
		t.mu.Unlock()
		return
	}
	t.lastSweep = now
	var expired []string
	for id, f := range t.byID {
		f.mu.Lock()
		if now.Sub(f.lastPoll) > a.cfg.FilterTimeout {
			expired = append(expired, id)
		}
		f.mu.Unlock()
	}
	t.mu.Unlock()
	for _, id := range expired {
		a.removeFilter(id)
	}
}

// lookupFilter finds a live filter (nil when unknown or expired).
func (a *API) lookupFilter(id string) *filter {
	a.sweepFilters(false)
	t := &a.filters
	t.mu.Lock()
	f := t.byID[id]
	t.mu.Unlock()
	if f == nil {
		return nil
	}
	f.mu.Lock()
	expired := a.clock().Sub(f.lastPoll) > a.cfg.FilterTimeout
	f.mu.Unlock()
	if expired {
		a.removeFilter(id)
		return nil
	}
	return f
}

func (a *API) ethNewFilter(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(1); err != nil {
		return nil, err
	}
	f := &filter{kind: logsFilter}
	if err := p.Decode(0, "filter", &f.crit); err != nil {
		return nil, err
	}
	if f.crit.BlockHash != nil {
		return nil, p.ArgError(0, "filter", "blockHash is not supported by eth_newFilter (use eth_getLogs)")
	}
	bound := func(s *BlockSelector) (*uint64, bool) {
		if s == nil {
			return nil, false
		}
		if s.Number != nil {
			n := *s.Number
			return &n, false
		}
		if s.Tag == TagEarliest {
			n := uint64(0)
			return &n, false
		}
		return nil, s.Tag == TagPending
	}
	f.from, f.fromPending = bound(f.crit.FromBlock)
	f.to, f.toPending = bound(f.crit.ToBlock)
	if f.fromPending && !f.toPending {
		return nil, p.ArgError(0, "filter", "invalid block range: fromBlock pending, toBlock not")
	}
	if f.from != nil && f.to != nil && *f.from > *f.to {
		return nil, p.ArgError(0, "filter", "invalid block range: fromBlock %d > toBlock %d", *f.from, *f.to)
	}
	return a.install(ctx, f)
}

func (a *API) ethNewBlockFilter(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(0); err != nil {
		return nil, err
	}
	return a.install(ctx, &filter{kind: blocksFilter})
}

func (a *API) ethNewPendingTxFilter(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(1); err != nil { // go-ethereum takes an optional fullTx; hashes only here
		return nil, err
	}
	if _, ok := a.pool.(poolTxFeed); !ok || a.pool == nil {
		return nil, &rpc.Error{Code: rpc.CodeServerError, Message: errNoPoolFeed.Error()}
	}
	return a.install(ctx, &filter{kind: pendingTxFilter})
}

func decodeFilterID(p rpc.Params) (string, error) {
	if err := p.AtMost(1); err != nil {
		return "", err
	}
	var id string
	if err := p.Decode(0, "filterId", &id); err != nil {
		return "", err
	}
	return id, nil
}

func (a *API) ethGetFilterChanges(ctx context.Context, p rpc.Params) (any, error) {
	id, err := decodeFilterID(p)
	if err != nil {
		return nil, err
	}
	f := a.lookupFilter(id)
	if f == nil {
		return nil, errFilterNotFound
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastPoll = a.clock()
	if f.dropped > 0 {
		a.log.Debug().Str("filter", id).Int("dropped", f.dropped).Msg("filter buffer full: oldest items dropped")
		f.dropped = 0
	}
	if f.kind == logsFilter {
		out := f.logs
		f.logs = nil
		if out == nil {
			out = []*types.Log{}
		}
		return out, nil
	}
	out := f.hashes
	f.hashes = nil
	if out == nil {
		out = []common.Hash{}
	}
	return out, nil
}

func (a *API) ethGetFilterLogs(ctx context.Context, p rpc.Params) (any, error) {
	id, err := decodeFilterID(p)
	if err != nil {
		return nil, err
	}
	f := a.lookupFilter(id)
	if f == nil || f.kind != logsFilter {
		return nil, errFilterNotFound
	}
	f.mu.Lock()
	f.lastPoll = a.clock()
	f.mu.Unlock()
	logs, err := a.filterLogs(ctx, &f.crit, p.CheckResponse)
	if err != nil {
		return nil, err
	}
	if logs == nil {
		logs = []*types.Log{}
	}
	return logs, nil
}

func (a *API) ethUninstallFilter(ctx context.Context, p rpc.Params) (any, error) {
	id, err := decodeFilterID(p)
	if err != nil {
		return nil, err
	}
	a.sweepFilters(false)
	return a.removeFilter(id), nil
}

// FilterCollector is the gauge tipnode_rpc_filters (installed filters).
func (a *API) FilterCollector() prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tipnode_rpc_filters", Help: "Installed filters (eth_newFilter, eth_newBlockFilter, eth_newPendingTransactionFilter)."},
		func() float64 { return float64(a.FilterCount()) })
}

// FilterCount is the number of installed filters (metrics, tests).
func (a *API) FilterCount() int {
	a.filters.mu.Lock()
	defer a.filters.mu.Unlock()
	return len(a.filters.byID)
}
