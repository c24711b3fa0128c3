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

// Heads is where reads get the canonical chain from (*chain.Writer).
type Heads interface {
	// OpenHead returns the current head and its store view (Close it).
	OpenHead() (*chain.Head, store.View, error)
}

// Manager holds the current pending snapshot and opens every read of the
// node. One Manager serves a node: a driver (the Sequencer, or a stream
// follower) publishes into it, the rpc layer and the pool read through
// Open.
//
// Current is one atomic load: readers never lock, and a publication never
// waits for readers.
type Manager struct {
	heads   Heads
	config  *params.ChainConfig
	clock   Clock
	next    HeaderParams // the next block's header choices, for reads without a snapshot
	metrics *Metrics
	cur     atomic.Pointer[Snapshot]

	preconfs chain.Feed[*Snapshot]
}

// NewManager returns a Manager over heads with no snapshot (pending reads
// latest until a driver publishes). next describes the header the node's
// next block would get (the sequencer's choices; zero without one): the
// pool validates against it when there is no snapshot. metrics may be nil.
func NewManager(heads Heads, config *params.ChainConfig, next HeaderParams, clock Clock, metrics *Metrics) *Manager {
	if clock == nil {
		clock = SystemClock{}
	}
	return &Manager{heads: heads, config: config, next: next, clock: clock, metrics: metrics}
}

// Current returns the current snapshot, or nil when no driver publishes.
// It may be stale (anchored on a block no longer canonical): reads go
// through Open, which checks.
func (m *Manager) Current() *Snapshot { return m.cur.Load() }

// SnapshotAge is the age of the current snapshot in seconds (0 without one).
func (m *Manager) SnapshotAge() float64 {
	s := m.cur.Load()
	if s == nil {
		return 0
	}
	return m.clock.Now().Sub(s.created).Seconds()
}

// Publish makes s the current snapshot and then notifies subscribers: the
// only way a snapshot becomes current. Drivers call it from one goroutine
// at a time (theirs, or the writer's during their Rebase).
func (m *Manager) Publish(s *Snapshot) {
	m.cur.Store(s)
	m.metrics.snapshot(s)
	m.preconfs.Send(s)
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
}

// Close releases the view.
func (r *Read) Close() { r.View.Close() }

// Headers resolves canonical headers of the read (the Head's window, then
// the view).
func (r *Read) Headers() chain.HeaderSource { return chain.ViewHeaders{Head: r.Head, View: r.View} }

// PendingState is the pre-confirmed state: the snapshot's layers over its
// anchor's state in the view. Only valid with a Snapshot.
func (r *Read) PendingState() (chain.Backend, error) {
	base, err := r.View.StateAt(r.Snapshot.anchor.Number.Uint64())
	if err != nil {
		return nil, fmt.Errorf("pending anchor %d: %w", r.Snapshot.anchor.Number.Uint64(), err)
	}
	return r.Snapshot.State(base), nil
}

// Open opens a read: it loads the current snapshot, THEN the head with its
// view (a snapshot is published only after the head holding its anchor, so
// the head loaded second always has the anchor unless the anchor was
// unwound since), and verifies the snapshot's anchor by hash against the
// canonical chain of that head. A stale snapshot is dropped from the read
// (counted by the stale-snapshot metric) and the read serves the head.
func (m *Manager) Open() (*Read, error) {
	snap := m.cur.Load()
	head, view, err := m.heads.OpenHead()
	if err != nil {
		return nil, err
	}
	r := &Read{Head: head, View: view}
	if snap != nil {
		ok, err := anchored(head, view, snap)
		if err != nil {
			view.Close()
			return nil, err
		}
		if ok {
			r.Snapshot = snap
		} else {
			m.metrics.stale()
		}
	}
	return r, nil
}

// anchored reports whether snap's anchor is canonical in head's chain.
func anchored(head *chain.Head, view store.View, snap *Snapshot) (bool, error) {
	n := snap.anchor.Number.Uint64()
	if n > head.Number() {
		return false, nil
	}
	var hash common.Hash
	if _, h, ok := head.Recent(n); ok {
		hash = h
	} else {
		h, err := view.CanonicalHash(n)
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		hash = h
	}
	return hash == snap.anchorHash, nil
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
