package eth

// New-head feed for the newHeads and logs subscriptions.
//
// The node announces each new canonical head with API.NotifyNewHead after the
// block is stored. Today only the pending sequencer does, after each seal
// (cmd/tipnode wires NotifyNewHead to the sequencer's OnSeal hook): `tipnode
// run` has no importer, so without --sequencer no head is announced and
// these subscriptions stay silent. Announcing never blocks: each subscriber
// keeps only the latest announced header and a wake-up flag, and its own
// goroutine catches up from the store, so a subscriber that falls behind
// still sees every canonical block (read back from the store, at most
// maxHeadGap per wake-up) and a burst of announcements costs the announcer
// nothing.
//
// Reorgs: when an announced head is not above the last one a subscriber
// delivered, the subscriber simply continues from the new head. Logs of
// unwound blocks are not re-sent with removed=true (the store no longer holds
// them once unwound).

import (
	"sync"

	"github.com/ethereum/go-ethereum/core/types"
)

// maxHeadGap bounds how many skipped blocks a subscriber reads back from the
// store in one catch-up; older gaps are skipped.
const maxHeadGap = 256

// headFeed fans announcements out to subscribers. Its zero value is ready
// to use.
type headFeed struct {
	mu   sync.Mutex
	subs map[*headSub]struct{}
}

// headSub is one subscriber: the latest announced header and a wake-up.
type headSub struct {
	wake   chan struct{} // capacity 1
	mu     sync.Mutex
	latest *types.Header
}

func (f *headFeed) subscribe() *headSub {
	s := &headSub{wake: make(chan struct{}, 1)}
	f.mu.Lock()
	if f.subs == nil {
		f.subs = make(map[*headSub]struct{})
	}
	f.subs[s] = struct{}{}
	f.mu.Unlock()
	return s
}

func (f *headFeed) unsubscribe(s *headSub) {
	f.mu.Lock()
	delete(f.subs, s)
	f.mu.Unlock()
}

func (f *headFeed) announce(h *types.Header) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range f.subs {
		s.mu.Lock()
		s.latest = h
		s.mu.Unlock()
		select {
		case s.wake <- struct{}{}:
		default:
		}
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

// NotifyNewHead announces that header is the new canonical head. Call it
// after the block (with its receipts) is stored. Safe for concurrent use;
// never blocks.
func (a *API) NotifyNewHead(header *types.Header) {
	if header == nil {
		return
	}
	a.heads.announce(types.CopyHeader(header))
}

// followHeads runs deliver for every canonical block stored after the call
// (and for every head announced after it), until done is closed or deliver
// returns false. Blocks not announced on their own — between two
// announcements, or between the call and the first one — are read from the
// store.
func (a *API) followHeads(done <-chan struct{}, deliver func(h *types.Header) bool) {
	sub := a.heads.subscribe()
	// The head stored now (read after subscribing, so no block falls between
	// the two): the first announcement is caught up from here. When it
	// cannot be read, catch-up starts at the first announcement.
	last, _ := a.headHeader()
	go func() {
		defer a.heads.unsubscribe(sub)
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
	view, err := a.db.View()
	if err == nil {
		for i := from; i < n; i++ {
			hash, err := view.CanonicalHash(i)
			if err != nil {
				break
			}
			hdr, err := view.Header(i, hash)
			if err != nil {
				break
			}
			out = append(out, hdr)
		}
		view.Close()
	}
	return append(out, h)
}
