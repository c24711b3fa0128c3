package store

import (
	"errors"
	"maps"
	"runtime"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// setPrefetchHook sets prefetchHook for the test.
func setPrefetchHook(t *testing.T, hook func(*prefetch) *prefetch) {
	prefetchHook = hook
	t.Cleanup(func() { prefetchHook = nil })
}

// TestTriePrefetchSameUpdate: a block's update computed with every node
// read through the prefetcher (the update waits for it to finish), with
// the prefetcher racing the update (as in production), and without one
// are the same update (root, node versions, origins, storage roots), and
// the root is go-ethereum's from-scratch root of the state.
func TestTriePrefetchSameUpdate(t *testing.T) {
	db := openTestDB(t)
	model := newTrieModel()
	writeGenesis(t, db, NewStateDiff())
	r := &rng{s: 23}
	prefetched := 0
	for n := uint64(1); n <= 40; n++ {
		d := randomTrieDiff(r, model)
		model.apply(d)
		v, err := db.View()
		if err != nil {
			t.Fatal(err)
		}
		tr, err := v.StateTrie(n - 1)
		if err != nil {
			t.Fatal(err)
		}
		modes := []func(*prefetch) *prefetch{
			func(p *prefetch) *prefetch { // every node through the prefetcher
				if p != nil {
					<-p.done
					prefetched += len(p.nodes)
				}
				return p
			},
			func(p *prefetch) *prefetch { return p }, // racing
			func(p *prefetch) *prefetch { // none
				p.finish()
				return nil
			},
		}
		var ups []*TrieUpdate
		for _, hook := range modes {
			setPrefetchHook(t, hook)
			u, err := tr.Update(d)
			if err != nil {
				t.Fatalf("block %d: %v", n, err)
			}
			ups = append(ups, u)
		}
		v.Close()
		prefetchHook = nil
		want := oracleRoot(t, model.accounts, model.slots)
		for i, u := range ups {
			if u.Root != want {
				t.Fatalf("block %d, mode %d: root %s, oracle %s", n, i, u.Root, want)
			}
			if i == 0 {
				continue
			}
			if !maps.EqualFunc(u.nodes, ups[0].nodes, nodesEqual) || !maps.EqualFunc(u.origins, ups[0].origins, bytesEqual) ||
				!maps.Equal(u.storageRoots, ups[0].storageRoots) {
				t.Fatalf("block %d: mode %d's update differs from the prefetched one", n, i)
			}
		}
		writeDiffBlock(t, db, n, d)
	}
	if prefetched == 0 {
		t.Fatal("no update was prefetched: the test checks nothing")
	}
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) && (a == nil) == (b == nil) }

func nodesEqual(a, b trieNode) bool { return a.hash == b.hash && bytesEqual(a.blob, b.blob) }

// TestTriePrefetchCorruptNode: a stored node version that does not hash
// to what its parent names fails the update with ErrCorrupt when the
// prefetcher reads it first (it hands over only checked nodes; the update
// reads the node itself and checks it), as without a prefetcher.
func TestTriePrefetchCorruptNode(t *testing.T) {
	cfg := testConfig(t)
	cfg.TrieCacheBytes = 0 // every node from the store
	db := openTestDBWith(t, cfg)
	model := newTrieModel()
	writeGenesis(t, db, NewStateDiff())
	a := common.Address{0x42}
	d := slotsDiff(a, 64)
	model.apply(d)
	writeDiffBlock(t, db, 1, d)
	// Corrupt the root node of a's storage trie at block 1.
	owner := crypto.Keccak256Hash(a[:])
	key := appendVersion(appendTrieEntity(nil, owner, nil), 1)
	blob, closer, err := db.pdb.Get(key)
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), blob...)
	closer.Close()
	bad[len(bad)-1] ^= 1
	if err := db.pdb.Set(key, bad, nil); err != nil {
		t.Fatal(err)
	}
	next := NewStateDiff()
	next.Storage[a] = map[common.Hash]common.Hash{}
	for i := range 32 {
		next.Storage[a][crypto.Keccak256Hash([]byte{byte(i), 1})] = common.Hash{31: 7}
	}
	for _, wait := range []bool{true, false} {
		setPrefetchHook(t, func(p *prefetch) *prefetch {
			if p == nil {
				t.Fatal("no prefetcher")
			}
			if wait {
				<-p.done
			}
			return p
		})
		if _, err := updateAt(t, db, 1, next); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("update over a corrupt node (prefetcher waited for: %v): %v, want ErrCorrupt", wait, err)
		}
	}
}

// TestTriePrefetchOffInBulkImport: a bulk import's store (Config.BulkImport)
// computes its trie updates without a prefetcher, the same update as a
// store that starts one for the same block.
func TestTriePrefetchOffInBulkImport(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one core: no store starts a prefetcher")
	}
	d := slotsDiff(common.Address{0x42}, 4*minPrefetchItems)
	var roots []common.Hash
	for _, bulk := range []bool{false, true} {
		cfg := testConfig(t)
		cfg.BulkImport = bulk
		db := openTestDBWith(t, cfg)
		writeGenesis(t, db, NewStateDiff())
		started := false
		setPrefetchHook(t, func(p *prefetch) *prefetch {
			started = p != nil
			return p
		})
		u, err := updateAt(t, db, 0, d)
		if err != nil {
			t.Fatal(err)
		}
		if started == bulk {
			t.Fatalf("BulkImport %v: prefetcher started %v", bulk, started)
		}
		roots = append(roots, u.Root)
	}
	if roots[0] != roots[1] {
		t.Fatalf("roots differ: %s with a prefetcher, %s without", roots[0], roots[1])
	}
}
