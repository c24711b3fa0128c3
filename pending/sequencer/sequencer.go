package sequencer

import (
	"container/heap"
	"errors"
	"fmt"
	"math/big"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus/misc/eip4844"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/sched"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// Config configures the sequencer. Start from DefaultConfig.
type Config struct {
	// PreconfInterval is how often a new snapshot with the transactions
	// executed since the previous one is published. Default 200 ms.
	PreconfInterval time.Duration
	// Steps is how many times per PreconfInterval the executable pooled
	// transactions are executed into the pending block (every
	// PreconfInterval/Steps, the last step publishing). Each step orders the
	// transactions executable then by effective tip, then arrival; a
	// transaction arriving after a step cannot go before what that step
	// executed. Spreading the execution over the interval keeps its CPU off
	// the moment of the swap, where it would delay the reads queued then.
	// 1 executes only when publishing (tip order over the whole interval).
	// PreconfInterval must be a whole multiple of Steps nanoseconds.
	// Default 10 (0 means 10 too).
	Steps int
	// BlockTime is how often the pending block is sealed into the store. It
	// must be a whole multiple of PreconfInterval. Default 2 s (ten
	// pre-confirmations).
	BlockTime time.Duration
	// GasLimit is the desired block gas limit; blocks move toward it by the
	// protocol's 1/1024 step per block. 0 (default) keeps the parent's.
	GasLimit uint64
	// Coinbase receives priority fees. Default the zero address.
	Coinbase common.Address
	// Extra is the header extra-data of sealed blocks (at most 32 bytes).
	// Default "tipnode".
	Extra []byte
	// Dev enables the dev chain's controls (dev.go: state overrides,
	// impersonated transactions, mining on demand, time offsets,
	// snapshots) and lets the pending.Builder execute impersonated transactions.
	// Only `tipnode dev` sets it: its blocks may hold transactions no
	// other node accepts. Default false.
	Dev bool
	// Chain is what the chain's rules need of a local producer beyond the
	// header (chain.ProducerConfig: on an OP chain the synthetic L1 origin
	// of the L1-info deposit and the Jovian minimum base fee); ignored on
	// an L1 chain. nil: chain.DefaultProducerConfig().
	Chain *chain.ProducerConfig
	// NoPendingRoots skips the state root of every pre-confirmation
	// (--stream.roots=off): the pending block keeps no live state trie
	// (pending.Builder.SkipCutRoots), so its snapshots carry no state root
	// (nor, on an OP chain from Isthmus, a withdrawals root) and
	// eth_getProof at pending is refused; each seal computes the block's
	// roots from its whole diff, so the sealed headers carry them either
	// way. Default false: every pre-confirmation computes its root.
	NoPendingRoots bool
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{PreconfInterval: 200 * time.Millisecond, Steps: defaultSteps, BlockTime: 2 * time.Second, Extra: []byte("tipnode")}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.PreconfInterval <= 0:
		return fmt.Errorf("%w: preconf interval must be > 0", ErrConfig)
	case c.Steps < 0:
		return fmt.Errorf("%w: steps %d must be ≥ 0", ErrConfig, c.Steps)
	case c.PreconfInterval%time.Duration(c.steps()) != 0:
		return fmt.Errorf("%w: preconf interval %s is not divisible into %d steps", ErrConfig, c.PreconfInterval, c.steps())
	case c.BlockTime < c.PreconfInterval:
		return fmt.Errorf("%w: block time %s shorter than the preconf interval %s", ErrConfig, c.BlockTime, c.PreconfInterval)
	case c.BlockTime%c.PreconfInterval != 0:
		return fmt.Errorf("%w: block time %s is not a multiple of the preconf interval %s", ErrConfig, c.BlockTime, c.PreconfInterval)
	case len(c.Extra) > int(params.MaximumExtraDataSize):
		return fmt.Errorf("%w: extra data of %d bytes exceeds %d", ErrConfig, len(c.Extra), params.MaximumExtraDataSize)
	case c.GasLimit != 0 && c.GasLimit < params.MinGasLimit:
		return fmt.Errorf("%w: gas limit %d below the protocol minimum %d", ErrConfig, c.GasLimit, params.MinGasLimit)
	}
	if c.Chain != nil {
		if err := c.Chain.Validate(); err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
	}
	return nil
}

// defaultSteps is Config.Steps' default.
const defaultSteps = 10

// steps is Steps or its default.
func (c Config) steps() int {
	if c.Steps == 0 {
		return defaultSteps
	}
	return c.Steps
}

// newBuilder is a builder for the sequencer's blocks, as cfg sets it up.
func (c Config) newBuilder(exec *chain.Executor) *pending.Builder {
	b := pending.NewBuilder(exec)
	if c.Dev {
		b.AllowImpersonation()
	}
	if c.NoPendingRoots {
		b.SkipCutRoots()
	}
	return b
}

// producer is Chain or its default.
func (c Config) producer() chain.ProducerConfig {
	if c.Chain != nil {
		return *c.Chain
	}
	return chain.DefaultProducerConfig()
}

// Writer is what the sequencer needs of the node's single store writer
// (*chain.Writer).
type Writer interface {
	Head() *chain.Head
	OpenHead() (*chain.Head, store.View, error)
	Seal(bw *store.BlockWrite, rebase chain.Rebase, yield func()) error
	UnwindTo(number uint64, rebase chain.Rebase) error
	JournalPendingEntries(a store.PendingAppend) error
	PendingJournal() (*store.PendingJournal, error)
	DropPendingJournal() error
	// WithSpareP runs fn with a second P on a one-P process;
	// NeedsSpareP says whether the node needs one now (see
	// chain.Writer.WithSpareP, NeedsSpareP).
	WithSpareP(fn func())
	NeedsSpareP() bool
}

// Sequencer is the embedded block producer, a driver of the pending.Builder: every
// PreconfInterval it picks the executable pool transactions (by effective
// tip, then arrival), adds them to the pending block and publishes the next
// Snapshot through the pending.Manager; every BlockTime it seals the pending block
// through the Writer (one atomic write) and, in the Writer's Rebase, opens
// the next pending block on it. It chooses the header of its blocks
// (pending.NextHeader with its coinbase, gas limit target, extra data and clock).
type Sequencer struct {
	cfg      Config
	w        Writer
	b        *pending.Builder
	exec     *chain.Executor // b's
	pool     *Pool
	mgr      *pending.Manager
	clock    pending.Clock
	metrics  *pending.Metrics
	log      zerolog.Logger
	perBlock int
	base     time.Time // the ticker's start: intervals are counted from it

	startOnce sync.Once
	stopOnce  sync.Once
	quit      chan struct{}
	done      chan struct{}
	syncc     chan chan struct{}
	err       atomic.Pointer[error]

	// Executed by steps since the last pre-confirmation, not published yet
	// (they stay in the pool, marked executed, until they are), in order.
	unpublished []*poolTx
	seen        uint64 // the pool's admission count at the last step
	intervals   uint64 // the last interval (since base) a pre-confirmation was made in
	// ny yields to the network during execution on one P
	// (yieldToNetwork); opened at the first use, nyTried after it, closed
	// by Stop.
	ny      *sched.NetYield
	nyTried bool

	// Owned by the loop goroutine (and the writer's, running openBlock in
	// a seal's Rebase while the loop waits).
	journaled    bool                    // the open block's header is journaled
	journaledOvs int                     // overrides of the open block journaled
	ovs          []store.PendingOverride // the open block's dev overrides, in order
	offset       time.Duration           // dev clock offset (dev.go)
	snaps        []devSnapshot           // dev snapshots, oldest first
	nextSnap     uint64
	devc         chan devReq
	// Dev mining mode (dev.go): manual (no automatic pre-confirmation or
	// seal), and automine (a block per arrival, woken through autoc).
	manual    bool
	auto      atomic.Bool
	autoc     chan struct{}
	unsubAuto func()
	// derived is the number of the open block's opening transactions the
	// chain's rules derive (an OP block's L1-info deposit); queued are the
	// user deposits for the next block (dev.go, SendDeposit).
	derived     int
	queued      chaintypes.Txs
	queuedGas   uint64
	depositSeq  uint64
	producerCfg chain.ProducerConfig
}

// HeaderParams returns the header choices of cfg (for pending.NewManager).
func (c Config) HeaderParams() pending.HeaderParams {
	return pending.HeaderParams{Coinbase: c.Coinbase, GasLimit: c.GasLimit, Extra: c.Extra}
}

// New returns a sequencer taking transactions from pool, building with
// exec, publishing into mgr and writing through w. Call Start.
func New(cfg Config, w Writer, exec *chain.Executor, pool *Pool, mgr *pending.Manager, clock pending.Clock, metrics *pending.Metrics, log zerolog.Logger) (*Sequencer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if exec.Config().TerminalTotalDifficulty == nil {
		return nil, fmt.Errorf("%w: the sequencer seals post-merge blocks; set terminalTotalDifficulty in the genesis", ErrNotMerged)
	}
	if clock == nil {
		clock = pending.SystemClock{}
	}
	b := cfg.newBuilder(exec)
	return &Sequencer{
		cfg: cfg, w: w, b: b, exec: exec, pool: pool, mgr: mgr, clock: clock, metrics: metrics,
		devc: make(chan devReq), producerCfg: cfg.producer(),
		autoc:    make(chan struct{}, 1),
		log:      log.With().Str("component", "sequencer").Logger(),
		perBlock: int(cfg.BlockTime / cfg.PreconfInterval),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
		syncc:    make(chan chan struct{}),
	}, nil
}

// Start opens the pending block on top of the store's latest block,
// publishes its first snapshot (before returning) and starts the loop.
func (s *Sequencer) Start() error {
	err := ErrStopped
	s.startOnce.Do(func() {
		if err = s.recoverOrOpen(); err != nil {
			close(s.done)
			return
		}
		s.base = s.clock.Now()
		t := s.clock.NewTicker(s.cfg.PreconfInterval / time.Duration(s.cfg.steps()))
		if s.cfg.Dev {
			s.unsubAuto = s.pool.SubscribeTxs(func(*types.Transaction) {
				if s.auto.Load() {
					s.wakeAuto()
				}
			})
		}
		go s.loop(t)
		s.log.Info().Uint64("block", s.b.Header().Number.Uint64()).Stringer("preconfInterval", s.cfg.PreconfInterval).
			Stringer("blockTime", s.cfg.BlockTime).Msg("sequencer started")
	})
	return err
}

// Stop ends the loop. A pending block holding pre-confirmed transactions
// is sealed first (pre-confirmations are promises), in one atomic write;
// an empty one is discarded. Nothing is ever written half-way. Stop waits
// for the loop and returns the sequencer's fault, if any.
func (s *Sequencer) Stop() error {
	s.stopOnce.Do(func() { close(s.quit) })
	s.startOnce.Do(func() { close(s.done) }) // never started
	<-s.done
	s.ny.Close() // its user, the loop (or a test driving the Sequencer without one), is done
	return s.Err()
}

// Done is closed when the loop has ended (Stop, or a fault: see Err).
func (s *Sequencer) Done() <-chan struct{} { return s.done }

// Err returns the fault that stopped the sequencer (wrapping ErrSequencer),
// or nil.
func (s *Sequencer) Err() error {
	if p := s.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Sync waits until the loop has finished handling every tick it received
// before the call (tests use it after ManualClock.Advance).
func (s *Sequencer) Sync() {
	c := make(chan struct{})
	select {
	case s.syncc <- c:
		<-c
	case <-s.done:
	}
}

func (s *Sequencer) loop(t pending.Ticker) {
	defer close(s.done)
	defer t.Stop()
	defer func() { s.b.Close() }() // dev.go may replace the builder
	if s.unsubAuto != nil {
		defer s.unsubAuto()
	}
	ticks := 0
	for {
		select {
		case <-s.quit:
			if s.b.Len() > s.derived || len(s.ovs) > 0 {
				if err := s.seal(false); err != nil {
					s.fail(err)
				}
			}
			s.log.Info().Msg("sequencer stopped")
			return
		case c := <-s.syncc:
			// An automine wake-up sent before the Sync is handled first.
			select {
			case <-s.autoc:
				if err := s.automine(); err != nil {
					s.fail(err)
					close(c)
					return
				}
			default:
			}
			close(c)
		case r := <-s.devc:
			// What steps executed is published first: dev operations see
			// (and snapshot, revert, re-time) a block without unpublished
			// transactions.
			if len(s.unpublished) > 0 {
				if err := s.preconfirm(); err != nil {
					s.fail(err)
					r.done <- err
					return
				}
			}
			err, fatal := r.fn()
			r.done <- err
			if err != nil && fatal {
				s.fail(err)
				return
			}
		case <-s.autoc:
			if err := s.automine(); err != nil {
				s.fail(err)
				return
			}
		case at := <-t.C():
			if s.manual || s.auto.Load() {
				continue // dev mining mode: no automatic pre-confirmation or seal
			}
			// A tick within the interval of the last pre-confirmation is a
			// step; the first of a later interval pre-confirms (ticks the
			// loop was too busy to take are skipped, not made up).
			k := uint64(at.Sub(s.base) / s.cfg.PreconfInterval)
			if k <= s.intervals {
				if err := s.step(); err != nil {
					s.fail(err)
					return
				}
				continue
			}
			s.intervals = k
			ticks++
			var err error
			if ticks%s.perBlock == 0 {
				err = s.preconfirmThen(true)
			} else {
				err = s.preconfirm()
			}
			if err != nil {
				s.fail(err)
				return
			}
		}
	}
}

func (s *Sequencer) fail(err error) {
	err = fmt.Errorf("%w: %w", ErrSequencer, err)
	s.err.Store(&err)
	s.log.Error().Err(err).Msg("sequencer stopped on a fault")
}

// recoverOrOpen opens the first pending block: the journaled one when the
// node stopped with pre-confirmed transactions unsealed (same header, the
// same transactions replayed in order: the same receipts), else a new one.
func (s *Sequencer) recoverOrOpen() error {
	head := s.w.Head()
	j, err := s.w.PendingJournal()
	if err != nil {
		return fmt.Errorf("read the pending journal: %w", err)
	}
	if j == nil {
		return s.openBlock(head)
	}
	if j.Header.ParentHash != head.Hash() {
		s.log.Warn().Uint64("block", j.Header.Number.Uint64()).Str("parent", j.Header.ParentHash.Hex()).
			Str("head", head.Hash().Hex()).Int("txs", len(j.Txs)).Msg("dropping a pending journal that does not extend the head")
		if err := s.w.DropPendingJournal(); err != nil {
			return err
		}
		return s.openBlock(head)
	}
	_, view, err := s.w.OpenHead()
	if err != nil {
		return err
	}
	now := s.clock.Now()
	// The leading deposits (an OP block's L1-info and user deposits) open
	// the block at index 0, as they did before the crash.
	k := leadingDeposits(j.Txs)
	open, err := s.b.Open(head, view, j.Header, now, j.Txs[:k]...)
	if err != nil {
		view.Close()
		return fmt.Errorf("reopen journaled pending block %d: %w", j.Header.Number, err)
	}
	s.derived = s.countDerived(j.Txs[:k])
	// Index 0 first, as for every block: stream subscribers see the block
	// open before its transactions.
	s.mgr.Publish(open)
	if err := replay(s.b, j.Txs[k:], j.Overrides); err != nil {
		return fmt.Errorf("%w: replaying journaled pending block %d: %v", ErrJournal, j.Header.Number, err)
	}
	snap := s.b.Cut(now)
	if snap == nil {
		snap = s.b.Current()
	}
	s.ovs = j.Overrides
	s.journaled, s.journaledOvs = true, len(j.Overrides)
	if snap != open {
		s.mgr.Publish(snap)
	}
	s.log.Info().Uint64("block", j.Header.Number.Uint64()).Int("txs", len(j.Txs)).Int("overrides", len(j.Overrides)).Msg("recovered pre-confirmed transactions from the journal")
	return nil
}

// openBlock opens the next pending block on head with the sequencer's
// header choices and publishes its index-0 snapshot. It runs on the
// sequencer goroutine at Start, and on the writer goroutine (in the seal's
// Rebase) while the sequencer waits for the seal.
func (s *Sequencer) openBlock(head *chain.Head) error {
	h, view, err := s.w.OpenHead()
	if err != nil {
		return err
	}
	if h != head {
		view.Close()
		return fmt.Errorf("%w: head moved to %d while opening a block on %d", chain.ErrNotOnHead, h.Number(), head.Number())
	}
	now := s.clock.Now()
	tmpl, err := s.nextHeader(head.Header(), s.now())
	if err != nil {
		view.Close()
		return err
	}
	derived, err := s.derivedTxs(view, head.Header(), tmpl)
	if err != nil {
		view.Close()
		return err
	}
	snap, err := s.b.Open(head, view, tmpl, now, append(derived, s.queued...)...)
	if err != nil {
		view.Close()
		return err
	}
	s.derived = len(derived)
	s.queued, s.queuedGas = nil, 0
	s.ovs, s.journaled, s.journaledOvs = nil, false, 0
	s.seen = 0 // a new block: the next step looks at the pool again (what did not fit the last one)
	s.mgr.Publish(snap)
	return nil
}

// nextHeader is the header template of the block after parent at time
// now: pending.NextHeader with the sequencer's choices, completed by the chain's
// rules (chain.Executor.PrepareHeader: OP base fee, extraData, blob gas
// fields).
func (s *Sequencer) nextHeader(parent *types.Header, now time.Time) (*types.Header, error) {
	tmpl := pending.NextHeader(s.exec.Config(), parent, now, s.cfg.HeaderParams())
	if err := s.exec.PrepareHeader(tmpl, parent, s.producerCfg); err != nil {
		return nil, fmt.Errorf("header of block %d: %w", tmpl.Number, err)
	}
	return tmpl, nil
}

// derivedTxs are the opening transactions the chain's rules derive for the
// block tmpl on parent, a canonical block whose state view holds (an OP
// block's L1-info deposit).
func (s *Sequencer) derivedTxs(view store.View, parent, tmpl *types.Header) (chaintypes.Txs, error) {
	reader, err := view.StateAt(parent.Number.Uint64())
	if err != nil {
		return nil, err
	}
	return s.exec.OpeningTxs(tmpl, parent, reader, s.producerCfg)
}

// countDerived counts the transactions of txs the chain's rules derive.
func (s *Sequencer) countDerived(txs chaintypes.Txs) int {
	n := 0
	for _, tx := range txs {
		if s.exec.IsOpeningTx(tx) {
			n++
		}
	}
	return n
}

// leadingDeposits is the number of deposits txs starts with.
func leadingDeposits(txs chaintypes.Txs) int {
	for i, tx := range txs {
		if !chaintypes.IsDeposit(tx) {
			return i
		}
	}
	return len(txs)
}

// candidate is one sender's run of pooled transactions.
type candidate struct {
	list []*poolTx
	pos  int
	tip  *big.Int // effective tip of list[pos]
}

type candHeap []*candidate

func (h candHeap) Len() int { return len(h) }
func (h candHeap) Less(i, j int) bool {
	if c := h[i].tip.Cmp(h[j].tip); c != 0 {
		return c > 0
	}
	return h[i].list[h[i].pos].arrival.Before(h[j].list[h[j].pos].arrival)
}
func (h candHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *candHeap) Push(x any)   { *h = append(*h, x.(*candidate)) }
func (h *candHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

func (s *Sequencer) effectiveTip(tx *types.Transaction) *big.Int {
	tip, err := tx.EffectiveGasTip(s.b.Header().BaseFee)
	if err != nil {
		return new(big.Int).Neg(common.Big1)
	}
	return tip
}

// blobsFit reports whether a blob transaction fits in the open block: its
// blob gas within what the block has left, its blob fee cap at least the
// block's blob base fee. Otherwise it waits for a later block (it is not
// dropped). Other transactions always fit.
func (s *Sequencer) blobsFit(tx *types.Transaction) bool {
	if tx.Type() != types.BlobTxType {
		return true
	}
	if tx.BlobGas() > s.b.BlobGasLeft() {
		return false
	}
	h := s.b.Header()
	return h.ExcessBlobGas == nil || tx.BlobGasFeeCap().Cmp(eip4844.CalcBlobFee(s.exec.Config(), h)) >= 0
}

// step executes the executable pool transactions into the pending block
// without publishing them (Config.Steps): they stay in the pool until the
// next pre-confirmation publishes them. It does nothing when no transaction
// was admitted since the last step. It runs without the spare P of
// preconfirm: a step executes what arrived in a fraction of the interval,
// and the goroutine blocks when it is done, so the runtime polls the
// network right after it.
func (s *Sequencer) step() error {
	s.warmRoots()
	if s.pool.admitted() == s.seen {
		return nil
	}
	included, dropped, err := s.execute(s.candidates())
	if err != nil {
		return err
	}
	s.pool.executed(included)
	s.unpublished = append(s.unpublished, included...)
	s.pool.remove(dropped...)
	return nil
}

// preconfirm executes the executable pool transactions that fit and, if
// any was included now or by the steps since the last pre-confirmation,
// publishes a new snapshot and then notifies.
func (s *Sequencer) preconfirm() error { return s.preconfirmThen(false) }

// preconfirmThen is preconfirm, followed by the block's seal when seal is
// set. When the node needs a spare P (Writer.NeedsSpareP: an EVM execution
// runs), both share one spare-P section: the interval's execution runs
// with a spare P, so requests arriving meanwhile are polled and served
// between its transactions, and the seal shares the raise of GOMAXPROCS
// (its two stop-the-world pauses) just before the swap. Otherwise the
// pre-confirmation runs on the loop's goroutine (execution yields to the
// network, the journal's fsync waits in the poller), and so does the seal
// (see seal), after the swap's notifications have gone out.
func (s *Sequencer) preconfirmThen(seal bool) error {
	cands := s.candidates()
	include := len(cands) > 0 || len(s.unpublished) > 0
	if !include && !seal {
		return nil
	}
	var err error
	if s.w.NeedsSpareP() {
		s.w.WithSpareP(func() {
			if include {
				err = s.include(cands)
			}
			if err == nil && seal {
				err = s.sealBlock(true, false)
			}
		})
		return err
	}
	if include {
		if err = s.include(cands); err != nil {
			return err
		}
	}
	if seal {
		if include && s.pollYields() {
			s.yieldToNetwork() // the swap's notifications go out first
		}
		err = s.seal(true)
	}
	return err
}

// candidates returns the pool's transactions by sender for execute and
// records the admission count they reflect (step), or nil when the open
// block takes none (an OP fork's activation block: deposits only, the pool
// waits).
func (s *Sequencer) candidates() map[common.Address][]*poolTx {
	if !s.exec.AcceptsSequencedTxs(s.b.Header(), s.b.Parent()) {
		return nil
	}
	s.seen = s.pool.admitted() // before pending: a later admission makes the next step look again
	return s.pool.pending()
}

// include executes cands (the pool's executable transactions by sender)
// into the pending block and publishes the next snapshot when any was
// included, now or by the steps before (preconfirm).
func (s *Sequencer) include(cands map[common.Address][]*poolTx) error {
	t0 := time.Now()
	included, dropped, err := s.execute(cands)
	if err != nil {
		return err
	}
	if len(s.unpublished) > 0 {
		included = append(s.unpublished, included...)
		s.unpublished = nil
	}
	if len(included) == 0 {
		s.pool.remove(dropped...)
		return nil
	}
	if s.pollYields() {
		s.yieldToNetwork() // the snapshot and its journal entries are hundreds of µs more
	}
	now := s.clock.Now()
	snap := s.b.Cut(now)
	// A pre-confirmation is a promise: durable before anyone can read it.
	if err := s.journal(len(snap.Transactions())-len(snap.NewTransactions()), snap.NewTransactions(), s.ovs[s.journaledOvs:]); err != nil {
		return fmt.Errorf("journal pre-confirmation %d of block %d: %w", snap.Index(), snap.Header().Number, err)
	}
	s.mgr.Publish(snap) // readable from here on; subscribers notified
	build := time.Since(t0)
	for _, pt := range included {
		s.metrics.ObserveReadable(now.Sub(pt.arrival))
	}
	s.metrics.ObserveBuild(build)
	s.pool.remove(append(dropped, included...)...)
	s.log.Debug().Uint64("block", snap.Header().Number.Uint64()).Uint64("index", snap.Index()).Int("txs", len(included)).
		Int("blockTxs", len(snap.Transactions())).Uint64("gasUsed", snap.Header().GasUsed).Int("layers", snap.Depth()).Stringer("build", build.Round(time.Microsecond)).Msg("snapshot published")
	return nil
}

// execute executes cands (the pool's executable transactions by sender)
// in order of effective tip, then arrival, into the pending block, as many
// as fit. It returns the transactions it included and those to drop from
// the pool: below their sender's nonce (the ones steps executed and not
// published yet excepted) or failing to execute.
func (s *Sequencer) execute(cands map[common.Address][]*poolTx) (included, dropped []*poolTx, err error) {
	var h candHeap
	yielded := time.Now()
	for addr, list := range cands {
		nonce, err := s.b.Nonce(addr)
		if err != nil {
			return nil, nil, err
		}
		i := 0
		for i < len(list) && list[i].tx.Nonce() < nonce {
			if !list[i].executed {
				dropped = append(dropped, list[i])
			}
			i++
		}
		if i < len(list) && list[i].tx.Nonce() == nonce {
			h = append(h, &candidate{list: list, pos: i, tip: s.effectiveTip(list[i].tx)})
		}
	}
	heap.Init(&h)
	for h.Len() > 0 {
		if s.b.GasLeft() < params.TxGas {
			break
		}
		c := h[0]
		pt := c.list[c.pos]
		if pt.tx.Gas() > s.b.GasLeft() || c.tip.Sign() < 0 || !s.blobsFit(pt.tx) {
			heap.Pop(&h) // does not fit / fee cap below base fee: the sender waits
			continue
		}
		_, err := s.b.Add(pt.tx.WithoutBlobTxSidecar())
		if errors.Is(err, chain.ErrStateRead) {
			return nil, nil, err
		}
		if err != nil {
			s.log.Warn().Str("tx", pt.tx.Hash().Hex()).Str("from", pt.sender.Hex()).Err(err).Msg("dropping unexecutable transaction")
			s.metrics.TxDropped()
			dropped = append(dropped, pt)
			heap.Pop(&h)
			continue
		}
		included = append(included, pt)
		// Let queued reads run during the execution: they would otherwise
		// wait for all of it. On one P with no EVM execution (pollYields,
		// asked afresh each time: one may start meanwhile)
		// every 100 µs, waiting for the network poll, which costs a few
		// microseconds. Otherwise once a millisecond with
		// runtime.Gosched: not after every transaction, or a step of a
		// few transactions would wait behind a running eth_call's time
		// slice (10 ms) at each one.
		if since := time.Since(yielded); since >= 100*time.Microsecond {
			if s.pollYields() {
				s.yieldToNetwork()
				yielded = time.Now()
			} else if since >= time.Millisecond {
				runtime.Gosched()
				yielded = time.Now()
			}
		}
		c.pos++
		if c.pos < len(c.list) && c.list[c.pos].tx.Nonce() == pt.tx.Nonce()+1 {
			c.tip = s.effectiveTip(c.list[c.pos].tx)
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
	}
	return included, dropped, nil
}

// pollYields reports whether the loop yields to requests by waiting for
// the network poll (yieldToNetwork): on one P (a node limited to one CPU,
// outside a raised spare-P section) while the node needs no spare P
// (Writer.NeedsSpareP: no EVM execution running or waiting, see
// rpc.Limiter.Busy). With more Ps another polls the network and
// runtime.Gosched lets what is queued run. With an execution, the poll
// would wait for it: a goroutine computing is rescheduled from the run
// queue before the network is polled, for up to the runtime's 10 ms
// netpoll by sysmon, while Gosched waits at most for its time slice.
func (s *Sequencer) pollYields() bool {
	return runtime.GOMAXPROCS(0) == 1 && !s.w.NeedsSpareP()
}

// yieldBetween yields between the parts of a seal run without a spare P:
// to the network while pollYields holds (asked afresh: an execution may
// have begun), with runtime.Gosched otherwise.
func (s *Sequencer) yieldBetween() {
	if s.pollYields() {
		s.yieldToNetwork()
		return
	}
	runtime.Gosched()
}

// yieldToNetwork waits for the runtime's next network poll
// (sched.NetYield), so that requests that arrived meanwhile run first;
// runtime.Gosched where the pipe could not be opened.
func (s *Sequencer) yieldToNetwork() {
	if !s.nyTried {
		s.nyTried = true
		var err error
		if s.ny, err = sched.NewNetYield(); err != nil {
			s.log.Warn().Err(err).Msg("yielding with runtime.Gosched: requests arriving during an execution wait for all of it on one CPU")
		}
	}
	s.ny.Yield()
}

// seal finishes the pending block and writes it through the Writer in one
// atomic batch (block, receipts, state diff, tags latest/safe/finalized);
// if rebase, the Writer's Rebase opens the next pending block on it without
// re-executing anything, before head subscribers are told.
func (s *Sequencer) seal(rebase bool) (err error) {
	// Building the block (roots, receipts, diff) and writing it cost a
	// few milliseconds of CPU. When the node needs no spare P (no EVM
	// execution runs or waits) the seal runs on the loop's goroutine and
	// the writer's (chain.Writer.Seal), and on one P (pollYields) both
	// yield to the network between the parts, none longer than about
	// 0.7 ms for a block of 200 transfers. A raised section would not
	// serve requests meanwhile on this path: the kernel lets the
	// section's thread run on before the thread that polls the network
	// (traces: no request served during a 2.3 ms build). Otherwise with a
	// spare P, as during a pre-confirmation's execution (preconfirmThen).
	if !s.w.NeedsSpareP() {
		return s.sealBlock(rebase, s.pollYields())
	}
	s.w.WithSpareP(func() { err = s.sealBlock(rebase, false) })
	return err
}

// warmRoots derives the current snapshot's transactions and receipts
// roots, once per snapshot, so that a seal derives only what the last
// pre-confirmation added (listRoot): a step between swaps does the work
// a seal would otherwise do all at once just before one.
func (s *Sequencer) warmRoots() {
	if snap := s.b.Current(); snap != nil {
		snap.WarmRoots()
	}
}

// sealBlock is seal's work; with yield, it yields (yieldBetween) between
// building the block and writing it, and hands the writer the same yield
// for the write's parts.
func (s *Sequencer) sealBlock(rebase, yield bool) error {
	t0 := time.Now()
	sealed, err := s.b.Seal()
	if err != nil {
		return err
	}
	var between func()
	if yield {
		between = s.yieldBetween
		between()
	}
	var next chain.Rebase
	if rebase {
		next = s.openBlock
	}
	if err := s.w.Seal(sealed.Write, next, between); err != nil {
		return fmt.Errorf("seal block %d: %w", sealed.Block.NumberU64(), err)
	}
	if rebase && s.b.Len() > s.derived && !s.journaled {
		// The new block opened with user deposits (dev.go, SendDeposit):
		// pre-confirmed at index 0, so journaled now (not from the
		// writer's Rebase, which cannot wait for the writer).
		if err := s.journal(s.b.Len(), nil, nil); err != nil {
			return fmt.Errorf("journal the deposits of block %d: %w", s.b.Header().Number, err)
		}
	}
	block := sealed.Block
	took := time.Since(t0)
	s.metrics.ObserveSeal(took)
	s.log.Info().Uint64("block", block.NumberU64()).Str("hash", block.Hash().Hex()).Int("txs", len(block.Transactions())).
		Uint64("gasUsed", block.GasUsed()).Uint64("timestamp", block.Time()).Stringer("took", took.Round(time.Microsecond)).Msg("sealed block")
	return nil
}
