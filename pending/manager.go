package pending

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/store"
)

// Heads is the canonical chain as the Manager follows it (*chain.Writer).
type Heads interface {
	// Head returns the current head.
	Head() *chain.Head
	// SubscribeHeads calls fn after every store write, on the writer
	// goroutine, before the previous head's view can close.
	SubscribeHeads(fn func(*chain.HeadEvent)) (unsubscribe func())
}

// state is what one read sees: a canonical head and the pending snapshot
// on it (nil: none). Replaced as a whole, with one atomic store.
type state struct {
	head *chain.Head
	snap *Snapshot
}

// Manager holds the node's current read state — the canonical head and the
// pending snapshot, as ONE atomically swapped pair — and opens every read
// of the node from it. A driver (the Sequencer, or a stream follower)
// publishes snapshots into it; the writer's head events move its head.
// Because the pair moves in one step, a reader never sees a new head with
// an older block's pending state, or the reverse: right after a seal it
// sees either (old head, pending block on it) or (new head, next pending
// block on it).
//
// Loading the pair is one atomic load: readers never lock, and a
// publication never waits for readers.
type Manager struct {
	config  *params.ChainConfig
	clock   Clock
	next    HeaderParams // the next block's header choices, for reads without a snapshot
	metrics *Metrics
	cur     atomic.Pointer[state]

	preconfs chain.Feed[*Snapshot]

	// afterLoad, when set (tests), runs between loading the state and
	// acquiring its view.
	afterLoad func()
}

// NewManager returns a Manager following heads, with no snapshot (pending
// reads latest until a driver publishes). next describes the header the
// node's next block would get (the sequencer's choices; zero without one):
// the pool validates against it when there is no snapshot. metrics may be
// nil.
func NewManager(heads Heads, config *params.ChainConfig, next HeaderParams, clock Clock, metrics *Metrics) *Manager {
	if clock == nil {
		clock = SystemClock{}
	}
	m := &Manager{config: config, next: next, clock: clock, metrics: metrics}
	m.cur.Store(&state{head: heads.Head()})
	heads.SubscribeHeads(m.onHead)
	return m
}

// onHead moves the state to a new head (unless a driver's Publish in the
// writer's Rebase already did), keeping the snapshot only while it is
// servable on the new head (onWindow).
func (m *Manager) onHead(ev *chain.HeadEvent) {
	for {
		old := m.cur.Load()
		if old.head.Seq() >= ev.Head.Seq() {
			return
		}
		snap := old.snap
		at := servedOn
		if snap != nil {
			if at = onWindow(ev.Head, snap); at != servedOn {
				snap = nil // its chain left the canonical chain, or the head reached it: never serve it
			}
		}
		if m.cur.CompareAndSwap(old, &state{head: ev.Head, snap: snap}) {
			if at == offChain {
				m.metrics.stale()
			}
			return
		}
	}
}

// onWindow reports whether snap is servable on head, resolving canonical
// hashes from the head's in-memory window only (an ancestry meeting the
// chain below the window is not kept): the pending block is above the head
// and its chain of parents meets the canonical chain with the same hash.
func onWindow(head *chain.Head, snap *Snapshot) placement {
	at, _ := snap.onChain(head.Number(), func(n uint64) (common.Hash, bool, error) {
		_, hash, ok := head.Recent(n)
		return hash, ok, nil
	})
	return at
}

// Withdraw stops serving the current snapshot: reads serve the canonical
// head until the next Publish (a stream follower whose stream is down or
// stale). Subscribers are not notified.
func (m *Manager) Withdraw() {
	for {
		old := m.cur.Load()
		if old.snap == nil || m.cur.CompareAndSwap(old, &state{head: old.head}) {
			return
		}
	}
}

// Current returns the current snapshot, or nil when no driver publishes or
// the last one went stale.
func (m *Manager) Current() *Snapshot { return m.cur.Load().snap }

// Head returns the current canonical head (the one reads see).
func (m *Manager) Head() *chain.Head { return m.cur.Load().head }

// SnapshotAge is the age of the current snapshot in seconds (0 without one).
func (m *Manager) SnapshotAge() float64 {
	s := m.Current()
	if s == nil {
		return 0
	}
	return m.clock.Now().Sub(s.created).Seconds()
}

// Publish makes s the current snapshot, together with the head it was built
// on, in one atomic step, and then notifies subscribers: the only way a
// snapshot becomes current. Drivers call it from one goroutine at a time
// (theirs, or the writer's during their Rebase). A snapshot built on a head
// older than the current one is published with the current head, and only
// if it is servable there (onWindow: above the head, on its chain); else
// it is dropped and counted stale.
func (m *Manager) Publish(s *Snapshot) {
	if m.swap(s) {
		m.metrics.snapshot(s)
		m.preconfs.Send(s)
	}
}

// Reanchor makes s current as Publish does, without notifying subscribers:
// s holds pre-confirmations they were already sent, re-anchored on a new
// canonical head (Snapshot.Rebased: a replica's pending block whose parent
// became canonical), so a notification would repeat them.
func (m *Manager) Reanchor(s *Snapshot) { m.swap(s) }

// swap makes s current if it is servable (see Publish).
func (m *Manager) swap(s *Snapshot) bool {
	for {
		old := m.cur.Load()
		next := &state{head: s.head, snap: s}
		if old.head.Seq() > s.head.Seq() {
			next.head = old.head
		}
		if at := onWindow(next.head, s); at != servedOn {
			if at == offChain {
				m.metrics.stale()
			}
			return false
		}
		if m.cur.CompareAndSwap(old, next) {
			return true
		}
	}
}

// SubscribePreconfirmations calls fn with every snapshot published from now
// on (after it became Current): pre-confirmations (Index > 0,
// NewTransactions non-empty) and new pending blocks (Index 0). fn runs on
// the publisher's goroutine and must not block.
func (m *Manager) SubscribePreconfirmations(fn func(*Snapshot)) (unsubscribe func()) {
	return m.preconfs.Subscribe(fn)
}

// Read is one consistent read of the node's state: a canonical Head, the
// store view holding exactly that chain, and the pending snapshot when
// there is one whose anchor is canonical in that view. Close it.
type Read struct {
	Head *chain.Head
	View store.View
	// Snapshot is the pending snapshot, nil without one or when it was
	// stale (its anchor no longer canonical: never served on top of the
	// wrong block).
	Snapshot *Snapshot

	// The header sources Headers and PendingHeaders return, set once by
	// Open and never written after (a read may be shared by the calls of a
	// batch): handing out pointers to them allocates nothing per request.
	headers  chain.ViewHeaders
	pheaders pendingHeaders
}

// Close releases the view.
func (r *Read) Close() { r.View.Close() }

// Headers resolves canonical headers of the read (the Head's window, then
// the view).
func (r *Read) Headers() chain.HeaderSource {
	if r.headers.View == nil { // a Read not made by Open
		return chain.ViewHeaders{Head: r.Head, View: r.View}
	}
	return &r.headers
}

// PendingHeaders resolves the headers of the pending block's ancestors:
// its pending parents' sealed headers (a block built ahead of the canonical
// chain), then the canonical ones. Use it for the pending block's BLOCKHASH
// context; only valid with a Snapshot.
func (r *Read) PendingHeaders() chain.HeaderSource {
	if r.pheaders.snap != r.Snapshot || r.pheaders.snap == nil { // a Read not made by Open
		return pendingHeaders{snap: r.Snapshot, canon: r.Headers()}
	}
	return &r.pheaders
}

// PendingState is the pre-confirmed state: the snapshot's layers (and its
// pending parents') over its anchor's state in the view. Only valid with a
// Snapshot.
func (r *Read) PendingState() (chain.Backend, error) {
	base, err := r.View.StateAt(r.Snapshot.anchor.Number.Uint64())
	if err != nil {
		return nil, fmt.Errorf("pending anchor %d: %w", r.Snapshot.anchor.Number.Uint64(), err)
	}
	return r.Snapshot.State(base), nil
}

// Open opens a read: one atomic load of the (head, snapshot) pair, then a
// reference on the head's store view, which holds exactly that chain. The
// snapshot is verified against the head once more (servable: above the
// head, its chain of pending parents meeting the canonical chain by hash;
// a snapshot is never served on top of the wrong block nor below the head;
// a stale one is dropped from the read and counted). Never waits for the
// writer.
func (m *Manager) Open() (*Read, error) {
	for {
		st := m.cur.Load()
		if m.afterLoad != nil {
			m.afterLoad()
		}
		view, ok := st.head.Acquire()
		if !ok {
			// The head was retired, which happens only after the state
			// moved on (the writer retires a head after its subscribers,
			// this Manager among them, have seen the next), or at stop.
			if m.cur.Load() == st {
				return nil, chain.ErrWriterStopped
			}
			continue
		}
		r := &Read{Head: st.head, View: view, Snapshot: st.snap}
		if st.snap != nil {
			at, err := servable(st.head, view, st.snap)
			if err != nil {
				view.Close()
				return nil, err
			}
			if at != servedOn {
				r.Snapshot = nil
				if at == offChain {
					m.metrics.stale()
				}
			}
		}
		r.headers = chain.ViewHeaders{Head: r.Head, View: r.View}
		if r.Snapshot != nil {
			r.pheaders = pendingHeaders{snap: r.Snapshot, canon: &r.headers}
		}
		return r, nil
	}
}

// servable reports whether snap may be served on head's chain (the window,
// else the head's view): see Snapshot.onChain.
func servable(head *chain.Head, view store.View, snap *Snapshot) (placement, error) {
	return snap.onChain(head.Number(), func(n uint64) (common.Hash, bool, error) {
		if _, h, ok := head.Recent(n); ok {
			return h, true, nil
		}
		h, err := view.CanonicalHash(n)
		if errors.Is(err, store.ErrNotFound) {
			return common.Hash{}, false, nil
		}
		return h, err == nil, err
	})
}

// State opens the state the pool validates against: the pending snapshot
// (its header and pre-confirmed state), or, without one, the head's state
// with the header the next block would get. release closes the read.
func (m *Manager) State() (header *types.Header, state chain.Backend, release func(), err error) {
	r, err := m.Open()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w: %v", ErrNoState, err)
	}
	if r.Snapshot != nil {
		st, err := r.PendingState()
		if err != nil {
			r.Close()
			return nil, nil, nil, fmt.Errorf("%w: %v", ErrNoState, err)
		}
		return r.Snapshot.header, st, r.Close, nil
	}
	st, err := r.View.StateAt(r.Head.Number())
	if err != nil {
		r.Close()
		return nil, nil, nil, fmt.Errorf("%w: %v", ErrNoState, err)
	}
	return NextHeader(m.config, r.Head.Header(), m.clock.Now(), m.next), st, r.Close, nil
}

// PendingParentState is the state the pending block executes on: its
// anchor's state in the view, under its pending parents' layers when it
// sits on pending parents. Only valid with a Snapshot.
func (r *Read) PendingParentState() (chain.Backend, error) {
	base, err := r.View.StateAt(r.Snapshot.anchor.Number.Uint64())
	if err != nil {
		return nil, fmt.Errorf("pending anchor %d: %w", r.Snapshot.anchor.Number.Uint64(), err)
	}
	if p := r.Snapshot.parent; p != nil {
		return p.State(base), nil
	}
	return base, nil
}
