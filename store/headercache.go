package store

import (
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// headerCacheSize is how many decoded headers are kept: enough for the tip
// and the recent blocks BLOCKHASH, fee history and log queries touch.
const headerCacheSize = 1024

// headerCache keeps decoded headers by hash. A hash fixes a header's
// content, so entries never go stale; readers still read the key through
// their view first (an unwound block is not found). get returns a copy, so
// callers may modify what they get. Safe for concurrent use.
type headerCache struct {
	mu    sync.Mutex
	m     map[common.Hash]*types.Header
	order []common.Hash // FIFO eviction
	next  int
}

func (c *headerCache) get(hash common.Hash) *types.Header {
	c.mu.Lock()
	h := c.m[hash]
	c.mu.Unlock()
	if h == nil {
		return nil
	}
	return types.CopyHeader(h)
}

func (c *headerCache) put(hash common.Hash, h *types.Header) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[common.Hash]*types.Header, headerCacheSize)
		c.order = make([]common.Hash, headerCacheSize)
	}
	if _, ok := c.m[hash]; ok {
		return
	}
	if old := c.order[c.next]; old != (common.Hash{}) {
		delete(c.m, old)
	}
	c.order[c.next] = hash
	c.next = (c.next + 1) % headerCacheSize
	c.m[hash] = types.CopyHeader(h)
}
