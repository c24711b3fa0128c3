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
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/store/chaintypes"
)

// oracleTries is go-ethereum's in-memory state trie of a state, built from
// scratch: the account trie, each account's storage trie and the root (the
// oracle the store's incremental, versioned trie and its proofs must agree
// with; Trie.Prove gives the proofs).
type oracleTries struct {
	accounts *trie.Trie
	storage  map[common.Address]*trie.Trie
	root     common.Hash
}

func newOracleTries(t testing.TB, accounts map[common.Address]*Account, slots map[common.Address]map[common.Hash]common.Hash) *oracleTries {
	t.Helper()
	o := &oracleTries{accounts: trie.NewEmpty(nil), storage: map[common.Address]*trie.Trie{}}
	for addr, acc := range accounts {
		if acc == nil {
			continue
		}
		st := trie.NewEmpty(nil)
		for k, v := range slots[addr] {
			if v == (common.Hash{}) {
				continue
			}
			enc, _ := rlp.EncodeToBytes(common.TrimLeftZeroes(v[:]))
			if err := st.Update(crypto.Keccak256(k[:]), enc); err != nil {
				t.Fatal(err)
			}
		}
		o.storage[addr] = st
		bal := acc.Balance
		if bal == nil {
			bal = new(uint256.Int)
		}
		enc, err := rlp.EncodeToBytes(&types.StateAccount{Nonce: acc.Nonce, Balance: bal, Root: st.Hash(), CodeHash: acc.CodeHash.Bytes()})
		if err != nil {
			t.Fatal(err)
		}
		if err := o.accounts.Update(crypto.Keccak256(addr[:]), enc); err != nil {
			t.Fatal(err)
		}
	}
	o.root = o.accounts.Hash()
	return o
}

// oracleRoot is the state root of accounts with slots, computed with
// go-ethereum's in-memory trie from scratch.
func oracleRoot(t testing.TB, accounts map[common.Address]*Account, slots map[common.Address]map[common.Hash]common.Hash) common.Hash {
	t.Helper()
	return newOracleTries(t, accounts, slots).root
}

// trieModel is the full state a test chain should have, applied diff by
// diff (StateDiff semantics: wipe, accounts, storage).
type trieModel struct {
	accounts map[common.Address]*Account
	slots    map[common.Address]map[common.Hash]common.Hash
}

func newTrieModel() *trieModel {
	return &trieModel{accounts: map[common.Address]*Account{}, slots: map[common.Address]map[common.Hash]common.Hash{}}
}

func (m *trieModel) apply(d *StateDiff) {
	for a := range d.Wiped {
		delete(m.slots, a)
	}
	for a, acc := range d.Accounts {
		if acc == nil {
			delete(m.accounts, a)
			delete(m.slots, a)
			continue
		}
		cp := *acc
		m.accounts[a] = &cp
	}
	for a, s := range d.Storage {
		if m.slots[a] == nil {
			m.slots[a] = map[common.Hash]common.Hash{}
		}
		for k, v := range s {
			m.slots[a][k] = v
		}
	}
}

func (m *trieModel) clone() *trieModel {
	c := newTrieModel()
	for a, acc := range m.accounts {
		cp := *acc
		c.accounts[a] = &cp
	}
	for a, s := range m.slots {
		c.slots[a] = map[common.Hash]common.Hash{}
		for k, v := range s {
			c.slots[a][k] = v
		}
	}
	return c
}

// randomTrieDiff is a block's diff over a small address space: balance and
// nonce changes, slot writes and clears, deletions and wipes, so that
// tries grow, shrink, collapse and come back.
func randomTrieDiff(r *rng, m *trieModel) *StateDiff {
	d := NewStateDiff()
	for range 1 + r.intn(12) {
		a := common.Address{byte(r.intn(24)), 0xaa}
		switch k := r.intn(10); {
		case k == 0 && m.accounts[a] != nil:
			d.Accounts[a] = nil
			d.Wiped[a] = struct{}{}
			delete(d.Storage, a)
		case k == 1 && m.accounts[a] != nil:
			d.Wiped[a] = struct{}{}
			acc := *m.accounts[a]
			d.Accounts[a] = &acc
		default:
			if _, del := d.Accounts[a]; del && d.Accounts[a] == nil {
				continue
			}
			acc := &Account{Nonce: uint64(r.intn(100)), Balance: uint256.NewInt(uint64(r.intn(1 << 20))), CodeHash: types.EmptyCodeHash}
			d.Accounts[a] = acc
			if d.Storage[a] == nil {
				d.Storage[a] = map[common.Hash]common.Hash{}
			}
			for range r.intn(40) {
				slot := common.BigToHash(big.NewInt(int64(r.intn(300))))
				var v common.Hash
				if r.intn(4) != 0 {
					v = common.BigToHash(big.NewInt(int64(1 + r.intn(1<<30))))
				}
				d.Storage[a][slot] = v
			}
		}
	}
	return d
}

// randomTrieChain is a test chain of blocks of random diffs (randomTrieDiff)
// and its model state at every height.
type randomTrieChain struct {
	r      *rng
	model  *trieModel   // the state at the head
	models []*trieModel // models[h] is the state at height h
}

// newRandomTrieChain starts at an empty genesis state, its diffs drawn
// from seed.
func newRandomTrieChain(seed uint64) *randomTrieChain {
	m := newTrieModel()
	return &randomTrieChain{r: &rng{s: seed}, model: m, models: []*trieModel{m.clone()}}
}

// write writes block n of a random diff to db and records its state.
func (c *randomTrieChain) write(tb testing.TB, db *DB, n uint64) {
	tb.Helper()
	d := randomTrieDiff(c.r, c.model)
	c.model.apply(d)
	c.models = append(c.models, c.model.clone())
	writeDiffBlock(tb, db, n, d)
}

// rng is a tiny deterministic generator (xorshift).
type rng struct{ s uint64 }

func (r *rng) intn(n int) int {
	r.s ^= r.s << 13
	r.s ^= r.s >> 7
	r.s ^= r.s << 17
	return int(r.s % uint64(n))
}

// TestTrieRootsMatchOracle: blocks of random diffs (growth, deletions,
// wipes, re-creations) written through WriteBlock: the trie's root at
// every height equals go-ethereum's from-scratch root of the model state,
// roots at older heights stay readable, and BuildTrie/StateRootFromFlat
// agree.
func TestTrieRootsMatchOracle(t *testing.T) {
	db := openTestDB(t)
	model := newTrieModel()
	writeGenesis(t, db, NewStateDiff())
	r := &rng{s: 7}
	roots := []common.Hash{types.EmptyRootHash}
	for n := uint64(1); n <= 60; n++ {
		d := randomTrieDiff(r, model)
		model.apply(d)
		want := oracleRoot(t, model.accounts, model.slots)
		writeDiffBlock(t, db, n, d)
		roots = append(roots, want)
		v, err := db.View()
		if err != nil {
			t.Fatal(err)
		}
		tr, err := v.StateTrie(n)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tr.Root()
		if err != nil || got != want {
			t.Fatalf("block %d: trie root %s (%v), oracle %s", n, got, err, want)
		}
		for _, h := range []uint64{0, n / 2, n - 1} {
			tr, err := v.StateTrie(h)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := tr.Root(); err != nil || got != roots[h] {
				t.Fatalf("at %d, root of %d: %s (%v), want %s", n, h, got, err, roots[h])
			}
		}
		v.Close()
	}
	flat, err := db.StateRootFromFlat(60, nil)
	if err != nil || flat.Root != roots[60] {
		t.Fatalf("flat root %s (%v), want %s", flat.Root, err, roots[60])
	}
	if _, err := db.BuildTrie(nil); err != nil {
		t.Fatal(err)
	}
	if base, ok := db.TrieBase(); !ok || base != 60 {
		t.Fatalf("base %d %v after a build", base, ok)
	}
	// The rebuilt trie carries on.
	d := randomTrieDiff(r, model)
	model.apply(d)
	writeDiffBlock(t, db, 61, d)
	if got := trieRootAt(t, db, 61); got != oracleRoot(t, model.accounts, model.slots) {
		t.Fatalf("after rebuild: root %s", got)
	}
	v, _ := db.View()
	defer v.Close()
	if _, err := v.StateTrie(59); !errors.Is(err, ErrTrieWindow) {
		t.Fatalf("below the rebuilt base: %v", err)
	}
}

// TestTrieUnwindReorgPrune: unwinds and reorgs remove the blocks' node
// versions (roots after them equal the oracle's, on both branches), the
// window prunes superseded versions without changing any root in it, and
// an unwind deeper than the window rebuilds the trie.
func TestTrieUnwindReorgPrune(t *testing.T) {
	cfg := testConfig(t)
	cfg.TrieWindow = 8
	db := openTestDBWith(t, cfg)
	writeGenesis(t, db, NewStateDiff())
	c := newRandomTrieChain(99)
	for n := uint64(1); n <= 30; n++ {
		c.write(t, db, n)
	}
	r, models := c.r, c.models
	base, ok := db.TrieBase()
	if !ok || base != 22 {
		t.Fatalf("base %d %v, want 22 (30 - W)", base, ok)
	}
	for h := base; h <= 30; h++ {
		m := models[h]
		if got := trieRootAt(t, db, h); got != oracleRoot(t, m.accounts, m.slots) {
			t.Fatalf("root at %d after pruning: %s", h, got)
		}
	}
	// Unwind within the window.
	must(t, db.UnwindTo(25))
	model := models[25].clone()
	models = models[:26]
	if got := trieRootAt(t, db, 25); got != oracleRoot(t, model.accounts, model.slots) {
		t.Fatalf("root after unwind: %s", got)
	}
	// A reorg onto 23 with three new blocks.
	anc := uint64(23)
	model = models[anc].clone()
	var writes []*BlockWrite
	parent := canonicalHash(t, db, anc)
	for n := anc + 1; n <= anc+3; n++ {
		d := randomTrieDiff(r, model)
		model.apply(d)
		w := diffBlockWrite(n, parent, d)
		parent = w.Block.Hash()
		writes = append(writes, w)
	}
	must(t, db.Reorg(anc, writes))
	if got := trieRootAt(t, db, anc+3); got != oracleRoot(t, model.accounts, model.slots) {
		t.Fatalf("root after reorg: %s", got)
	}
	// Deeper than the window: the trie is rebuilt at the target.
	base, _ = db.TrieBase()
	target := base - 2
	must(t, db.UnwindTo(target))
	m := models[target]
	if got := trieRootAt(t, db, target); got != oracleRoot(t, m.accounts, m.slots) {
		t.Fatalf("root after the deep unwind: %s", got)
	}
	if b, ok := db.TrieBase(); !ok || b != target {
		t.Fatalf("base %d %v after the deep unwind, want %d", b, ok, target)
	}
}

func trieRootAt(t *testing.T, db *DB, h uint64) common.Hash {
	t.Helper()
	v, err := db.View()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	tr, err := v.StateTrie(h)
	if err != nil {
		t.Fatal(err)
	}
	root, err := tr.Root()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func testConfig(tb testing.TB) Config {
	cfg := DefaultConfig(tb.TempDir())
	cfg.SyncWrites = false
	cfg.CacheBytes = 32 << 20
	cfg.MemtableBytes = 8 << 20
	cfg.TrieCacheBytes = 0 // every node read goes to Pebble and is checked
	return cfg
}

func openTestDB(tb testing.TB) *DB { return openTestDBWith(tb, testConfig(tb)) }

func openTestDBWith(tb testing.TB, cfg Config) *DB {
	tb.Helper()
	db, err := Open(cfg, zerolog.Nop())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

func writeGenesis(tb testing.TB, db *DB, d *StateDiff) {
	tb.Helper()
	g := chaintypes.NewBlockWithHeader(&types.Header{Number: big.NewInt(0), Difficulty: big.NewInt(1), GasLimit: 30_000_000})
	if err := db.WriteGenesis(&BlockWrite{Block: g, Diff: d}, []byte(`{"config":{}}`), []byte(`{}`)); err != nil {
		tb.Fatal(err)
	}
}

func canonicalHash(tb testing.TB, db *DB, n uint64) common.Hash {
	tb.Helper()
	v, found, err := getCopy(db.pdb, canonicalKey(n))
	if err != nil || !found {
		tb.Fatalf("canonical %d: %v", n, err)
	}
	return common.BytesToHash(v)
}

func diffBlockWrite(n uint64, parent common.Hash, d *StateDiff) *BlockWrite {
	h := &types.Header{ParentHash: parent, Number: new(big.Int).SetUint64(n), Difficulty: big.NewInt(1), GasLimit: 30_000_000, Time: n}
	return &BlockWrite{Block: chaintypes.NewBlockWithHeader(h), Diff: d}
}

// slotsDiff is a diff creating account a (nonce 1) with n slots: slot i
// keyed by the hash of i's two low bytes, valued i+1 (never zero).
func slotsDiff(a common.Address, n int) *StateDiff {
	d := NewStateDiff()
	d.Accounts[a] = &Account{Nonce: 1}
	d.Storage[a] = make(map[common.Hash]common.Hash, n)
	for i := range n {
		d.Storage[a][crypto.Keccak256Hash([]byte{byte(i), byte(i >> 8)})] = common.Hash{30: byte((i + 1) >> 8), 31: byte(i + 1)}
	}
	return d
}

// updateAt computes d's trie update on the trie at height h, as a block
// written on h computes it.
func updateAt(tb testing.TB, db *DB, h uint64, d *StateDiff) (*TrieUpdate, error) {
	tb.Helper()
	v, err := db.View()
	if err != nil {
		tb.Fatal(err)
	}
	defer v.Close()
	tr, err := v.StateTrie(h)
	if err != nil {
		tb.Fatal(err)
	}
	return tr.Update(d)
}

func writeDiffBlock(tb testing.TB, db *DB, n uint64, d *StateDiff) {
	tb.Helper()
	if err := db.WriteBlock(diffBlockWrite(n, canonicalHash(tb, db, n-1), d)); err != nil {
		tb.Fatal(err)
	}
}

// TestTrieHotNodes: the hot node maps stay within their bound (two
// generations), keep a node that is read across rotations and drop one
// that is not.
func TestTrieHotNodes(t *testing.T) {
	h := newHotNodes(0) // generations of 1 MiB
	blob := func(i int) []byte {
		b := make([]byte, 1000)
		b[0], b[1] = byte(i), byte(i>>8)
		return b
	}
	key := func(i int) common.Hash { return crypto.Keccak256Hash(blob(i)) }
	const read, unread = 0, 1
	h.put(key(read), blob(read))
	h.put(key(unread), blob(unread))
	perGen := int(h.genBytes / (1000 + common.HashLength))
	for i := 2; i < 2+3*perGen; i++ {
		h.put(key(i), blob(i))
		if got := h.get(key(read)); got == nil || got[0] != read {
			t.Fatalf("after %d puts: read node lost", i)
		}
		if n := len(h.cur) + len(h.old); n > 2*perGen+2 {
			t.Fatalf("after %d puts: %d nodes held, bound %d", i, n, 2*perGen+2)
		}
	}
	if h.get(key(unread)) != nil {
		t.Fatal("unread node survived two rotations")
	}
	if h.get(key(2+3*perGen-1)) == nil {
		t.Fatal("newest node missing")
	}
	var none *hotNodes
	none.put(key(read), blob(read))
	if none.get(key(read)) != nil {
		t.Fatal("nil hot maps returned a node")
	}
}

// TestTrieCacheLevels: a written block's nodes of levels 0 to
// hotOnlyPathLen go to the hot maps only, those up to hotPathLen to both
// the hot maps and the clean cache, deeper ones to the clean cache only.
func TestTrieCacheLevels(t *testing.T) {
	cfg := testConfig(t)
	cfg.TrieCacheBytes = 64 << 20
	db := openTestDBWith(t, cfg)
	writeGenesis(t, db, NewStateDiff())
	d := slotsDiff(common.Address{0x42}, 4096)
	u, err := updateAt(t, db, 0, d) // the update the write computes
	if err != nil {
		t.Fatal(err)
	}
	writeDiffBlock(t, db, 1, d)
	seen := make(map[int]int)
	for key, nd := range u.nodes {
		if nd.blob == nil {
			continue
		}
		l := int(key[trieLenOff])
		inHot, inCache := db.nodes.hot.get(nd.hash) != nil, db.nodes.get(nd.hash) != nil
		if wantHot, wantCache := l <= hotPathLen, l > hotOnlyPathLen; inHot != wantHot || inCache != wantCache {
			t.Fatalf("node at path length %d: hot %v, cache %v; want %v, %v", l, inHot, inCache, wantHot, wantCache)
		}
		seen[l]++
	}
	for l := 0; l <= hotPathLen+1; l++ {
		if seen[l] == 0 {
			t.Fatalf("no node at path length %d written (%v)", l, seen)
		}
	}
}

// TestTrieDurableReads: a node not cached is read first from the store's
// flushed tables, skipping the memtables, and taken from there only if it
// hashes to the node wanted. After a flush, the nodes a later block left
// alone come from the flushed tables; those it rewrote (the flushed version
// stale) from the memtable; every slot reads back as written.
func TestTrieDurableReads(t *testing.T) {
	db := openTestDB(t)
	writeGenesis(t, db, NewStateDiff())
	a := common.Address{0x42}
	d1 := slotsDiff(a, 4096)
	writeDiffBlock(t, db, 1, d1)
	if err := db.pdb.Flush(); err != nil {
		t.Fatal(err)
	}
	d2 := NewStateDiff()
	d2.Storage[a] = make(map[common.Hash]common.Hash)
	i := 0
	for k := range d1.Storage[a] {
		if i++; i > 64 {
			break
		}
		d2.Storage[a][k] = common.Hash{0: 0xee, 31: byte(i)}
	}
	writeDiffBlock(t, db, 2, d2)
	want := make(map[common.Hash][]byte)
	for _, d := range []*StateDiff{d1, d2} {
		for k, val := range d.Storage[a] {
			enc, err := rlp.EncodeToBytes(common.TrimLeftZeroes(val[:]))
			if err != nil {
				t.Fatal(err)
			}
			want[crypto.Keccak256Hash(k[:])] = enc
		}
	}

	v, err := db.View()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	nr := newNodeReader(v.(*view).snap, nodeCache{}, 2, nil) // no cache: every node from the store
	nr.durable = db.pdb
	defer nr.close()
	root, err := nr.root()
	if err != nil {
		t.Fatal(err)
	}
	accounts, err := trie.NewStateTrie(trie.StateTrieID(root), nr)
	if err != nil {
		t.Fatal(err)
	}
	acc, err := accounts.GetAccount(a)
	if err != nil || acc == nil {
		t.Fatalf("account: %v, %v", acc, err)
	}
	storage, err := trie.NewStateTrie(trie.StorageTrieID(root, crypto.Keccak256Hash(a[:]), acc.Root), nr)
	if err != nil {
		t.Fatal(err)
	}
	it := trie.NewIterator(storage.MustNodeIterator(nil))
	n := 0
	for it.Next() {
		n++
		if w := want[common.BytesToHash(it.Key)]; !bytes.Equal(it.Value, w) {
			t.Fatalf("slot %x: %x, want %x", it.Key, it.Value, w)
		}
	}
	if it.Err != nil || n != len(want) {
		t.Fatalf("%d slots read (%v), want %d", n, it.Err, len(want))
	}
	if nr.durableHits == 0 || nr.durableHits >= nr.seeks {
		t.Fatalf("%d of %d nodes read from the flushed tables; want some, not all", nr.durableHits, nr.seeks)
	}
	t.Logf("%d of %d nodes read from the flushed tables", nr.durableHits, nr.seeks)
}
