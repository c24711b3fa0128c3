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
//
// Every EVM call of the node reads code through one CodeCache, so it is
// split into codeCacheShards LRUs by the hash's first byte, each with its
// own lock and an equal share of the bytes: calls loading different
// contracts share no lock.
type CodeCache struct {
	shards [codeCacheShards]*lru.SizeConstrainedCache[common.Hash, []byte]
}

const codeCacheShards = 16

// NewCodeCache returns a code cache of at most maxBytes of code.
func NewCodeCache(maxBytes uint64) *CodeCache {
	c := &CodeCache{}
	for i := range c.shards {
		c.shards[i] = lru.NewSizeConstrainedCache[common.Hash, []byte](maxBytes / codeCacheShards)
	}
	return c
}

func (c *CodeCache) shard(hash common.Hash) *lru.SizeConstrainedCache[common.Hash, []byte] {
	return c.shards[hash[0]%codeCacheShards]
}

func (c *CodeCache) get(hash common.Hash) ([]byte, bool) { return c.shard(hash).Get(hash) }

func (c *CodeCache) add(hash common.Hash, code []byte) { c.shard(hash).Add(hash, code) }
