package store

import (
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/VictoriaMetrics/fastcache"
)

// stateCache is the bounded in-memory cache of state in front of Pebble
// (see "State cache" in doc.go for the model and its invariant).
//
// Entries are fastcache values keyed by the entity part of a versioned key
// ('a'+addr, 's'+addr+slot): epoch BE8 | from BE8 | the stored value (the
// account encoding or deletedMarker, the trimmed slot value; an absent
// entity is stored as deletedMarker / empty). Code is keyed by its code key
// and holds the bytes alone (content addressed, valid forever).
type stateCache struct {
	fc       *fastcache.Cache // nil: disabled
	maxBytes int64

	// cur is the cache's position: the chain epoch and the latest block
	// whose writes it has applied, and whether a write is in progress.
	cur atomic.Pointer[cacheState]

	// locks serialise a reader's checked insert with the writer's update
	// of the same key (striped by key).
	locks [cacheStripes]sync.Mutex

	hits, misses stripedCounter
}

type cacheState struct {
	epoch   uint64
	applied uint64
	busy    bool
}

const (
	cacheStripes   = 256
	cacheHeaderLen = 16
	// maxCachedValue keeps values under fastcache's per-entry limit (a
	// 64 KiB chunk); larger code is read from Pebble every time.
	maxCachedValue = 60 << 10
)

// newStateCache returns a cache of at most maxBytes (0: disabled) at the
// given epoch and latest block.
func newStateCache(maxBytes int64, epoch, latest uint64) *stateCache {
	c := &stateCache{maxBytes: maxBytes}
	if maxBytes > 0 {
		c.fc = fastcache.New(int(maxBytes))
	}
	c.cur.Store(&cacheState{epoch: epoch, applied: latest})
	return c
}

func (c *stateCache) stripe(key []byte) *sync.Mutex {
	// The last bytes of an entity key are address or slot-hash bytes.
	return &c.locks[(uint(key[len(key)-1])^uint(key[len(key)-2])<<3)%cacheStripes]
}

// usable reports whether a view at (epoch, latest) may read the cache: same
// chain epoch, and every write up to its latest block applied.
func (c *stateCache) usable(epoch, latest uint64) bool {
	st := c.cur.Load()
	return st.epoch == epoch && latest <= st.applied
}

// get returns the cached value of entity at height for a view at (epoch,
// latest), or ok=false. The entry is appended to dst[:0] (a caller's
// buffer, so a hit need not allocate).
func (c *stateCache) get(dst, entity []byte, epoch, latest, height uint64) (val []byte, ok bool) {
	if c.fc == nil {
		return nil, false
	}
	if !c.usable(epoch, latest) {
		c.misses.add(entity)
		return nil, false
	}
	buf := c.fc.Get(dst, entity)
	if len(buf) < cacheHeaderLen || binary.BigEndian.Uint64(buf) != epoch || binary.BigEndian.Uint64(buf[8:]) > height {
		c.misses.add(entity)
		return nil, false
	}
	c.hits.add(entity)
	return buf[cacheHeaderLen:], true
}

// fill records what a view at (epoch, latest) read from Pebble at its
// latest height: value, whose version is from. It is dropped unless the
// cache is exactly at that view's position and no write is in progress
// (checked under the key's stripe lock, which the writer's update of the
// same key also takes).
func (c *stateCache) fill(entity []byte, epoch, latest, from uint64, val []byte) {
	if c.fc == nil || len(val) > maxCachedValue {
		return
	}
	mu := c.stripe(entity)
	mu.Lock()
	if st := c.cur.Load(); !st.busy && st.epoch == epoch && st.applied == latest {
		c.fc.Set(entity, cacheEntry(epoch, from, val))
	}
	mu.Unlock()
}

func cacheEntry(epoch, from uint64, val []byte) []byte {
	e := make([]byte, cacheHeaderLen, cacheHeaderLen+len(val))
	binary.BigEndian.PutUint64(e, epoch)
	binary.BigEndian.PutUint64(e[8:], from)
	return append(e, val...)
}

// code returns cached code by code key.
func (c *stateCache) code(key []byte) ([]byte, bool) {
	if c.fc == nil {
		return nil, false
	}
	v, ok := c.fc.HasGet(nil, key)
	if ok {
		c.hits.add(key)
	} else {
		c.misses.add(key)
	}
	return v, ok
}

func (c *stateCache) fillCode(key, code []byte) {
	if c.fc != nil && len(code) <= maxCachedValue {
		c.fc.Set(key, code)
	}
}

// beginWrite marks a write in progress: from now until endWrite no reader
// fill is accepted. The writer (the store's single writer) calls it before
// committing a batch that changes state.
func (c *stateCache) beginWrite() {
	st := *c.cur.Load()
	st.busy = true
	c.cur.Store(&st)
}

// abortWrite ends a write whose batch was not committed.
func (c *stateCache) abortWrite() {
	st := *c.cur.Load()
	st.busy = false
	c.cur.Store(&st)
}

// applyBlock writes through the state versions of committed block num and
// moves the cache to it.
func (c *stateCache) applyBlock(num uint64, w *stateWrites) {
	st := *c.cur.Load()
	if c.fc != nil && w != nil {
		for i, key := range w.keys {
			val := w.vals[i]
			if len(val) > maxCachedValue {
				continue
			}
			e := cacheEntry(st.epoch, num, val)
			mu := c.stripe(key)
			mu.Lock()
			c.fc.Set(key, e)
			mu.Unlock()
		}
		for i, key := range w.codeKeys {
			c.fillCode(key, w.codes[i])
		}
	}
	c.cur.Store(&cacheState{epoch: st.epoch, applied: num})
}

// reset empties the cache after an unwind or reorg committed at a new epoch
// with latest block latest.
func (c *stateCache) reset(epoch, latest uint64) {
	if c.fc != nil {
		c.fc.Reset()
	}
	c.cur.Store(&cacheState{epoch: epoch, applied: latest})
}

// close releases the cache's memory (fastcache keeps its chunks for the
// next cache of the process) when the store closes; nothing reads it after.
func (c *stateCache) close() {
	if c.fc != nil {
		c.fc.Reset()
	}
}

// stateWrites collects the state versions of one block as they are staged
// (entity key -> stored value) for the write-through after commit.
type stateWrites struct {
	keys, vals      [][]byte
	codeKeys, codes [][]byte
}

func (w *stateWrites) add(entity, val []byte) {
	if w != nil {
		w.keys = append(w.keys, entity)
		w.vals = append(w.vals, val)
	}
}

func (w *stateWrites) addCode(key, code []byte) {
	if w != nil {
		w.codeKeys = append(w.codeKeys, key)
		w.codes = append(w.codes, code)
	}
}

// StateCacheStats describes the state cache (DB.StateCacheStats).
type StateCacheStats struct {
	// Hits and Misses count state reads (accounts, slots, code) answered
	// from the cache or not, since open.
	Hits, Misses uint64
	// Entries and Bytes are the cache's current content; MaxBytes its bound
	// (0: disabled).
	Entries, Bytes, MaxBytes uint64
}

// StateCacheStats returns the state cache's counters and size.
func (db *DB) StateCacheStats() StateCacheStats {
	c := db.state
	s := StateCacheStats{Hits: c.hits.load(), Misses: c.misses.load(), MaxBytes: uint64(c.maxBytes)}
	if c.fc != nil {
		var fs fastcache.Stats
		c.fc.UpdateStats(&fs)
		s.Entries, s.Bytes = fs.EntriesCount, fs.BytesSize
	}
	return s
}

// stripedCounter is a counter that concurrent readers add to without all
// writing one cache line: each add goes to the shard its key's last byte
// picks (the key ends in address or hash bytes), and load sums them.
type stripedCounter struct {
	shards [counterShards]struct {
		n atomic.Uint64
		_ [56]byte // one shard per 64-byte cache line
	}
}

const counterShards = 16

func (c *stripedCounter) add(key []byte) { c.shards[key[len(key)-1]%counterShards].n.Add(1) }

func (c *stripedCounter) load() uint64 {
	var n uint64
	for i := range c.shards {
		n += c.shards[i].n.Load()
	}
	return n
}
