package chain

import (
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// The import pipeline (Writer.importRun): a run of blocks, each the child
// of the one before and the first the child of the head, is imported on two
// goroutines. The executor goroutine executes block N+1 on block N's
// post-state held in memory (the written head's state with the executed,
// unwritten blocks' diffs stacked on it: diffStack), while the writer
// goroutine computes and verifies block N's state root on the written
// head's trie, writes N in its own atomic batch and publishes its Head.
// A block is written only after its root is verified, in order, exactly as
// Writer.Import writes it: a block that fails verification (execution or
// root) writes nothing of itself and ends the run with the error naming
// it, the blocks before it stay, and the executed blocks after it are
// dropped. On the 1M-slot benchmark chain execution is about a third of
// the writer's work per block, the root and the write the rest. The run's
// blocks come as ImportRLP decodes them (importFeed), so that execution
// starts with the file's first block while the blocks after it are still
// decoded and their senders recovered.

const (
	// pipeAhead is how many executed blocks may wait for their root and
	// write (their diffs are held in memory).
	pipeAhead = 4
	// pipeRebase is how far the written head may move past the state the
	// executor reads from before it reads from the new head instead (its
	// diff stack stays short: every read that misses the stacked diffs
	// walks all of them).
	pipeRebase = 4
	// importRunMax is the most blocks ImportRLP hands to one run (one
	// writer job).
	importRunMax = 256
)

// importFeed is a run's blocks after its first, handed over as they are
// decoded; more closes after the run's last block.
type importFeed struct {
	more chan *chaintypes.Block
	// tags (besides latest) move to the run's last block: set before
	// more closes.
	tags []store.Tag
	// ended closes when the run returned err; tagged says whether its
	// last block was written with tags (see executeAhead).
	ended  chan struct{}
	err    error
	tagged bool
}

// startImportRun starts importRun of first (a child of the head) and the
// blocks fed after it on a goroutine.
func (w *Writer) startImportRun(first *chaintypes.Block, done func(*chaintypes.Block)) *importFeed {
	f := &importFeed{more: make(chan *chaintypes.Block, pipeAhead), ended: make(chan struct{})}
	go func() {
		defer close(f.ended)
		f.err = w.importRun(first, f, done)
	}()
	return f
}

// feed hands b (the child of the block fed before) to the run; false when
// the run ended (an error: finish returns it).
func (f *importFeed) feed(b *chaintypes.Block) bool {
	select {
	case f.more <- b:
		return true
	case <-f.ended:
		return false
	}
}

// finish ends the run after the blocks fed, tags moving to its last one
// (when it was not known to be the last as it was written, not: tagged
// false), waits for it and returns its error.
func (f *importFeed) finish(tags []store.Tag) (tagged bool, err error) {
	f.tags = tags
	close(f.more)
	<-f.ended
	return f.tagged, f.err
}

// executed is one block the executor goroutine finished, or the error that
// ended it; last says it is the run's last block, end (without a block)
// that the run ended after the block sent before.
type executed struct {
	eb   *ExecutedBlock
	last bool
	end  bool
	err  error
}

// importRun imports first (a child of the head) and the blocks of f (each
// the child of the one before) on the writer goroutine, pipelined (see
// above); f.tags (besides latest) move to the last block. done, when set,
// is called on the writer goroutine after each block's Head was published.
func (w *Writer) importRun(first *chaintypes.Block, f *importFeed, done func(*chaintypes.Block)) error {
	return w.do(func() error {
		h := w.head.Load()
		if first.ParentHash() != h.Hash() {
			return fmt.Errorf("%w %d (%s): parent hash %s is not the head %d %s", ErrInvalidBlock,
				first.NumberU64(), first.Hash().Hex(), first.ParentHash().Hex(), h.Number(), h.Hash().Hex())
		}
		out := make(chan executed, pipeAhead)
		quit := make(chan struct{})
		go w.executeAhead(h, first, f.more, out, quit)
		defer func() {
			close(quit)
			for range out { // the executor ends, releasing its view
			}
		}()
		for {
			r, ok := <-out
			if !ok {
				return fmt.Errorf("%w: import executor ended early", ErrWriterFault)
			}
			if r.err != nil {
				return r.err
			}
			if r.end {
				return nil
			}
			eb := r.eb
			h := w.head.Load()
			if err := w.exec.verifyStateRootAt(eb, h.view.v, h.Number()); err != nil {
				return err
			}
			var t []store.Tag
			if r.last {
				t = f.tags // set before more closed, which the executor saw before sending r
				f.tagged = true
			}
			if err := w.writeExecuted(h, eb, t, nil); err != nil {
				return err
			}
			if done != nil {
				done(eb.Block)
			}
			if r.last {
				return nil
			}
		}
	})
}

// executeAhead executes first and the blocks from more in order on the
// state after h (a head of the writer's, whose view it holds a reference
// to while it reads) with each executed block's diff stacked in memory,
// and sends each block's result to out, which it closes when done: after
// the last block (more closed), after the first error (sent), or when quit
// closes. A block's result says whether it is the run's last when more is
// closed as it is sent (at the file's end: decoding ends long before the
// last block's execution); when more closes only later, the end is sent on
// its own (the last block was written without the run's tags). It never
// waits for the next block before sending a result: a block is written
// without waiting for the file's next one. As the writer goroutine writes
// the blocks, it moves its base up to a newer head every pipeRebase
// blocks.
func (w *Writer) executeAhead(h *Head, first *chaintypes.Block, more <-chan *chaintypes.Block, out chan<- executed, quit <-chan struct{}) {
	defer close(out)
	send := func(r executed) bool {
		select {
		case out <- r:
			return r.err == nil
		case <-quit:
			return false
		}
	}
	view, ok := h.Acquire()
	if !ok {
		// The writer goroutine retires its head only after publishing
		// the next one, which waits for this goroutine's first block.
		send(executed{err: fmt.Errorf("%w: the head's view closed under the import", ErrWriterFault)})
		return
	}
	p, err := newPipeState(h, view)
	if err != nil {
		send(executed{err: err})
		return
	}
	defer func() { p.close() }()
	parent := h.Header()
	for b := first; ; {
		if err := p.rebase(w); err != nil {
			send(executed{err: err})
			return
		}
		eb, err := w.exec.ExecuteBlockOn(b, parent, p.headers, p.state)
		if err != nil {
			send(executed{err: err})
			return
		}
		p.push(b, eb.Diff)
		parent = b.Header()
		var next *chaintypes.Block
		known := true
		select {
		case next = <-more: // nil: closed
		default:
			known = false
		}
		if !send(executed{eb: eb, last: known && next == nil}) || known && next == nil {
			return
		}
		if !known {
			select {
			case next = <-more:
			case <-quit:
				return
			}
			if next == nil {
				send(executed{end: true})
				return
			}
		}
		b = next
	}
}

// pipeState is the executor goroutine's state: a written head's view, its
// state with the diffs of the blocks executed above it stacked on, and the
// headers of both.
type pipeState struct {
	view    store.View // a reference to the head's shared view (Close releases it)
	base    uint64
	state   *diffStack
	headers *branchHeaders
}

// newPipeState reads from view, a reference to h's view it takes over.
func newPipeState(h *Head, view store.View) (*pipeState, error) {
	base, err := view.StateAt(h.Number())
	if err != nil {
		view.Close()
		return nil, err
	}
	return &pipeState{view: view, base: h.Number(), state: &diffStack{base: base},
		headers: &branchHeaders{canon: ViewHeaders{Head: h, View: view}, ancestor: h.Number(), byHash: make(map[common.Hash]*types.Header)}}, nil
}

// push stacks executed block b with its diff.
func (p *pipeState) push(b *chaintypes.Block, diff *store.StateDiff) {
	p.state.push(diff)
	p.headers.add(b.Header(), b.Uncles())
}

// rebase moves the state onto the writer's head once it is pipeRebase
// blocks or more above the base: the head's chain is a prefix of the
// executed blocks (the writer writes them in order).
func (p *pipeState) rebase(w *Writer) error {
	for {
		nh := w.head.Load()
		if nh.Number() < p.base+pipeRebase {
			return nil
		}
		view, ok := nh.Acquire()
		if !ok {
			continue // retired after a newer head was published: load that
		}
		drop := nh.Number() - p.base
		if drop > uint64(len(p.state.diffs)) || nh.Hash() != p.headers.added[drop-1].Hash() {
			view.Close()
			return fmt.Errorf("%w: head %d %s is not among the executed blocks", ErrWriterFault, nh.Number(), nh.Hash().Hex())
		}
		np, err := newPipeState(nh, view)
		if err != nil {
			return err
		}
		for i, hdr := range p.headers.added[drop:] {
			np.state.push(p.state.diffs[int(drop)+i])
			np.headers.add(hdr, p.headers.uncles[hdr.Hash()])
		}
		p.close()
		*p = *np
		return nil
	}
}

func (p *pipeState) close() { p.view.Close() }
