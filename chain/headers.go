package chain

import (
	"errors"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/store"
)

// HeaderSource looks up headers: the store (a View, through a Head's
// window), plus, for pending and simulated blocks, headers that exist only
// in memory. A header that does not exist is an error wrapping
// store.ErrNotFound; any other error is a failed read and must not be taken
// for a missing header.
type HeaderSource interface {
	HeaderByHash(hash common.Hash) (*types.Header, error)
	HeaderByNumber(number uint64) (*types.Header, error)
}

// UncleSource is a HeaderSource that also serves the uncles of the blocks
// it knows: the importer reads the uncles of a block's last ancestors to
// verify the block's own (before the merge an uncle is included once).
// A block it does not know is an error wrapping store.ErrNotFound.
type UncleSource interface {
	Uncles(hash common.Hash, number uint64) ([]*types.Header, error)
}

// ViewHeaders serves canonical headers: from the Head's in-memory window
// when Head is set and the number is in it, else from View (which must be
// the Head's view, or one at least as new).
type ViewHeaders struct {
	Head *Head // optional
	View store.ChainReader
}

func (v ViewHeaders) HeaderByHash(hash common.Hash) (*types.Header, error) {
	n, err := v.View.NumberByHash(hash)
	if err != nil {
		return nil, err
	}
	return v.View.Header(n, hash)
}

// Uncles returns the uncles of stored block number with hash.
func (v ViewHeaders) Uncles(hash common.Hash, number uint64) ([]*types.Header, error) {
	body, err := v.View.Body(number, hash)
	if err != nil {
		return nil, err
	}
	return body.Uncles, nil
}

func (v ViewHeaders) HeaderByNumber(number uint64) (*types.Header, error) {
	if v.Head != nil {
		if h, _, ok := v.Head.Recent(number); ok {
			return h, nil
		}
	}
	hash, err := v.View.CanonicalHash(number)
	if err != nil {
		return nil, err
	}
	return v.View.Header(number, hash)
}

// chainContext adapts a HeaderSource to go-ethereum's core.ChainContext
// (consensus.ChainHeaderReader + Engine), whose lookups answer nil for
// "missing": a failed read is reported to fail (the StateDB's error, so the
// execution is not trusted) instead of passing for a missing header.
type chainContext struct {
	config  *params.ChainConfig
	engine  consensus.Engine
	headers HeaderSource
	current *types.Header
	fail    func(error)
}

func (c *chainContext) Config() *params.ChainConfig  { return c.config }
func (c *chainContext) Engine() consensus.Engine     { return c.engine }
func (c *chainContext) CurrentHeader() *types.Header { return c.current }
func (c *chainContext) GetHeader(hash common.Hash, number uint64) *types.Header {
	h := c.check(c.headers.HeaderByHash(hash))
	if h == nil || h.Number.Uint64() != number {
		return nil
	}
	return h
}
func (c *chainContext) GetHeaderByNumber(number uint64) *types.Header {
	return c.check(c.headers.HeaderByNumber(number))
}
func (c *chainContext) GetHeaderByHash(hash common.Hash) *types.Header {
	return c.check(c.headers.HeaderByHash(hash))
}

// GetBlock (consensus.ChainReader) returns the block's header and uncles,
// all that the engine's uncle verification reads (nil when the source
// serves no uncles).
func (c *chainContext) GetBlock(hash common.Hash, number uint64) *types.Block {
	h := c.GetHeader(hash, number)
	us, ok := c.headers.(UncleSource)
	if h == nil || !ok {
		return nil
	}
	uncles, err := us.Uncles(hash, number)
	if err != nil {
		c.check(nil, err)
		return nil
	}
	return types.NewBlockWithHeader(h).WithBody(types.Body{Uncles: uncles})
}

func (c *chainContext) check(h *types.Header, err error) *types.Header {
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) && c.fail != nil {
			c.fail(fmt.Errorf("%w: header lookup: %v", ErrStateRead, err))
		}
		return nil
	}
	return h
}

// GetTd is required by some engines' interfaces; tipnode does not track
// total difficulty.
func (c *chainContext) GetTd(common.Hash, uint64) *big.Int { return nil }
