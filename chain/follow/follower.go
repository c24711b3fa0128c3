package follow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// Status is the follower's sync progress (eth_syncing).
type Status struct {
	// Syncing is true while catching up: more than one block behind the
	// upstream head.
	Syncing bool
	// StartingBlock is our head when the current catch-up started,
	// CurrentBlock our head now, HighestBlock the upstream's head as last
	// seen (at least CurrentBlock).
	StartingBlock, CurrentBlock, HighestBlock uint64
	// Err is the fatal error that stopped following (nil while following).
	Err error
}

// Follower follows the canonical chain of an upstream JSON-RPC node into
// the store, through the node's chain.Writer. See the package doc.
type Follower struct {
	cfg     Config
	w       *chain.Writer
	config  *params.ChainConfig
	genesis common.Hash
	chainID *big.Int
	clock   chain.Clock
	metrics *Metrics
	log     zerolog.Logger

	ctx       context.Context
	cancel    context.CancelFunc
	done      chan struct{}
	startOnce sync.Once
	stopOnce  sync.Once
	started   atomic.Bool

	err     atomic.Pointer[error]
	sync    atomic.Pointer[Status] // Syncing and StartingBlock of the current catch-up
	highest atomic.Uint64          // upstream head number as last seen

	// Loop-goroutine state.
	lastInvalid common.Hash // the last write that failed verification once
	rewindTo    common.Hash // the upstream head a rewind was first seen to
	rewindSeen  time.Time   // when
	progressed  bool        // the session wrote a block or reached the upstream head
	catchUp     catchUpStats
}

// catchUpStats measure one catch-up for the progress lines.
type catchUpStats struct {
	start, lastLine time.Time
	from            uint64
	blocks          int
	gas             uint64
}

// New returns a follower writing through w, whose store holds g's genesis.
// clock nil means the wall clock; metrics may be nil.
func New(cfg Config, w *chain.Writer, g *chain.Genesis, clock chain.Clock, metrics *Metrics, log zerolog.Logger) (*Follower, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if clock == nil {
		clock = chain.SystemClock{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &Follower{
		cfg: cfg, w: w, config: g.Config, genesis: g.Block.Hash(), chainID: g.Config.ChainID, clock: clock, metrics: metrics,
		log: log.With().Str("component", "follow").Str("upstream", cfg.URL).Logger(),
		ctx: ctx, cancel: cancel, done: make(chan struct{}),
	}
	f.sync.Store(&Status{})
	return f, nil
}

// Start checks the upstream (chain id and genesis) and starts following in
// the background. A mismatch is returned and nothing starts; an upstream
// that cannot be reached yet is not an error (the follower retries with
// backoff). Call once.
func (f *Follower) Start() error {
	var err error
	f.startOnce.Do(func() {
		up, derr := dial(f.ctx, f.cfg, f.metrics)
		if derr == nil {
			if derr = f.checkIdentity(up); derr != nil {
				up.close()
				up = nil
			}
		}
		if isFatal(derr) {
			err = derr
			f.fail(derr)
			close(f.done)
			return
		}
		if derr != nil {
			f.metrics.fault(faultKind(derr))
			f.log.Warn().Err(derr).Msg("upstream not reachable yet; following starts when it is")
		}
		f.started.Store(true)
		go f.loop(up)
	})
	return err
}

// Stop stops following: in-flight upstream requests are cancelled, a write
// in progress finishes. Idempotent.
func (f *Follower) Stop() {
	f.stopOnce.Do(func() {
		f.cancel()
		f.startOnce.Do(func() { close(f.done) })
		<-f.done
	})
}

// Done is closed when the follower stopped (Stop, or a fatal error: see
// Err). The node keeps serving the chain it has.
func (f *Follower) Done() <-chan struct{} { return f.done }

// Err is the fatal error that stopped following, nil otherwise.
func (f *Follower) Err() error {
	if e := f.err.Load(); e != nil {
		return *e
	}
	return nil
}

// Status returns the sync progress.
func (f *Follower) Status() Status {
	s := *f.sync.Load()
	s.CurrentBlock = f.w.Head().Number()
	s.HighestBlock = max(f.highest.Load(), s.CurrentBlock)
	s.Err = f.Err()
	if s.Err != nil || s.CurrentBlock >= s.HighestBlock {
		s.Syncing = false
	}
	return s
}

// isFatal reports errors that stop following.
func isFatal(err error) bool {
	for _, e := range []error{ErrGenesisMismatch, ErrAnchorMismatch, ErrChainIDMismatch, ErrReorgTooDeep, ErrReorgBelowFinalized, ErrDivergence, ErrUpstreamPruned} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// faultKind is the metric label of a transient error.
func faultKind(err error) string {
	switch {
	case errors.Is(err, chain.ErrInvalidBlock):
		return "verification"
	case errors.Is(err, ErrUnknownBlock):
		return "unknown_block"
	case errors.Is(err, ErrBadResponse):
		return "response"
	case errors.Is(err, ErrUpstream):
		return "request"
	default:
		return "write"
	}
}

func (f *Follower) fail(err error) {
	f.err.Store(&err)
	f.metrics.fault("fatal")
	if errors.Is(err, ErrUpstreamPruned) {
		f.metrics.fault("pruned")
	}
	f.metrics.stop()
	head := f.w.Head()
	f.log.Error().Err(err).Uint64("head", head.Number()).Str("hash", head.Hash().Hex()).
		Msg("following stopped; serving the chain we have")
}

// loop runs sessions (one upstream connection each) until Stop or a fatal
// error, reconnecting after a fault with capped exponential backoff. up is
// a connection already checked by Start (nil: dial).
func (f *Follower) loop(up *upstream) {
	defer close(f.done)
	backoff := f.cfg.BackoffMin
	for {
		var err error
		f.progressed = false
		if up == nil {
			up, err = dial(f.ctx, f.cfg, f.metrics)
		}
		if err == nil {
			err = f.session(up)
			up.close()
		}
		up = nil
		if f.ctx.Err() != nil || errors.Is(err, chain.ErrWriterStopped) {
			return
		}
		if isFatal(err) {
			f.fail(err)
			return
		}
		if f.progressed {
			backoff = f.cfg.BackoffMin
		}
		f.metrics.fault(faultKind(err))
		f.log.Warn().Err(err).Str("retryIn", backoff.String()).Msg("upstream fault; reconnecting")
		t := f.clock.NewTimer(backoff)
		select {
		case <-f.ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		f.metrics.reconnect()
		backoff = min(2*backoff, f.cfg.BackoffMax)
	}
}

// checkIdentity compares the upstream's chain id and block 0 with ours.
func (f *Follower) checkIdentity(up *upstream) error {
	id, err := up.chainID(f.ctx)
	if err != nil {
		return err
	}
	if id.Cmp(f.chainID) != 0 {
		return fmt.Errorf("%w: the upstream's chain id is %s, the store's %s", ErrChainIDMismatch, id, f.chainID)
	}
	g, err := up.header(f.ctx, "0x0")
	if err != nil {
		return err
	}
	if g.Hash() != f.genesis {
		return fmt.Errorf("%w: the upstream's block 0 is %s, the store's genesis %s (initialise the data directory with the upstream's genesis: tipnode init --genesis-from URL, or its genesis file)",
			ErrGenesisMismatch, g.Hash().Hex(), f.genesis.Hex())
	}
	return f.checkAnchor(up)
}

// checkAnchor compares the upstream's block at the store's anchor (a store
// initialised from a state dump) with ours: the chain below it is not
// ours to check, and a reorg cannot go below it.
func (f *Follower) checkAnchor(up *upstream) error {
	_, view, err := f.w.OpenHead()
	if err != nil {
		return err
	}
	a := view.Anchor().State
	view.Close()
	if a == 0 {
		return nil
	}
	ours, err := f.canonicalHash(a)
	if err != nil {
		return err
	}
	theirs, err := up.header(f.ctx, hexutil.EncodeUint64(a))
	if errors.Is(err, ErrUnknownBlock) {
		return fmt.Errorf("%w: the upstream does not know block %d, the block this store starts at (%s)", ErrAnchorMismatch, a, ours.Hex())
	}
	if err != nil {
		return err
	}
	if theirs.Hash() != ours {
		return fmt.Errorf("%w: the upstream's block %d is %s, this store starts at block %d %s (initialised from a state dump of another chain or branch)",
			ErrAnchorMismatch, a, theirs.Hash().Hex(), a, ours.Hex())
	}
	return nil
}

// session follows the upstream over one connection until an error: it
// syncs to the upstream head, then waits for the next one (a newHeads
// notification on websockets, else the poll timer). Once it wrote a block
// or reached the upstream head, the backoff starts over.
func (f *Follower) session(up *upstream) error {
	if err := f.checkIdentity(up); err != nil {
		return err
	}
	var (
		heads  chan json.RawMessage
		subErr <-chan error
		poll   = f.cfg.PollInterval
	)
	if f.cfg.websocket() {
		heads = make(chan json.RawMessage, 64)
		sub, err := up.subscribeHeads(f.ctx, heads)
		if err != nil {
			return err
		}
		defer sub.Unsubscribe()
		subErr = sub.Err()
		poll *= 4
	}
	var target *types.Header
	for {
		seen := f.clock.Now()
		if target == nil {
			h, err := up.header(f.ctx, "latest")
			if err != nil {
				return err
			}
			target = h
		}
		if err := f.syncTo(up, target, seen); err != nil {
			return err
		}
		f.progressed = true
		target = nil
		t := f.clock.NewTimer(poll)
		select {
		case <-f.ctx.Done():
			t.Stop()
			return f.ctx.Err()
		case err := <-subErr:
			t.Stop()
			return fmt.Errorf("%w: newHeads subscription ended: %v", ErrUpstream, err)
		case raw := <-heads:
			t.Stop()
			for more := true; more; {
				select {
				case r := <-heads:
					raw = r
				default:
					more = false
				}
			}
			h, err := decodeHeader(raw)
			if err != nil {
				return fmt.Errorf("newHeads notification: %w", err)
			}
			target = h
		case <-t.C():
		}
	}
}

// errReorg: the first block after our head does not build on it.
var errReorg = errors.New("upstream chain does not extend our head")

// syncTo brings our chain to the upstream head target: catch-up, reorg, or
// nothing (then only the tags move). seen is when target was learned.
func (f *Follower) syncTo(up *upstream, target *types.Header, seen time.Time) error {
	for moved := 0; ; {
		head := f.w.Head()
		tn := target.Number.Uint64()
		f.highest.Store(tn)
		f.metrics.lag(tn, head.Number(), target.Time, head.Header().Time)
		var err error
		if tn <= head.Number() {
			ours, herr := f.canonicalHash(tn)
			if herr != nil {
				return herr
			}
			if ours == target.Hash() && tn < head.Number() {
				// The upstream's head is one of our blocks below our head:
				// it rewound (a reorg to a shorter chain), or it lags.
				err = f.rewind(up, head, target)
			} else {
				f.rewindTo = common.Hash{}
			}
			if ours == target.Hash() && err == nil {
				f.endCatchUp()
				f.metrics.lag(tn, tn, target.Time, target.Time)
				return f.followTags(up)
			}
			if ours != target.Hash() {
				err = f.reorg(up, target)
			}
		} else {
			f.rewindTo = common.Hash{}
			err = f.catchUpTo(up, head, target, seen)
			if errors.Is(err, errReorg) {
				err = f.reorg(up, target)
			}
		}
		if errors.Is(err, errMoved) {
			if moved++; moved > 8 {
				return fmt.Errorf("%w: the upstream's chain keeps changing while we fetch it", ErrUpstream)
			}
			if target, err = up.header(f.ctx, "latest"); err != nil {
				return err
			}
			seen = f.clock.Now()
			continue
		}
		if err != nil {
			return err
		}
	}
}

// canonicalHash is our canonical hash at n (at most the head).
func (f *Follower) canonicalHash(n uint64) (common.Hash, error) {
	h, view, err := f.w.OpenHead()
	if err != nil {
		return common.Hash{}, err
	}
	defer view.Close()
	hdr, err := chain.ViewHeaders{Head: h, View: view}.HeaderByNumber(n)
	if err != nil {
		return common.Hash{}, fmt.Errorf("our block %d: %w", n, err)
	}
	return hdr.Hash(), nil
}

// catchUpTo fetches blocks head+1..target in parallel batches and imports
// them in order, each one atomic write.
func (f *Follower) catchUpTo(up *upstream, head *chain.Head, target *types.Header, seen time.Time) error {
	from, to := head.Number()+1, target.Number.Uint64()
	if to > from {
		f.beginCatchUp(head.Number(), to)
	}
	chunks, cancel := f.fetchRange(up, from, to)
	defer cancel()
	parent := head.Hash()
	for c := range chunks {
		if c.err != nil {
			return c.err
		}
		for _, b := range c.blocks {
			if b.ParentHash() != parent {
				if b.NumberU64() == from {
					return errReorg
				}
				return errMoved
			}
			if err := f.importBlock(b); err != nil {
				return err
			}
			parent = b.Hash()
			if b.Hash() == target.Hash() {
				f.metrics.delay(f.clock.Now().Sub(seen))
			}
		}
		if err := f.followTags(up); err != nil {
			return err
		}
	}
	return f.ctx.Err()
}

// importBlock writes one block through the writer.
func (f *Follower) importBlock(b *chaintypes.Block) error {
	start := f.clock.Now()
	if err := f.w.Import([]*chaintypes.Block{b}, chain.ImportOptions{}); err != nil {
		return f.writeError(err, b.Hash())
	}
	f.lastInvalid, f.progressed = common.Hash{}, true
	f.metrics.imported(f.clock.Now().Sub(start))
	f.progress(b)
	return nil
}

// writeError classifies a failed write of the block (or branch ending
// with) last: a verification failure is retried once with a fresh fetch,
// the second one in a row is a divergence.
func (f *Follower) writeError(err error, last common.Hash) error {
	if !errors.Is(err, chain.ErrInvalidBlock) {
		return err
	}
	if f.lastInvalid == last {
		return fmt.Errorf("%w: %w", ErrDivergence, err)
	}
	f.lastInvalid = last
	return fmt.Errorf("%w (fetching it again once): %w", ErrBadResponse, err)
}

// reorg finds the common ancestor of our chain and the upstream's (walking
// down from the lower of the two heads, at most MaxReorg blocks below ours
// and never below our finalized block), fetches the upstream's branch and
// switches to it in one write.
func (f *Follower) reorg(up *upstream, target *types.Header) error {
	h, view, err := f.w.OpenHead()
	if err != nil {
		return err
	}
	defer view.Close()
	ours := chain.ViewHeaders{Head: h, View: view}
	tn := target.Number.Uint64()
	top := min(h.Number(), tn)
	finalized := h.Finalized().Number.Uint64()
	upHashes := make(map[uint64]common.Hash)
	var (
		ancestor *types.Header
		expect   common.Hash // parent hash of the lowest upstream header seen
	)
	for n := top; ancestor == nil; {
		// Never below our finalized block (the walk stops there): an
		// anchored upstream holds no headers far below its anchor.
		lo := max(n-min(n, uint64(f.cfg.FetchBatch-1)), min(finalized, n))
		hs, err := up.headers(f.ctx, lo, n)
		if err != nil {
			return err
		}
		for i := len(hs) - 1; i >= 0; i-- {
			m := lo + uint64(i)
			if expect != (common.Hash{}) && hs[i].Hash() != expect {
				return errMoved // the upstream's headers do not link: it moved
			}
			expect = hs[i].ParentHash
			mine, err := ours.HeaderByNumber(m)
			if err != nil {
				return fmt.Errorf("our block %d: %w", m, err)
			}
			upHashes[m] = hs[i].Hash()
			if mine.Hash() == hs[i].Hash() {
				ancestor = mine
				break
			}
			if m <= finalized {
				return fmt.Errorf("%w: the upstream's block %d is %s, our finalized chain (finalized %d) has %s there; our head %d %s, upstream head %d %s",
					ErrReorgBelowFinalized, m, hs[i].Hash().Hex(), finalized, mine.Hash().Hex(), h.Number(), h.Hash().Hex(), tn, target.Hash().Hex())
			}
			if depth := h.Number() - m + 1; depth > f.cfg.MaxReorg {
				return fmt.Errorf("%w: our chain (head %d %s) and the upstream's (head %d %s) have no common block from %d up: the reorg would replace more than %d of our blocks",
					ErrReorgTooDeep, h.Number(), h.Hash().Hex(), tn, target.Hash().Hex(), m, f.cfg.MaxReorg)
			}
		}
		n = lo - 1
	}
	a := ancestor.Number.Uint64()
	if a >= top {
		return errMoved // the upstream's chain extends ours after all
	}
	end := min(tn, h.Number()+uint64(f.cfg.FetchBatch))
	chunks, cancel := f.fetchRange(up, a+1, end)
	defer cancel()
	var blocks []*chaintypes.Block
	parent := ancestor.Hash()
	for c := range chunks {
		if c.err != nil {
			return c.err
		}
		for _, b := range c.blocks {
			if want, ok := upHashes[b.NumberU64()]; b.ParentHash() != parent || ok && want != b.Hash() {
				return errMoved
			}
			parent = b.Hash()
			blocks = append(blocks, b)
		}
	}
	if err := f.ctx.Err(); err != nil {
		return err
	}
	depth := h.Number() - a
	start := f.clock.Now()
	if err := f.w.Reorg(a, blocks, chain.ImportOptions{}); err != nil {
		return f.writeError(err, parent)
	}
	f.lastInvalid, f.progressed = common.Hash{}, true
	f.metrics.reorg(depth, len(blocks))
	newHead := blocks[len(blocks)-1]
	f.log.Warn().Uint64("depth", depth).Uint64("ancestor", a).
		Uint64("oldHead", h.Number()).Str("oldHash", h.Hash().Hex()).
		Uint64("newHead", newHead.NumberU64()).Str("newHash", newHead.Hash().Hex()).
		Str("took", f.clock.Now().Sub(start).String()).Msg("reorg followed")
	return nil
}

// rewind follows an upstream whose head target is our block below our
// head. When the upstream's canonical chain no longer holds our head (no
// block at our height), its chain is shorter than ours: a reorg whose new
// branch is empty. Once the upstream kept that head for a poll interval
// (until then nothing is done: an upstream that rewound to build a new
// branch at once is then followed in one atomic reorg), our blocks above
// target are unwound in one write (one head event with the removed blocks
// and their logs), within MaxReorg and never below our finalized block
// (both stop following, as any reorg).
// When the upstream still has our head, its head only lags (a node behind
// a load balancer, a stale answer): nothing to do. When it has another
// block at our height, it moved on meanwhile: errMoved.
func (f *Follower) rewind(up *upstream, head *chain.Head, target *types.Header) error {
	hn, tn := head.Number(), target.Number.Uint64()
	theirs, err := up.header(f.ctx, hexutil.EncodeUint64(hn))
	switch {
	case errors.Is(err, ErrUnknownBlock):
	case err != nil:
		return err
	case theirs.Hash() == head.Hash():
		return nil
	default:
		return errMoved
	}
	// An upstream that rewinds to build a new branch at once is followed in
	// one atomic reorg when the branch comes: a rewind is followed once it
	// lasted a poll interval.
	if now := f.clock.Now(); f.rewindTo != target.Hash() {
		f.rewindTo, f.rewindSeen = target.Hash(), now
		return nil
	} else if now.Sub(f.rewindSeen) < f.cfg.PollInterval {
		return nil
	}
	depth := hn - tn
	if finalized := head.Finalized().Number.Uint64(); tn < finalized {
		return fmt.Errorf("%w: the upstream's chain ends at block %d %s, below our finalized block %d; our head %d %s",
			ErrReorgBelowFinalized, tn, target.Hash().Hex(), finalized, hn, head.Hash().Hex())
	}
	if depth > f.cfg.MaxReorg {
		return fmt.Errorf("%w: the upstream's chain ends at block %d %s, our head is %d %s: following it would remove more than %d of our blocks",
			ErrReorgTooDeep, tn, target.Hash().Hex(), hn, head.Hash().Hex(), f.cfg.MaxReorg)
	}
	start := f.clock.Now()
	if err := f.w.UnwindTo(tn, nil); err != nil {
		return err
	}
	f.rewindTo, f.progressed = common.Hash{}, true
	f.metrics.reorg(depth, 0)
	f.log.Warn().Uint64("depth", depth).Uint64("ancestor", tn).
		Uint64("oldHead", hn).Str("oldHash", head.Hash().Hex()).
		Uint64("newHead", tn).Str("newHash", target.Hash().Hex()).
		Str("took", f.clock.Now().Sub(start).String()).Msg("upstream rewound; reorg to its shorter chain followed")
	return nil
}

// followTags moves our safe and finalized tags to the upstream's, when we
// hold those blocks canonically.
func (f *Follower) followTags(up *upstream) error {
	safe, finalized, err := up.tags(f.ctx)
	if err != nil {
		return err
	}
	tags := make(map[store.Tag]common.Hash)
	for tag, uh := range map[store.Tag]*types.Header{store.TagSafe: safe, store.TagFinalized: finalized} {
		head := f.w.Head()
		if uh == nil || uh.Number.Uint64() > head.Number() {
			continue
		}
		if uh.Number.Uint64() < head.Finalized().Number.Uint64() {
			// Finality does not go back (an upstream that rewound says
			// less), and safe is never below finalized (a store anchored
			// at a block the upstream has not yet made safe starts with
			// both tags there).
			continue
		}
		ours, err := f.canonicalHash(uh.Number.Uint64())
		if err != nil {
			return err
		}
		if ours == uh.Hash() {
			tags[tag] = ours
		}
	}
	if len(tags) == 0 {
		return nil
	}
	return f.w.SetTags(tags)
}

// chunk is one fetched batch of blocks.
type chunk struct {
	blocks []*chaintypes.Block
	err    error
}

// fetchRange fetches blocks from..to in batches of FetchBatch, at most
// FetchParallel requests in flight, and delivers them in order. The
// channel closes after the last batch or the first error; cancel stops it
// early.
func (f *Follower) fetchRange(up *upstream, from, to uint64) (<-chan chunk, context.CancelFunc) {
	ctx, cancel := context.WithCancel(f.ctx)
	futures := make(chan chan chunk, f.cfg.FetchParallel)
	out := make(chan chunk)
	go func() {
		defer close(futures)
		batch := uint64(f.cfg.FetchBatch)
		for start := from; start <= to; start += batch {
			end := min(start+batch-1, to)
			fut := make(chan chunk, 1)
			select {
			case futures <- fut:
			case <-ctx.Done():
				return
			}
			go func() {
				bs, err := up.blocks(ctx, start, end)
				if err == nil {
					f.recoverSenders(bs)
				}
				fut <- chunk{bs, err}
			}()
			if end == to {
				return
			}
		}
	}()
	go func() {
		defer close(out)
		for fut := range futures {
			var c chunk
			select {
			case c = <-fut:
			case <-ctx.Done():
				return
			}
			select {
			case out <- c:
			case <-ctx.Done():
				return
			}
			if c.err != nil {
				cancel()
				return
			}
		}
	}()
	return out, cancel
}

// recoverSenders recovers the sender of every transaction of blocks (on
// the fetching goroutine, in parallel with the import of earlier blocks):
// go-ethereum caches it in the transaction, so execution does not pay the
// signature recovery. An invalid signature is left for the importer to
// refuse.
func (f *Follower) recoverSenders(blocks []*chaintypes.Block) {
	for _, b := range blocks {
		signer := types.MakeSigner(f.config, b.Number(), b.Time())
		for _, tx := range b.Transactions() {
			if t, ok := tx.(*types.Transaction); ok {
				types.Sender(signer, t)
			}
		}
	}
}

// beginCatchUp marks a catch-up from our head at start to highest.
func (f *Follower) beginCatchUp(start, highest uint64) {
	if f.sync.Load().Syncing {
		return
	}
	f.sync.Store(&Status{Syncing: true, StartingBlock: start})
	now := f.clock.Now()
	f.catchUp = catchUpStats{start: now, lastLine: now, from: start}
	f.log.Info().Uint64("from", start).Uint64("to", highest).Msg("catching up")
}

// endCatchUp marks our head at the upstream's.
func (f *Follower) endCatchUp() {
	if !f.sync.Load().Syncing {
		return
	}
	f.sync.Store(&Status{})
	s := f.catchUp
	secs := max(f.clock.Now().Sub(s.start).Seconds(), 1e-9)
	f.log.Info().Int("blocks", s.blocks).Uint64("head", f.w.Head().Number()).
		Str("took", f.clock.Now().Sub(s.start).Round(time.Millisecond).String()).
		Float64("blocks/s", float64(s.blocks)/secs).Float64("Mgas/s", float64(s.gas)/1e6/secs).Msg("caught up")
}

// progress counts an imported block and logs a progress line every
// ProgressInterval while catching up.
func (f *Follower) progress(b *chaintypes.Block) {
	if !f.sync.Load().Syncing {
		return
	}
	s := &f.catchUp
	s.blocks++
	s.gas += b.GasUsed()
	now := f.clock.Now()
	if now.Sub(s.lastLine) < f.cfg.ProgressInterval {
		return
	}
	s.lastLine = now
	secs := max(now.Sub(s.start).Seconds(), 1e-9)
	rate := float64(s.blocks) / secs
	highest := max(f.highest.Load(), b.NumberU64())
	eta := time.Duration(float64(highest-b.NumberU64()) / rate * float64(time.Second))
	f.log.Info().Int("blocks", s.blocks).Uint64("number", b.NumberU64()).Uint64("target", highest).
		Float64("blocks/s", rate).Float64("Mgas/s", float64(s.gas)/1e6/secs).
		Str("eta", eta.Round(time.Second).String()).Msg("catching up")
}
