package eth

// newHeads and logs subscriptions follow the canonical chain.
//
// Every store write of the node goes through the chain.Writer, which sends
// a HeadEvent after it (import, a sealed block, an unwind). Each
// subscription subscribes its own callback to the writer's feed; the
// callback never blocks: it keeps only the latest announced head and sets a
// wake-up flag, and the subscription's goroutine catches up from the
// in-memory head and the store, so a subscriber that falls behind still
// sees every canonical block (at most maxHeadGap per wake-up) and a burst
// of writes costs the writer nothing.
//
// Reorgs: when an announced head is not above the last one a subscriber
// delivered, the subscriber simply continues from the new head. Logs of
// unwound blocks are not re-sent with removed=true yet.

import (
	"context"
	"errors"
	"sync"

	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/store"
)

// maxHeadGap bounds how many skipped blocks a subscriber reads back from the
// store in one catch-up; older gaps are skipped.
const maxHeadGap = 256

// headSub is one subscriber: the latest announced header and a wake-up.
type headSub struct {
	wake   chan struct{} // capacity 1
	mu     sync.Mutex
	latest *types.Header
}

// announce records h as the latest head and wakes the subscriber.
func (s *headSub) announce(h *types.Header) {
	s.mu.Lock()
	s.latest = h
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// take returns the latest announced header (nil if none since last take).
func (s *headSub) take() *types.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.latest
	s.latest = nil
	return h
}

// followHeads runs deliver for every canonical block stored after the call
// (and for every head announced after it), until done is closed or deliver
// returns false. Blocks not announced on their own — between two
// announcements, or between the call and the first one — are read from the
// store.
func (a *API) followHeads(done <-chan struct{}, deliver func(h *types.Header) bool) {
	sub := &headSub{wake: make(chan struct{}, 1)}
	unsubscribe := a.chain.SubscribeHeads(func(ev *chain.HeadEvent) { sub.announce(ev.Head.Header()) })
	// The head now (loaded after subscribing, so no block falls between the
	// two): the first announcement is caught up from here.
	last := a.reads.Head().Header()
	go func() {
		defer unsubscribe()
		for {
			select {
			case <-done:
				return
			case <-sub.wake:
			}
			h := sub.take()
			if h == nil {
				continue
			}
			for _, bh := range a.catchUp(last, h) {
				select {
				case <-done:
					return
				default:
				}
				if !deliver(bh) {
					return
				}
			}
			last = h
		}
	}()
}

// catchUp lists the headers to deliver to reach head h after last: the
// canonical blocks in between (from the store) and h itself.
func (a *API) catchUp(last, h *types.Header) []*types.Header {
	n := h.Number.Uint64()
	if last == nil || n <= last.Number.Uint64()+1 {
		return []*types.Header{h}
	}
	from := last.Number.Uint64() + 1
	if n-from > maxHeadGap {
		from = n - maxHeadGap
	}
	out := make([]*types.Header, 0, n-from+1)
	r, err := a.open(context.Background())
	if err != nil {
		a.log.Warn().Err(err).Msg("head subscription: catching up")
		return append(out, h)
	}
	defer r.Close()
	headers := r.Headers()
	for i := from; i < n; i++ {
		hdr, err := headers.HeaderByNumber(i)
		if err != nil {
			if !errors.Is(err, store.ErrNotFound) {
				a.log.Warn().Err(err).Uint64("block", i).Msg("head subscription: catching up")
			}
			break
		}
		out = append(out, hdr)
	}
	return append(out, h)
}
