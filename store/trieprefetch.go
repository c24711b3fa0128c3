package store

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/trie"
)

// A trie update's node reads are most of its work: every changed key's
// path, from the root down, is read (a cache lookup or a Pebble seek, a
// keccak check, a decode) before it is changed. prefetch moves those reads
// onto a second goroutine (the second core), the idea of go-ethereum's
// trie prefetcher, our own code: it walks the same keys as the update in
// the reverse order (chunk by chunk from the back, each chunk forward, so
// that its seeks also go up the key order), with its own node reader (its
// own iterator of the same snapshot) and its own tries, and hands every
// node blob it resolves to the update's reader through a map by hash. The
// update walks its keys from the front and publishes how far it got; the
// prefetcher skips what the update passed and stops where the two meet, so
// that no key is read twice but the one they meet on.
//
// Every blob in the map was checked (keccak against the hash its parent
// names) when the prefetcher read it from the store, or came from the
// clean cache that holds only checked blobs: the update trusts it as it
// trusts the cache.
type prefetch struct {
	mu    sync.RWMutex
	nodes map[common.Hash][]byte

	// pos is the index of the item the update works on; stop ends the
	// prefetcher early (the update no longer reads).
	pos  atomic.Int64
	stop atomic.Bool
	done chan struct{}
}

// prefetchItem is one key the update reads: an account (key nil) or one
// of its slots (key: the slot's hash); owner is the account's hash.
type prefetchItem struct {
	addr  common.Address
	owner common.Hash
	key   *common.Hash
}

// minPrefetchItems is the fewest keys an update hands to a prefetcher:
// below it the goroutine and the duplicated reads at the meeting point
// cost more than they save.
const minPrefetchItems = 16

// startPrefetch starts the prefetcher of an update of items (in the order
// the update reads them) on the state trie with root parentRoot, read like
// nr. It returns nil when there is no second core, too few items, or nr
// asks for none (a bulk import's).
func startPrefetch(nr *nodeReader, parentRoot common.Hash, items []prefetchItem) *prefetch {
	if nr.noPrefetch || runtime.GOMAXPROCS(0) < 2 || len(items) < minPrefetchItems {
		return nil
	}
	p := &prefetch{nodes: make(map[common.Hash][]byte, 4*len(items)), done: make(chan struct{})}
	p.pos.Store(-1)
	pr := newNodeReader(nr.r, nr.cache, nr.height, nr.under)
	pr.fill, pr.durable = p, nr.durable
	go p.run(pr, parentRoot, items)
	return p
}

func (p *prefetch) run(pr *nodeReader, parentRoot common.Hash, items []prefetchItem) {
	defer close(p.done)
	defer pr.close()
	// Errors end the prefetch: the update meets them itself.
	_ = walkItems(pr, parentRoot, items, p.stop.Load, func(i int) bool { return int64(i) <= p.pos.Load() })
}

// prefetchChunk is the number of items the prefetcher reads in their own
// order (up the store's key order, where a seek can step forward) before
// it goes back to the chunk before.
const prefetchChunk = 16

// walkItems reads the trie paths of items through pr on the state trie
// with root parentRoot: chunks of prefetchChunk items from the last chunk
// to the first, each chunk in item order, skipping the items passed(i)
// says the update got to, until done says to stop.
func walkItems(pr *nodeReader, parentRoot common.Hash, items []prefetchItem, done func() bool, passed func(i int) bool) error {
	accounts, err := trie.NewStateTrie(trie.StateTrieID(parentRoot), pr)
	if err != nil {
		return err
	}
	storage := make(map[common.Address]*trie.Trie)
	for hi := len(items); hi > 0 && !passed(hi-1); hi -= prefetchChunk {
		for i := max(hi-prefetchChunk, 0); i < hi; i++ {
			if done() {
				return nil
			}
			if passed(i) {
				continue
			}
			it := items[i]
			if it.key == nil {
				if _, err := accounts.GetAccount(it.addr); err != nil {
					return err
				}
				continue
			}
			st, ok := storage[it.addr]
			if !ok {
				acc, err := accounts.GetAccount(it.addr)
				if err != nil {
					return err
				}
				if acc != nil && acc.Root != types.EmptyRootHash {
					if st, err = trie.New(trie.StorageTrieID(parentRoot, it.owner, acc.Root), pr); err != nil {
						return err
					}
				}
				storage[it.addr] = st
			}
			if st == nil {
				continue // no storage: nothing to read
			}
			if _, err := st.Get(it.key[:]); err != nil {
				return err
			}
		}
	}
	return nil
}

// prefetchHook, when set (tests), is called with every update's
// prefetcher (nil: none) before the update reads; the update uses the one
// it returns.
var prefetchHook func(*prefetch) *prefetch

// at tells the prefetcher that the update works on item i.
func (p *prefetch) at(i int) {
	if p != nil {
		p.pos.Store(int64(i))
	}
}

// finish stops the prefetcher and waits for it (its reader must be closed
// before the update's snapshot may go).
func (p *prefetch) finish() {
	if p == nil {
		return
	}
	p.stop.Store(true)
	<-p.done
}

func (p *prefetch) get(hash common.Hash) []byte {
	p.mu.RLock()
	blob := p.nodes[hash]
	p.mu.RUnlock()
	return blob
}

func (p *prefetch) put(hash common.Hash, blob []byte) {
	p.mu.Lock()
	p.nodes[hash] = blob
	p.mu.Unlock()
}
