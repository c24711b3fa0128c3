package chain_test

import (
	"context"
	"fmt"
	"math/big"
	"path/filepath"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"

	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/chain/op/optest"
	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// compactToNibbles decodes a trie node key (hex-prefix encoding) into its
// nibbles and whether it ends a leaf.
func compactToNibbles(key []byte) (nibbles []byte, leaf bool) {
	if len(key) == 0 {
		return nil, false
	}
	flag := key[0] >> 4
	leaf = flag&2 != 0
	if flag&1 != 0 {
		nibbles = append(nibbles, key[0]&0x0f)
	}
	for _, b := range key[1:] {
		nibbles = append(nibbles, b>>4, b&0x0f)
	}
	return nibbles, leaf
}

// witnessNodes walks a block's witness (nodes by hash) from root and hands
// every hashed node it holds to fn with the owner and path the store keeps
// it under (owner zero: the account trie; an account leaf's storage trie
// is walked with the account's hashed address as owner). Nodes the
// witness lacks are skipped: the block never reads them.
func witnessNodes(pre map[common.Hash][]byte, owner, root common.Hash, fn func(owner common.Hash, path, blob []byte) error) error {
	var walk func(hash common.Hash, path []byte) error
	walk = func(hash common.Hash, path []byte) error {
		blob, ok := pre[hash]
		if !ok {
			return nil
		}
		if err := fn(owner, path, blob); err != nil {
			return err
		}
		elems, _, err := rlp.SplitList(blob)
		if err != nil {
			return err
		}
		n, err := rlp.CountValues(elems)
		if err != nil {
			return err
		}
		child := func(ref []byte, path []byte) error {
			kind, content, _, err := rlp.Split(ref)
			if err != nil || kind != rlp.String || len(content) != 32 {
				return err // embedded (or empty): no node of its own
			}
			return walk(common.BytesToHash(content), path)
		}
		switch n {
		case 2:
			key, rest, err := rlp.SplitString(elems)
			if err != nil {
				return err
			}
			nib, leaf := compactToNibbles(key)
			full := append(append([]byte{}, path...), nib...)
			if !leaf {
				return child(rest, full)
			}
			if owner != (common.Hash{}) {
				return nil // a slot
			}
			val, _, err := rlp.SplitString(rest)
			if err != nil {
				return err
			}
			var acc types.StateAccount
			if err := rlp.DecodeBytes(val, &acc); err != nil {
				return err
			}
			if acc.Root == types.EmptyRootHash || len(full) != 64 {
				return nil
			}
			var hashed common.Hash
			for i := range 32 {
				hashed[i] = full[2*i]<<4 | full[2*i+1]
			}
			return witnessNodes(pre, hashed, acc.Root, fn)
		case 17:
			rest := elems
			for i := range 16 {
				_, _, tail, err := rlp.Split(rest)
				if err != nil {
					return err
				}
				if err := child(rest[:len(rest)-len(tail)], append(append([]byte{}, path...), byte(i))); err != nil {
					return err
				}
				rest = tail
			}
			return nil
		default:
			return fmt.Errorf("node %s: %d elements", hash, n)
		}
	}
	return walk(root, nil)
}

// TestKonaBlocksStoreTrie: tipnode's own state trie (store.StateTrie, the
// trie every sealed, imported and followed block's root comes from) gives
// each of the seven real OP Sepolia blocks its real state root. The store
// is anchored at the parent block with the parent's trie nodes the block's
// witness holds (the import checks their root node against the parent
// header's state root), and the block's state diff, executed by tipnode,
// is applied to it. The blocks are before Isthmus (optest checks it): no
// header carries a withdrawals root to check.
func TestKonaBlocksStoreTrie(t *testing.T) {
	for _, n := range optest.Blocks() {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			f := optest.Load(t, n)
			g := konaChainConfig(t, f)
			block, _, diff := buildKonaBlockDiff(t, f, g)
			if block.Hash() != f.ExpectedHash {
				t.Fatalf("block %d hashes to %s, the real one is %s", n, block.Hash(), f.ExpectedHash)
			}
			db := chaintest.OpenStore(t)
			parent := f.Parent.Number.Uint64()
			si, err := db.NewStateImport(filepath.Join(t.TempDir(), "tmp"), parent, 16<<20)
			if err != nil {
				t.Fatal(err)
			}
			defer si.Close()
			nodes := 0
			if err := witnessNodes(f.Preimages, common.Hash{}, f.Parent.Root, func(owner common.Hash, path, blob []byte) error {
				nodes++
				return si.TrieNode(owner, path, blob)
			}); err != nil {
				t.Fatal(err)
			}
			gen := &types.Header{Number: new(big.Int), Difficulty: new(big.Int)}
			if _, err := si.Commit(context.Background(), &store.AnchorWrite{Genesis: gen, Headers: []*types.Header{f.Parent},
				Body: &chaintypes.Body{}, Spec: []byte(`{"config":{}}`), Config: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
			if base, ok := db.TrieBase(); !ok || base != parent {
				t.Fatalf("the witness's trie was not taken as the parent's (base %d %v)", base, ok)
			}
			view, err := db.View()
			if err != nil {
				t.Fatal(err)
			}
			defer view.Close()
			tr, err := view.StateTrie(parent)
			if err != nil {
				t.Fatal(err)
			}
			upd, err := tr.Update(diff)
			if err != nil {
				t.Fatalf("block %d: the store's trie update: %v", n, err)
			}
			if upd.Root != block.Root() {
				t.Fatalf("block %d: the store's trie gives state root %s, the real header %s", n, upd.Root, block.Root())
			}
			t.Logf("block %d: %d witness nodes, %d accounts and %d storage tries changed, root %s", n, nodes, len(diff.Accounts), len(diff.Storage), upd.Root)
		})
	}
}
