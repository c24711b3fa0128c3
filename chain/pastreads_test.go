package chain_test

import (
	"testing"

	"github.com/tipnode/tipnode/chain/chaintest"
)

// TestPastReadsMatchHistory imports the conformance chain block by block
// and, after each block, reads every account, code and slot of history.json
// at every height from 0 to the new latest block, twice, through a fresh
// view: the reads below the latest block go through the past cache (filled
// by the first pass, answering the second) and must equal the oracle after
// every new block. Then it unwinds to block 40 and re-imports the rest with
// the same checks, so no answer cached before the unwind is served after.
func TestPastReadsMatchHistory(t *testing.T) {
	db, _, w := chaintest.GenesisStore(t)
	h := chaintest.LoadHistory(t)
	blocks := chaintest.Blocks(t)
	check := func(n uint64) {
		t.Helper()
		view := openView(t, db)
		checkHistory(t, view, h, 0, n)
		checkHistory(t, view, h, 0, n)
	}
	check(0)
	for i, b := range blocks {
		if err := w.ImportBlock(b); err != nil {
			t.Fatal(err)
		}
		check(uint64(i + 1))
	}
	if err := w.UnwindTo(40, nil); err != nil {
		t.Fatal(err)
	}
	check(40)
	for i, b := range blocks[40:] {
		if err := w.ImportBlock(b); err != nil {
			t.Fatal(err)
		}
		check(uint64(41 + i))
	}
}
