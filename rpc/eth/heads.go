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
// Reorgs (and unwinds): a head event that removes blocks carries their
// logs. Each subscription keeps the number of the last block it moved to;
// removed blocks at or below it were on its chain, so their logs are sent
// again with removed=true (oldest first, before anything of the new
// branch), and the subscription continues from the common ancestor: the
// new branch's blocks follow, read from the view of the newest head it was
// told about (one view per catch-up: never a mix of branches).

import (
	"sync"

	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/store"
)

// maxHeadGap bounds how many skipped blocks a subscriber reads back from the
// store in one catch-up; older gaps are skipped.
const maxHeadGap = 256

// maxRemovalEvents bounds the removal events a subscriber that does not
// keep up holds; older ones are dropped (their removed logs are not sent).
const maxRemovalEvents = 64

// headSub is one subscriber: the latest announced head with a reader's
// reference on its view, the removal events since the last take, and a
// wake-up.
type headSub struct {
	wake     chan struct{} // capacity 1
	mu       sync.Mutex
	head     *chain.Head
	view     store.View
	removals []*chain.HeadEvent
	closed   bool
}

// announce records ev (on the writer goroutine: it never blocks) and wakes
// the subscriber. The event's head is not retired before its event is
// sent, so its view can be acquired here.
func (s *headSub) announce(ev *chain.HeadEvent) {
	view, ok := ev.Head.Acquire()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		if ok {
			view.Close()
		}
		return
	}
	if s.view != nil {
		s.view.Close() // a reader's reference: the writer retires the head itself
	}
	s.head, s.view = ev.Head, nil
	if ok {
		s.view = view
	}
	if len(ev.Removed) > 0 {
		if len(s.removals) == maxRemovalEvents {
			s.removals = append(s.removals[:0], s.removals[1:]...)
		}
		s.removals = append(s.removals, ev)
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// take returns what was announced since the last take: the latest head
// and its view (nil, nil if none; the caller closes the view) and the
// removal events, in order.
func (s *headSub) take() (*chain.Head, store.View, []*chain.HeadEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, v, r := s.head, s.view, s.removals
	s.head, s.view, s.removals = nil, nil, nil
	return h, v, r
}

// close drops what is held; later announcements are ignored.
func (s *headSub) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.view != nil {
		s.view.Close()
		s.view = nil
	}
}

// followHeads runs deliver for every canonical block stored after the call
// (and for every head announced after it), until done is closed or deliver
// returns false. Blocks not announced on their own — between two
// announcements, or between the call and the first one — are read from the
// store.
func (a *API) followHeads(done <-chan struct{}, deliver func(h *types.Header) bool) {
	a.followChain(done, func(h *types.Header, _ store.View) bool { return deliver(h) }, nil)
}

// followChain is followHeads with the view each block is delivered from
// (it holds the block, its receipts and the chain up to the newest head the
// subscriber was told about), and removed, when not nil, called with the
// logs of blocks of the subscriber's chain that left the canonical chain
// (oldest first), before the blocks that replaced them.
func (a *API) followChain(done <-chan struct{}, deliver func(h *types.Header, view store.View) bool, removed func(logs []*types.Log) bool) {
	sub := &headSub{wake: make(chan struct{}, 1)}
	unsubscribe := a.chain.SubscribeHeads(sub.announce)
	// The head now (loaded after subscribing, so no block falls between the
	// two): the subscriber's chain starts here.
	last := a.reads.Head().Number()
	go func() {
		defer sub.close()
		defer unsubscribe()
		for {
			select {
			case <-done:
				return
			case <-sub.wake:
			}
			head, view, removals := sub.take()
			for _, ev := range removals {
				if !a.unwound(ev, &last, removed) {
					if view != nil {
						view.Close()
					}
					return
				}
			}
			if view == nil {
				continue
			}
			ok := a.catchUp(done, head, view, &last, deliver)
			view.Close()
			if !ok {
				return
			}
		}
	}()
}

// unwound applies a removal event to a subscriber whose chain ends at
// *last: the logs of removed blocks at or below it are handed to removed,
// and *last moves down to the common ancestor. False: stop.
func (a *API) unwound(ev *chain.HeadEvent, last *uint64, removed func([]*types.Log) bool) bool {
	lowest := ev.Removed[len(ev.Removed)-1].Number.Uint64()
	if *last < lowest {
		return true // the subscriber had not reached the removed blocks
	}
	if removed != nil {
		var logs []*types.Log
		for _, l := range ev.RemovedLogs {
			if l.BlockNumber <= *last {
				logs = append(logs, l)
			}
		}
		if len(logs) > 0 && !removed(logs) {
			return false
		}
	}
	*last = lowest - 1
	return true
}

// catchUp delivers the canonical blocks of head's chain after *last (at
// most maxHeadGap of them, the newest), read through view. False: stop.
func (a *API) catchUp(done <-chan struct{}, head *chain.Head, view store.View, last *uint64, deliver func(*types.Header, store.View) bool) bool {
	n := head.Number()
	if n <= *last {
		return true
	}
	from := *last + 1
	if n-from >= maxHeadGap {
		from = n - maxHeadGap + 1
	}
	headers := chain.ViewHeaders{Head: head, View: view}
	for i := from; i <= n; i++ {
		select {
		case <-done:
			return false
		default:
		}
		hdr, err := headers.HeaderByNumber(i)
		if err != nil {
			a.log.Warn().Err(err).Uint64("block", i).Msg("head subscription: catching up")
			break
		}
		if !deliver(hdr, view) {
			return false
		}
		*last = i
	}
	*last = n
	return true
}
