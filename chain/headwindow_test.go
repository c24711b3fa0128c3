package chain_test

import (
	"fmt"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// TestHeadWindowAfterDeepUnwindAndReorg: unwinds (evm_revert, a follower's
// rewind) and reorgs (a follower's reorg) at and around the depth of the
// in-memory header window leave a Head whose window holds exactly the
// newest min(HeadWindow, head+1) canonical headers of its view: nothing
// panics (an unwind below the window's first block used to leave it
// empty), and the window is refilled from the store instead of shrinking
// to what was kept and added.
func TestHeadWindowAfterDeepUnwindAndReorg(t *testing.T) {
	const height = chain.HeadWindow + 4
	config, engine := params.MergedTestChainConfig, gethCases()[1].engine
	gg := newGethGenesis(config, engine)
	gdb, blocks, _ := core.GenerateChainWithGenesis(gg.gspec, engine, height, func(int, *core.BlockGen) {})
	db, g, w := gg.initStore(t)
	if err := w.Import(chaintypes.FromEthBlocks(blocks), chain.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	// branch returns a side branch of n blocks on the canonical block at
	// ancestor (another coinbase, so other hashes).
	branch := func(ancestor uint64, n int) []*types.Block {
		parent := g.Block
		if ancestor > 0 {
			parent = blocks[ancestor-1]
		}
		side, _ := core.GenerateChain(config, parent, engine, gdb, n, func(_ int, b *core.BlockGen) {
			b.SetCoinbase(common.Address{0xcc, byte(ancestor), byte(n)})
		})
		return side
	}
	check := func(what string, want []*types.Block) {
		t.Helper()
		h := w.Head()
		top := uint64(len(want))
		if h.Number() != top || h.Hash() != want[top-1].Hash() {
			t.Fatalf("%s: head %d %s, want %d", what, h.Number(), h.Hash().Hex(), top)
		}
		view := openView(t, db)
		if err := checkHeadView(h, view); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		low := uint64(0)
		if top+1 > chain.HeadWindow {
			low = top + 1 - chain.HeadWindow
		}
		for n := low; n <= top; n++ {
			hdr, hash, ok := h.Recent(n)
			wantHash := g.Block.Hash()
			if n > 0 {
				wantHash = want[n-1].Hash()
			}
			if !ok || hash != wantHash || hdr.Hash() != wantHash || hdr.Number.Uint64() != n {
				t.Fatalf("%s: window entry %d (window %d..%d): ok=%v", what, n, low, top, ok)
			}
		}
		if _, _, ok := h.Recent(low - 1); low > 0 && ok {
			t.Fatalf("%s: block %d below the window is in it", what, low-1)
		}
		if h.Safe() == nil || h.Finalized() == nil {
			t.Fatalf("%s: no safe or finalized header", what)
		}
	}
	check("import", blocks)
	for _, depth := range []uint64{chain.HeadWindow - 1, chain.HeadWindow, chain.HeadWindow + 1} {
		keep := uint64(height) - depth
		t.Run(fmt.Sprintf("unwind-%d", depth), func(t *testing.T) {
			if err := w.UnwindTo(keep, nil); err != nil {
				t.Fatal(err)
			}
			if keep > 0 {
				check("unwind", blocks[:keep])
			} else if h := w.Head(); h.Number() != 0 || checkHeadView(h, openView(t, db)) != nil {
				t.Fatalf("unwind to genesis: head %d", h.Number())
			}
			if err := w.Import(chaintypes.FromEthBlocks(blocks[keep:]), chain.ImportOptions{}); err != nil {
				t.Fatal(err)
			}
			check("re-import", blocks)
		})
	}
	// Reorgs onto a shorter branch (one block: the window must be refilled
	// from the store) at and just past the window's depth, and onto a
	// longer one at its depth.
	for _, tc := range []struct {
		depth uint64
		n     int
	}{{chain.HeadWindow, 1}, {chain.HeadWindow + 1, 1}, {chain.HeadWindow, chain.HeadWindow + 1}} {
		depth, n := tc.depth, tc.n
		ancestor := uint64(height) - depth
		t.Run(fmt.Sprintf("reorg-%d-onto-%d", depth, n), func(t *testing.T) {
			side := branch(ancestor, n)
			if err := w.Reorg(ancestor, chaintypes.FromEthBlocks(side), chain.ImportOptions{}); err != nil {
				t.Fatal(err)
			}
			check("reorg", append(append([]*types.Block{}, blocks[:ancestor]...), side...))
			if err := w.Reorg(ancestor, chaintypes.FromEthBlocks(blocks[ancestor:]), chain.ImportOptions{}); err != nil {
				t.Fatal(err)
			}
			check("reorg back", blocks)
		})
	}
}
