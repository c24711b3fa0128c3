package pending

import (
	"fmt"
	"sync/atomic"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/store"
)

// Viewer opens consistent read views of the store (*store.DB).
type Viewer interface {
	View() (store.View, error)
}

// Manager publishes the current pending snapshot and the events that follow
// each publication. One Manager serves a node: the sequencer publishes into
// it, the rpc layer reads from it (it satisfies rpc.PendingSource) and the
// pool validates against it.
//
// Current is one atomic load: readers never lock, and a publication never
// waits for readers.
type Manager struct {
	db     Viewer
	config *params.ChainConfig
	clock  Clock
	hp     HeaderParams
	cur    atomic.Pointer[Snapshot]

	preconfs feed[*Snapshot]
	seals    feed[*SealEvent]
}

// SealEvent describes a block the sequencer wrote to the store. Receipts
// carry the final block hash (copies of the pending receipts).
type SealEvent struct {
	Block    *types.Block
	Receipts types.Receipts
}

// NewManager returns a Manager over db with no snapshot (pending reads
// latest until a sequencer publishes).
func NewManager(db Viewer, config *params.ChainConfig, clock Clock) *Manager {
	if clock == nil {
		clock = SystemClock{}
	}
	return &Manager{db: db, config: config, clock: clock}
}

// Current returns the current snapshot, or nil when no sequencer runs.
func (m *Manager) Current() *Snapshot { return m.cur.Load() }

// SnapshotAge is the age of the current snapshot in seconds (0 without one).
func (m *Manager) SnapshotAge() float64 {
	s := m.cur.Load()
	if s == nil {
		return 0
	}
	return m.clock.Now().Sub(s.created).Seconds()
}

// SubscribePreconfirmations calls fn with every snapshot published from now
// on (after it became Current): pre-confirmations (Index > 0,
// NewTransactions non-empty) and rebases onto a freshly sealed block (Index
// 0). fn runs on the sequencer goroutine and must not block.
func (m *Manager) SubscribePreconfirmations(fn func(*Snapshot)) (unsubscribe func()) {
	return m.preconfs.subscribe(fn)
}

// SubscribeSeals calls fn with every block sealed from now on, after it was
// written to the store and the pending layer rebased onto it (on Stop there
// is no rebase). fn runs on the sequencer goroutine and must not block.
func (m *Manager) SubscribeSeals(fn func(*SealEvent)) (unsubscribe func()) {
	return m.seals.subscribe(fn)
}

// publish swaps s in and then notifies subscribers.
func (m *Manager) publish(s *Snapshot) {
	m.cur.Store(s)
	m.preconfs.send(s)
}

// State opens the state the pool validates against: the current snapshot
// (its pending header and pre-confirmed state), or, without a snapshot, the
// latest block's state with the header the next block would get. release
// closes the store view.
//
// The snapshot is loaded BEFORE the view is opened (as rpc's Resolve does):
// a snapshot is published only after the store holds its anchor, so the view
// always has it. The reverse order lets a seal land in between and pair an
// old view with a snapshot anchored on a block the view lacks, and the pool
// would then validate against a state older than pending.
func (m *Manager) State() (header *types.Header, state chain.Backend, release func(), err error) {
	snap := m.cur.Load()
	view, err := m.db.View()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w: %v", ErrNoState, err)
	}
	release = func() { view.Close() }
	if snap != nil {
		if base, err := view.StateAt(snap.anchor.Number.Uint64()); err == nil {
			return snap.header, snap.State(base), release, nil
		}
	}
	latest, err := view.Tag(store.TagLatest)
	if err != nil {
		release()
		return nil, nil, nil, fmt.Errorf("%w: %v", ErrNoState, err)
	}
	parent := chain.ViewHeaders{View: view}.HeaderByNumber(latest)
	if parent == nil {
		release()
		return nil, nil, nil, fmt.Errorf("%w: latest header %d missing", ErrNoState, latest)
	}
	st, err := view.StateAt(latest)
	if err != nil {
		release()
		return nil, nil, nil, fmt.Errorf("%w: %v", ErrNoState, err)
	}
	return NextHeader(m.config, parent, m.clock.Now(), m.hp), st, release, nil
}
