package chain

import (
	"errors"
	"io"
	"runtime"
	"sync"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rlp"

	"github.com/tipnode/tipnode/store/chaintypes"
)

// Bulk import decodes blocks and recovers their transactions' senders
// ahead of execution, on the other cores, as go-ethereum's import does:
// the signature recovery (secp256k1) is about a third of an import's CPU,
// and the execution that follows is sequential. types.Sender caches the
// recovered sender in the transaction, so execution's own Sender call finds
// it; a transaction execution reaches first is simply recovered twice.
const (
	// decodeLookahead is how many decoded blocks may wait for execution.
	// Kept short: decoding and recovery that run far ahead take the CPU
	// the writer needs and leave the import's last blocks to finish on
	// one core (64 left its last ~80 blocks' roots and writes nearly
	// alone at the end of the 1M-slot benchmark import).
	decodeLookahead = 8
	// senderChunk is the transactions one recovery job covers.
	senderChunk = 32
)

// decoded is one block of the file, or the error that ended decoding.
type decoded struct {
	block *chaintypes.Block
	err   error
}

// decodeAhead decodes stream's blocks on a goroutine into the returned
// channel (closed after the last block or an error, which is sent), while
// workers on every other core recover their senders. stop ends both early
// and waits for them; call it when done.
func (w *Writer) decodeAhead(stream *rlp.Stream) (<-chan decoded, func()) {
	out := make(chan decoded, decodeLookahead)
	quit := make(chan struct{})
	jobs := make(chan senderJob, 4*decodeLookahead)
	var wg sync.WaitGroup
	workers := max(1, runtime.GOMAXPROCS(0)-1)
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				j.recover()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(out)
		defer close(jobs)
		config := w.exec.Config()
		for {
			b := new(chaintypes.Block)
			err := stream.Decode(b)
			if err == nil {
				queueSenders(config, b, jobs, quit)
			}
			if errors.Is(err, io.EOF) {
				return
			}
			select {
			case out <- decoded{block: b, err: err}:
			case <-quit:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			close(quit)
			wg.Wait()
		})
	}
	return out, stop
}

// senderJob is a run of one block's signed transactions and its signer.
type senderJob struct {
	signer types.Signer
	txs    []*types.Transaction
}

func (j senderJob) recover() {
	for _, tx := range j.txs {
		types.Sender(j.signer, tx) // caches the sender in tx; an invalid signature is execution's to report
	}
}

// queueSenders hands b's signed transactions to the workers in chunks
// (deposits have no signature). It gives up when quit closes.
func queueSenders(config *params.ChainConfig, b *chaintypes.Block, jobs chan<- senderJob, quit <-chan struct{}) {
	txs := b.Transactions()
	if len(txs) == 0 {
		return
	}
	signer := types.MakeSigner(config, b.Number(), b.Time())
	chunk := make([]*types.Transaction, 0, senderChunk)
	send := func() bool {
		if len(chunk) == 0 {
			return true
		}
		select {
		case jobs <- senderJob{signer: signer, txs: chunk}:
			chunk = make([]*types.Transaction, 0, senderChunk)
			return true
		case <-quit:
			return false
		}
	}
	for _, tx := range txs {
		if t, ok := tx.(*types.Transaction); ok {
			chunk = append(chunk, t)
			if len(chunk) == senderChunk && !send() {
				return
			}
		}
	}
	send()
}
