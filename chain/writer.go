package chain

import (
	"github.com/tipnode/tipnode/store/chaintypes"

	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain/sched"
	"github.com/tipnode/tipnode/store"
)

// HeadEvent announces a new Head after a store write. Added are the blocks
// that became canonical (ascending); Removed the blocks that left the
// canonical chain (an unwind or reorg), newest first. Both may be empty
// (a tag moved). A reorg (Writer.Reorg) is one event with both.
type HeadEvent struct {
	Head    *Head
	Added   []*types.Header
	Removed []*types.Header
	// RemovedLogs are the logs of the removed blocks, read before they
	// were removed: oldest block first, in log order, with their block,
	// transaction and index fields set and Removed true (at most the
	// newest HeadWindow removed blocks).
	RemovedLogs []*types.Log
}

// Rebase is a driver's hook, run on the writer goroutine after a write's
// Head was published and before subscribers are told: it brings the
// pending layer onto the new head (the sequencer opens its next pending
// block there). An error is returned to the driver's call; the write
// itself stands.
type Rebase func(head *Head) error

// ImportOptions vary Writer.Import.
type ImportOptions struct {
	// Tags also moved to the last block (latest always moves).
	Tags []store.Tag
	// Rebase, when set, runs after each block's head is published.
	Rebase Rebase
}

// Writer owns every store write of a running node — block import, sealing
// of locally built blocks, unwinds — serialised on its own goroutine, and
// the in-memory Head that readers resolve against. After each write it
// opens a store view of the new state, publishes the new Head with one
// atomic store, runs the driver's Rebase, and then notifies HeadEvent
// subscribers. Readers (OpenHead) never wait for it.
//
// Call Start before submitting writes and Stop when done; reads (Head,
// OpenHead) work from NewWriter on.
type Writer struct {
	db   Store
	exec *Executor
	log  zerolog.Logger

	head  atomic.Pointer[Head]
	heads Feed[*HeadEvent]

	reqs       chan writerJob
	quit       chan struct{}
	done       chan struct{}
	running    atomic.Bool
	startOnce  sync.Once
	stopOnce   sync.Once
	retireOnce sync.Once

	spare       sched.SpareP // the WithSpareP sections
	sectionNice int          // WriterConfig.SectionNice
	// spareWhen, when set, says at a section's start whether it raises
	// (SetSpareWhen); nil: every section does.
	spareWhen func() bool
	// inline is set while the writer goroutine runs a spare-if-busy job
	// without a section (writerJob); only that goroutine reads it.
	inline bool
}

// SetSpareWhen makes the sequencer's jobs (writerJob) and sections
// (NeedsSpareP) raise GOMAXPROCS only when need returns true at their
// start; otherwise they run on their goroutine and the one P. A node whose
// store waits for fsyncs in the poller (store.DB.SyncsInPoller) needs the
// spare P for its journal and block writes, pre-confirmations and seals
// only while an EVM execution runs or waits: one, preempted only
// every 10 ms, would hold the only P the section needs. Otherwise reads
// and the section's short work share the P at the Go scheduler's turns,
// without the raise's two stop-the-world pauses and the hand-over of the
// P to the section's thread (requests queued on the P wait through that
// hand-over: hundreds of microseconds in traces). Call it before Start.
func (w *Writer) SetSpareWhen(need func() bool) { w.spareWhen = need }

// WriterConfig tunes a Writer. Data only: start from DefaultWriterConfig.
type WriterConfig struct {
	// SectionNice lowers the kernel's priority of the spare-P sections
	// (WithSpareP: write jobs and pre-confirmations when the node needs a
	// spare P, and each seal) on a one-CPU node: each section runs on an
	// OS thread of its own whose nice value is raised by this much, so that
	// a thread serving reads preempts it as soon as it has work, instead of
	// waiting out the kernel's time slice (milliseconds) behind the writer.
	// The sections still get their share of the core (nice 5: about a
	// quarter of it against a busy reader). 0 = off (the sections run at
	// the process's priority); 0-19. Nodes with more than one P are left
	// alone. Default 5.
	SectionNice int
}

// DefaultWriterConfig returns the documented defaults.
func DefaultWriterConfig() WriterConfig { return WriterConfig{SectionNice: 5} }

// Validate checks the ranges.
func (c WriterConfig) Validate() error {
	if c.SectionNice < 0 || c.SectionNice > 19 {
		return fmt.Errorf("%w: section nice %d, want 0-19", ErrWriterConfig, c.SectionNice)
	}
	return nil
}

// NewWriter loads the head of db (which must hold a genesis) and returns a
// writer owning it.
func NewWriter(db Store, exec *Executor, cfg WriterConfig, log zerolog.Logger) (*Writer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	view, err := db.View()
	if err != nil {
		return nil, err
	}
	head, err := loadHead(view)
	if err != nil {
		view.Close()
		return nil, err
	}
	w := &Writer{
		db: db, exec: exec, log: log.With().Str("component", "writer").Logger(),
		reqs: make(chan writerJob), quit: make(chan struct{}), done: make(chan struct{}),
		sectionNice: cfg.SectionNice,
	}
	w.head.Store(head)
	return w, nil
}

// loadHead reads the head, safe and finalized blocks and the window of
// recent canonical headers from view, which the Head then owns.
func loadHead(view store.View) (*Head, error) {
	latest, err := view.Tag(store.TagLatest)
	if err != nil {
		return nil, fmt.Errorf("load head: %w", err)
	}
	h := &Head{view: newSharedView(view)}
	from := uint64(0)
	if latest+1 > HeadWindow {
		from = latest + 1 - HeadWindow
	}
	headers := ViewHeaders{View: view}
	for n := from; n <= latest; n++ {
		hdr, err := headers.HeaderByNumber(n)
		if err != nil {
			return nil, fmt.Errorf("load head: canonical header %d: %w", n, err)
		}
		h.recent, h.hashes = append(h.recent, hdr), append(h.hashes, hdr.Hash())
	}
	if h.safe, h.finalized, err = tagHeaders(view, h); err != nil {
		return nil, err
	}
	return h, nil
}

// tagHeaders reads the safe and finalized tags of view (the window of h
// first).
func tagHeaders(view store.View, h *Head) (safe, finalized *types.Header, err error) {
	headers := ViewHeaders{Head: h, View: view}
	get := func(tag store.Tag) (*types.Header, error) {
		n, err := view.Tag(tag)
		if err != nil {
			return nil, fmt.Errorf("tag %s: %w", tag, err)
		}
		hdr, err := headers.HeaderByNumber(n)
		if err != nil {
			return nil, fmt.Errorf("tag %s: header %d: %w", tag, n, err)
		}
		return hdr, nil
	}
	if safe, err = get(store.TagSafe); err != nil {
		return nil, nil, err
	}
	if finalized, err = get(store.TagFinalized); err != nil {
		return nil, nil, err
	}
	return safe, finalized, nil
}

// Head returns the current head (one atomic load). Use OpenHead to read
// state or blocks beyond its window.
func (w *Writer) Head() *Head { return w.head.Load() }

// OpenHead returns the current head and its store view, which holds
// exactly that chain (a write after the call does not show in it). Close
// the view when done: it releases the reader's reference, the view is
// shared. Never waits for the writer.
func (w *Writer) OpenHead() (*Head, store.View, error) {
	for {
		h := w.head.Load()
		if v, ok := h.Acquire(); ok {
			return h, v, nil
		}
		// h was retired between the load and the acquire: a newer head is
		// published already, unless the writer stopped.
		if w.head.Load() == h {
			return nil, nil, ErrWriterStopped
		}
	}
}

// SubscribeHeads calls fn with every HeadEvent from now on, on the writer
// goroutine, after the head is published and the driver's Rebase ran. fn
// must not block.
func (w *Writer) SubscribeHeads(fn func(*HeadEvent)) (unsubscribe func()) {
	return w.heads.Subscribe(fn)
}

// Start starts the writer goroutine.
func (w *Writer) Start() {
	w.startOnce.Do(func() {
		w.running.Store(true)
		go w.loop()
	})
}

// Stop ends the writer goroutine after the write in progress and closes the
// last head's view once its readers are done. Writes submitted afterwards
// fail with ErrWriterStopped.
func (w *Writer) Stop() {
	w.stopOnce.Do(func() { close(w.quit) })
	w.startOnce.Do(func() { close(w.done) })
	<-w.done
	w.retireOnce.Do(func() { w.retire(w.head.Load()) })
	w.spare.Close()
}

// retire drops the Head's own reference to its view (closed once the last
// reader is done).
func (w *Writer) retire(h *Head) {
	h.view.release()
}

func (w *Writer) loop() {
	defer close(w.done)
	defer w.running.Store(false)
	for {
		select {
		case <-w.quit:
			return
		case j := <-w.reqs:
			if j.spareIfBusy && !w.NeedsSpareP() {
				w.inline = true
				j.run()
				w.inline = false
			} else {
				w.WithSpareP(j.run)
			}
		}
	}
}

// WithSpareP runs fn with a second P when the process has one
// (GOMAXPROCS 1: a node limited to one CPU). A goroutine in a blocking
// system call (an fsync) keeps its P until the call returns or the
// runtime's sysmon retakes it, which can take up to 10 ms when sysmon is
// idle, and a goroutine that yields with runtime.Gosched on one P is
// rescheduled before the network is polled: with one P, every read would
// wait for the disk, or for all of a long computation. The second P exists
// only for these sections (two stop-the-world pauses of microseconds
// each), so reads do not pay for two Ps time-sharing one core the rest of
// the time (that cost 10-40 % CPU per request in the side-by-side
// benchmark). Sections nest and overlap (counted: the first raises, the
// last lowers). A node has one Writer, so nothing else changes GOMAXPROCS
// under it; where a process holds several (tests), overlapping sections may
// end one another's spare P early, which costs only the spare P, never
// correctness (pending.BenchmarkSwapReaderDelay measures the reader's
// delay). The two Ps still share one core by the kernel's time slices, so
// with WriterConfig.SectionNice a raised section runs fn on a thread of
// its own at that lower priority (sched.SpareP, kept for the next section): a
// reader's thread waking with work preempts it instead of waiting out the
// slice. The writer runs its jobs in one, except the sequencer's (a
// pre-confirmation's journal write, a sealed block's write), which take
// one only when the node needs it (writerJob, SetSpareWhen).
func (w *Writer) WithSpareP(fn func()) { w.spare.Run(w.sectionNice, fn) }

// NeedsSpareP reports whether a section starting now should raise: the
// condition set by SetSpareWhen, true without one.
func (w *Writer) NeedsSpareP() bool { return w.spareWhen == nil || w.spareWhen() }

// writerJob is a job for the writer goroutine. The sequencer's (a
// pre-confirmation's journal entries, a sealed block: up to a millisecond
// or so of CPU, then the fsync, which waits in the poller) take a spare-P
// section only when the node needs one (spareIfBusy: NeedsSpareP);
// the others (imported blocks, reorgs: milliseconds of CPU without a
// yield) always do.
type writerJob struct {
	run         func()
	spareIfBusy bool
}

// do runs fn on the writer goroutine and returns its error.
func (w *Writer) do(fn func() error) error { return w.doJob(fn, false) }

// doSpareIfBusy is do for a job that takes a spare P only when the node
// needs one (see writerJob).
func (w *Writer) doSpareIfBusy(fn func() error) error { return w.doJob(fn, true) }

func (w *Writer) doJob(fn func() error, spareIfBusy bool) error {
	if !w.running.Load() {
		return ErrWriterStopped
	}
	errc := make(chan error, 1)
	select {
	case w.reqs <- writerJob{run: func() { errc <- fn() }, spareIfBusy: spareIfBusy}:
		return <-errc
	case <-w.done:
		return ErrWriterStopped
	}
}

// publish opens a view of the store after a write, publishes the Head
// (recent headers above keep dropped, added appended), runs rebase,
// notifies subscribers and only then retires the old head (so that whoever
// republishes the head in a subscriber, like pending.Manager, has done so
// before the old head's view can close under a reader). Runs on the writer
// goroutine.
func (w *Writer) publish(keep uint64, added, removed []*types.Header, rebase Rebase) error {
	return w.publishEvent(keep, &HeadEvent{Added: added, Removed: removed}, rebase)
}

// publishEvent is publish with the rest of the event (removed logs) given.
func (w *Writer) publishEvent(keep uint64, ev *HeadEvent, rebase Rebase) error {
	added := ev.Added
	view, err := w.db.View()
	if err != nil {
		return fmt.Errorf("%w: open view after write: %v", ErrWriterFault, err)
	}
	old := w.head.Load()
	h, err := old.next(keep, added, view)
	if err != nil {
		view.Close()
		return fmt.Errorf("%w: %v", ErrWriterFault, err)
	}
	if h.safe, h.finalized, err = tagHeaders(view, h); err != nil {
		view.Close()
		return fmt.Errorf("%w: %v", ErrWriterFault, err)
	}
	w.head.Store(h)
	var rerr error
	if rebase != nil {
		rerr = rebase(h)
	}
	ev.Head = h
	w.heads.Send(ev)
	w.retire(old)
	return rerr
}

// Import verifies, executes and writes blocks on top of the head, in order,
// each in one atomic batch followed by its own Head. A block that fails
// verification returns an error wrapping ErrInvalidBlock; nothing of it is
// written and the blocks before it stay.
func (w *Writer) Import(blocks []*chaintypes.Block, opts ImportOptions) error {
	return w.do(func() error {
		for i, b := range blocks {
			h := w.head.Load()
			eb, err := w.exec.ExecuteBlock(b, h.Header(), ViewHeaders{Head: h, View: h.view.v}, h.view.v)
			if err != nil {
				return err
			}
			var tags []store.Tag
			if i == len(blocks)-1 {
				tags = opts.Tags
			}
			if err := w.writeExecuted(h, eb, tags, opts.Rebase); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeExecuted writes eb (a child of the head h) in its own batch with
// tags, publishes its Head and runs rebase (on the writer goroutine).
func (w *Writer) writeExecuted(h *Head, eb *ExecutedBlock, tags []store.Tag, rebase Rebase) error {
	if err := w.db.WriteBlock(eb.BlockWrite(tags...)); err != nil {
		return fmt.Errorf("write block %d: %w", eb.Block.NumberU64(), err)
	}
	return w.publish(h.Number(), []*types.Header{eb.Block.Header()}, nil, rebase)
}

// ImportBlock imports one block, moving tags (besides latest) to it.
func (w *Writer) ImportBlock(b *chaintypes.Block, tags ...store.Tag) error {
	return w.Import([]*chaintypes.Block{b}, ImportOptions{Tags: tags})
}

// Seal writes a block built and executed locally (the sequencer's) on top
// of the head in one atomic batch, publishes its Head and runs rebase. A
// block whose parent is not the head fails with ErrNotOnHead. It takes a
// spare-P section only when the node needs one (NeedsSpareP). Without
// one, yield (when not nil: the caller's wait for the network poll, see
// chain/sched.NetYield) is called between the write's parts (staging the
// block's data, staging its state, the commit, the state cache, then the
// head's publication and rebase: each a fraction of a millisecond for a
// block of a few hundred transactions), so that requests are served
// between them; the commit's fsync waits in the poller.
func (w *Writer) Seal(bw *store.BlockWrite, rebase Rebase, yield func()) error {
	return w.doSpareIfBusy(func() error {
		h := w.head.Load()
		if bw.Block.ParentHash() != h.Hash() {
			return fmt.Errorf("%w: block %d has parent %s, head is %d %s", ErrNotOnHead,
				bw.Block.NumberU64(), bw.Block.ParentHash().Hex(), h.Number(), h.Hash().Hex())
		}
		var between func()
		if w.inline && yield != nil {
			between = yield
		}
		if err := w.db.WriteBlockYielding(bw, between); err != nil {
			return fmt.Errorf("write block %d: %w", bw.Block.NumberU64(), err)
		}
		if between != nil {
			between()
		}
		return w.publish(h.Number(), []*types.Header{bw.Block.Header()}, nil, rebase)
	})
}

// UnwindTo removes every block above number (and its state) in one atomic
// batch, publishes the Head at number and runs rebase.
func (w *Writer) UnwindTo(number uint64, rebase Rebase) error {
	return w.do(func() error {
		h := w.head.Load()
		if number >= h.Number() {
			return nil
		}
		headers := ViewHeaders{Head: h, View: h.view.v}
		var removed []*types.Header
		for n := h.Number(); n > number; n-- {
			hdr, err := headers.HeaderByNumber(n)
			if err != nil {
				return fmt.Errorf("unwind: header %d: %w", n, err)
			}
			removed = append(removed, hdr)
		}
		logs, err := removedLogs(h.view.v, removed)
		if err != nil {
			return fmt.Errorf("unwind: %w", err)
		}
		if err := w.db.UnwindTo(number); err != nil {
			return fmt.Errorf("unwind to %d: %w", number, err)
		}
		return w.publishEvent(number, &HeadEvent{Removed: removed, RemovedLogs: logs}, rebase)
	})
}

// ImportRLP reads blocks (a plain concatenation of RLP-encoded blocks, the
// `geth export` format) from r and imports them in order. Blocks the store
// already has canonically are skipped. A block whose parent is an older
// canonical block starts a side chain, which becomes canonical as in
// go-ethereum's import (see importFileBlock). The last imported block also becomes
// safe and finalized. A block that does not decode ends the import with an
// error naming it; the blocks before it stay imported. Blocks are decoded,
// and their senders recovered, ahead of execution on the other cores
// (senders.go). A run of blocks each the child of the one before (up to
// importRunMax) is one writer job, pipelined (importpipe.go): it starts
// with the run's first block decoded, the next block executes on the
// spare core while the previous one's root is verified and it is written;
// each block is still verified, then written in its own atomic batch, in
// order. progress is called at most every interval (from the writer
// goroutine during a run).
func (w *Writer) ImportRLP(r io.Reader, interval time.Duration, progress func(ImportStats)) (ImportStats, error) {
	var (
		stats  ImportStats
		start  = time.Now()
		last   = start
		stream = rlp.NewStream(r, 0)
		// run is the pipelined run being imported (nil: none): runLast
		// the last block fed to it, runLen how many. stats is only
		// touched by the run (done, on the writer goroutine) while it
		// is open. tagged says whether the last block written got the
		// final tags.
		run     *importFeed
		runLast *chaintypes.Block
		runLen  int
		tagged  bool
		// lastSkipped is the file's last block when it was skipped as
		// the canonical block at its height (nil: the last was not).
		lastSkipped *types.Header
	)
	done := func(b *chaintypes.Block) {
		stats.Blocks++
		stats.Txs += len(b.Transactions())
		stats.Gas += b.GasUsed()
		stats.Head = b.Header()
		if progress != nil && time.Since(last) >= interval {
			last = time.Now()
			stats.Duration = time.Since(start)
			progress(stats)
		}
	}
	finish := func(final bool) error {
		if run == nil {
			return nil
		}
		var tags []store.Tag
		if final {
			tags = []store.Tag{store.TagSafe, store.TagFinalized}
		}
		ran, err := run.finish(tags)
		run, runLast, runLen = nil, nil, 0
		tagged = final && ran
		return err
	}
	blocks, stop := w.decodeAhead(stream)
	defer stop()
	defer finish(false) // a run still open on an early return
	for d := range blocks {
		if d.err != nil {
			// The blocks before the bad one are valid: keep them.
			if err := finish(false); err != nil {
				return stats, err
			}
			n := stats.Blocks + stats.Skipped + 1
			return stats, fmt.Errorf("decode block %d of the file: %w", n, d.err)
		}
		b := d.block
		lastSkipped = nil
		if run != nil && runLen < importRunMax && b.ParentHash() == runLast.Hash() {
			// The child of a block not yet written cannot be canonical.
			if !run.feed(b) {
				err := finish(false) // the run failed
				return stats, err
			}
			runLast = b
			runLen++
			continue
		}
		// Whether b is canonical, or a side chain's, is asked of the
		// store with every block before it written.
		if err := finish(false); err != nil {
			return stats, err
		}
		if have, err := w.isCanonical(b); err != nil {
			return stats, err
		} else if have {
			stats.Skipped++
			lastSkipped = b.Header()
			continue
		}
		if b.ParentHash() == w.head.Load().Hash() {
			run, runLast, runLen = w.startImportRun(b, done), b, 1
			continue
		}
		// A side chain, or a block the writer refuses: one block as
		// go-ethereum's import inserts it (the final tags, if it is the
		// file's last, are set below).
		if err := w.importFileBlock(b, nil); err != nil {
			return stats, err
		}
		done(b)
		tagged = false
	}
	if err := finish(true); err != nil {
		return stats, err
	}
	if stats.Head != nil && !tagged {
		// The file's last blocks were skipped, the last was a side
		// chain's, or the run's last was written before the file's end
		// was known: the last block written still gets the final tags.
		hash := stats.Head.Hash()
		if err := w.SetTags(map[store.Tag]common.Hash{store.TagSafe: hash, store.TagFinalized: hash}); err != nil {
			return stats, err
		}
	} else if stats.Head == nil && lastSkipped != nil {
		// Every block was already canonical (a re-import): the tags
		// move up to the file's last block if they are below it, as
		// after an import killed between its last block and its tags;
		// never down (a file of older blocks).
		if err := w.SetTags(tagsBelow(w.head.Load(), lastSkipped)); err != nil {
			return stats, err
		}
	}
	stats.Duration = time.Since(start)
	return stats, nil
}

// tagsBelow is safe and finalized, those of h below block b, moved to b.
func tagsBelow(h *Head, b *types.Header) map[store.Tag]common.Hash {
	tags := make(map[store.Tag]common.Hash, 2)
	n := b.Number.Uint64()
	if s := h.Safe(); s == nil || s.Number.Uint64() < n {
		tags[store.TagSafe] = b.Hash()
	}
	if f := h.Finalized(); f == nil || f.Number.Uint64() < n {
		tags[store.TagFinalized] = b.Hash()
	}
	return tags
}

// importFileBlock imports b, a block of a chain file, as go-ethereum's
// import inserts it: on the head, or, when its parent is an older
// canonical block, as a side chain that becomes canonical (Reorg onto the
// parent: the canonical blocks above it are replaced by b, in one step).
// The file's last block wins, as in go-ethereum since the merge; a parent
// that is not canonical is refused (ErrInvalidBlock: tipnode keeps no
// side chains).
func (w *Writer) importFileBlock(b *chaintypes.Block, tags []store.Tag) error {
	h, view, err := w.OpenHead()
	if err != nil {
		return err
	}
	n := b.NumberU64()
	side := false
	if b.ParentHash() != h.Hash() && n >= 1 && n-1 < h.Number() {
		hash, err := w.canonicalHash(h, view, n-1)
		if err != nil {
			view.Close()
			return err
		}
		side = hash == b.ParentHash()
	}
	view.Close()
	if side {
		return w.Reorg(n-1, []*chaintypes.Block{b}, ImportOptions{Tags: tags})
	}
	return w.ImportBlock(b, tags...)
}

// canonicalHash is the hash of canonical block n (at most h's number) of
// h's chain, read from view (h's or a newer one) when not in h's window.
func (w *Writer) canonicalHash(h *Head, view store.View, n uint64) (common.Hash, error) {
	if _, hash, ok := h.Recent(n); ok {
		return hash, nil
	}
	return view.CanonicalHash(n)
}

// isCanonical reports whether b is the canonical block at its height.
func (w *Writer) isCanonical(b *chaintypes.Block) (bool, error) {
	h, view, err := w.OpenHead()
	if err != nil {
		return false, err
	}
	defer view.Close()
	if b.NumberU64() > h.Number() {
		return false, nil
	}
	hash, err := w.canonicalHash(h, view, b.NumberU64())
	if err != nil {
		return false, err
	}
	return hash == b.Hash(), nil
}

// JournalPendingEntries durably records the open pending block's header
// (a.Fresh: with the block's first pre-confirmation), its pre-confirmed
// transactions and the dev chain's state overrides at the positions a
// names, on the writer goroutine (see store.AppendPendingEntries). A
// driver publishes a pre-confirmation only after this returned; the
// block's own write drops the journal.
func (w *Writer) JournalPendingEntries(a store.PendingAppend) error {
	return w.doSpareIfBusy(func() error {
		if a.Header.ParentHash != w.head.Load().Hash() {
			return fmt.Errorf("%w: pending block %d has parent %s, head is %s", ErrNotOnHead,
				a.Header.Number, a.Header.ParentHash.Hex(), w.head.Load().Hash().Hex())
		}
		return w.db.AppendPendingEntries(a)
	})
}

// PendingJournal returns the journaled pending block (nil: none) for a
// driver to rebuild after a restart.
func (w *Writer) PendingJournal() (*store.PendingJournal, error) {
	var j *store.PendingJournal
	err := w.do(func() (err error) {
		j, err = w.db.ReadPending()
		return err
	})
	return j, err
}

// DropPendingJournal deletes the pending journal (a driver that cannot
// rebuild it).
func (w *Writer) DropPendingJournal() error {
	return w.do(w.db.ClearPending)
}
