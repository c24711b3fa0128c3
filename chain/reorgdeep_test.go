package chain_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// TestWriterReorgBelowTrieWindow: with a trie window W = 4 and a chain of
// 12 blocks (trie base 8), Writer.Reorg onto block 2 (deeper than W) is
// taken as go-ethereum would. A branch whose last block has a forged state
// root (the header otherwise self-consistent: the block hash is the forged
// header's) is refused with ErrInvalidBlock naming both roots, and nothing
// is written: the head, the old chain and the trie (base, root, every
// node) stay. The valid branch is then taken: the canonical chain and the
// state at every height are go-ethereum's, the trie is rebuilt at the new
// head with the header's root and checks node by node, and the next block
// imports on it (its root verified on the rebuilt trie).
func TestWriterReorgBelowTrieWindow(t *testing.T) {
	config := params.MergedTestChainConfig
	gg := newGethGenesis(config, gethCases()[1].engine)
	engine := gg.engine
	logger := crypto.CreateAddress(gg.sender, 0)
	topic := func(branch byte, i int) []byte { return common.Hash{0: branch, 31: byte(i)}.Bytes() }
	const ancestor, W = 2, 4
	gdb, prefix, _ := core.GenerateChainWithGenesis(gg.gspec, engine, ancestor, func(i int, b *core.BlockGen) {
		if i == 0 {
			gg.send(b, nil, 0, loggerInit)
		}
	})
	branchA, _ := core.GenerateChain(config, prefix[ancestor-1], engine, gdb, 10, func(i int, b *core.BlockGen) {
		b.SetCoinbase(common.Address{19: 0xaa})
		gg.send(b, &logger, 0, topic('A', i))
	})
	branchC, _ := core.GenerateChain(config, prefix[ancestor-1], engine, gdb, 5, func(i int, b *core.BlockGen) {
		b.SetCoinbase(common.Address{19: 0xcc})
		gg.send(b, &logger, 0, topic('C', i))
		if i == 1 {
			gg.send(b, &factoryAddr, 0, childInit)
		}
	})
	db, g, w := gg.initStore(t)
	db.SetTrieWindow(W)
	chainA := append(append([]*types.Block{g.Block}, prefix...), branchA...)
	for _, b := range chainA[1:] {
		if err := w.ImportBlock(chaintypes.FromEthBlock(b)); err != nil {
			t.Fatalf("import A block %d: %v", b.NumberU64(), err)
		}
	}
	headA := chainA[len(chainA)-1]
	base, ok := db.TrieBase()
	if !ok || base != headA.NumberU64()-W || base <= ancestor {
		t.Fatalf("trie base %d (%v), want %d, above the ancestor %d", base, ok, headA.NumberU64()-W, ancestor)
	}

	// Forged: C's fourth block claims another state root.
	newC := branchC[:4]
	last := newC[len(newC)-1]
	forged := types.CopyHeader(last.Header())
	forged.Root = common.Hash{0xf0, 31: 0x0d}
	bad := append(chaintypes.FromEthBlocks(newC[:3]), chaintypes.FromEthBlock(types.NewBlockWithHeader(forged).WithBody(*last.Body())))
	err := w.Reorg(ancestor, bad, chain.ImportOptions{})
	if !errors.Is(err, chain.ErrInvalidBlock) {
		t.Fatalf("forged branch: %v, want ErrInvalidBlock", err)
	}
	if msg := err.Error(); !strings.Contains(msg, forged.Root.Hex()) || !strings.Contains(msg, last.Root().Hex()) {
		t.Fatalf("forged branch: %q does not name both roots (%s, computed %s)", msg, forged.Root.Hex(), last.Root().Hex())
	}
	if h := w.Head(); h.Hash() != headA.Hash() {
		t.Fatalf("head %d %s after the refused reorg, want A's", h.Number(), h.Hash().Hex())
	}
	view := openView(t, db)
	checkCanonicalChain(t, view, chainA)
	if b, ok := db.TrieBase(); !ok || b != base {
		t.Fatalf("trie base %d (%v) after the refused reorg, want %d", b, ok, base)
	}
	checkTrie(t, view, headA.Header())

	// Valid: taken, the trie rebuilt at the new head.
	if err := w.Reorg(ancestor, chaintypes.FromEthBlocks(newC), chain.ImportOptions{}); err != nil {
		t.Fatalf("reorg onto %d below the trie base %d: %v", ancestor, base, err)
	}
	if h := w.Head(); h.Hash() != last.Hash() {
		t.Fatalf("head %d %s after the reorg, want C's %d", h.Number(), h.Hash().Hex(), last.NumberU64())
	}
	chainC := append(append([]*types.Block{chainA[0]}, prefix...), newC...)
	view = openView(t, db)
	checkCanonicalChain(t, view, chainC)
	checkStateAgainstGeth(t, view, gdb, chainC)
	if b, ok := db.TrieBase(); !ok || b != last.NumberU64() {
		t.Fatalf("trie base %d (%v) after the deep reorg, want it rebuilt at %d", b, ok, last.NumberU64())
	}
	checkTrie(t, view, last.Header())

	// The rebuilt trie carries on: C's fifth block verifies on it.
	if err := w.ImportBlock(chaintypes.FromEthBlock(branchC[4])); err != nil {
		t.Fatalf("import on the rebuilt trie: %v", err)
	}
	checkTrie(t, openView(t, db), branchC[4].Header())
}

// checkTrie: the trie at h's height has h's root, and every node of it
// is there and hashes to what its parent names.
func checkTrie(t *testing.T, view store.View, h *types.Header) {
	t.Helper()
	tr, err := view.StateTrie(h.Number.Uint64())
	if err != nil {
		t.Fatal(err)
	}
	if root, err := tr.Root(); err != nil || root != h.Root {
		t.Fatalf("trie root at %d: %s (%v), header %s", h.Number, root.Hex(), err, h.Root.Hex())
	}
	stats, err := tr.Check(nil)
	if err != nil || stats.Root != h.Root || stats.Accounts == 0 {
		t.Fatalf("trie check at %d: root %s, %d accounts: %v", h.Number, stats.Root.Hex(), stats.Accounts, err)
	}
}
