package chain

import (
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/lru"
)

// CodeCache holds contract code by code hash for the StateDBs that share it
// (StateDB.SetCodeCache), bounded by the bytes of code it holds. Code is
// content addressed, so an entry is right for every backend and height and
// never goes stale. The slices it holds are shared by every reader and
// never modified (the EVM only reads code). Safe for concurrent use.
type CodeCache struct {
	c *lru.SizeConstrainedCache[common.Hash, []byte]
}

// NewCodeCache returns a code cache of at most maxBytes of code.
func NewCodeCache(maxBytes uint64) *CodeCache {
	return &CodeCache{c: lru.NewSizeConstrainedCache[common.Hash, []byte](maxBytes)}
}

func (c *CodeCache) get(hash common.Hash) ([]byte, bool) { return c.c.Get(hash) }

func (c *CodeCache) add(hash common.Hash, code []byte) { c.c.Add(hash, code) }
