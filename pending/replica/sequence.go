package replica

import (
	"github.com/ethereum/go-ethereum/beacon/engine"

	"github.com/tipnode/tipnode/pending/stream"
)

// verdict is what the sequence validator makes of one message.
type verdict int

const (
	vAppend       verdict = iota // index k+1 of the open block: execute its transactions
	vNextBlock                   // index 0 of a new block: open it
	vRestart                     // index 0 of the open block with a new payload id: drop it, open again
	vDuplicate                   // the open block's last message again: ignored, no notification
	vGap                         // index > k+1 of the open block: drop the block
	vLowerIndex                  // index < k of the open block: drop the block
	vNotStarted                  // index > 0 of a block not started: dropped, wait for an index 0
	vBeyondWindow                // a block above head+window: dropped
	vCanonical                   // a block at or below the canonical head: dropped
	vClosed                      // a pending block a later block already closed: dropped
	vMalformed                   // index 0 without base, block numbers that disagree, payload id changed mid-block: freeze the block
	vReplay                      // index <= k of the open block, same payload id: compared with what it said then (a relay replaying the block, or a rebuilt payload reusing its id)
	vFrozen                      // a message of a block that stopped receiving (frozen after a loss, or refused): ignored
	vResume                      // index <= k of the open block re-announcing what it holds, cut elsewhere (a restarted sequencer re-emitting its journaled block): followed without going back (driver.go, recut)
)

var verdictNames = [...]string{"append", "next_block", "restart", "duplicate", "gap", "lower_index",
	"not_started", "beyond_window", "canonical", "closed", "malformed", "replay", "frozen", "resume"}

func (v verdict) String() string { return verdictNames[v] }

// seqState is what the validator needs to know: the canonical head and the
// newest block of the window, if one is open (receiving messages).
type seqState struct {
	head   uint64 // canonical head number
	window uint64 // blocks above the head the window holds
	open   bool
	frozen bool             // the open block receives nothing more (frozen or refused)
	number uint64           // the open block's number
	index  uint64           // its last index
	id     engine.PayloadID // its payload id
}

// classify validates p against st (pure: no side effects).
func classify(st seqState, p *stream.Payload) verdict {
	n := p.Metadata.BlockNumber
	if p.Index == 0 && (p.Base == nil || uint64(p.Base.BlockNumber) != n) {
		return vMalformed
	}
	switch {
	case n <= st.head:
		return vCanonical
	case n > st.head+st.window:
		return vBeyondWindow
	}
	if st.open {
		switch {
		case n == st.number:
			switch {
			case p.Index == 0 && p.PayloadID != st.id:
				return vRestart
			case st.frozen:
				return vFrozen
			case p.PayloadID != st.id:
				return vMalformed
			case p.Index <= st.index:
				return vReplay
			case p.Index == st.index+1:
				return vAppend
			default:
				return vGap
			}
		case n < st.number:
			return vClosed
		}
	}
	if p.Index == 0 {
		return vNextBlock
	}
	return vNotStarted
}
