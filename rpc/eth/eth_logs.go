package eth

// eth_getLogs and the newHeads / logs websocket subscriptions.
//
// eth_getLogs scans canonical blocks from the store, skipping every block
// whose header bloom cannot match, and reads receipts only for the others.
// Limits (APIConfig): a range longer than LogsRangeLimit blocks, or more than
// LogsResultLimit matching logs, is refused with -32005 naming the limit.
// With toBlock "pending" the pre-confirmed logs of the pending snapshot are
// appended, after those of its pending parents above the head (a replica's
// window running ahead of its canonical chain: the blocks between latest
// and the newest pending block, with their sealed hashes), so that the
// answer is the sequencer's. fromBlock may then be any block up to the
// pending one.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/rpc"
	"github.com/tipnode/tipnode/store"
)

// registerLogs installs eth_getLogs and the newHeads and logs subscriptions.
func (a *API) registerLogs(s *rpc.Server) {
	s.Register("eth_getLogs", a.ethGetLogs, rpc.HonoursContext)
	s.RegisterSubscription("newHeads", a.subscribeNewHeads)
	s.RegisterSubscription("logs", a.subscribeLogs)
}

// Topic and address limits of one filter (as go-ethereum).
const (
	maxFilterTopics     = 4    // topic positions
	maxFilterSubTopics  = 1000 // alternatives in one position
	maxFilterAddresses  = 1000
	logsCtxCheckEveryNB = 256 // blocks between context checks
)

// LogFilter is the filter object of eth_getLogs and the logs subscription.
// Addresses: any of (empty = all). Topics[i]: any of (empty = wildcard).
type LogFilter struct {
	BlockHash *common.Hash
	FromBlock *BlockSelector
	ToBlock   *BlockSelector
	Addresses []common.Address
	Topics    [][]common.Hash
}

// UnmarshalJSON decodes a filter object: "address" a string or an array of
// strings, "topics" an array whose elements are null (wildcard), a topic, or
// an array of topics (any of; an empty array or a null inside is a wildcard).
func (f *LogFilter) UnmarshalJSON(data []byte) error {
	if d := bytes.TrimSpace(data); len(d) == 0 || d[0] != '{' {
		return errors.New("the filter must be an object")
	}
	var raw struct {
		BlockHash *common.Hash      `json:"blockHash"`
		FromBlock *BlockSelector    `json:"fromBlock"`
		ToBlock   *BlockSelector    `json:"toBlock"`
		Address   json.RawMessage   `json:"address"`
		Topics    []json.RawMessage `json:"topics"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	out := LogFilter{BlockHash: raw.BlockHash, FromBlock: raw.FromBlock, ToBlock: raw.ToBlock}
	if raw.BlockHash != nil && (raw.FromBlock != nil || raw.ToBlock != nil) {
		return errFilterBothHashAndRange
	}
	for _, s := range []*BlockSelector{raw.FromBlock, raw.ToBlock} {
		if s != nil && s.Hash != nil {
			return errors.New("fromBlock/toBlock must be a block number or tag, not a hash")
		}
	}
	if a := bytes.TrimSpace(raw.Address); len(a) > 0 && !bytes.Equal(a, []byte("null")) {
		if a[0] == '[' {
			if err := json.Unmarshal(a, &out.Addresses); err != nil {
				return fmt.Errorf("invalid address list: %s", rpc.DescribeJSONError(err))
			}
		} else {
			var one common.Address
			if err := json.Unmarshal(a, &one); err != nil {
				return fmt.Errorf("invalid address: %s", rpc.DescribeJSONError(err))
			}
			out.Addresses = []common.Address{one}
		}
		if len(out.Addresses) > maxFilterAddresses {
			return errFilterLimit
		}
	}
	if len(raw.Topics) > maxFilterTopics {
		return errFilterTooManyTopics
	}
	if len(raw.Topics) > 0 {
		out.Topics = make([][]common.Hash, len(raw.Topics))
	}
	for i, t := range raw.Topics {
		t = bytes.TrimSpace(t)
		switch {
		case len(t) == 0 || bytes.Equal(t, []byte("null")):
			// wildcard
		case t[0] == '[':
			var alts []*common.Hash
			if err := json.Unmarshal(t, &alts); err != nil {
				return fmt.Errorf("invalid topic at position %d: %s", i, rpc.DescribeJSONError(err))
			}
			if len(alts) > maxFilterSubTopics {
				return errFilterLimit
			}
			for _, h := range alts {
				if h == nil { // a null alternative matches everything
					out.Topics[i] = nil
					break
				}
				out.Topics[i] = append(out.Topics[i], *h)
			}
		default:
			var h common.Hash
			if err := json.Unmarshal(t, &h); err != nil {
				return fmt.Errorf("invalid topic at position %d: %s", i, rpc.DescribeJSONError(err))
			}
			out.Topics[i] = []common.Hash{h}
		}
	}
	*f = out
	return nil
}

// matches reports whether l passes the address and topic criteria.
func (f *LogFilter) matches(l *types.Log) bool {
	if len(f.Addresses) > 0 {
		ok := false
		for _, a := range f.Addresses {
			if a == l.Address {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if len(f.Topics) > len(l.Topics) {
		return false
	}
	for i, alts := range f.Topics {
		if len(alts) == 0 {
			continue
		}
		ok := false
		for _, t := range alts {
			if t == l.Topics[i] {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// bloomMatches reports whether a block with this bloom may hold a match.
func (f *LogFilter) bloomMatches(b types.Bloom) bool {
	if len(f.Addresses) > 0 {
		ok := false
		for _, a := range f.Addresses {
			if types.BloomLookup(b, a) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	for _, alts := range f.Topics {
		if len(alts) == 0 {
			continue
		}
		ok := false
		for _, t := range alts {
			if types.BloomLookup(b, t) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func (a *API) ethGetLogs(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(1); err != nil {
		return nil, err
	}
	var f LogFilter
	if err := p.Decode(0, "filter", &f); err != nil {
		return nil, err
	}
	logs, err := a.filterLogs(ctx, &f, p.CheckResponse)
	if err != nil {
		return nil, err
	}
	if logs == nil {
		logs = []*types.Log{}
	}
	return logs, nil
}

// filterLogs runs a log query. fits (nil: none) checks the answer's
// estimated size against the response budget as logs are collected.
func (a *API) filterLogs(ctx context.Context, f *LogFilter, fits func(int) error) ([]*types.Log, error) {
	lim := logsLimit{max: a.cfg.LogsResultLimit, fits: fits}
	r, err := a.open(ctx)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	snap, view := r.Snapshot, r.View
	var out []*types.Log
	if f.BlockHash != nil {
		n, err := view.NumberByHash(*f.BlockHash)
		if errors.Is(err, store.ErrNotFound) {
			return nil, rpc.ErrServer("unknown block")
		}
		if err != nil {
			return nil, err
		}
		if n < view.Anchor().History {
			return nil, fmt.Errorf("logs of block %d: %w", n, store.ErrPrunedHistory)
		}
		if out, err = a.blockLogs(view, n, *f.BlockHash, f, out); err != nil {
			return nil, err
		}
		return out, lim.check(out)
	}
	head, err := view.Tag(store.TagLatest)
	if err != nil {
		return nil, err
	}
	from, fromPending, err := a.filterBound(view, f.FromBlock, head)
	if err != nil {
		return nil, err
	}
	to, toPending, err := a.filterBound(view, f.ToBlock, head)
	if err != nil {
		return nil, err
	}
	if fromPending && !toPending {
		return nil, rpc.ErrInvalidParams("invalid block range params")
	}
	if !fromPending {
		if (from > head && !(toPending && snap != nil && from <= snap.Number())) || (!toPending && to > head) {
			return nil, rpc.ErrInvalidParams("block range extends beyond current head block")
		}
		if !toPending && from > to {
			return nil, rpc.ErrInvalidParams("invalid block range params")
		}
		if from < view.Anchor().History {
			// The range starts below the history the store holds.
			return nil, fmt.Errorf("logs from block %d: %w", from, store.ErrPrunedHistory)
		}
		end := to
		if toPending {
			end = head
		}
		if end >= from && end-from+1 > a.cfg.LogsRangeLimit {
			return nil, rpc.ErrLimit("query exceeds max block range %d", a.cfg.LogsRangeLimit)
		}
		for n := from; n <= end && n <= head; n++ {
			if (n-from)%logsCtxCheckEveryNB == 0 && ctx.Err() != nil {
				return nil, ctx.Err()
			}
			hash, err := view.CanonicalHash(n)
			if err != nil {
				return nil, fmt.Errorf("canonical hash %d: %w", n, err)
			}
			if out, err = a.blockLogs(view, n, hash, f, out); err != nil {
				return nil, err
			}
			if err := lim.check(out); err != nil {
				return nil, err
			}
		}
	}
	if toPending && snap != nil && snap.Anchor().Number.Uint64() == head {
		// The pending blocks above the head: a replica's pending parents
		// (sealed in memory, ahead of its canonical chain) oldest first,
		// then the pending block. A parent's logs carry its sealed hash,
		// as they will once it is canonical; the pending block's none.
		var chain []*pending.Snapshot
		for s := snap; s != nil && s.Number() > head; s = s.Parent() {
			if s == snap || !fromPending && s.Number() >= from {
				chain = append(chain, s)
			}
		}
		for i := len(chain) - 1; i >= 0; i-- {
			s := chain[i]
			for _, r := range s.Receipts() {
				for _, l := range r.Logs {
					if !f.matches(l) {
						continue
					}
					if s != snap && s.Final() {
						cp := *l
						cp.BlockHash = s.Hash()
						l = &cp
					}
					out = append(out, l)
				}
			}
			if err := lim.check(out); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// logsLimit checks a log query's results as they are collected: at most
// max logs, and an estimated answer that fits the response budget.
type logsLimit struct {
	max     int
	fits    func(int) error
	counted int // logs whose size is in size
	size    int
}

// logJSON is the encoded size of a log's fixed fields (without its data
// and topics).
const logJSON = 420

func (l *logsLimit) check(out []*types.Log) error {
	if len(out) > l.max {
		return rpc.ErrLimit("query returned more than %d results", l.max)
	}
	if l.fits == nil {
		return nil
	}
	for _, lg := range out[l.counted:] {
		l.size += logJSON + 2*len(lg.Data) + 70*len(lg.Topics)
	}
	l.counted = len(out)
	return l.fits(l.size)
}

// filterBound resolves fromBlock/toBlock (absent = latest). pending reports
// the pending tag.
func (a *API) filterBound(view store.View, s *BlockSelector, head uint64) (n uint64, pending bool, err error) {
	if s == nil {
		return head, false, nil
	}
	if s.Number != nil {
		return *s.Number, false, nil
	}
	switch s.Tag {
	case TagPending:
		return head + 1, true, nil
	case TagEarliest:
		return view.Anchor().History, false, nil
	case TagSafe:
		n, err := view.Tag(store.TagSafe)
		if err != nil {
			return 0, false, rpc.ErrServer("safe block not found")
		}
		return n, false, nil
	case TagFinalized:
		n, err := view.Tag(store.TagFinalized)
		if err != nil {
			return 0, false, rpc.ErrServer("finalized block not found")
		}
		return n, false, nil
	}
	return head, false, nil
}

// blockLogs appends the matching logs of block (n, hash) to out.
func (a *API) blockLogs(view store.View, n uint64, hash common.Hash, f *LogFilter, out []*types.Log) ([]*types.Log, error) {
	h, err := view.Header(n, hash)
	if err != nil {
		return nil, fmt.Errorf("header %d: %w", n, err)
	}
	if !f.bloomMatches(h.Bloom) {
		return out, nil
	}
	stored, err := view.Receipts(n, hash)
	if err != nil {
		return nil, fmt.Errorf("receipts %d: %w", n, err)
	}
	body, err := view.Body(n, hash)
	if err != nil {
		return nil, fmt.Errorf("body %d: %w", n, err)
	}
	for _, l := range chain.BlockLogs(h, body.Transactions, stored) {
		if f.matches(l) {
			out = append(out, l)
		}
	}
	return out, nil
}

// subscribeNewHeads: eth_subscribe("newHeads") sends each new canonical
// header (go-ethereum's header JSON).
func (a *API) subscribeNewHeads(ctx context.Context, sub *rpc.Subscription, p rpc.Params) error {
	if err := p.AtMost(1); err != nil { // go-ethereum tolerates an options object
		return err
	}
	a.followHeads(sub.Done(), func(h *types.Header) bool {
		return sub.Notify(marshalHeader(h)) == nil
	})
	return nil
}

// subscribeLogs: eth_subscribe("logs", filter?) sends each matching log of
// every new canonical block, one notification per log. When blocks leave
// the canonical chain (a reorg, an unwind), their matching logs are sent
// again with removed=true, oldest first, before the new blocks' logs.
func (a *API) subscribeLogs(ctx context.Context, sub *rpc.Subscription, p rpc.Params) error {
	if err := p.AtMost(1); err != nil {
		return err
	}
	var f LogFilter
	if _, err := p.DecodeOptional(0, "filter", &f); err != nil {
		return err
	}
	if f.BlockHash != nil {
		return p.ArgError(0, "filter", "blockHash is not supported in a logs subscription")
	}
	a.followChain(sub.Done(), func(h *types.Header, view store.View) bool {
		logs, err := a.blockLogs(view, h.Number.Uint64(), h.Hash(), &f, nil)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			var e *rpc.Error
			if !errors.As(err, &e) {
				a.log.Warn().Err(err).Uint64("block", h.Number.Uint64()).Msg("logs subscription: reading block")
			}
		}
		for _, l := range logs {
			if sub.Notify(l) != nil {
				return false
			}
		}
		return true
	}, func(removed []*types.Log) bool {
		for _, l := range removed {
			if f.matches(l) && sub.Notify(l) != nil {
				return false
			}
		}
		return true
	})
	return nil
}
