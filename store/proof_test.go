package store

import (
	"bytes"
	"errors"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/holiman/uint256"
)

// blobList collects Trie.Prove's nodes in order.
type blobList [][]byte

func (l *blobList) Put(_ []byte, v []byte) error {
	*l = append(*l, bytes.Clone(v))
	return nil
}
func (l *blobList) Delete([]byte) error { return nil }

func oracleProve(t *testing.T, tr *trie.Trie, key []byte) [][]byte {
	t.Helper()
	var l blobList
	if err := tr.Prove(crypto.Keccak256(key), &l); err != nil {
		t.Fatal(err)
	}
	return l
}

func sameNodes(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// TestProveMatchesOracle: at every height of a chain of random diffs (and
// again at older heights), the proof of every account of a small address
// space (present and absent) and of present and absent slots equals
// go-ethereum's Trie.Prove on its in-memory trie of the model state, node
// for node; so do the account fields and slot values. Small values make
// leaves embedded in their parents, which are no proof elements. Both
// Prove (root read at the height) and ProveAgainst (root by hash, cached
// or read and checked) are compared, with and without the node cache; a
// wrong expected root fails as corrupt.
func TestProveMatchesOracle(t *testing.T) {
	for _, cache := range []int64{0, 8 << 20} {
		cfg := testConfig(t)
		cfg.TrieCacheBytes = cache
		db := openTestDBWith(t, cfg)
		writeGenesis(t, db, NewStateDiff())
		c := newRandomTrieChain(11)
		var slots []common.Hash
		for i := range 300 {
			if i%7 == 0 {
				slots = append(slots, common.BigToHash(big.NewInt(int64(i))))
			}
		}
		slots = append(slots, common.Hash{0xff, 0x01})
		compared := 0
		for n := uint64(1); n <= 16; n++ {
			c.write(t, db, n)
			v, err := db.View()
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range []uint64{n, n / 2} {
				o := newOracleTries(t, c.models[h].accounts, c.models[h].slots)
				tr, err := v.StateTrie(h)
				if err != nil {
					t.Fatal(err)
				}
				for a := range 26 {
					addr := common.Address{byte(a), 0xaa}
					for _, against := range []bool{false, true} {
						var pr *AccountProof
						if against {
							pr, err = tr.ProveAgainst(o.root, addr, slots)
						} else {
							pr, err = tr.Prove(addr, slots)
						}
						if err != nil {
							t.Fatalf("block %d at %d %s: %v", n, h, addr, err)
						}
						if want := oracleProve(t, o.accounts, addr[:]); !sameNodes(pr.Proof, want) {
							t.Fatalf("block %d at %d %s: account proof\n got %x\nwant %x", n, h, addr, pr.Proof, want)
						}
						acc := c.models[h].accounts[addr]
						if (acc == nil) != (pr.Account == nil) {
							t.Fatalf("block %d at %d %s: account %v, model %v", n, h, addr, pr.Account, acc)
						}
						if acc != nil && (pr.Account.Nonce != acc.Nonce || pr.Account.Balance.Cmp(acc.Balance) != 0 || pr.Account.Root != o.storage[addr].Hash()) {
							t.Fatalf("block %d at %d %s: account %+v, model %+v", n, h, addr, pr.Account, acc)
						}
						for i, s := range slots {
							var want [][]byte
							if acc != nil && o.storage[addr].Hash() != types.EmptyRootHash {
								want = oracleProve(t, o.storage[addr], s[:])
							}
							sp := pr.Storage[i]
							if !sameNodes(sp.Proof, want) {
								t.Fatalf("block %d at %d %s slot %s: proof\n got %x\nwant %x", n, h, addr, s, sp.Proof, want)
							}
							if acc != nil && sp.Value != c.models[h].slots[addr][s] {
								t.Fatalf("block %d at %d %s slot %s: value %s, model %s", n, h, addr, s, sp.Value, c.models[h].slots[addr][s])
							}
							compared++
						}
					}
				}
				if _, err := tr.ProveAgainst(common.Hash{1}, common.Address{1, 0xaa}, nil); o.root != types.EmptyRootHash && !errors.Is(err, ErrCorrupt) {
					t.Fatalf("a wrong expected root: %v", err)
				}
			}
			v.Close()
		}
		t.Logf("cache %d: %d slot proofs equal to go-ethereum's", cache, compared)
	}
}

// TestProofWalkEmbedded: keys sharing long prefixes (which keccak makes
// rare in a state trie, but which the walk must get right) put short
// leaves and branches inside their parents' blobs. The walk over the
// committed nodes returns go-ethereum's Trie.Prove proof and value for
// every present key and for absent keys that end in a missing child, in
// a short node's different key, and inside an embedded node.
func TestProofWalkEmbedded(t *testing.T) {
	tr := trie.NewEmpty(nil)
	r := &rng{s: 5}
	var keys [][32]byte
	for i := range 400 {
		var k [32]byte
		k[0] = byte(i % 3)
		switch i % 4 {
		case 0: // a deep cluster: differ in the last two bytes only
			k[30], k[31] = byte(r.intn(256)), byte(r.intn(256))
		case 1: // differ in the last nibble
			k[31] = byte(r.intn(16))
		default:
			for j := 1; j < 32; j++ {
				k[j] = byte(r.intn(256))
			}
		}
		keys = append(keys, k)
		enc, _ := rlp.EncodeToBytes([]byte{byte(1 + r.intn(200))})
		if err := tr.Update(k[:], enc); err != nil {
			t.Fatal(err)
		}
	}
	probes := append([][32]byte{}, keys...)
	for _, k := range keys[:40] {
		for _, flip := range []int{31, 30, 20, 1} {
			p := k
			p[flip] ^= 0x01
			probes = append(probes, p)
			p[flip] ^= 0x11
			probes = append(probes, p)
		}
	}
	want := make([][][]byte, len(probes))
	vals := make([][]byte, len(probes))
	for i, p := range probes {
		var l blobList
		if err := tr.Prove(p[:], &l); err != nil {
			t.Fatal(err)
		}
		want[i] = l
		v, err := tr.Get(p[:])
		if err != nil {
			t.Fatal(err)
		}
		vals[i] = v
	}
	root, set := tr.Commit(false)
	w := proofWalker{}
	var rootBlob []byte
	for path, n := range set.Nodes {
		if path == "" {
			rootBlob = n.Blob
		}
		w.last = append(w.last, walkedNode{hash: n.Hash, blob: n.Blob})
	}
	if crypto.Keccak256Hash(rootBlob) != root {
		t.Fatal("no root node")
	}
	all := w.last
	embedded := 0
	for i, p := range probes {
		w.last = all
		val, proof, err := w.walk(common.Hash{}, rootBlob, &p)
		if err != nil {
			t.Fatalf("key %x: %v", p, err)
		}
		if !sameNodes(proof, want[i]) {
			t.Fatalf("key %x: proof\n got %x\nwant %x", p, proof, want[i])
		}
		var wv []byte
		if vals[i] != nil {
			_, wv, _, _ = rlp.Split(vals[i])
		}
		var gv []byte
		if val != nil {
			_, gv, _, _ = rlp.Split(val)
		}
		if !bytes.Equal(gv, wv) || (val == nil) != (vals[i] == nil) {
			t.Fatalf("key %x: value %x, want %x", p, val, vals[i])
		}
		if val != nil {
			elems, _, _ := rlp.SplitList(proof[len(proof)-1])
			if n, _ := rlp.CountValues(elems); n == 17 {
				embedded++ // the last proof node is a branch: the leaf is inside it
			}
		}
	}
	if embedded < 50 {
		t.Fatalf("only %d present keys end in an embedded leaf: the test lost its point", embedded)
	}
	t.Logf("%d probes equal to go-ethereum's; %d leaves embedded", len(probes), embedded)
}

// BenchmarkStateTrieProve: the proof of a contract and 2 of its slots at
// the head (eth_getProof's store side), on 5,000 accounts and a contract of
// 50,000 slots, with the node cache; the root by the header's hash.
func BenchmarkStateTrieProve(b *testing.B) {
	cfg := testConfig(b)
	cfg.TrieCacheBytes = 64 << 20
	db := openTestDBWith(b, cfg)
	g := NewStateDiff()
	for i := range 5000 {
		g.Accounts[common.BigToAddress(big.NewInt(int64(i+1)))] = &Account{Nonce: 1, Balance: uint256.NewInt(uint64(i)), CodeHash: types.EmptyCodeHash}
	}
	c := common.Address{0xcc}
	g.Accounts[c] = &Account{Nonce: 1, Balance: new(uint256.Int), CodeHash: types.EmptyCodeHash}
	g.Storage[c] = map[common.Hash]common.Hash{}
	for i := range 50000 {
		g.Storage[c][common.BigToHash(big.NewInt(int64(i)))] = common.BigToHash(big.NewInt(int64(i + 1)))
	}
	writeGenesis(b, db, NewStateDiff())
	writeDiffBlock(b, db, 1, g)
	v, err := db.View()
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	tr, err := v.StateTrie(1)
	if err != nil {
		b.Fatal(err)
	}
	root, err := tr.Root()
	if err != nil {
		b.Fatal(err)
	}
	slots := []common.Hash{common.BigToHash(big.NewInt(7)), common.BigToHash(big.NewInt(40001))}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		pr, err := tr.ProveAgainst(root, c, slots)
		if err != nil || pr.Storage[1].Value != common.BigToHash(big.NewInt(40002)) {
			b.Fatal(err)
		}
	}
}
