package pending

import (
	"container/heap"
	"errors"
	"fmt"
	"math/big"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/store"
)

// Config configures the sequencer. Start from DefaultConfig.
type Config struct {
	// PreconfInterval is how often pooled transactions are executed and a
	// new snapshot published. Default 200 ms.
	PreconfInterval time.Duration
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
	// OnSeal, when set, is called after every sealed block was written and
	// the pending layer rebased onto it (the head-announce hook). It runs on
	// the sequencer goroutine and must not block. Receipts carry the final
	// block hash.
	OnSeal func(block *types.Block, receipts types.Receipts)
	// Metrics records the sequencer's figures (nil: none).
	Metrics *Metrics
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{PreconfInterval: 200 * time.Millisecond, BlockTime: 2 * time.Second, Extra: []byte("tipnode")}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.PreconfInterval <= 0:
		return fmt.Errorf("%w: preconf interval must be > 0", ErrConfig)
	case c.BlockTime < c.PreconfInterval:
		return fmt.Errorf("%w: block time %s shorter than the preconf interval %s", ErrConfig, c.BlockTime, c.PreconfInterval)
	case c.BlockTime%c.PreconfInterval != 0:
		return fmt.Errorf("%w: block time %s is not a multiple of the preconf interval %s", ErrConfig, c.BlockTime, c.PreconfInterval)
	case len(c.Extra) > int(params.MaximumExtraDataSize):
		return fmt.Errorf("%w: extra data of %d bytes exceeds %d", ErrConfig, len(c.Extra), params.MaximumExtraDataSize)
	case c.GasLimit != 0 && c.GasLimit < params.MinGasLimit:
		return fmt.Errorf("%w: gas limit %d below the protocol minimum %d", ErrConfig, c.GasLimit, params.MinGasLimit)
	}
	return nil
}

// Store is what the sequencer needs of the store (*store.DB).
type Store interface {
	Viewer
	WriteBlock(w *store.BlockWrite) error
}

// Sequencer is the embedded block producer: every PreconfInterval it
// executes the executable pool transactions on top of the pending block
// (one chain.BlockProcessor per block, kept across intervals), turns the
// state they wrote into one copy-on-write layer and publishes a new
// Snapshot; every BlockTime it seals the pending block into the store in one
// atomic write and rebases the pending layer onto it. It must be the only
// writer of the store while it runs.
type Sequencer struct {
	cfg      Config
	db       Store
	exec     *chain.Executor
	pool     *Pool
	mgr      *Manager
	clock    Clock
	log      zerolog.Logger
	perBlock int

	startOnce sync.Once
	stopOnce  sync.Once
	quit      chan struct{}
	done      chan struct{}
	syncc     chan chan struct{}
	err       atomic.Pointer[error]

	// Owned by the loop goroutine (and by Start before the loop runs).
	view     store.View
	anchor   *types.Header
	base     *types.Header // header template given to proc
	state    *chain.StateDB
	proc     *chain.BlockProcessor
	txs      []*types.Transaction
	receipts []*types.Receipt
	bloom    types.Bloom
	snap     *Snapshot
}

// New returns a sequencer publishing into pool.Manager(). Call Start.
func New(cfg Config, db Store, exec *chain.Executor, pool *Pool, clock Clock, log zerolog.Logger) (*Sequencer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if exec.Config().TerminalTotalDifficulty == nil {
		return nil, fmt.Errorf("%w: the sequencer seals post-merge blocks; set terminalTotalDifficulty in the genesis", ErrNotMerged)
	}
	if clock == nil {
		clock = SystemClock{}
	}
	mgr := pool.Manager()
	mgr.hp = HeaderParams{Coinbase: cfg.Coinbase, GasLimit: cfg.GasLimit, Extra: cfg.Extra}
	return &Sequencer{
		cfg: cfg, db: db, exec: exec, pool: pool, mgr: mgr, clock: clock,
		log:      log.With().Str("component", "sequencer").Logger(),
		perBlock: int(cfg.BlockTime / cfg.PreconfInterval),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
		syncc:    make(chan chan struct{}),
	}, nil
}

// Manager is the pending manager the sequencer publishes into.
func (s *Sequencer) Manager() *Manager { return s.mgr }

// Start opens the pending block on top of the store's latest block,
// publishes its first snapshot (before returning) and starts the loop.
func (s *Sequencer) Start() error {
	err := ErrStopped
	s.startOnce.Do(func() {
		if err = s.startBlock(); err != nil {
			close(s.done)
			return
		}
		t := s.clock.NewTicker(s.cfg.PreconfInterval)
		go s.loop(t)
		s.log.Info().Uint64("pending", s.base.Number.Uint64()).Dur("preconfInterval", s.cfg.PreconfInterval).
			Dur("blockTime", s.cfg.BlockTime).Msg("sequencer started")
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

func (s *Sequencer) loop(t Ticker) {
	defer close(s.done)
	defer t.Stop()
	defer s.closeView()
	ticks := 0
	for {
		select {
		case <-s.quit:
			if len(s.txs) > 0 {
				if err := s.seal(false); err != nil {
					s.fail(err)
				}
			}
			s.log.Info().Msg("sequencer stopped")
			return
		case c := <-s.syncc:
			close(c)
		case <-t.C():
			ticks++
			if err := s.preconfirm(); err != nil {
				s.fail(err)
				return
			}
			if ticks%s.perBlock == 0 {
				if err := s.seal(true); err != nil {
					s.fail(err)
					return
				}
			}
		}
	}
}

func (s *Sequencer) fail(err error) {
	err = fmt.Errorf("%w: %v", ErrSequencer, err)
	s.err.Store(&err)
	s.log.Error().Err(err).Msg("sequencer stopped on a fault")
}

func (s *Sequencer) closeView() {
	if s.view != nil {
		s.view.Close()
		s.view = nil
	}
}

// startBlock opens the pending block on the store's latest block: a new
// store view, a StateDB over the latest state and a BlockProcessor (which
// runs the pre-execution system calls). The resulting index-0 snapshot is
// swapped in; the caller notifies.
func (s *Sequencer) startBlock() error {
	view, err := s.db.View()
	if err != nil {
		return err
	}
	latest, err := view.Tag(store.TagLatest)
	if err != nil {
		view.Close()
		return err
	}
	headers := chain.ViewHeaders{View: view}
	parent := headers.HeaderByNumber(latest)
	if parent == nil {
		view.Close()
		return fmt.Errorf("latest header %d: %w", latest, store.ErrNotFound)
	}
	reader, err := view.StateAt(latest)
	if err != nil {
		view.Close()
		return err
	}
	now := s.clock.Now()
	header := NextHeader(s.exec.Config(), parent, now, s.mgr.hp)
	state := chain.NewStateDB(reader)
	proc := s.exec.NewBlockProcessor(header, parent, common.Hash{}, state, headers, vm.Config{})
	if err := state.Error(); err != nil {
		view.Close()
		return fmt.Errorf("start block %d: %w", header.Number, err)
	}
	s.closeView()
	s.view, s.anchor, s.base, s.state, s.proc = view, parent, header, state, proc
	s.txs, s.receipts, s.bloom = nil, nil, types.Bloom{}
	s.snap = &Snapshot{
		anchor:  parent,
		header:  s.pendingHeader(),
		layers:  pushLayer(nil, state.TakeDiff(), nil), // pre-execution system calls
		created: now,
	}
	s.mgr.cur.Store(s.snap)
	s.cfg.Metrics.snapshot(s.snap)
	return nil
}

// pendingHeader is the published copy of the header with the running totals.
func (s *Sequencer) pendingHeader() *types.Header {
	h := types.CopyHeader(s.base)
	h.GasUsed = s.proc.GasUsed()
	h.Bloom = s.bloom
	if h.BlobGasUsed != nil {
		v := s.proc.BlobGasUsed()
		h.BlobGasUsed = &v
	}
	return h
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
	tip, err := tx.EffectiveGasTip(s.base.BaseFee)
	if err != nil {
		return new(big.Int).Neg(common.Big1)
	}
	return tip
}

// preconfirm executes the executable pool transactions that fit and, if
// any was included, publishes a new snapshot and then notifies.
func (s *Sequencer) preconfirm() error {
	cands := s.pool.pending()
	if len(cands) == 0 {
		return nil
	}
	t0 := time.Now()
	var (
		h        candHeap
		stale    []*poolTx
		included []*poolTx
	)
	for addr, list := range cands {
		nonce := s.state.GetNonce(addr)
		i := 0
		for i < len(list) && list[i].tx.Nonce() < nonce {
			stale = append(stale, list[i])
			i++
		}
		if i < len(list) && list[i].tx.Nonce() == nonce {
			h = append(h, &candidate{list: list, pos: i, tip: s.effectiveTip(list[i].tx)})
		}
	}
	if err := s.state.Error(); err != nil {
		return err
	}
	heap.Init(&h)
	dropped := stale
	first := len(s.txs)
	for h.Len() > 0 {
		if s.proc.GasLeft() < params.TxGas {
			break
		}
		c := h[0]
		pt := c.list[c.pos]
		if pt.tx.Gas() > s.proc.GasLeft() || c.tip.Sign() < 0 {
			heap.Pop(&h) // does not fit / fee cap below base fee: the sender waits
			continue
		}
		receipt, err := s.proc.ApplyTransaction(pt.tx)
		if errors.Is(err, chain.ErrStateRead) {
			return err
		}
		if err != nil {
			s.log.Warn().Str("tx", pt.tx.Hash().Hex()).Str("from", pt.sender.Hex()).Err(err).Msg("dropping unexecutable transaction")
			s.cfg.Metrics.dropped()
			dropped = append(dropped, pt)
			heap.Pop(&h)
			continue
		}
		included = append(included, pt)
		s.txs = append(s.txs, pt.tx)
		s.receipts = append(s.receipts, receipt)
		for i := range receipt.Bloom {
			s.bloom[i] |= receipt.Bloom[i]
		}
		c.pos++
		if c.pos < len(c.list) && c.list[c.pos].tx.Nonce() == pt.tx.Nonce()+1 {
			c.tip = s.effectiveTip(c.list[c.pos].tx)
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
	}
	if len(included) == 0 {
		s.pool.remove(dropped...)
		return nil
	}
	txIdx := make(map[common.Hash]int, len(included))
	for i := first; i < len(s.txs); i++ {
		txIdx[s.txs[i].Hash()] = i
	}
	n := len(s.txs)
	snap := &Snapshot{
		anchor:   s.anchor,
		header:   s.pendingHeader(),
		index:    s.snap.index + 1,
		layers:   pushLayer(s.snap.layers, s.state.TakeDiff(), txIdx),
		txs:      s.txs[:n:n],
		receipts: s.receipts[:n:n],
		newFrom:  first,
	}
	now := s.clock.Now()
	snap.created = now
	s.snap = snap
	s.mgr.cur.Store(snap) // readable from here on
	build := time.Since(t0)
	for _, pt := range included {
		s.cfg.Metrics.observeReadable(now.Sub(pt.arrival))
	}
	s.cfg.Metrics.observeBuild(build)
	s.cfg.Metrics.snapshot(snap)
	s.pool.remove(append(dropped, included...)...)
	s.mgr.preconfs.send(snap)
	s.log.Debug().Uint64("block", snap.header.Number.Uint64()).Uint64("index", snap.index).Int("txs", len(included)).
		Int("blockTxs", n).Uint64("gasUsed", snap.header.GasUsed).Int("layers", snap.Depth()).Dur("build", build).Msg("snapshot published")
	return nil
}

// seal finishes the pending block, writes it in one atomic batch (block,
// receipts, state diff, tags latest/safe/finalized), and, if rebase, opens
// the next pending block on it without re-executing anything.
func (s *Sequencer) seal(rebase bool) error {
	t0 := time.Now()
	var withdrawals types.Withdrawals
	if s.base.WithdrawalsHash != nil {
		withdrawals = types.Withdrawals{}
	}
	requests, err := s.proc.Finish(withdrawals, nil)
	if err != nil {
		return err
	}
	header := types.CopyHeader(s.base)
	header.GasUsed = s.proc.GasUsed()
	if header.BlobGasUsed != nil {
		v := s.proc.BlobGasUsed()
		header.BlobGasUsed = &v
	}
	if header.RequestsHash != nil {
		rh := types.CalcRequestsHash(requests)
		header.RequestsHash = &rh
	}
	receipts := s.proc.Receipts()
	block := types.NewBlock(header, &types.Body{Transactions: s.txs, Withdrawals: withdrawals}, receipts, trie.NewStackTrie(nil))
	rs := make([]*types.ReceiptForStorage, len(receipts))
	for i, r := range receipts {
		rs[i] = (*types.ReceiptForStorage)(r)
	}
	err = s.db.WriteBlock(&store.BlockWrite{
		Block: block, Receipts: rs, Diff: s.state.BlockDiff(),
		Tags: []store.Tag{store.TagLatest, store.TagSafe, store.TagFinalized},
	})
	if err != nil {
		return fmt.Errorf("seal block %d: %w", header.Number, err)
	}
	ev := &SealEvent{Block: block, Receipts: finalReceipts(receipts, block)}
	if rebase {
		if err := s.startBlock(); err != nil {
			return fmt.Errorf("rebase on block %d: %w", header.Number, err)
		}
	}
	took := time.Since(t0)
	s.cfg.Metrics.observeSeal(took)
	s.log.Info().Uint64("number", block.NumberU64()).Str("hash", block.Hash().Hex()).Int("txs", len(block.Transactions())).
		Uint64("gasUsed", block.GasUsed()).Uint64("blockTime", block.Time()).Dur("took", took).Msg("sealed block")
	s.mgr.seals.send(ev)
	if s.cfg.OnSeal != nil {
		s.cfg.OnSeal(ev.Block, ev.Receipts)
	}
	if rebase {
		s.mgr.preconfs.send(s.snap)
	}
	return nil
}

// finalReceipts copies the pending receipts (which published snapshots
// still share) and stamps the sealed block's hash into them and their logs.
func finalReceipts(receipts types.Receipts, block *types.Block) types.Receipts {
	out := make(types.Receipts, len(receipts))
	hash := block.Hash()
	for i, r := range receipts {
		cp := *r
		cp.BlockHash = hash
		cp.Logs = make([]*types.Log, len(r.Logs))
		for j, l := range r.Logs {
			lc := *l
			lc.BlockHash = hash
			cp.Logs[j] = &lc
		}
		out[i] = &cp
	}
	return out
}
