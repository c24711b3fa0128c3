package chain

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tipnode/tipnode/store"
)

// HeadWindow is how many recent canonical headers a Head keeps in memory
// (the head itself included): selectors within it resolve without Pebble.
const HeadWindow = 256

// Head is an immutable picture of the canonical chain as of one store
// write: the head block, the safe and finalized blocks, the most recent
// canonical headers, and the store view that holds exactly this chain.
// The Writer publishes a new Head (one atomic store) after every write;
// readers load it once per request and resolve `latest`, `safe`,
// `finalized` and recent numbers from it without touching Pebble.
type Head struct {
	seq       uint64          // publication sequence: +1 per write
	recent    []*types.Header // canonical headers, ascending; the last is the head
	hashes    []common.Hash   // their hashes
	safe      *types.Header
	finalized *types.Header
	view      *sharedView
}

// Header is the canonical head block's header. Callers must not modify it.
func (h *Head) Header() *types.Header { return h.recent[len(h.recent)-1] }

// Number is the head block's number.
func (h *Head) Number() uint64 { return h.Header().Number.Uint64() }

// Hash is the head block's hash.
func (h *Head) Hash() common.Hash { return h.hashes[len(h.hashes)-1] }

// Safe is the safe block's header.
func (h *Head) Safe() *types.Header { return h.safe }

// Finalized is the finalized block's header.
func (h *Head) Finalized() *types.Header { return h.finalized }

// Seq is the publication sequence number (one more per store write).
func (h *Head) Seq() uint64 { return h.seq }

// Recent returns canonical header n when it is within the in-memory window
// (ok false: read it from the view).
func (h *Head) Recent(n uint64) (header *types.Header, hash common.Hash, ok bool) {
	first := h.recent[0].Number.Uint64()
	if n < first || n > h.Number() {
		return nil, common.Hash{}, false
	}
	return h.recent[n-first], h.hashes[n-first], true
}

// Acquire returns the head's store view, which holds exactly this chain,
// with a reader's reference: Close the view when done. ok is false when the
// head was retired (a newer one is published, or the writer stopped) and
// its view closed.
func (h *Head) Acquire() (view store.View, ok bool) {
	if !h.view.acquire() {
		return nil, false
	}
	return &headView{View: h.view.v, s: h.view}, true
}

// next returns the head that adds headers (ascending, the first extending
// the block at keep, for reorgs after an unwind) on top of h truncated to
// keep: recent blocks above keep are dropped. view holds exactly the new
// chain: when the kept and added headers are fewer than the window holds
// (an unwind or reorg below the window's first block), the window is
// refilled downwards from view's canonical headers, so it always holds the
// newest min(HeadWindow, head+1) canonical headers and never ends empty.
func (h *Head) next(keep uint64, added []*types.Header, view store.View) (*Head, error) {
	first := h.recent[0].Number.Uint64()
	cut := len(h.recent)
	if keep < h.Number() {
		cut = 0
		if keep >= first {
			cut = int(keep-first) + 1
		}
	}
	total := cut + len(added)
	start := max(0, total-HeadWindow)
	recent := make([]*types.Header, 0, HeadWindow)
	hashes := make([]common.Hash, 0, HeadWindow)
	for i := start; i < total; i++ {
		if i < cut {
			recent, hashes = append(recent, h.recent[i]), append(hashes, h.hashes[i])
		} else {
			a := added[i-cut]
			recent, hashes = append(recent, a), append(hashes, a.Hash())
		}
	}
	// The window's lowest block: the first kept or added one, or (nothing
	// kept, nothing added: an unwind below the window) the block at keep.
	low := keep + 1
	if len(recent) > 0 {
		low = recent[0].Number.Uint64()
	}
	var below []*types.Header
	headers := ViewHeaders{View: view}
	for low > 0 && len(below)+len(recent) < HeadWindow {
		low--
		hdr, err := headers.HeaderByNumber(low)
		if err != nil {
			return nil, fmt.Errorf("refill the head window: canonical header %d: %w", low, err)
		}
		below = append(below, hdr)
	}
	if len(below) > 0 {
		r := make([]*types.Header, 0, len(below)+len(recent))
		hs := make([]common.Hash, 0, len(below)+len(recent))
		for i := len(below) - 1; i >= 0; i-- {
			r, hs = append(r, below[i]), append(hs, below[i].Hash())
		}
		recent, hashes = append(r, recent...), append(hs, hashes...)
	}
	return &Head{seq: h.seq + 1, recent: recent, hashes: hashes, view: newSharedView(view)}, nil
}

// sharedView is a store view shared by every reader of one Head. The Head
// holds one reference until it is retired (replaced by the next one);
// every reader holds one while it reads. The view is closed when the last
// reference goes.
type sharedView struct {
	v    store.View
	refs atomic.Int64
}

func newSharedView(v store.View) *sharedView {
	s := &sharedView{v: v}
	s.refs.Store(1)
	return s
}

// acquire takes a reference unless the view was already closed.
func (s *sharedView) acquire() bool {
	for {
		n := s.refs.Load()
		if n <= 0 {
			return false
		}
		if s.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (s *sharedView) release() {
	if s.refs.Add(-1) == 0 {
		s.v.Close()
	}
}

// headView is a reader's handle on a Head's shared view: Close releases the
// reader's reference (once) instead of closing the shared view.
type headView struct {
	store.View
	s    *sharedView
	once sync.Once
}

func (v *headView) Close() error {
	v.once.Do(v.s.release)
	return nil
}
