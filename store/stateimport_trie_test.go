package store

import (
	"bytes"
	"context"
	"math/big"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/holiman/uint256"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/store/chaintypes"
)

// TestStateImportTrieNodes: a state import given its trie's nodes (as the
// StackTries computing the root hand them over) ingests them with the
// state and builds nothing afterwards: the trie, walked node by node,
// holds the header's root and the flat state's accounts and slots, and the
// log says so. Given a node set whose root node is not the header's (the
// root node left out), the import builds the trie from the flat state
// instead, saying so, with the same result.
func TestStateImportTrieNodes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		dropRoot bool
		wantLog  string
	}{
		{"one pass", false, "state trie built in the import's pass"},
		{"bad nodes", true, "building it from the flat state"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := new(lockedBuffer)
			cfg := testConfig(t)
			db, err := Open(cfg, zerolog.New(logs))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			const anchor = 7
			si, err := db.NewStateImport(filepath.Join(t.TempDir(), "tmp"), anchor, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			defer si.Close()
			// The state: 60 accounts, every third with 0-199 slots, in
			// hashed order as a dump or a sorted genesis gives them.
			type acct struct {
				addr   common.Address
				hashed common.Hash
			}
			var accs []acct
			for i := range 60 {
				a := common.BigToAddress(big.NewInt(int64(0x1000 + i)))
				accs = append(accs, acct{a, crypto.Keccak256Hash(a[:])})
			}
			slices.SortFunc(accs, func(a, b acct) int { return bytes.Compare(a.hashed[:], b.hashed[:]) })
			node := func(owner common.Hash) trie.OnTrieNode {
				return func(path []byte, _ common.Hash, blob []byte) {
					if tc.dropRoot && owner == (common.Hash{}) && len(path) == 0 {
						return
					}
					must(t, si.TrieNode(owner, path, blob))
				}
			}
			accountTrie := trie.NewStackTrie(node(common.Hash{}))
			var slots int64
			for i, a := range accs {
				acc := &Account{Nonce: uint64(i), Balance: uint256.NewInt(uint64(i + 1)), CodeHash: types.EmptyCodeHash}
				must(t, si.Account(a.addr, acc))
				storageRoot := types.EmptyRootHash
				if i%3 == 0 {
					type leaf struct{ k, v []byte }
					var leaves []leaf
					for j := range i * 7 % 200 {
						slot, value := common.BigToHash(big.NewInt(int64(j))), common.BigToHash(big.NewInt(int64(j+1)))
						must(t, si.Storage(a.addr, slot, value))
						enc, _ := rlp.EncodeToBytes(common.TrimLeftZeroes(value[:]))
						leaves = append(leaves, leaf{crypto.Keccak256(slot[:]), enc})
						slots++
					}
					if len(leaves) > 0 {
						slices.SortFunc(leaves, func(a, b leaf) int { return bytes.Compare(a.k, b.k) })
						st := trie.NewStackTrie(node(a.hashed))
						for _, l := range leaves {
							must(t, st.Update(l.k, l.v))
						}
						storageRoot = st.Hash()
					}
				}
				enc, err := rlp.EncodeToBytes(&types.StateAccount{Nonce: acc.Nonce, Balance: acc.Balance, Root: storageRoot, CodeHash: acc.CodeHash.Bytes()})
				if err != nil {
					t.Fatal(err)
				}
				must(t, accountTrie.Update(a.hashed[:], enc))
			}
			root := accountTrie.Hash()
			h := &types.Header{Number: big.NewInt(anchor), Difficulty: big.NewInt(0), GasLimit: 30_000_000, Root: root}
			g := &types.Header{Number: big.NewInt(0), Difficulty: big.NewInt(0), GasLimit: 30_000_000}
			if _, err := si.Commit(context.Background(), &AnchorWrite{Genesis: g, Headers: []*types.Header{h}, Body: &chaintypes.Body{},
				Spec: []byte(`{"config":{}}`), Config: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
			if base, ok := db.TrieBase(); !ok || base != anchor {
				t.Fatalf("trie base %d %v, want %d", base, ok, anchor)
			}
			v, err := db.View()
			if err != nil {
				t.Fatal(err)
			}
			defer v.Close()
			tr, err := v.StateTrie(anchor)
			if err != nil {
				t.Fatal(err)
			}
			ck, err := tr.Check(nil)
			if err != nil || ck.Root != root {
				t.Fatalf("trie root %s (%v), header %s", ck.Root, err, root)
			}
			flat, err := db.StateRootFromFlat(anchor, nil)
			if err != nil || flat.Root != root || flat.Accounts != ck.Accounts || flat.Slots != ck.Slots || ck.Slots != slots {
				t.Fatalf("flat %+v (%v), trie %+v, %d slots imported", flat, err, ck, slots)
			}
			if out := logs.String(); !strings.Contains(out, tc.wantLog) {
				t.Fatalf("log lacks %q:\n%s", tc.wantLog, out)
			}
		})
	}
}
