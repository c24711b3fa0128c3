package store

import (
	"sync/atomic"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// canonCacheSize is how many block numbers the canonical cache holds
// (direct-mapped by number): enough for the blocks below a Head's
// in-memory window that past-block reads name.
const canonCacheSize = 4096

// canonCache keeps the canonical hash (and, once read, the decoded header)
// of block numbers, each tagged with the chain epoch it was read at. Within
// an epoch the canonical block at a number never changes (only UnwindTo
// and Reorg remove or replace blocks, and both bump the epoch), so an entry
// answers any view of its epoch whose latest block is at or above the
// number, without a Pebble read. Entries of other epochs are ignored (and
// overwritten). Lock-free: each slot is an atomic pointer to an immutable
// entry. Safe for concurrent use.
type canonCache struct {
	slots [canonCacheSize]atomic.Pointer[canonEntry]
}

type canonEntry struct {
	epoch, number uint64
	hash          common.Hash
	header        *types.Header // nil until a view reads it; never modified
}

// get returns the entry of number at epoch, or nil.
func (c *canonCache) get(epoch, number uint64) *canonEntry {
	e := c.slots[number%canonCacheSize].Load()
	if e == nil || e.epoch != epoch || e.number != number {
		return nil
	}
	return e
}

// put records the canonical hash of number at epoch, keeping a header
// already cached for the same block.
func (c *canonCache) put(epoch, number uint64, hash common.Hash) {
	if e := c.get(epoch, number); e != nil && e.hash == hash {
		return
	}
	c.slots[number%canonCacheSize].Store(&canonEntry{epoch: epoch, number: number, hash: hash})
}

// putHeader attaches header h to the entry of number at epoch when that
// entry names h's hash (so only canonical headers are kept). h is not
// modified afterwards by the caller.
func (c *canonCache) putHeader(epoch, number uint64, hash common.Hash, h *types.Header) {
	if e := c.get(epoch, number); e != nil && e.hash == hash && e.header == nil {
		c.slots[number%canonCacheSize].Store(&canonEntry{epoch: epoch, number: number, hash: hash, header: h})
	}
}

// reset empties the cache (raw batches may rewrite anything).
func (c *canonCache) reset() {
	for i := range c.slots {
		c.slots[i].Store(nil)
	}
}
