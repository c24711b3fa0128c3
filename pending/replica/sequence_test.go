package replica

import (
	"testing"

	"github.com/ethereum/go-ethereum/beacon/engine"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/tipnode/tipnode/pending/stream"
)

func msg(id byte, number, index uint64) *stream.Payload {
	p := &stream.Payload{PayloadID: engine.PayloadID{id}, Index: index, Metadata: stream.Metadata{BlockNumber: number}}
	if index == 0 {
		p.Base = &stream.Base{BlockNumber: hexutil.Uint64(number)}
	}
	return p
}

// TestClassify: the per-block sequence rules, one row per case of the
// issue (append, next block, gap, lower index, duplicate, index > 0 of a
// block not started, beyond the window, already canonical) and the
// malformed ones.
func TestClassify(t *testing.T) {
	open := seqState{head: 10, window: 5, open: true, number: 11, index: 3, id: engine.PayloadID{1}}
	empty := seqState{head: 10, window: 5}
	frozen := open
	frozen.frozen = true
	noBase := msg(1, 12, 0)
	noBase.Base = nil
	wrongNum := msg(1, 12, 0)
	wrongNum.Base.BlockNumber = 13
	for _, tc := range []struct {
		name string
		st   seqState
		p    *stream.Payload
		want verdict
	}{
		{"append", open, msg(1, 11, 4), vAppend},
		{"next block", open, msg(2, 12, 0), vNextBlock},
		{"first block", empty, msg(2, 11, 0), vNextBlock},
		{"block after a skipped one (opened, disconnected)", open, msg(2, 13, 0), vNextBlock},
		{"gap", open, msg(1, 11, 6), vGap},
		{"lower index: compared with what it said (replay)", open, msg(1, 11, 2), vReplay},
		{"index 0 again, same payload: replay", open, msg(1, 11, 0), vReplay},
		{"index 0 again, new payload: restart", open, msg(9, 11, 0), vRestart},
		{"duplicate: replay", open, msg(1, 11, 3), vReplay},
		{"payload id changes mid-block", open, msg(9, 11, 4), vMalformed},
		{"frozen block: ignored", frozen, msg(1, 11, 4), vFrozen},
		{"frozen block: gap ignored", frozen, msg(1, 11, 9), vFrozen},
		{"frozen block: rebuilt payload restarts it", frozen, msg(9, 11, 0), vRestart},
		{"frozen block: next block opens", frozen, msg(2, 12, 0), vNextBlock},
		{"index > 0, block not started", empty, msg(1, 11, 2), vNotStarted},
		{"index > 0 of the next block before its index 0", open, msg(2, 12, 1), vNotStarted},
		{"beyond the window", open, msg(2, 16, 0), vBeyondWindow},
		{"last block of the window", open, msg(2, 15, 0), vNextBlock},
		{"already canonical", open, msg(1, 10, 4), vCanonical},
		{"already canonical, index 0", empty, msg(1, 9, 0), vCanonical},
		{"closed pending block", seqState{head: 10, window: 5, open: true, number: 12, index: 0, id: engine.PayloadID{2}}, msg(1, 11, 4), vClosed},
		{"index 0 without base", open, noBase, vMalformed},
		{"base and metadata numbers differ", open, wrongNum, vMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := classify(tc.st, tc.p); got != tc.want {
				t.Fatalf("classify = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []Config{{MaxAge: 0, Window: 5, Queue: 1}, {MaxAge: 1, Window: 0, Queue: 1}, {MaxAge: 1, Window: 65, Queue: 1}, {MaxAge: 1, Window: 5}} {
		if err := c.Validate(); err == nil {
			t.Fatalf("%+v validated", c)
		}
	}
}
