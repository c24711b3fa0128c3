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
// the writer's work per block, the root and the write the rest.

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

// executed is one block the executor goroutine finished, or the error that
// ended it.
type executed struct {
	eb  *ExecutedBlock
	err error
}

// importRun imports blocks (the first a child of the head, each the child
// of the one before) on the writer goroutine, pipelined (see above);
// tags (besides latest) move to the last block. done, when set, is called
// on the writer goroutine after each block's Head was published. It
// returns how many blocks were written.
func (w *Writer) importRun(blocks []*chaintypes.Block, tags []store.Tag, done func(*chaintypes.Block)) (int, error) {
	written := 0
	err := w.do(func() error {
		h := w.head.Load()
		if len(blocks) == 0 {
			return nil
		}
		if blocks[0].ParentHash() != h.Hash() {
			return fmt.Errorf("%w %d (%s): parent hash %s is not the head %d %s", ErrInvalidBlock,
				blocks[0].NumberU64(), blocks[0].Hash().Hex(), blocks[0].ParentHash().Hex(), h.Number(), h.Hash().Hex())
		}
		out := make(chan executed, pipeAhead)
		quit := make(chan struct{})
		go w.executeAhead(h, blocks, out, quit)
		defer func() {
			close(quit)
			for range out { // the executor ends, releasing its view
			}
		}()
		for i, b := range blocks {
			r, ok := <-out
			if !ok {
				return fmt.Errorf("%w: import executor ended early", ErrWriterFault)
			}
			if r.err != nil {
				return r.err
			}
			eb := r.eb
			h := w.head.Load()
			tr, err := stateTrie(h.view.v, h.Number())
			if err != nil {
				return err
			}
			if tr != nil {
				if err := w.exec.VerifyStateRoot(eb, tr); err != nil {
					return err
				}
			}
			var t []store.Tag
			if i == len(blocks)-1 {
				t = tags
			}
			if err := w.db.WriteBlock(eb.BlockWrite(t...)); err != nil {
				return fmt.Errorf("write block %d: %w", b.NumberU64(), err)
			}
			written++
			if err := w.publish(h.Number(), []*types.Header{b.Header()}, nil, nil); err != nil {
				return err
			}
			if done != nil {
				done(b)
			}
		}
		return nil
	})
	return written, err
}

// executeAhead executes blocks in order on the state after h (a head of
// the writer's, whose view it holds a reference to while it reads) with
// each executed block's diff stacked in memory, and sends each block's
// result to out, which it closes when done: after the last block, after
// the first error (sent), or when quit closes. As the writer goroutine
// writes the blocks, it moves its base up to a newer head every
// pipeRebase blocks.
func (w *Writer) executeAhead(h *Head, blocks []*chaintypes.Block, out chan<- executed, quit <-chan struct{}) {
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
	for _, b := range blocks {
		if err := p.rebase(w); err != nil {
			send(executed{err: err})
			return
		}
		eb, err := w.exec.ExecuteBlockOn(b, parent, p.headers, p.state)
		if !send(executed{eb: eb, err: err}) {
			return
		}
		p.push(b, eb.Diff)
		parent = b.Header()
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
