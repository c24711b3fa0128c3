package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/VictoriaMetrics/fastcache"
	"github.com/cockroachdb/pebble/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/ethereum/go-ethereum/trie/trienode"
	"github.com/ethereum/go-ethereum/triedb/database"
	"github.com/holiman/uint256"
)

// Trie node keys (schema.go, prefixTrieNode): the entity is the trie's
// owner (zero for the account trie, keccak(address) for a storage trie)
// and the node's path in nibbles, packed two to a byte into 32 bytes and
// followed by its length, so that every entity has one length and the
// comparer's Split knows trie node keys by table byte and length.
const (
	trieOwnerOff  = 1
	triePathOff   = trieOwnerOff + common.HashLength
	trieLenOff    = triePathOff + 32
	trieEntityLen = trieLenOff + 1
	trieKeyLen    = trieEntityLen + versionLen
	// trieListEntry is one entry of a block's trie list: an entity
	// without its table byte.
	trieListEntry = trieEntityLen - 1
	// maxTriePath is the longest path a stored node has (a key is 64
	// nibbles; a stored node sits above its leaf's value).
	maxTriePath = 64
)

// isTrieKey recognises a versioned trie node key.
func isTrieKey(key []byte) bool { return len(key) == trieKeyLen && key[0] == prefixTrieNode }

// appendTrieEntity appends the entity of the node at path (nibbles) of
// owner's trie.
func appendTrieEntity(dst []byte, owner common.Hash, path []byte) []byte {
	dst = append(dst, prefixTrieNode)
	dst = append(dst, owner[:]...)
	var packed [32]byte
	for i, n := range path {
		if i%2 == 0 {
			packed[i/2] = n << 4
		} else {
			packed[i/2] |= n & 0x0f
		}
	}
	dst = append(dst, packed[:]...)
	return append(dst, byte(len(path)))
}

func trieListKey(num uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefixTrieList}, num)
}

// TrieUpdate is what one block changes in the state trie: the nodes
// written at the block (by entity; nil: deleted) and the resulting state
// root. The chain computes it to know a block's root before it writes
// the block (View.StateTrie, StateTrie.Update) and hands it to the store
// with the block (BlockWrite.Trie), which writes its nodes in the block's
// own batch.
type TrieUpdate struct {
	// Root is the state root after the block.
	Root common.Hash
	// Parent is the height the update applies on.
	Parent uint64

	nodes map[string]trieNode
	// origins are the nodes' values under the update (nil: absent), by
	// the same entities as nodes: SquashTrieUpdates drops a version that
	// leaves its node as the first update found it.
	origins      map[string][]byte
	storageRoots map[common.Address]common.Hash
	// under are the updates this one was computed on top of (a reorg's
	// earlier new blocks, a pending parent): the store checks them.
	under []*TrieUpdate
	// seeks is the number of nodes the update read from the store (its
	// layers or Pebble) itself, not from a cache or its prefetcher.
	seeks int
	// clean: no version of nodes leaves its node as its origin has it (a
	// squash's result), so a squash on top of it checks only the later
	// updates' entities.
	clean bool
	// written and writtenHash are the block the store wrote the update
	// with (0: not written, or written by a reorg).
	written     uint64
	writtenHash common.Hash
}

// trieNode is one node version of an update: its blob (nil: deleted) and
// the blob's hash as the trie's commit computed it (zero when deleted), so
// that nothing after the commit hashes the node again.
type trieNode struct {
	blob []byte
	hash common.Hash
}

// StorageRoot returns the storage root after the block of an account the
// update was asked to watch or changed; ok is false otherwise.
func (u *TrieUpdate) StorageRoot(addr common.Address) (root common.Hash, ok bool) {
	root, ok = u.storageRoots[addr]
	return root, ok
}

// Nodes is the number of node versions the update writes (deletions
// included).
func (u *TrieUpdate) Nodes() int { return len(u.nodes) }

// trieMeta is the trie's extent in a store: whether it keeps one and the
// lowest height it can read (heights from base to latest).
type trieMeta struct {
	kept bool
	base uint64
}

func readTrieMeta(r reader) (trieMeta, error) {
	v, found, err := getCopy(r, keyTrie)
	if err != nil || !found {
		return trieMeta{}, err
	}
	base, err := decodeBE8(v, "trie base")
	return trieMeta{kept: true, base: base}, err
}

// nodeCache is the clean trie node cache: blobs by node hash. Keyed by
// content, an entry is right wherever and whenever the node is asked for
// (any height, any branch), so nothing ever invalidates it.
//
// In front of it, hot keeps the nodes of the upper trie levels (paths of at
// most hotPathLen nibbles: the account trie's and large storage tries'
// top levels, read by nearly every update) in Go maps, also by hash: a hit
// costs a map lookup and returns the shared blob (read-only, as every
// cached blob), where a fastcache hit hashes the key, locks a bucket and
// copies the blob out of its chunk.
type nodeCache struct {
	c   *fastcache.Cache // nil: no cache
	hot *hotNodes        // nil: no cache
}

func newNodeCache(bytes int64) nodeCache {
	if bytes <= 0 {
		return nodeCache{}
	}
	return nodeCache{c: fastcache.New(int(bytes)), hot: newHotNodes(bytes / hotCacheShare)}
}

func (c nodeCache) get(hash common.Hash) []byte {
	if c.c == nil {
		return nil
	}
	v, ok := c.c.HasGet(nil, hash[:])
	if !ok {
		return nil
	}
	return v
}

func (c nodeCache) set(hash common.Hash, blob []byte) {
	if c.c != nil {
		c.c.Set(hash[:], blob)
	}
}

// hotPathLen is the longest path (nibbles) of a node kept in the hot
// maps: levels 0 to 3, 4,369 nodes of a trie at most (about 2 MiB of
// branch nodes).
const hotPathLen = 3

// hotOnlyPathLen is the longest path of a committed node cacheTrie puts in
// the hot maps only, not in the clean cache as well: levels 0 to 2 (273
// nodes of a trie) are read by nearly every block that touches the trie,
// so they stay in the hot maps' newer generation, and a second copy in
// the clean cache would only cost its Set.
const hotOnlyPathLen = 2

// hotCacheShare: the hot maps hold up to 1/hotCacheShare of the trie
// cache's bytes (16 MiB of the default 128 MiB), on top of it.
const hotCacheShare = 8

// hotNodes is a bounded map of node blobs by hash in two generations:
// puts go to cur; when cur holds half the bound, it becomes old (the
// previous old is dropped) and a new cur starts. A hit in old is moved to
// cur, so nodes still read survive rotations and replaced ones (every
// block rewrites the top levels under new hashes) age out.
type hotNodes struct {
	mu       sync.RWMutex
	cur, old map[common.Hash][]byte
	curBytes int64
	genBytes int64
}

func newHotNodes(bytes int64) *hotNodes {
	return &hotNodes{cur: make(map[common.Hash][]byte), genBytes: max(bytes/2, 1<<20)}
}

func (h *hotNodes) get(hash common.Hash) []byte {
	if h == nil {
		return nil
	}
	h.mu.RLock()
	blob, ok := h.cur[hash]
	if !ok {
		blob = h.old[hash]
	}
	h.mu.RUnlock()
	if !ok && blob != nil {
		h.put(hash, blob)
	}
	return blob
}

// put keeps blob, which must hash to hash and never be modified.
func (h *hotNodes) put(hash common.Hash, blob []byte) {
	if h == nil || blob == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.cur[hash]; ok {
		return
	}
	h.cur[hash] = blob
	h.curBytes += int64(len(blob)) + common.HashLength
	if h.curBytes >= h.genBytes {
		h.old, h.cur, h.curBytes = h.cur, make(map[common.Hash][]byte, len(h.cur)), 0
	}
}

// nodeReader reads trie nodes at one height: from the update layers on top
// (newest last), the clean cache, then Pebble (one SeekPrefixGE per node;
// with durable, first one in the flushed tables only, see readAt). Every
// blob read from Pebble is checked against the hash its parent names, so
// that a version bug is an error, never a wrong root. It serves one
// goroutine; close releases its iterators.
type nodeReader struct {
	r      reader
	cache  nodeCache
	height uint64
	under  []*TrieUpdate
	it     *pebble.Iterator
	key    []byte
	hasher crypto.KeccakState
	// pre, when set, holds nodes a prefetcher resolved (looked up
	// first); fill, when set, is the prefetch this reader works for (every
	// node it resolves goes there). trieprefetch.go.
	pre, fill *prefetch
	// noPrefetch: updates through this reader start no prefetcher
	// (Config.BulkImport).
	noPrefetch bool
	// durable, when set, is the store read first for a node not cached,
	// without its memtables (readAt); dit is its iterator.
	durable *pebble.DB
	dit     *pebble.Iterator
	// seeks counts the nodes Node read from the store, durableHits those
	// of them found in its flushed tables.
	seeks, durableHits int
}

func newNodeReader(r reader, cache nodeCache, height uint64, under []*TrieUpdate) *nodeReader {
	return &nodeReader{r: r, cache: cache, height: height, under: under, hasher: crypto.NewKeccakState()}
}

// NodeReader implements database.NodeDatabase: one height, whatever root.
func (n *nodeReader) NodeReader(common.Hash) (database.NodeReader, error) { return n, nil }

// errTrieNodeMissing is wrapped in the go-ethereum MissingNodeError of a
// node that has no version at the height.
var errTrieNodeMissing = errors.New("no version at this height")

// Node implements database.NodeReader.
func (n *nodeReader) Node(owner common.Hash, path []byte, hash common.Hash) ([]byte, error) {
	if n.pre != nil {
		if blob := n.pre.get(hash); blob != nil {
			return blob, nil
		}
	}
	blob, err := n.node(owner, path, hash)
	if n.fill != nil && err == nil {
		n.fill.put(hash, blob)
	}
	return blob, err
}

func (n *nodeReader) node(owner common.Hash, path []byte, hash common.Hash) ([]byte, error) {
	hot := len(path) <= hotPathLen
	if hot {
		if blob := n.cache.hot.get(hash); blob != nil {
			return blob, nil
		}
	}
	if blob := n.cache.get(hash); blob != nil {
		if hot {
			n.cache.hot.put(hash, blob)
		}
		return blob, nil
	}
	n.seeks++
	blob, found, err := n.read(owner, path, hash)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("%w: trie node %x of owner %s at height %d", errTrieNodeMissing, path, owner, n.height)
	}
	n.cache.set(hash, blob)
	if hot {
		n.cache.hot.put(hash, blob)
	}
	return blob, nil
}

func (n *nodeReader) keccak(blob []byte) (h common.Hash) {
	n.hasher.Reset()
	n.hasher.Write(blob)
	n.hasher.Read(h[:])
	return h
}

// read returns the node at (owner, path) at the reader's height, checked
// against hash, found false when it has none there (never written, or
// deleted).
func (n *nodeReader) read(owner common.Hash, path []byte, hash common.Hash) ([]byte, bool, error) {
	blob, found, checked, err := n.readAt(owner, path, &hash)
	if err != nil || !found || checked {
		return blob, found, err
	}
	if got := n.keccak(blob); got != hash {
		return nil, false, fmt.Errorf("%w: trie node %x of owner %s at height %d hashes to %s, its parent names %s",
			ErrCorrupt, path, owner, n.height, got, hash)
	}
	return blob, true, nil
}

// readAt returns the node at (owner, path) at the reader's height: from the
// update layers on top, else from the store. When want is set and the
// reader has durable, the store's flushed tables are read first, skipping
// the memtables' seeks (most nodes a block reads from the store are old):
// a blob found there is returned, checked true, only if it hashes to want
// (any blob that does is the node wanted, whatever its version); else the
// store is read at the height as without durable.
func (n *nodeReader) readAt(owner common.Hash, path []byte, want *common.Hash) (blob []byte, found, checked bool, err error) {
	if len(path) > maxTriePath {
		return nil, false, false, fmt.Errorf("%w: trie path of %d nibbles", ErrCorrupt, len(path))
	}
	n.key = appendTrieEntity(n.key[:0], owner, path)
	for i := len(n.under) - 1; i >= 0; i-- {
		if nd, ok := n.under[i].nodes[string(n.key)]; ok {
			return nd.blob, nd.blob != nil, false, nil
		}
	}
	n.key = appendVersion(n.key, n.height)
	if want != nil && n.durable != nil {
		if n.dit == nil {
			if n.dit, err = n.durable.NewIter(&pebble.IterOptions{OnlyReadGuaranteedDurable: true}); err != nil {
				return nil, false, false, err
			}
		}
		blob, found, err = seekValue(n.dit, n.key)
		if err != nil {
			return nil, false, false, err
		}
		if found && n.keccak(blob) == *want {
			n.durableHits++
			return blob, true, true, nil
		}
	}
	if n.it == nil {
		if n.it, err = n.r.NewIter(nil); err != nil {
			return nil, false, false, err
		}
	}
	blob, found, err = seekValue(n.it, n.key)
	return blob, found, false, err
}

// seekValue returns a copy of the value of the first key of it with key's
// prefix at or after key, found false when there is none or it is empty.
func seekValue(it *pebble.Iterator, key []byte) ([]byte, bool, error) {
	if !it.SeekPrefixGE(key) {
		return nil, false, it.Error()
	}
	v, err := it.ValueAndErr()
	if err != nil || len(v) == 0 {
		return nil, false, err
	}
	return bytes.Clone(v), true, nil
}

// root returns the state root at the reader's height: the hash of the
// account trie's root node (EmptyRootHash without one).
func (n *nodeReader) root() (common.Hash, error) {
	blob, found, _, err := n.readAt(common.Hash{}, nil, nil)
	if err != nil || !found {
		return types.EmptyRootHash, err
	}
	return n.keccak(blob), nil
}

func (n *nodeReader) close() error {
	var err error
	if n.it != nil {
		err = n.it.Close()
		n.it = nil
	}
	if n.dit != nil {
		err = errors.Join(err, n.dit.Close())
		n.dit = nil
	}
	return err
}

// StateTrie is the state trie at one height of a view (View.StateTrie): its
// root, the update a block's state diff makes to it, and proofs.
type StateTrie struct {
	v      *view
	height uint64
	under  []*TrieUpdate
}

// StateTrie returns the state trie at number. It fails with ErrNoTrie when
// the store keeps none, and with ErrTrieWindow when number is outside the
// heights the trie can read (below its base, the window W, or above the
// view's latest block).
func (v *view) StateTrie(number uint64) (*StateTrie, error) {
	if !v.trie.kept {
		return nil, fmt.Errorf("state trie at %d: %w", number, ErrNoTrie)
	}
	if number < v.trie.base || number > v.latest || !v.hasChain {
		return nil, &TrieWindowError{Height: number, Base: v.trie.base, Latest: v.latest}
	}
	return &StateTrie{v: v, height: number}, nil
}

// On returns the trie of the state after the updates under, applied in
// order on this one (a reorg's new branch, a pending parent).
func (t *StateTrie) On(under ...*TrieUpdate) *StateTrie {
	return &StateTrie{v: t.v, height: t.height, under: append(slices.Clip(t.under), under...)}
}

// Root returns the state root.
func (t *StateTrie) Root() (common.Hash, error) {
	if err := t.v.enter(); err != nil {
		return common.Hash{}, err
	}
	defer t.v.exit()
	r := newNodeReader(t.v.snap, t.v.db.nodes, t.height, t.under)
	root, err := r.root()
	return root, errors.Join(err, r.close())
}

// Update computes the trie update of diff, a block's state change on this
// state: the new root and the nodes to write. watch names accounts whose
// storage root the caller needs even if the block leaves them alone.
func (t *StateTrie) Update(diff *StateDiff, watch ...common.Address) (*TrieUpdate, error) {
	if err := t.v.enter(); err != nil {
		return nil, err
	}
	defer t.v.exit()
	return t.v.db.updateTrie(t.v.snap, t.height, t.under, diff, watch)
}

// updateTrie applies diff to the trie at height (plus under) read from r.
func (db *DB) updateTrie(r reader, height uint64, under []*TrieUpdate, diff *StateDiff, watch []common.Address) (*TrieUpdate, error) {
	if diff == nil {
		diff = NewStateDiff()
	}
	nr := newNodeReader(r, db.nodes, height, under)
	defer nr.close()
	nr.noPrefetch = db.cfg.BulkImport
	nr.durable = db.pdb
	u, err := applyDiff(nr, diff, watch)
	if err != nil {
		return nil, fmt.Errorf("state trie update on %d: %w", height, err)
	}
	u.Parent, u.under = height, under
	u.seeks = nr.seeks
	return u, nil
}

// applyDiff is the trie algorithm of one block: every storage trie the
// diff touches is updated and committed (a wiped or deleted account's old
// nodes deleted), then the account trie with the new storage roots.
func applyDiff(nr *nodeReader, diff *StateDiff, watch []common.Address) (*TrieUpdate, error) {
	parentRoot, err := nr.root()
	if err != nil {
		return nil, err
	}
	accounts, err := trie.NewStateTrie(trie.StateTrieID(parentRoot), nr)
	if err != nil {
		return nil, err
	}
	touched := make(map[common.Address]struct{}, len(diff.Accounts)+len(diff.Storage))
	for a := range diff.Accounts {
		touched[a] = struct{}{}
	}
	for a := range diff.Storage {
		touched[a] = struct{}{}
	}
	for a := range diff.Wiped {
		touched[a] = struct{}{}
	}
	// The keys in the order they are read below, for the prefetcher: by
	// hashed key (trie path), accounts and each account's slots, so that
	// the reads of one trie go up the store's key order.
	order := make([]hashedAddr, 0, len(touched))
	for a := range touched {
		order = append(order, hashedAddr{addr: a, hash: nr.keccak(a[:])})
	}
	slices.SortFunc(order, func(a, b hashedAddr) int { return bytes.Compare(a.hash[:], b.hash[:]) })
	sortedSlots := make(map[common.Address][]hashedSlot, len(diff.Storage))
	items := make([]prefetchItem, 0, len(order))
	first := make([]int, len(order)) // item of each account
	for i, ha := range order {
		addr := ha.addr
		first[i] = len(items)
		items = append(items, prefetchItem{addr: addr, owner: ha.hash})
		acc, changed := diff.Accounts[addr]
		slots := diff.Storage[addr]
		if len(slots) == 0 || (changed && acc == nil) {
			continue
		}
		keys := make([]hashedSlot, 0, len(slots))
		for slot := range slots {
			keys = append(keys, hashedSlot{slot: slot, hash: nr.keccak(slot[:])})
		}
		slices.SortFunc(keys, func(a, b hashedSlot) int { return bytes.Compare(a.hash[:], b.hash[:]) })
		sortedSlots[addr] = keys
		if _, wiped := diff.Wiped[addr]; wiped {
			continue // written on the empty trie: nothing to read
		}
		for j := range keys {
			items = append(items, prefetchItem{addr: addr, owner: ha.hash, key: &keys[j].hash})
		}
	}
	// An update writes about four nodes a key (the benchmarks' blocks on
	// large tries: 4.7 for 1,000 keys on 10M slots).
	u := &TrieUpdate{nodes: make(map[string]trieNode, 4*len(items)), origins: make(map[string][]byte, 4*len(items)),
		storageRoots: make(map[common.Address]common.Hash, len(touched)+len(watch))}
	pf := startPrefetch(nr, parentRoot, items)
	if prefetchHook != nil {
		pf = prefetchHook(pf)
	}
	nr.pre = pf
	defer func() {
		pf.finish()
		nr.pre = nil
	}()
	for ai, ha := range order {
		addr := ha.addr
		pf.at(first[ai])
		old, err := accounts.GetAccount(addr)
		if err != nil {
			return nil, fmt.Errorf("account %s: %w", addr, err)
		}
		acc, changed := diff.Accounts[addr]
		if !changed && old == nil {
			continue // storage of an account that does not exist: not in the state
		}
		oldRoot := types.EmptyRootHash
		if old != nil {
			oldRoot = old.Root
		}
		_, wiped := diff.Wiped[addr]
		fresh := wiped || (changed && acc == nil)
		base := oldRoot
		if fresh {
			base = types.EmptyRootHash
		}
		root := base
		owner := ha.hash
		var set *trienode.NodeSet
		if slots := diff.Storage[addr]; len(slots) > 0 && !(changed && acc == nil) {
			// The storage trie by hashed keys (what go-ethereum's
			// StateTrie does with the slots, without hashing them again).
			st, err := trie.New(trie.StorageTrieID(parentRoot, owner, base), nr)
			if err != nil {
				return nil, fmt.Errorf("storage trie of %s: %w", addr, err)
			}
			for j, hs := range sortedSlots[addr] {
				if !fresh {
					pf.at(first[ai] + 1 + j)
				}
				v := slots[hs.slot]
				if v == (common.Hash{}) {
					err = st.Delete(hs.hash[:])
				} else {
					var enc []byte
					if enc, err = rlp.EncodeToBytes(common.TrimLeftZeroes(v[:])); err == nil {
						err = st.Update(hs.hash[:], enc)
					}
				}
				if err != nil {
					return nil, fmt.Errorf("storage %s of %s: %w", hs.slot, addr, err)
				}
			}
			root, set = st.Commit(false)
		}
		u.addSet(owner, set)
		if fresh && oldRoot != types.EmptyRootHash {
			// The old storage trie's nodes are gone: deletion versions
			// for those the new trie does not replace.
			if err := deleteTrieNodes(nr, parentRoot, owner, oldRoot, u); err != nil {
				return nil, fmt.Errorf("storage trie of %s: %w", addr, err)
			}
		}
		if changed && acc == nil {
			if old != nil {
				if err := accounts.DeleteAccount(addr); err != nil {
					return nil, fmt.Errorf("delete account %s: %w", addr, err)
				}
			}
			u.storageRoots[addr] = types.EmptyRootHash
			continue
		}
		sa := types.StateAccount{Root: root}
		if changed {
			sa.Nonce, sa.Balance, sa.CodeHash = acc.Nonce, acc.Balance, acc.CodeHash.Bytes()
		} else {
			sa.Nonce, sa.Balance, sa.CodeHash = old.Nonce, old.Balance, old.CodeHash
		}
		if sa.Balance == nil {
			sa.Balance = new(uint256.Int)
		}
		if len(sa.CodeHash) == 0 || common.BytesToHash(sa.CodeHash) == (common.Hash{}) {
			sa.CodeHash = types.EmptyCodeHash.Bytes()
		}
		if err := accounts.UpdateAccount(addr, &sa, 0); err != nil {
			return nil, fmt.Errorf("account %s: %w", addr, err)
		}
		u.storageRoots[addr] = root
	}
	for _, addr := range watch {
		if _, ok := u.storageRoots[addr]; ok {
			continue
		}
		old, err := accounts.GetAccount(addr)
		if err != nil {
			return nil, fmt.Errorf("account %s: %w", addr, err)
		}
		u.storageRoots[addr] = types.EmptyRootHash
		if old != nil {
			u.storageRoots[addr] = old.Root
		}
	}
	root, set := accounts.Commit(false)
	u.addSet(common.Hash{}, set)
	u.Root = root
	return u, nil
}

// hashedAddr is an account's address and its hash (its account trie key
// and its storage trie's owner).
type hashedAddr struct {
	addr common.Address
	hash common.Hash
}

// hashedSlot is a slot and its hash (its storage trie key).
type hashedSlot struct {
	slot, hash common.Hash
}

// addSet adds the nodes of owner's trie that set commits (nil: none), with
// their origins.
func (u *TrieUpdate) addSet(owner common.Hash, set *trienode.NodeSet) {
	if set == nil {
		return
	}
	var buf []byte
	for path, n := range set.Nodes {
		buf = appendTrieEntity(buf[:0], owner, []byte(path))
		key := string(buf)
		u.nodes[key] = trieNode{blob: n.Blob, hash: n.Hash}
		u.origins[key] = set.Origins[path]
	}
}

// deleteTrieNodes adds to u a deletion of every stored node of the trie of
// owner with root (read through nr) that u does not write, and makes each
// its node's origin.
func deleteTrieNodes(nr *nodeReader, stateRoot, owner, root common.Hash, u *TrieUpdate) error {
	tr, err := trie.New(trie.StorageTrieID(stateRoot, owner, root), nr)
	if err != nil {
		return err
	}
	it, err := tr.NodeIterator(nil)
	if err != nil {
		return err
	}
	for it.Next(true) {
		if it.Hash() == (common.Hash{}) {
			continue // embedded in its parent, or a value
		}
		key := string(appendTrieEntity(nil, owner, it.Path()))
		if _, ok := u.nodes[key]; !ok {
			u.nodes[key] = trieNode{}
		}
		// The new trie was built on the empty one: its nodes' origins are
		// the old trie's.
		u.origins[key] = it.NodeBlob()
	}
	return it.Error()
}

// stageTrie adds u's node versions at block num and the block's trie list
// to b.
func stageTrie(b *pebble.Batch, num uint64, u *TrieUpdate) error {
	entities := make([]string, 0, len(u.nodes))
	for e := range u.nodes {
		entities = append(entities, e)
	}
	slices.Sort(entities)
	list := make([]byte, 0, len(entities)*trieListEntry)
	key := make([]byte, 0, trieKeyLen)
	var err error
	for _, e := range entities {
		key = appendVersion(append(key[:0], e...), num)
		err = errors.Join(err, b.Set(key, u.nodes[e].blob, nil))
		list = append(list, e[1:]...)
	}
	return errors.Join(err, b.Set(trieListKey(num), list, nil))
}

// cacheTrie puts u's new nodes into the clean cache after their block was
// committed (the next blocks read them first), by the hashes the trie's
// commit computed: the blobs were made here, not read from the store, so
// they are not hashed again.
func (db *DB) cacheTrie(u *TrieUpdate) {
	if db.nodes.c == nil || u == nil {
		return
	}
	for key, nd := range u.nodes {
		if nd.blob == nil {
			continue
		}
		if l := key[trieLenOff]; l <= hotPathLen {
			db.nodes.hot.put(nd.hash, nd.blob)
			if l <= hotOnlyPathLen {
				continue
			}
		}
		db.nodes.set(nd.hash, nd.blob)
	}
}

// stageUnwindTrie adds to b the deletion of block n's node versions and
// its trie list. A block without a list wrote no trie.
func (db *DB) stageUnwindTrie(b *pebble.Batch, n uint64) error {
	list, found, err := getCopy(db.pdb, trieListKey(n))
	if err != nil || !found {
		return err
	}
	if len(list)%trieListEntry != 0 {
		return fmt.Errorf("%w: trie list of block %d has %d bytes", ErrCorrupt, n, len(list))
	}
	key := make([]byte, 0, trieKeyLen)
	for i := 0; i < len(list); i += trieListEntry {
		key = append(append(key[:0], prefixTrieNode), list[i:i+trieListEntry]...)
		err = errors.Join(err, b.Delete(appendVersion(key, n), nil))
	}
	return errors.Join(err, b.Delete(trieListKey(n), nil))
}

// stageDropTrie adds to b the removal of the whole trie: every node
// version, every block's list and the trie meta key (the store keeps no
// trie until it is built again).
func stageDropTrie(b *pebble.Batch) error {
	return errors.Join(
		b.DeleteRange([]byte{prefixTrieNode}, []byte{prefixTrieNode + 1}, nil),
		b.DeleteRange([]byte{prefixTrieList}, []byte{prefixTrieList + 1}, nil),
		b.Delete(keyTrie, nil),
	)
}

// stagePruneTrie adds to b the pruning of block p: every node version that
// a version at p superseded, and the versions at p that delete a node, go;
// so does p's trie list. Heights below p can no longer be read, nor
// blocks down to p unwound without a rebuild: the caller moves the base to
// p in the same batch.
func (db *DB) stagePruneTrie(b *pebble.Batch, it *pebble.Iterator, p uint64) error {
	list, found, err := getCopy(db.pdb, trieListKey(p))
	if err != nil || !found {
		return err
	}
	if len(list)%trieListEntry != 0 {
		return fmt.Errorf("%w: trie list of block %d has %d bytes", ErrCorrupt, p, len(list))
	}
	seek := make([]byte, 0, trieKeyLen)
	for i := 0; i < len(list); i += trieListEntry {
		seek = append(append(seek[:0], prefixTrieNode), list[i:i+trieListEntry]...)
		seek = appendVersion(seek, p)
		for valid := it.SeekPrefixGE(seek); valid; valid = it.Next() {
			key := it.Key()
			if v := keyVersion(key); v == p {
				val, err := it.ValueAndErr()
				if err != nil {
					return err
				}
				if len(val) != 0 {
					continue
				}
			}
			if err := b.Delete(key, nil); err != nil {
				return err
			}
		}
		if err := it.Error(); err != nil {
			return err
		}
	}
	return b.Delete(trieListKey(p), nil)
}

// trieBatchBytes is the size at which a trie build commits its batch.
const trieBatchBytes = 32 << 20

// TrieCheckStats counts what StateTrie.Check walked.
type TrieCheckStats struct {
	Root                   common.Hash
	Accounts, Slots, Nodes int64
	StorageTries           int64
	Duration               time.Duration
}

// Check walks the whole trie: every node of the account trie and of every
// account's storage trie is read at the trie's height and checked against
// the hash its parent names (a missing or wrong node fails, naming it).
// progress is called every 10 s.
func (t *StateTrie) Check(progress func(TrieCheckStats)) (TrieCheckStats, error) {
	start, last := time.Now(), time.Now()
	var stats TrieCheckStats
	if err := t.v.enter(); err != nil {
		return stats, err
	}
	defer t.v.exit()
	nr := newNodeReader(t.v.snap, nodeCache{}, t.height, t.under) // no cache: every node from the store
	defer nr.close()
	root, err := nr.root()
	if err != nil {
		return stats, err
	}
	stats.Root = root
	walk := func(id *trie.ID, leaf func(key, val []byte) error) error {
		tr, err := trie.New(id, nr)
		if err != nil {
			return err
		}
		it, err := tr.NodeIterator(nil)
		if err != nil {
			return err
		}
		for it.Next(true) {
			if it.Hash() != (common.Hash{}) {
				stats.Nodes++
			}
			if it.Leaf() && leaf != nil {
				if err := leaf(it.LeafKey(), it.LeafBlob()); err != nil {
					return err
				}
			}
			if progress != nil && time.Since(last) >= 10*time.Second {
				last = time.Now()
				stats.Duration = time.Since(start)
				progress(stats)
			}
		}
		return it.Error()
	}
	err = walk(trie.StateTrieID(root), func(key, val []byte) error {
		stats.Accounts++
		var acc types.StateAccount
		if err := rlp.DecodeBytes(val, &acc); err != nil {
			return fmt.Errorf("%w: account leaf %x: %v", ErrCorrupt, key, err)
		}
		if acc.Root == types.EmptyRootHash {
			return nil
		}
		stats.StorageTries++
		return walk(trie.StorageTrieID(root, common.BytesToHash(key), acc.Root), func([]byte, []byte) error {
			stats.Slots++
			return nil
		})
	})
	stats.Duration = time.Since(start)
	return stats, err
}
