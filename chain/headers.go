package chain

import (
	"errors"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/store"
)

// HeaderSource looks up headers: the store (a View) plus, for pending and
// simulated blocks, headers that exist only in memory.
type HeaderSource interface {
	HeaderByHash(hash common.Hash) *types.Header
	HeaderByNumber(number uint64) *types.Header
}

// ViewHeaders serves canonical headers from a store view.
type ViewHeaders struct{ View store.ChainReader }

func (v ViewHeaders) HeaderByHash(hash common.Hash) *types.Header {
	n, err := v.View.NumberByHash(hash)
	if err != nil {
		return nil
	}
	h, err := v.View.Header(n, hash)
	if err != nil {
		return nil
	}
	return h
}

func (v ViewHeaders) HeaderByNumber(number uint64) *types.Header {
	hash, err := v.View.CanonicalHash(number)
	if err != nil {
		return nil
	}
	h, err := v.View.Header(number, hash)
	if err != nil {
		return nil
	}
	return h
}

// chainContext adapts a HeaderSource to go-ethereum's core.ChainContext
// (consensus.ChainHeaderReader + Engine).
type chainContext struct {
	config  *params.ChainConfig
	engine  consensus.Engine
	headers HeaderSource
	current *types.Header
}

func (c *chainContext) Config() *params.ChainConfig  { return c.config }
func (c *chainContext) Engine() consensus.Engine     { return c.engine }
func (c *chainContext) CurrentHeader() *types.Header { return c.current }
func (c *chainContext) GetHeader(hash common.Hash, number uint64) *types.Header {
	h := c.headers.HeaderByHash(hash)
	if h == nil || h.Number.Uint64() != number {
		return nil
	}
	return h
}
func (c *chainContext) GetHeaderByNumber(number uint64) *types.Header {
	return c.headers.HeaderByNumber(number)
}
func (c *chainContext) GetHeaderByHash(hash common.Hash) *types.Header {
	return c.headers.HeaderByHash(hash)
}

// GetTd is required by some engines' interfaces; tipnode does not track
// total difficulty.
func (c *chainContext) GetTd(common.Hash, uint64) *big.Int { return nil }

var errNoHeader = errors.New("header not found")
