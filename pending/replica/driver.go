package replica

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/beacon/engine"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/stream"
	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// Writer is what the driver needs of the node's store writer
// (*chain.Writer): the canonical head, its store view, and head events.
type Writer interface {
	Head() *chain.Head
	OpenHead() (*chain.Head, store.View, error)
	SubscribeHeads(fn func(*chain.HeadEvent)) (unsubscribe func())
}

// Driver follows a pre-confirmation stream: a driver of a pending.Builder
// that replays what a sequencer published, verifies it, and publishes the
// snapshots through the node's pending.Manager. It is the stream client's
// Sink (Payload, Down); the canonical chain arrives through the Writer's
// head events (the chain follower imports it). One goroutine (Start) owns
// the builder and the window; Payload, Down and head events hand it work.
type Driver struct {
	cfg     Config
	exec    *chain.Executor
	w       Writer
	mgr     *pending.Manager
	clock   pending.Clock
	metrics *Metrics
	log     zerolog.Logger

	in        chan event
	headc     chan struct{}
	quit      chan struct{}
	done      chan struct{}
	startOnce sync.Once
	stopOnce  sync.Once
	unsub     func()
	// alive is the clock time (UnixNano) the stream's connection last
	// proved alive without a message (Alive; 0: never).
	alive atomic.Int64

	// Owned by the loop.
	b     *pending.Builder
	win   []*entry // ascending, consecutive numbers; only the last may be open
	head  *chain.Head
	last  time.Time // clock time of the last message
	down  bool      // no stream (yet, or Down was called): the window is kept, served until MaxAge
	stale bool      // no message for MaxAge: pending answers the canonical head
	held  []event   // the newest block beyond the window, from its index 0 (a replica catching up)
}

// The stream client tells the driver when the connection proves alive
// without a message (Alive).
var _ stream.Liveness = (*Driver)(nil)

// maxHeld bounds the messages held for a block beyond the window.
const maxHeld = 1024

// entry is one pending block of the window: what the stream said about it
// (kept so that it can be rebuilt on another parent) and the snapshot the
// driver built (nil: not built yet, its parent is not known).
type entry struct {
	number       uint64
	id           engine.PayloadID
	base         *stream.Base
	index        uint64
	txs          chaintypes.Txs
	cuts         []int    // len(txs) after each message, index 0 first: a rebuild cuts where the stream did
	sums         []totals // each message's announced totals, index 0 first: a replayed message is compared with them
	gasUsed      uint64
	receiptsRoot common.Hash
	blobGasUsed  *uint64 // the last message's diff.blob_gas_used (nil: absent)
	// stateRoot and blockHash are the last message's diff.state_root and
	// diff.block_hash (zero: not announced, as OP subblocks and
	// --stream.roots=off send them).
	stateRoot, blockHash common.Hash
	// checks are the announced state roots and block hashes of the
	// messages published since the last settleRoots, to compare with the
	// replica's own once computed (the builder defers them: DeferRoots).
	checks []rootCheck
	// rootFailed: the block's state root could not be computed (logged
	// once: settleRoots).
	rootFailed bool
	snap       *pending.Snapshot
	closed     bool // the next block opened: final
	// frozen: a message of the block was lost (a gap, a lower index that
	// differs, another payload id mid-block) or the stream went down: its
	// snapshot so far (a prefix of what the sequencer pre-confirmed) stays
	// served, it receives nothing more, and a block opening on it waits
	// for its canonical parent.
	frozen bool
	// refused names why the block is not replicated (post_exec_tx): never
	// built nor served; the next block waits for its canonical parent.
	refused string
	// announced is the hash the next block announced for this one when
	// it sealed to another (ErrIncomplete; zero otherwise): when the
	// canonical block of that hash arrives, the same transactions there
	// mean a real disagreement (counted, parent_hash), more mean the
	// block's last messages never came.
	announced common.Hash
}

// rootCheck is what one message announced about the state after it (a
// non-zero diff.state_root and diff.block_hash) and the snapshot the
// replica built for it, published before its root was computed.
type rootCheck struct {
	snap       *pending.Snapshot
	index      uint64
	root, hash common.Hash
}

// totals is what one message announced about its block so far.
type totals struct {
	txs          int
	gasUsed      uint64
	receiptsRoot common.Hash
}

// receiving reports whether the entry still takes its block's messages.
func (e *entry) receiving() bool { return !e.frozen && e.refused == "" }

type event struct {
	p        *stream.Payload
	received time.Time
	down     error
	sync     chan struct{}
}

// New returns a driver publishing into mgr, building with exec on the
// chain w holds. clock drives the staleness check (nil: the wall clock);
// metrics may be nil. Call Start.
func New(cfg Config, w Writer, exec *chain.Executor, mgr *pending.Manager, clock pending.Clock, metrics *Metrics, log zerolog.Logger) (*Driver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if clock == nil {
		clock = pending.SystemClock{}
	}
	return &Driver{
		cfg: cfg, exec: exec, w: w, mgr: mgr, clock: clock, metrics: metrics,
		log: log.With().Str("component", "replica").Logger(),
		in:  make(chan event, cfg.Queue), headc: make(chan struct{}, 1),
		quit: make(chan struct{}), done: make(chan struct{}),
		b: newBuilder(exec), down: true,
	}, nil
}

// newBuilder is the driver's builder: its cuts are published before their
// state roots are computed (pending.Builder.DeferRoots; settleRoots).
func newBuilder(exec *chain.Executor) *pending.Builder {
	b := pending.NewBuilder(exec)
	b.DeferRoots()
	return b
}

// Start subscribes to head events and starts the loop.
func (d *Driver) Start() {
	d.startOnce.Do(func() {
		d.unsub = d.w.SubscribeHeads(func(*chain.HeadEvent) {
			select {
			case d.headc <- struct{}{}:
			default:
			}
		})
		d.metrics.fallingBack(true)
		t := d.clock.NewTicker(max(d.cfg.MaxAge/4, time.Millisecond))
		go d.loop(t)
	})
}

// Stop ends the loop and releases the builder.
func (d *Driver) Stop() {
	d.stopOnce.Do(func() { close(d.quit) })
	d.startOnce.Do(func() { close(d.done) })
	<-d.done
	if d.unsub != nil {
		d.unsub()
	}
}

// Payload hands a decoded message to the driver (stream.Sink). It blocks
// while Config.Queue messages wait, and returns at once after Stop.
func (d *Driver) Payload(p *stream.Payload, received time.Time) {
	d.send(event{p: p, received: received})
}

// Down tells the driver the stream was lost or went stale (stream.Sink):
// the window is dropped and pending answers the canonical head until the
// next block opens.
func (d *Driver) Down(err error) {
	if err == nil {
		err = errors.New("stream down")
	}
	d.send(event{down: err})
}

// Alive tells the driver that the stream's connection is alive although
// no message came (stream.Liveness: the server answered the client's
// ping). A sequencer with nothing to pre-confirm sends nothing until its
// next block's index 0, which may be seconds away (tipnode dev --block.time
// 10s, interval mining), and what it pre-confirmed stays true: such a
// stream is not stale (checkAge). Safe to call from any goroutine.
func (d *Driver) Alive(time.Time) { d.alive.Store(d.clock.Now().UnixNano()) }

// Sync waits until every message handed over before the call is handled
// (tests).
func (d *Driver) Sync() {
	c := make(chan struct{})
	d.send(event{sync: c})
	select {
	case <-c:
	case <-d.done:
	}
}

func (d *Driver) send(ev event) {
	select {
	case d.in <- ev:
	case <-d.done:
	}
}

func (d *Driver) loop(t pending.Ticker) {
	defer close(d.done)
	defer t.Stop()
	defer d.b.Close()
	for {
		select {
		case <-d.quit:
			return
		case ev := <-d.in:
			d.syncHead()
			switch {
			case ev.sync != nil:
				d.settleRoots()
				close(ev.sync)
			case ev.down != nil:
				d.onDown(ev.down)
			default:
				d.onPayload(ev.p, ev.received)
			}
		case <-d.headc:
			d.syncHead()
		case <-t.C():
			d.syncHead()
			d.checkAge()
		}
		if len(d.in) == 0 {
			d.settleRoots()
		}
	}
}

// settleRoots computes the state root of the open block's current
// snapshot, which the driver published before computing it (the builder
// defers roots), and compares the roots its messages announced with the
// replica's own (verifyRoots): a disagreement drops the block, as one in
// gas used or receipts root does, only after it was served. The loop
// calls it whenever no event waits, so that the roots are computed between
// messages, never between a message and its publication; a reader asking
// for a root first computes it itself (or waits for the driver's).
//
// A failed computation (a store read error, a corrupt trie node: the
// snapshot's RootErr) is logged at error level and counted
// (root_failures_total), once per block (the
// block's later snapshots build on the failed one and fail with it): the
// block stays served, without a state root (readers of the root get the
// error), and the seal computes the block's root from its whole diff.
func (d *Driver) settleRoots() {
	e := d.top()
	if e == nil || e.snap == nil {
		return
	}
	if err := e.snap.RootErr(); err != nil && !e.rootFailed {
		e.rootFailed = true
		d.metrics.rootFailure()
		d.log.Error().Err(err).Uint64("block", e.number).Uint64("index", e.index).
			Msg("cannot compute the pending block's state root: served without one (pending's stateRoot, hash and eth_getProof at pending answer this error)")
	}
	if err := d.verifyRoots(e); err != nil {
		d.log.Error().Err(err).Uint64("block", e.number).Uint64("index", e.index).Msg("dropping the pending block")
		d.dropTop("mismatch")
	}
}

// verifyRoots compares every state root and block hash e's messages
// announced since the last call with the replica's own for the snapshot
// it published for them (computing it if need be), and forgets them. The
// first disagreement is counted (mismatches_total state_root, block_hash)
// and returned (ErrMismatch). Nothing is compared when the replica has no
// state root (a store that keeps no trie).
func (d *Driver) verifyRoots(e *entry) error {
	checks := e.checks
	e.checks = nil
	for _, c := range checks {
		root, ok := c.snap.StateRoot()
		if !ok {
			continue
		}
		if root != c.root {
			d.metrics.mismatch("state_root")
			return fmt.Errorf("%w: block %d index %d: state root %s, the sequencer's %s", ErrMismatch, e.number, c.index, root.Hex(), c.root.Hex())
		}
		if got := c.snap.BlockHash(); c.hash != (common.Hash{}) && got != c.hash {
			d.metrics.mismatch("block_hash")
			return fmt.Errorf("%w: block %d index %d: block hash %s, the sequencer's %s", ErrMismatch, e.number, c.index, got.Hex(), c.hash.Hex())
		}
	}
	return nil
}

func (d *Driver) serving() bool { return !d.stale }

func (d *Driver) top() *entry {
	if len(d.win) == 0 {
		return nil
	}
	return d.win[len(d.win)-1]
}

func (d *Driver) seqState() seqState {
	st := seqState{head: d.head.Number(), window: uint64(d.cfg.Window)}
	if e := d.top(); e != nil && !e.closed {
		st.open, st.number, st.index, st.id, st.frozen = true, e.number, e.index, e.id, !e.receiving()
	}
	return st
}

// onDown keeps the window: what it pre-confirmed stays true, and stays
// served until MaxAge passes without a message (checkAge). The stream
// resumes where it resumes: the open block's next index continues it, a
// replay of its messages is compared with them, a later index freezes it.
func (d *Driver) onDown(err error) {
	if !d.down {
		d.log.Warn().Err(err).Msg("pre-confirmation stream down: pending keeps what was pre-confirmed until the stream is stale")
	}
	d.down = true
}

// checkAge falls back to the canonical head when for MaxAge no message
// came and the connection did not prove alive (Alive): a stream that
// stopped, not one with nothing to say. A connection that answers pings
// with a silent sequencer keeps the window served: its blocks leave it
// as the canonical chain reaches them, so pending is never older than
// latest.
func (d *Driver) checkAge() {
	if d.stale || d.last.IsZero() {
		return
	}
	latest := d.last
	if a := d.alive.Load(); a > latest.UnixNano() {
		latest = time.Unix(0, a)
	}
	if d.clock.Now().Sub(latest) <= d.cfg.MaxAge {
		return
	}
	d.stale = true
	d.metrics.fallingBack(true)
	d.mgr.Withdraw()
	d.log.Warn().Stringer("silent", d.clock.Now().Sub(d.last)).Msg("pre-confirmation stream stale: pending answers the canonical head")
}

func (d *Driver) onPayload(p *stream.Payload, received time.Time) {
	d.last = d.clock.Now()
	if d.down && !d.stale {
		d.metrics.fallingBack(false) // the first message
	}
	d.down = false
	if d.stale {
		d.stale = false
		d.metrics.fallingBack(false)
		// Resuming after silence: what the window holds is served again
		// (a message that publishes nothing, like a duplicate, still
		// proves the stream alive).
		if t := d.top(); t != nil && t.snap != nil && t.refused == "" {
			d.mgr.Publish(t.snap)
		}
	}
	if p.Metadata.Absent && p.Index > 0 {
		// A trimmed producer sends no metadata: the block is the one its
		// payload id opened.
		cp := *p
		switch t := d.top(); {
		case t != nil && t.id == p.PayloadID:
			cp.Metadata.BlockNumber = t.number
		case len(d.held) > 0 && d.held[0].p.PayloadID == p.PayloadID:
			cp.Metadata.BlockNumber = d.held[0].p.Metadata.BlockNumber
		default:
			d.metrics.message(vNotStarted)
			return
		}
		p = &cp
	}
	v := classify(d.seqState(), p)
	if v == vReplay {
		v = d.replayed(p)
	}
	if (v == vRestart || v == vLowerIndex) && d.recut(p) {
		v = vResume
	}
	d.metrics.message(v)
	switch v {
	case vDuplicate, vFrozen:
		return
	case vBeyondWindow:
		d.hold(p, received)
		return
	case vNotStarted, vCanonical, vClosed:
		d.log.Debug().Uint64("block", p.Metadata.BlockNumber).Uint64("index", p.Index).Uint64("head", d.head.Number()).
			Stringer("verdict", v).Msg("pre-confirmation dropped")
		return
	case vGap, vLowerIndex, vMalformed:
		d.freeze(v.String(), p)
		return
	case vNextBlock, vRestart, vAppend, vResume:
		if len(d.held) > 0 && d.held[0].p.Metadata.BlockNumber <= p.Metadata.BlockNumber {
			d.held = nil // the stream moved on
		}
	}
	switch v {
	case vRestart:
		// A rebuilt payload supersedes the open block: what it
		// pre-confirmed is revoked. The snapshot it published stays
		// current until the new index 0's replaces it (or is withdrawn
		// when that one cannot be built).
		d.popTop()
		d.metrics.reset(v.String())
		d.openBlock(p, received)
		if t := d.top(); t == nil || t.number != p.Metadata.BlockNumber || t.snap == nil {
			d.mgr.Withdraw()
		}
	case vNextBlock:
		d.openBlock(p, received)
	case vAppend:
		d.appendTo(p, received)
	case vResume:
		d.resume(p, received)
	}
}

// replayed resolves a message of the open block at an index it already
// had (same payload id): identical totals to what that index said then is a
// duplicate (a relay replaying the block after a reconnect, or the same
// message twice), ignored; anything else is a rebuilt payload that reused
// the payload id: at index 0 it restarts the block, later it freezes it.
func (d *Driver) replayed(p *stream.Payload) verdict {
	e := d.top()
	if p.Index >= uint64(len(e.sums)) {
		return vLowerIndex
	}
	was := e.sums[p.Index]
	from := 0
	if p.Index > 0 {
		from = e.cuts[p.Index-1]
	}
	same := was.gasUsed == uint64(p.Diff.GasUsed) && was.receiptsRoot == p.Diff.ReceiptsRoot && was.txs == len(p.Diff.Transactions) &&
		(p.Index > 0 || (p.Base != nil && p.Base.ParentHash == e.base.ParentHash && p.Base.Timestamp == e.base.Timestamp &&
			p.Base.BaseFeePerGas.ToInt().Cmp(e.base.BaseFeePerGas.ToInt()) == 0))
	if same {
		for i, raw := range p.Diff.Transactions {
			if tx := e.txs[from+i]; tx == nil || !sameTx(tx, raw) {
				same = false
				break
			}
		}
	}
	switch {
	case same:
		return vDuplicate
	case p.Index == 0:
		return vRestart
	default:
		return vLowerIndex
	}
}

// freeze ends the open block's sequence after a loss (cause: gap,
// lower_index, malformed): its snapshot so far stays served (everything
// in it was pre-confirmed), it receives nothing more, and the next block
// opening on it waits for its canonical parent. Logged once per block.
func (d *Driver) freeze(cause string, p *stream.Payload) {
	e := d.top()
	if e == nil || e.closed || !e.receiving() {
		return
	}
	e.frozen = true
	d.metrics.frozen(cause)
	d.log.Info().Uint64("block", e.number).Uint64("index", p.Index).Uint64("last", e.index).Str("cause", cause).
		Msg("pre-confirmation out of sequence: the pending block keeps what it has, the next block waits for it to be canonical")
}

// hold keeps the messages of the newest block beyond the window, from its
// index 0, while the canonical head catches up (a replica that just
// started, or whose follower fell behind): when the head comes within the
// window they are replayed (releaseHeld), so that the block is served at
// once instead of from the next block's index 0. Anything else beyond the
// window is dropped.
func (d *Driver) hold(p *stream.Payload, received time.Time) {
	ev := event{p: p, received: received}
	switch {
	case p.Index == 0:
		d.held = append(d.held[:0], ev)
	case len(d.held) > 0 && len(d.held) < maxHeld && d.held[0].p.PayloadID == p.PayloadID &&
		d.held[len(d.held)-1].p.Index+1 == p.Index:
		d.held = append(d.held, ev)
	default:
		d.held = nil
	}
}

// releaseHeld replays the held messages once their block is within the
// window (dropped once it is canonical).
func (d *Driver) releaseHeld() {
	if len(d.held) == 0 {
		return
	}
	n := d.held[0].p.Metadata.BlockNumber
	switch {
	case n <= d.head.Number():
		d.held = nil
	case n <= d.head.Number()+uint64(d.cfg.Window):
		held := d.held
		d.held = nil
		d.log.Debug().Uint64("block", n).Int("messages", len(held)).Msg("replaying a block held while the chain caught up")
		for _, ev := range held {
			d.onPayload(ev.p, ev.received)
		}
	}
}

func decodeTxs(raw []hexutil.Bytes) (chaintypes.Txs, error) {
	txs := make(chaintypes.Txs, len(raw))
	for i, b := range raw {
		tx, err := chaintypes.DecodeTx(b)
		if err != nil {
			return nil, fmt.Errorf("%w: transaction %d: %v", ErrExecution, i, err)
		}
		txs[i] = tx
	}
	return txs, nil
}

// openBlock opens the block p's index 0 announces: on the window's top
// block when it is its parent (finished here and checked against the
// announced parent hash), else on the canonical head when that is its
// parent, else it waits, unbuilt, for its parent to become canonical.
func (d *Driver) openBlock(p *stream.Payload, received time.Time) {
	n := p.Metadata.BlockNumber
	txs, err := decodeTxs(p.Diff.Transactions)
	if err != nil {
		d.log.Warn().Err(err).Uint64("block", n).Msg("dropping a pending block")
		d.metrics.reset("execution")
		return
	}
	e := &entry{number: n, id: p.PayloadID, base: p.Base, txs: txs, cuts: []int{len(txs)}, gasUsed: uint64(p.Diff.GasUsed), receiptsRoot: p.Diff.ReceiptsRoot,
		sums: []totals{{len(txs), uint64(p.Diff.GasUsed), p.Diff.ReceiptsRoot}}, blobGasUsed: (*uint64)(p.Diff.BlobGasUsed),
		stateRoot: p.Diff.StateRoot, blockHash: p.Diff.BlockHash}
	d.metrics.streamLag(received.Sub(time.Unix(int64(p.Base.Timestamp), 0)))
	parent := d.top()
	if parent != nil && parent.number != n-1 {
		d.dropAll("disconnected")
		parent = nil
	}
	if parent != nil {
		// The roots its last messages announced, before it is finished
		// and built on (the seal computes what is left of its trie).
		if err := d.verifyRoots(parent); err != nil {
			d.log.Error().Err(err).Uint64("block", parent.number).Msg("dropping the pending block")
			d.dropTop("mismatch")
			parent = nil
		}
	}
	var parentSnap *pending.Snapshot
	if parent != nil {
		parent.closed = true
		if parent.snap != nil && parent.receiving() {
			final, err := parent.snap, error(nil)
			fresh := !final.Final()
			if fresh {
				final, _, err = d.b.Finish(d.clock.Now())
			}
			if err != nil {
				d.log.Error().Err(err).Uint64("block", parent.number).Msg("finishing a pending block failed")
				d.dropAll("execution")
			} else if final, err = d.sealedParent(parent, final, fresh, p.Base.ParentHash); errors.Is(err, ErrIncomplete) {
				d.incomplete(parent, p.Base.ParentHash, err)
			} else if err != nil {
				d.log.Error().Err(err).Msg("dropping the pending window")
				d.dropAll("parent_hash")
			} else {
				parent.snap, parentSnap = final, final
			}
		}
	}
	if refused := refusal(p); refused != "" {
		d.refuse(e, refused)
	}
	d.win = append(d.win, e)
	d.metrics.window(len(d.win))
	t0 := time.Now()
	h, view, err := d.w.OpenHead()
	if err != nil {
		d.log.Error().Err(err).Msg("open head")
		d.dropTop("execution")
		return
	}
	var (
		snap   *pending.Snapshot
		parHdr *types.Header
	)
	switch {
	case e.refused != "":
		view.Close()
		return
	case parentSnap != nil:
		parHdr = parentSnap.Header()
	case len(d.win) == 1 && h.Number() == n-1 && h.Hash() == p.Base.ParentHash:
		parHdr = h.Header()
	default:
		view.Close()
		d.log.Debug().Uint64("block", n).Uint64("head", h.Number()).Msg("pending block waits for its parent")
		return
	}
	tmpl, err := headerFrom(d.exec, parHdr, p.Base)
	if err == nil {
		if parentSnap != nil {
			snap, err = d.b.OpenOn(h, view, parentSnap, tmpl, d.clock.Now())
		} else {
			snap, err = d.b.Open(h, view, tmpl, d.clock.Now())
		}
	}
	if err != nil {
		view.Close()
		d.log.Error().Err(err).Uint64("block", n).Msg("opening a pending block failed")
		d.dropTop(d.headerCause(err))
		return
	}
	e.snap = snap
	d.execute(e, txs, received, t0, &p.Metadata)
}

// sameTx reports whether raw (EIP-2718 bytes) is tx (whose hash is the
// keccak of those bytes for every type).
func sameTx(tx chaintypes.Tx, raw []byte) bool { return tx.Hash() == crypto.Keccak256Hash(raw) }

// refusal names why a message's block cannot be replicated ("" when it
// can): a Lagoon post-execution transaction (diff.post_exec_tx, type 0x7D)
// refunds gas after the block's transactions, changing their receipts and
// balances by rules whose specification is not final.
func refusal(p *stream.Payload) string {
	if len(p.Diff.PostExecTx) > 0 {
		return "post_exec_tx"
	}
	return ""
}

// refuse stops replicating e's block (never built nor served from now on),
// counted and logged once.
func (d *Driver) refuse(e *entry, reason string) {
	if e.refused != "" {
		return
	}
	e.refused, e.snap = reason, nil
	d.metrics.unsupported(reason)
	d.log.Warn().Uint64("block", e.number).Str("reason", reason).
		Msg("pending block not replicated: it carries what this node does not execute; pending answers up to its parent until it is canonical")
}

// sealedParent checks the parent block's final snapshot against the hash
// the next block announces for it (announced) and returns the snapshot the
// next block builds on.
//
// When the final header carries a state root (the state commitment), or
// the canonical chain carries none (an upstream that computes no roots,
// like tipnode's own sequencer), or cannot tell yet (the canonical head is
// the genesis), the hash is taken as the block's exact commitment: another
// announced hash is a mismatch. Otherwise (OP subblocks and
// flashblocks send state_root and block_hash zero, and no root is computed
// here) the sealed hash cannot equal the sequencer's: a freshly finished
// block adopts the announced hash (pending.Snapshot.Adopted), so that the
// next block builds on it at once, and is verified against the canonical
// block of that hash when it arrives (verifyCanonical). A block that
// adopted a hash already and is named with another is a mismatch.
func (d *Driver) sealedParent(e *entry, final *pending.Snapshot, fresh bool, announced common.Hash) (*pending.Snapshot, error) {
	if final.Hash() == announced {
		return final, nil
	}
	// Whether the upstream computes state roots shows on its canonical
	// blocks; on a head at genesis it does not show yet: exact then.
	exact := final.Header().Root != (common.Hash{}) || d.head.Number() == 0 || d.head.Header().Root == (common.Hash{})
	if fresh && !exact {
		d.metrics.parent("adopted")
		d.log.Debug().Uint64("block", e.number).Str("sealed", final.Hash().Hex()).Str("announced", announced.Hex()).
			Msg("pending block takes the announced hash; verified when canonical")
		return final.Adopted(announced), nil
	}
	if fresh {
		// Every message of the block verified (gas used, receipts root),
		// so a lost tail is the likely cause; the canonical block tells
		// (verifyLeaving).
		return nil, fmt.Errorf("%w: block %d sealed to %s, the next block announces %s", ErrIncomplete, e.number, final.Hash().Hex(), announced.Hex())
	}
	d.metrics.mismatch("parent_hash")
	return nil, fmt.Errorf("%w: block %d sealed to %s, the next block announces %s", ErrMismatch, e.number, final.Hash().Hex(), announced.Hex())
}

// incomplete freezes e, a block that sealed to another hash than the one
// the next block announces for it (ErrIncomplete): the stream may have
// lost its last messages (or delivered them after the next block's index
// 0), and says nothing that would tell this from a disagreement. What it
// pre-confirmed (every message verified) stays served; the blocks above
// it wait for it to be canonical and are rebuilt on it, as after a gap.
// The canonical block of the announced hash decides (verifyLeaving): the
// same transactions there are a mismatch (parent_hash), counted then.
func (d *Driver) incomplete(e *entry, announced common.Hash, err error) {
	e.frozen, e.announced = true, announced
	d.metrics.frozen("incomplete")
	d.log.Info().Err(err).Uint64("block", e.number).Uint64("last", e.index).
		Msg("pending block sealed to another hash than announced (its last messages may be lost): the next block waits for it to be canonical")
}

// verifyCanonical compares a pending block that adopted the hash of
// canonical block canon (same number and hash) with it: its sealed header,
// with canon's state root when it computed none, must hash to canon's
// hash, which covers its transactions, receipts root, gas used, logs
// bloom, withdrawals root, blob gas and the context. It returns the first
// field that differs ("" when equal).
func verifyCanonical(ours, canon *types.Header, canonHash common.Hash) string {
	h := types.CopyHeader(ours)
	if h.Root == (common.Hash{}) {
		h.Root = canon.Root
	}
	if h.Hash() == canonHash {
		return ""
	}
	eq := func(a, b *common.Hash) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	equ := func(a, b *uint64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	switch {
	case h.TxHash != canon.TxHash:
		return "transactions"
	case h.ReceiptHash != canon.ReceiptHash:
		return "receipts_root"
	case h.GasUsed != canon.GasUsed:
		return "gas_used"
	case h.Root != canon.Root:
		return "state_root"
	case h.Bloom != canon.Bloom:
		return "logs_bloom"
	case !eq(h.WithdrawalsHash, canon.WithdrawalsHash):
		return "withdrawals_root"
	case !equ(h.BlobGasUsed, canon.BlobGasUsed):
		return "blob_gas_used"
	case !eq(h.RequestsHash, canon.RequestsHash):
		return "requests_hash"
	}
	return "header"
}

// headerCause counts a refused header: an OP header rule the announced
// context breaks is a mismatch (base_fee, extra_data), anything else an
// execution failure.
func (d *Driver) headerCause(err error) string {
	if !errors.Is(err, ErrMismatch) {
		return "execution"
	}
	for _, field := range []string{"base_fee", "extra_data"} {
		if strings.Contains(err.Error(), ": "+field+": ") {
			d.metrics.mismatch(field)
		}
	}
	return "mismatch"
}

// appendTo adds p's transactions to the open block.
func (d *Driver) appendTo(p *stream.Payload, received time.Time) {
	e := d.top()
	if refused := refusal(p); refused != "" {
		// What it published is no longer what the block holds: pending
		// answers the newest block below it (its pending parent, else
		// the canonical head).
		d.refuse(e, refused)
		d.b.Close()
		if n := len(d.win); n > 1 && d.win[n-2].snap != nil && d.win[n-2].snap.Final() {
			d.mgr.Reanchor(d.win[n-2].snap)
		} else {
			d.mgr.Withdraw()
		}
		return
	}
	txs, err := decodeTxs(p.Diff.Transactions)
	if err != nil {
		d.log.Warn().Err(err).Uint64("block", e.number).Uint64("index", p.Index).Msg("dropping the pending block")
		d.dropTop("execution")
		return
	}
	if e.covering() {
		d.cover(e, p, txs, received)
		return
	}
	e.index, e.txs = p.Index, append(e.txs, txs...)
	e.cuts = append(e.cuts, len(e.txs))
	e.sums = append(e.sums, totals{len(txs), uint64(p.Diff.GasUsed), p.Diff.ReceiptsRoot})
	e.gasUsed, e.receiptsRoot = uint64(p.Diff.GasUsed), p.Diff.ReceiptsRoot
	e.blobGasUsed = (*uint64)(p.Diff.BlobGasUsed)
	e.stateRoot, e.blockHash = p.Diff.StateRoot, p.Diff.BlockHash
	d.metrics.streamLag(received.Sub(time.Unix(int64(e.base.Timestamp), 0)))
	if e.snap == nil {
		return // recorded; executed when its parent is known
	}
	d.execute(e, txs, received, time.Now(), &p.Metadata)
}

// execute runs txs (only the message's new ones) on the open block, checks
// the cumulative totals against e's and publishes the snapshot; on any
// disagreement the block is dropped and nothing is published. Once
// published, the message's metadata (if any) is cross-checked.
func (d *Driver) execute(e *entry, txs chaintypes.Txs, received, t0 time.Time, meta *stream.Metadata) {
	snap, err := d.apply(e, txs)
	d.metrics.executed(time.Since(t0))
	if err != nil {
		if n := len(d.win); n > 1 && d.win[n-1] == e && d.win[n-2].snap != nil && d.win[n-2].snap.HashAdopted() {
			// Built on a parent whose hash it adopted: the parent, not
			// this block, is the likely culprit (its last messages never
			// came). The block waits for its canonical parent, still
			// recording its messages, and is rebuilt on it; meanwhile
			// pending keeps what verified (its last published snapshot:
			// transactions whose receipts matched the sequencer's, which
			// therefore did not depend on what the parent missed).
			d.log.Info().Err(err).Uint64("block", e.number).Uint64("index", e.index).
				Msg("pending block does not verify on its adopted parent: it waits for the canonical parent")
			d.metrics.reset("adopted_parent")
			e.snap = nil
			d.b.Close()
			return
		}
		d.log.Error().Err(err).Uint64("block", e.number).Uint64("index", e.index).Msg("dropping the pending block")
		if errors.Is(err, ErrMismatch) {
			d.dropTop("mismatch")
		} else {
			d.dropTop("execution")
		}
		return
	}
	e.snap = snap
	if d.serving() {
		d.mgr.Publish(snap)
		d.metrics.published(time.Since(received))
	}
	d.crossCheck(e, snap, meta)
}

// apply adds txs to the builder's open block and verifies the totals
// against the stream's (e.gasUsed, e.receiptsRoot).
func (d *Driver) apply(e *entry, txs chaintypes.Txs) (*pending.Snapshot, error) {
	for _, tx := range txs {
		if _, err := d.b.Add(tx); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrExecution, tx.Hash().Hex(), err)
		}
	}
	var snap *pending.Snapshot
	if len(e.cuts) == 1 {
		// Index 0 carries the block's first transactions (an OP block's
		// deposits): its snapshot stays index 0, as on the sequencer.
		snap = d.b.CutOpen(d.clock.Now())
	} else {
		snap = d.b.Cut(d.clock.Now())
	}
	if snap == nil {
		snap = d.b.Current()
	}
	if got := snap.ExecHeader().GasUsed; got != e.gasUsed {
		d.metrics.mismatch("gas_used")
		return nil, fmt.Errorf("%w: block %d index %d: gas used %d, the sequencer's %d", ErrMismatch, e.number, e.index, got, e.gasUsed)
	}
	if got := snap.ReceiptsRoot(); got != e.receiptsRoot {
		d.metrics.mismatch("receipts_root")
		return nil, fmt.Errorf("%w: block %d index %d: receipts root %s, the sequencer's %s", ErrMismatch, e.number, e.index, got.Hex(), e.receiptsRoot.Hex())
	}
	// diff.blob_gas_used: the block's blob gas used so far, on an OP chain
	// from Jovian its DA footprint (the header's blobGasUsed there).
	if got := snap.ExecHeader().BlobGasUsed; e.blobGasUsed != nil && got != nil && *got != *e.blobGasUsed {
		d.metrics.mismatch("blob_gas_used")
		return nil, fmt.Errorf("%w: block %d index %d: blob gas used (DA footprint) %d, the sequencer's %d", ErrMismatch, e.number, e.index, *got, *e.blobGasUsed)
	}
	// An announced state root and block hash (a tipnode sequencer's
	// stream) are checked against the replica's own when it computes them
	// (a store with a state trie): after the snapshot is published
	// (settleRoots, verifyRoots).
	if e.stateRoot != (common.Hash{}) {
		e.checks = append(e.checks, rootCheck{snap: snap, index: e.index, root: e.stateRoot, hash: e.blockHash})
	}
	return snap, nil
}

// replay re-executes e's transactions on a freshly opened block, cut
// where the stream's messages were (one snapshot per message: the last
// one has the message's index and new transactions, so a relay
// re-publishing it sends the same bytes as before), and verifies the
// totals.
func (d *Driver) replay(e *entry) ([]*pending.Snapshot, error) {
	e.checks = nil // a build superseded: this one checks the last message's again
	var cuts []*pending.Snapshot
	from := 0
	for i, to := range e.cuts[:len(e.cuts)-1] {
		for _, tx := range e.txs[from:to] {
			if _, err := d.b.Add(tx); err != nil {
				return nil, fmt.Errorf("%w: %s: %v", ErrExecution, tx.Hash().Hex(), err)
			}
		}
		var s *pending.Snapshot
		if i == 0 { // index 0, with its transactions if it had any
			if s = d.b.CutOpen(d.clock.Now()); s == nil {
				s = d.b.Current()
			}
		} else {
			s = d.b.Cut(d.clock.Now())
		}
		if s != nil {
			cuts = append(cuts, s)
		}
		from = to
	}
	last, err := d.apply(e, e.txs[from:])
	if err != nil {
		return nil, err
	}
	if len(cuts) == 0 || last != cuts[len(cuts)-1] {
		cuts = append(cuts, last)
	}
	return cuts, nil
}

// dropTop drops the window's newest block (the one being received).
func (d *Driver) dropTop(cause string) {
	if len(d.win) == 0 {
		return
	}
	d.popTop()
	d.mgr.Withdraw()
	d.metrics.reset(cause)
}

// popTop removes the window's newest block without withdrawing what is
// served; its parent, if any, becomes the open block again only through a
// new index 0 (it stays closed).
func (d *Driver) popTop() {
	if len(d.win) == 0 {
		return
	}
	d.win = d.win[:len(d.win)-1]
	d.b.Close()
	d.metrics.window(len(d.win))
}

// dropAll drops the whole window.
func (d *Driver) dropAll(cause string) {
	if len(d.win) == 0 {
		return
	}
	d.win = nil
	d.b.Close()
	d.mgr.Withdraw()
	d.metrics.reset(cause)
	d.metrics.window(0)
}

// syncHead brings the window onto the writer's current head: blocks the
// head reached leave the window; a pending block sitting on the new head
// (and the ones above it) is rebased without re-executing when the head
// is the very block it was built on, else rebuilt on the head (its
// transactions re-executed and verified again); a block announced on
// another parent than the new head, or a reorg, drops the window.
func (d *Driver) syncHead() {
	if d.moveHead() {
		d.releaseHeld()
	}
}

// moveHead is syncHead without the held messages; it reports whether the
// head moved.
func (d *Driver) moveHead() bool {
	h := d.w.Head()
	if h == d.head {
		return false
	}
	old := d.head
	d.head = h
	if old == nil || len(d.win) == 0 {
		return true
	}
	if _, hash, ok := h.Recent(old.Number()); !ok || hash != old.Hash() {
		d.dropAll("reorg")
		return true
	}
	i := 0
	for i < len(d.win) && d.win[i].number <= h.Number() {
		i++
	}
	wrong := d.verifyLeaving(h, i)
	if i > 0 {
		if i == len(d.win) {
			d.b.Close() // the block it held is canonical now
		}
		d.win = d.win[i:]
		d.metrics.window(len(d.win))
	}
	if wrong && len(d.win) > 0 {
		// Built on a block that was not the canonical one: rebuilt on it.
		for _, e := range d.win {
			e.snap = nil
		}
		d.b.Close()
		d.mgr.Withdraw()
		d.metrics.reset("canonical_mismatch")
	}
	if len(d.win) == 0 || d.win[0].number != h.Number()+1 {
		return true
	}
	if d.win[0].base.ParentHash != h.Hash() {
		d.log.Warn().Uint64("block", h.Number()).Str("canonical", h.Hash().Hex()).Str("announced", d.win[0].base.ParentHash.Hex()).
			Msg("canonical block differs from the pending blocks' parent: dropping the window")
		d.dropAll("canonical_differs")
		return true
	}
	if i == 0 && d.win[0].snap != nil {
		return true // already built on this head
	}
	if d.rebase(h) {
		d.metrics.rebase("rebased")
		if t := d.top(); t != nil && t.snap != nil && d.serving() {
			d.mgr.Reanchor(t.snap) // its pre-confirmations were published already
		}
		return true
	}
	d.rebuild(h)
	return true
}

// verifyLeaving verifies the window's first n blocks, which the canonical
// head h reached, where they adopted an announced hash (sealedParent):
// each against the canonical block of its number. It reports whether one
// disagreed (counted, logged once): what was built on it must go.
func (d *Driver) verifyLeaving(h *chain.Head, n int) (wrong bool) {
	for _, e := range d.win[:n] {
		if e.announced != (common.Hash{}) && e.snap != nil {
			d.verifyIncomplete(h, e)
			continue
		}
		if e.snap == nil || !e.snap.HashAdopted() {
			continue
		}
		canon, hash, ok := h.Recent(e.number)
		field := "unknown"
		if ok {
			if hash != e.snap.Hash() {
				continue // another block is canonical: its children's parent hash tells (canonical_differs)
			}
			field = verifyCanonical(e.snap.Header(), canon, hash)
		}
		if field == "" {
			d.metrics.parent("verified")
			continue
		}
		d.metrics.parent("mismatch")
		d.metrics.mismatch("canonical_" + field)
		d.log.Error().Uint64("block", e.number).Str("field", field).Str("hash", e.snap.Hash().Hex()).
			Msg("pending block differs from the canonical block of the hash it adopted: rebuilding what was built on it on the canonical block")
		return true
	}
	return false
}

// verifyIncomplete settles e, a block that sealed to another hash than
// announced (incomplete), against the canonical block h holds at its
// number: when that block is the announced one and holds the same
// transactions as e, e's execution disagreed (mismatch parent_hash, logged
// as an error); when it holds others, e's last messages never came
// (logged at info). Nothing was built on e either way.
func (d *Driver) verifyIncomplete(h *chain.Head, e *entry) {
	canon, hash, ok := h.Recent(e.number)
	if !ok || hash != e.announced {
		return // another block is canonical: its children's parent hash tells (canonical_differs)
	}
	if canon.TxHash == e.snap.TxRoot() {
		d.metrics.mismatch("parent_hash")
		d.log.Error().Err(ErrMismatch).Uint64("block", e.number).Str("canonical", hash.Hex()).
			Msg("pending block held the canonical block's transactions but sealed to another hash")
		return
	}
	d.log.Info().Uint64("block", e.number).Int("txs", len(e.snap.Transactions())).Uint64("last", e.index).
		Msg("the canonical block holds transactions the stream never delivered: the pending block's last messages were lost")
}

// rebase re-anchors every built block of the window on h without
// re-executing (h is the block the first one was built on).
func (d *Driver) rebase(h *chain.Head) bool {
	for _, e := range d.win {
		if e.snap == nil {
			return false
		}
	}
	snaps := make([]*pending.Snapshot, len(d.win))
	for i, e := range d.win {
		var ok bool
		if i == len(d.win)-1 && !e.closed {
			snaps[i], ok = d.b.Rebase(h)
		} else {
			snaps[i], ok = e.snap.Rebased(h)
		}
		if !ok {
			return false
		}
	}
	for i, e := range d.win {
		e.snap = snaps[i]
	}
	return true
}

// rebuild re-executes the window's blocks on h, each verified against the
// stream's totals and the next one's announced parent hash; what does not
// verify is dropped with everything above it.
func (d *Driver) rebuild(h *chain.Head) {
	t0 := time.Now()
	var parent *pending.Snapshot
	for i, e := range d.win {
		if e.refused != "" {
			break // not replicated: it and the blocks above wait
		}
		now := d.clock.Now()
		hh, view, err := d.w.OpenHead()
		if err != nil {
			d.truncate(i, "execution", err)
			return
		}
		var snap *pending.Snapshot
		parHdr := h.Header()
		if parent != nil {
			parHdr = parent.Header()
		}
		tmpl, err := headerFrom(d.exec, parHdr, e.base)
		if err == nil {
			if parent == nil {
				snap, err = d.b.Open(hh, view, tmpl, now)
			} else {
				snap, err = d.b.OpenOn(hh, view, parent, tmpl, now)
			}
		}
		if err != nil {
			view.Close()
			d.truncate(i, d.headerCause(err), err)
			return
		}
		e.snap = snap
		cuts, err := d.replay(e)
		if err != nil {
			cause := "execution"
			if errors.Is(err, ErrMismatch) {
				cause = "mismatch"
			}
			d.truncate(i, cause, err)
			return
		}
		e.snap = cuts[len(cuts)-1]
		if d.serving() {
			// Never published (the block waited for its parent): every
			// message's snapshot, in order, so subscribers and a relay's
			// stream see the block from index 0.
			for _, s := range cuts {
				d.mgr.Publish(s)
			}
		}
		if !e.closed || e.frozen {
			break // the blocks above a frozen one wait for it to be canonical
		}
		if err := d.verifyRoots(e); err != nil {
			d.truncate(i, "mismatch", err)
			return
		}
		final, _, err := d.b.Finish(now)
		if err != nil {
			d.truncate(i, "execution", err)
			return
		}
		if i+1 < len(d.win) {
			adopted, err := d.sealedParent(e, final, true, d.win[i+1].base.ParentHash)
			if errors.Is(err, ErrIncomplete) {
				// Served as far as it got (its last cut); the blocks
				// above wait for it to be canonical.
				d.incomplete(e, d.win[i+1].base.ParentHash, err)
				for _, up := range d.win[i+1:] {
					up.snap = nil
				}
				break
			}
			if err != nil {
				e.snap = final
				d.truncate(i+1, "parent_hash", err)
				return
			}
			final = adopted
		}
		e.snap, parent = final, final
	}
	d.metrics.rebase("rebuilt")
	d.metrics.executed(time.Since(t0))
}

// truncate drops the window from position i on.
func (d *Driver) truncate(i int, cause string, err error) {
	d.log.Error().Err(err).Uint64("block", d.win[i].number).Msg("rebuilding pending blocks failed: dropping them")
	d.win = d.win[:i]
	d.b.Close()
	d.mgr.Withdraw()
	d.metrics.reset(cause)
	d.metrics.window(len(d.win))
}

// start is where the transactions of e's message index k begin in e.txs.
func (e *entry) start(k uint64) int {
	if k == 0 {
		return 0
	}
	return e.cuts[k-1]
}

// covering reports whether the stream, resumed over e's transactions by a
// recut, has not re-announced all of them yet: e.cuts then holds the new
// sequence's cuts up to e.index, followed by the first sequence's beyond
// (so that a rebuild still cuts every transaction where a message did).
func (e *entry) covering() bool { return e.cuts[e.index] < len(e.txs) }

// sameBase reports whether two index-0 bases announce the same block
// context.
func sameBase(a, b *stream.Base) bool {
	fee := func(x *hexutil.Big) *big.Int {
		if x == nil {
			return nil
		}
		return x.ToInt()
	}
	fa, fb := fee(a.BaseFeePerGas), fee(b.BaseFeePerGas)
	return a.ParentHash == b.ParentHash && a.ParentBeaconBlockRoot == b.ParentBeaconBlockRoot && a.FeeRecipient == b.FeeRecipient &&
		a.PrevRandao == b.PrevRandao && a.BlockNumber == b.BlockNumber && a.GasLimit == b.GasLimit && a.Timestamp == b.Timestamp &&
		bytes.Equal(a.ExtraData, b.ExtraData) && (fa == nil) == (fb == nil) && (fa == nil || fa.Cmp(fb) == 0)
}

// recut reports whether p, a message of the open block at an index the
// block had already (on index 0 possibly under another payload id), that
// is not what the block's message of that index said, re-announces what
// the block holds cut elsewhere: on index 0 the same base; its
// transactions those the block holds from where that index began, in
// order (a prefix of them; on an index > 0 possibly all of them and new
// ones beyond). A sequencer that restarted re-emits its journaled block so
// (tipnode's puts the block's leading deposits, the L1-info deposit and
// the user deposits, all in index 0 and the rest in index 1, where the
// first run had published them in several messages), and a relay that
// reconnected to it passes that on. Nothing it pre-confirmed is revoked:
// pending must not go back (resume).
func (d *Driver) recut(p *stream.Payload) bool {
	e := d.top()
	if e == nil || e.closed || !e.receiving() || e.snap == nil || e.number != p.Metadata.BlockNumber || p.Index > e.index {
		return false
	}
	if p.Index == 0 && (p.Base == nil || !sameBase(e.base, p.Base)) {
		return false
	}
	held := e.txs[e.start(p.Index):]
	if p.Index == 0 && len(p.Diff.Transactions) > len(held) {
		// All of it and more at index 0: rebuilt from it (a restart),
		// which serves more than before.
		return false
	}
	for i, raw := range p.Diff.Transactions[:min(len(held), len(p.Diff.Transactions))] {
		if !sameTx(held[i], raw) {
			return false
		}
	}
	return true
}

// resume follows a recut (see recut) from p's index on: the block's
// messages before that index stand, the ones from it on are replaced by p
// and those that follow it. What the block holds is neither re-executed
// nor published again: `pending` keeps serving all of it while the stream
// re-covers it (covering), each covering message's totals checked against
// the block's receipts where the message ends; transactions beyond it are
// executed as usual. A covering message holding another transaction than
// the block at the same position revokes what was pre-confirmed (revoke).
func (d *Driver) resume(p *stream.Payload, received time.Time) {
	e := d.top()
	txs, err := decodeTxs(p.Diff.Transactions)
	if err != nil {
		d.log.Warn().Err(err).Uint64("block", e.number).Uint64("index", p.Index).Msg("dropping the pending block")
		d.dropTop("execution")
		return
	}
	d.log.Debug().Uint64("block", e.number).Uint64("index", p.Index).Uint64("last", e.index).Int("txs", len(e.txs)).
		Msg("the stream re-announces the pending block cut elsewhere (a restarted sequencer): it keeps serving what it has")
	if p.Index == 0 {
		e.base = p.Base
	}
	d.cover(e, p, txs, received)
}

// cover takes p, message p.Index of the stream re-covering e (txs its
// decoded transactions), from where that index begins in e.txs.
func (d *Driver) cover(e *entry, p *stream.Payload, txs chaintypes.Txs, received time.Time) {
	k, pos := p.Index, e.start(p.Index)
	held := e.txs[pos:]
	for i := range min(len(held), len(txs)) {
		if txs[i].Hash() != held[i].Hash() {
			d.revoke(e, p, txs, pos)
			return
		}
	}
	e.id = p.PayloadID
	sum := totals{len(txs), uint64(p.Diff.GasUsed), p.Diff.ReceiptsRoot}
	if len(txs) <= len(held) {
		end := pos + len(txs)
		if err := d.coveredTotals(e, end, p); err != nil {
			d.log.Error().Err(err).Uint64("block", e.number).Uint64("index", k).Msg("dropping the pending block")
			d.dropTop("mismatch")
			return
		}
		cuts := append(slices.Clone(e.cuts[:k]), end)
		sums := append(slices.Clone(e.sums[:k]), sum)
		for i, c := range e.cuts {
			if c > end { // the first sequence's cuts beyond (ascending: i >= k)
				cuts, sums = append(cuts, c), append(sums, e.sums[i])
			}
		}
		e.cuts, e.sums, e.index = cuts, sums, k
		if !e.covering() {
			d.log.Debug().Uint64("block", e.number).Uint64("index", k).Msg("the resumed stream re-announced every transaction of the pending block")
		}
		return
	}
	rest := txs[len(held):]
	e.txs = append(e.txs, rest...)
	e.cuts = append(e.cuts[:k:k], len(e.txs))
	e.sums = append(e.sums[:k:k], sum)
	e.index = k
	e.gasUsed, e.receiptsRoot = uint64(p.Diff.GasUsed), p.Diff.ReceiptsRoot
	e.blobGasUsed = (*uint64)(p.Diff.BlobGasUsed)
	if e.snap == nil {
		return // recorded; executed when its parent is known
	}
	d.execute(e, rest, received, time.Now(), &p.Metadata)
}

// coveredTotals checks the totals of p, a covering message ending at
// position end of e's transactions, against e's receipts (nothing to check
// when e is not built: a rebuild checks e's totals).
func (d *Driver) coveredTotals(e *entry, end int, p *stream.Payload) error {
	if e.snap == nil || len(e.snap.Receipts()) < end {
		return nil
	}
	rs := e.snap.Receipts()[:end]
	gas, root := uint64(0), e.snap.ReceiptsRoot()
	if end > 0 {
		gas = rs[end-1].CumulativeGasUsed
	}
	if end < len(e.snap.Receipts()) {
		root = types.DeriveSha(rs, trie.NewStackTrie(nil))
	}
	if gas != uint64(p.Diff.GasUsed) {
		d.metrics.mismatch("gas_used")
		return fmt.Errorf("%w: block %d index %d (resumed): gas used %d, the sequencer's %d", ErrMismatch, e.number, p.Index, gas, uint64(p.Diff.GasUsed))
	}
	if root != p.Diff.ReceiptsRoot {
		d.metrics.mismatch("receipts_root")
		return fmt.Errorf("%w: block %d index %d (resumed): receipts root %s, the sequencer's %s", ErrMismatch, e.number, p.Index, root.Hex(), p.Diff.ReceiptsRoot.Hex())
	}
	return nil
}

// revoke handles a covering message p that holds another transaction than
// e at the same position (pos: where p's transactions begin): the
// sequencer's block is no longer what it pre-confirmed. e becomes what the
// stream now says (its messages before p's index, then p) and is rebuilt
// on its parent, every cut published from index 0: pending goes back
// there, counted (resets_total revoked) and logged once.
func (d *Driver) revoke(e *entry, p *stream.Payload, txs chaintypes.Txs, pos int) {
	k := p.Index
	e.txs = append(e.txs[:pos:pos], txs...)
	e.cuts = append(e.cuts[:k:k], len(e.txs))
	e.sums = append(e.sums[:k:k], totals{len(txs), uint64(p.Diff.GasUsed), p.Diff.ReceiptsRoot})
	e.index, e.id = k, p.PayloadID
	e.gasUsed, e.receiptsRoot = uint64(p.Diff.GasUsed), p.Diff.ReceiptsRoot
	e.blobGasUsed = (*uint64)(p.Diff.BlobGasUsed)
	d.metrics.reset("revoked")
	d.log.Warn().Uint64("block", e.number).Uint64("index", k).Int("position", pos).
		Msg("the sequencer's block no longer holds a transaction it pre-confirmed: the pending block is rebuilt as the stream now has it")
	d.reopenTop()
}

// reopenTop re-executes the window's open block from its first
// transaction on its parent (the pending block below it, or the canonical
// head), cut where its messages were, verified, every cut published in
// order; it waits unbuilt (pending answers what is below it) when its
// parent is not known.
func (d *Driver) reopenTop() {
	e := d.top()
	d.b.Close()
	e.snap = nil
	h, view, err := d.w.OpenHead()
	if err != nil {
		d.log.Error().Err(err).Msg("open head")
		d.dropTop("execution")
		return
	}
	var (
		parent *pending.Snapshot
		parHdr *types.Header
	)
	var below *entry
	if n := len(d.win); n > 1 {
		below = d.win[n-2]
	}
	switch {
	case below != nil && below.receiving() && below.snap != nil && below.snap.Final():
		parent, parHdr = below.snap, below.snap.Header()
	case below == nil && h.Number() == e.number-1 && h.Hash() == e.base.ParentHash:
		parHdr = h.Header()
	default:
		view.Close()
		d.mgr.Withdraw()
		return
	}
	tmpl, err := headerFrom(d.exec, parHdr, e.base)
	var snap *pending.Snapshot
	if err == nil {
		if parent != nil {
			snap, err = d.b.OpenOn(h, view, parent, tmpl, d.clock.Now())
		} else {
			snap, err = d.b.Open(h, view, tmpl, d.clock.Now())
		}
	}
	if err != nil {
		view.Close()
		d.log.Error().Err(err).Uint64("block", e.number).Msg("reopening a pending block failed")
		d.dropTop(d.headerCause(err))
		return
	}
	e.snap = snap
	cuts, err := d.replay(e)
	if err != nil {
		d.log.Error().Err(err).Uint64("block", e.number).Msg("dropping the pending block")
		if errors.Is(err, ErrMismatch) {
			d.dropTop("mismatch")
		} else {
			d.dropTop("execution")
		}
		return
	}
	e.snap = cuts[len(cuts)-1]
	if d.serving() {
		for _, s := range cuts {
			d.mgr.Publish(s)
		}
	}
}
