package remotestate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common/hexutil"
	gethrpc "github.com/ethereum/go-ethereum/rpc"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/op"
	"github.com/tipnode/tipnode/chain/op/preset"
)

// Chain is the chain config a fork runs: the upstream's (an OP chain's
// fork times and EIP-1559 constants), found by DetectChain or given.
type Chain struct {
	// Config is the chain config JSON as the store keeps it
	// (chain.Genesis.StoredConfig: go-ethereum's members and, on an OP
	// chain, the OP ones).
	Config json.RawMessage
	// Genesis is Config parsed (Config and OP set, no block).
	Genesis *chain.Genesis
	// From says where the config came from ("tipnode_genesis", "preset
	// op-mainnet", "debug_chainConfig", or what the caller names).
	From string
}

// OP reports an OP Stack chain config.
func (c *Chain) OP() bool { return c.Genesis.OP != nil }

// NewChain parses a chain config JSON (a genesis JSON's "config", or a
// stored one) into a Chain from the source named by from.
func NewChain(raw json.RawMessage, from string) (*Chain, error) {
	g, err := chain.ParseChainConfig(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	stored, err := g.ConfigJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	return &Chain{Config: stored, Genesis: g, From: from}, nil
}

// WithChainID returns c with chain id id (dev --fork --chainid).
func (c *Chain) WithChainID(id *big.Int) (*Chain, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(c.Config, &m); err != nil {
		return nil, err
	}
	m["chainId"] = json.RawMessage(id.String())
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return NewChain(raw, c.From)
}

// ChainID asks the upstream for its chain id (eth_chainId).
func (s *Source) ChainID() (*big.Int, error) {
	var id hexutil.Big
	if err := s.batch("the chain id", []rpcElem{{Method: "eth_chainId", Result: &id}}); err != nil {
		return nil, err
	}
	return id.ToInt(), nil
}

// BlockNumber asks the upstream for its latest block number.
func (s *Source) BlockNumber() (uint64, error) {
	var n hexutil.Uint64
	if err := s.batch("the latest block number", []rpcElem{{Method: "eth_blockNumber", Result: &n}}); err != nil {
		return 0, err
	}
	return uint64(n), nil
}

// HasL1Block reports whether the upstream has code at the OP L1Block
// predeploy (0x4200…0015) at block: an OP Stack chain.
func (s *Source) HasL1Block(block uint64) (bool, error) {
	acc, code, err := s.Account(block, op.L1BlockAddr)
	return acc != nil && len(code) > 0, err
}

// DetectChain finds the upstream's chain config, in this order: the
// genesis spec a tipnode upstream serves (tipnode_genesis), the OP chain
// preset of its chain id (chain/op/preset), the chain config op-geth and
// geth serve (debug_chainConfig). It returns nil, with what was tried and
// why each failed, when none answers; an answer that does not parse is an
// error.
func (s *Source) DetectChain(ctx context.Context, chainID *big.Int) (*Chain, []string, error) {
	var tried []string
	// tipnode_genesis: the spec a tipnode was initialised with.
	var spec json.RawMessage
	if err := s.call(ctx, &spec, "tipnode_genesis"); err == nil && len(spec) > 0 && spec[0] == '{' {
		var raw struct {
			Config json.RawMessage `json:"config"`
		}
		if err := json.Unmarshal(spec, &raw); err != nil || len(raw.Config) == 0 {
			return nil, tried, fmt.Errorf("%w: upstream %s: tipnode_genesis has no \"config\"", ErrFetch, s.cfg.URL)
		}
		c, err := s.upstreamChain(raw.Config, "tipnode_genesis", chainID)
		return c, tried, err
	} else {
		tried = append(tried, "tipnode_genesis ("+why(err, "no genesis spec")+")")
	}
	// The preset of the chain id.
	if chainID.IsUint64() {
		p, err := preset.ByChainID(chainID.Uint64())
		if err != nil {
			return nil, tried, err
		}
		if p != nil {
			g, err := p.Genesis()
			if err != nil {
				return nil, tried, err
			}
			c, err := NewChain(g.RawConfig(), "preset "+p.Name)
			return c, tried, err
		}
	}
	tried = append(tried, fmt.Sprintf("a chain preset of chain id %s (none: the presets are %s)", chainID, strings.Join(preset.Names(), ", ")))
	// debug_chainConfig (geth, op-geth).
	var raw json.RawMessage
	if err := s.call(ctx, &raw, "debug_chainConfig"); err == nil && len(raw) > 0 && raw[0] == '{' {
		c, err := s.upstreamChain(raw, "debug_chainConfig", chainID)
		return c, tried, err
	} else {
		tried = append(tried, "debug_chainConfig ("+why(err, "no chain config")+")")
	}
	return nil, tried, nil
}

// upstreamChain reads a chain config the upstream served (source names the
// method) and refuses it when its chain id is not the upstream's.
func (s *Source) upstreamChain(raw json.RawMessage, source string, chainID *big.Int) (*Chain, error) {
	c, err := NewChain(raw, source)
	if err != nil {
		return nil, fmt.Errorf("%w: upstream %s: %w", ErrFetch, s.cfg.URL, err)
	}
	if err := sameChainID(c, chainID); err != nil {
		return nil, err
	}
	return c, nil
}

// sameChainID refuses a config whose chain id is not the upstream's.
func sameChainID(c *Chain, id *big.Int) error {
	if got := c.Genesis.Config.ChainID; got.Cmp(id) != 0 {
		return fmt.Errorf("%w: the chain config from %s says chain id %s, the upstream answers eth_chainId %s", ErrChain, c.From, got, id)
	}
	return nil
}

func why(err error, otherwise string) string {
	var rerr gethrpc.Error
	switch {
	case errors.As(err, &rerr):
		return rerr.Error()
	case err != nil:
		return err.Error()
	}
	return otherwise
}

// call makes one JSON-RPC call under the request timeout and the
// in-flight bound.
func (s *Source) call(ctx context.Context, result any, method string, args ...any) error {
	s.sem <- struct{}{}
	defer func() { <-s.sem }()
	s.requests.Add(1)
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	return s.c.CallContext(ctx, result, method, args...)
}
