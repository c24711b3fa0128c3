package store

import (
	"bytes"
	"maps"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// composeDiffs is the block diff of cut diffs applied in order (the
// pending layers' merge: wipes accumulate, an address wiped by a later cut
// keeps only that cut's slots, later values override).
func composeDiffs(cuts []*StateDiff) *StateDiff {
	d := NewStateDiff()
	for _, c := range cuts {
		for a := range c.Wiped {
			d.Wiped[a] = struct{}{}
			delete(d.Storage, a)
		}
		maps.Copy(d.Accounts, c.Accounts)
		for a, slots := range c.Storage {
			if d.Storage[a] == nil {
				d.Storage[a] = map[common.Hash]common.Hash{}
			}
			maps.Copy(d.Storage[a], slots)
		}
	}
	return d
}

// checkNodeHashes fails unless every node version of u carries its blob's
// keccak (the clean cache is filled by it, cacheTrie) and every deletion
// the zero hash.
func checkNodeHashes(t *testing.T, u *TrieUpdate) {
	t.Helper()
	if len(u.nodes) == 0 {
		return
	}
	written := 0
	for k, nd := range u.nodes {
		want := common.Hash{}
		if nd.blob != nil {
			want = crypto.Keccak256Hash(nd.blob)
			written++
		}
		if nd.hash != want {
			t.Fatalf("node %x: hash %s, its blob hashes to %s", k, nd.hash, want)
		}
	}
	if written == 0 {
		t.Fatal("an update that only deletes nodes: the hashes are not checked")
	}
}

// TestTrieSquashMatchesBlockUpdate: a block built from random cuts (each
// cut's diff applied on the trie of the cuts before it, as a pending block's
// pre-confirmations are), squashed, has the root of the update of the
// block's whole diff and of go-ethereum's from-scratch trie after every
// cut; its node versions are the whole-diff update's that change a node
// (the ones only the latter has leave their node as it was); written as the
// block's trie, the next blocks' roots still match the oracle.
func TestTrieSquashMatchesBlockUpdate(t *testing.T) {
	db := openTestDB(t)
	model := newTrieModel()
	writeGenesis(t, db, NewStateDiff())
	r := &rng{s: 11}
	for n := uint64(1); n <= 40; n++ {
		v, err := db.View()
		if err != nil {
			t.Fatal(err)
		}
		base, err := v.StateTrie(n - 1)
		if err != nil {
			t.Fatal(err)
		}
		var (
			cuts  []*StateDiff
			layer []*TrieUpdate // ups, log-merged as the pending builder keeps them
		)
		for range 1 + r.intn(8) {
			d := randomTrieDiff(r, model)
			model.apply(d)
			cuts = append(cuts, d)
			u, err := base.On(layer...).Update(d)
			if err != nil {
				t.Fatal(err)
			}
			if want := oracleRoot(t, model.accounts, model.slots); u.Root != want {
				t.Fatalf("block %d cut %d: root %s, oracle %s", n, len(cuts), u.Root, want)
			}
			checkNodeHashes(t, u)
			layer = append(layer, u)
			// Merge the top two while the lower is not much bigger.
			for len(layer) >= 2 && layer[len(layer)-2].Nodes() <= 2*layer[len(layer)-1].Nodes() {
				m, err := SquashTrieUpdates(layer[len(layer)-2:]...)
				if err != nil {
					t.Fatal(err)
				}
				layer = append(layer[:len(layer)-2:len(layer)-2], m)
			}
		}
		sq, err := SquashTrieUpdates(layer...)
		if err != nil {
			t.Fatal(err)
		}
		checkNodeHashes(t, sq)
		whole, err := base.Update(composeDiffs(cuts))
		if err != nil {
			t.Fatal(err)
		}
		if sq.Root != whole.Root || sq.Parent != n-1 || len(sq.under) != 0 {
			t.Fatalf("block %d (%d cuts): squashed root %s on %d+%d, whole diff's %s", n, len(cuts), sq.Root, sq.Parent, len(sq.under), whole.Root)
		}
		nr := newNodeReader(v.(*view).snap, nodeCache{}, n-1, nil)
		for k, nd := range whole.nodes {
			blob := nd.blob
			got, ok := sq.nodes[k]
			if ok {
				if !nodesEqual(got, nd) {
					t.Fatalf("block %d: node %x: squash %x (hash %s), whole %x (hash %s)", n, k, got.blob, got.hash, blob, nd.hash)
				}
				continue
			}
			old, found, _, err := nr.readAt(common.BytesToHash([]byte(k[trieOwnerOff:triePathOff])), unpackPath(k), nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(old, blob) || found != (blob != nil) {
				t.Fatalf("block %d: node %x changed by the whole diff (%x -> %x) is not in the squash", n, k, old, blob)
			}
		}
		for k := range sq.nodes {
			if _, ok := whole.nodes[k]; !ok {
				t.Fatalf("block %d: node %x in the squash only", n, k)
			}
		}
		nr.close()
		v.Close()
		w := diffBlockWrite(n, canonicalHash(t, db, n-1), composeDiffs(cuts))
		w.Trie = sq
		if err := db.WriteBlock(w); err != nil {
			t.Fatal(err)
		}
		if got := trieRootAt(t, db, n); got != whole.Root {
			t.Fatalf("block %d written: root %s, want %s", n, got, whole.Root)
		}
	}
	flat, err := db.StateRootFromFlat(40, nil)
	if err != nil || flat.Root != oracleRoot(t, model.accounts, model.slots) {
		t.Fatalf("flat root %v (%v)", flat, err)
	}
	v, _ := db.View()
	defer v.Close()
	tr, _ := v.StateTrie(40)
	if _, err := tr.Check(nil); err != nil {
		t.Fatalf("trie check after squashed blocks: %v", err)
	}
}

// unpackPath is the nibble path of a trie entity.
func unpackPath(entity string) []byte {
	n := int(entity[trieLenOff])
	path := make([]byte, n)
	for i := range n {
		b := entity[triePathOff+i/2]
		if i%2 == 0 {
			path[i] = b >> 4
		} else {
			path[i] = b & 0x0f
		}
	}
	return path
}
