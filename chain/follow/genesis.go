package follow

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"time"

	"github.com/tipnode/tipnode/chain"
)

// FetchGenesis asks a tipnode upstream for its genesis spec (the
// tipnode_genesis method every tipnode serves) and checks it against the
// upstream's chain: the spec must parse, its block 0 must be the
// upstream's block 0 and its chain id the upstream's. The caller writes it
// with chain.InitGenesis (tipnode init --genesis-from).
func FetchGenesis(ctx context.Context, url string, timeout time.Duration) (*chain.Genesis, error) {
	up, err := dialURL(ctx, url, timeout)
	if err != nil {
		return nil, err
	}
	defer up.close()
	var raw json.RawMessage
	if err := up.call(ctx, &raw, "tipnode_genesis"); err != nil {
		return nil, fmt.Errorf("%w (is the upstream a tipnode? with go-ethereum, use its genesis file)", err)
	}
	g, err := decodeGenesis(raw)
	if err != nil {
		return nil, err
	}
	id, err := up.chainID(ctx)
	if err != nil {
		return nil, err
	}
	if id.Cmp(g.Config.ChainID) != 0 {
		return nil, fmt.Errorf("%w: the genesis spec says chain id %s, the upstream answers %s", ErrChainIDMismatch, g.Config.ChainID, id)
	}
	block0, err := up.header(ctx, "0x0")
	if err != nil {
		return nil, err
	}
	if block0.Hash() != g.Block.Hash() {
		return nil, fmt.Errorf("%w: the genesis spec gives block 0 %s, the upstream's block 0 is %s", ErrGenesisMismatch, g.Block.Hash().Hex(), block0.Hash().Hex())
	}
	return g, nil
}

// dialURL connects to the upstream at url for a one-off fetch (no
// metrics) with the request timeout given.
func dialURL(ctx context.Context, url string, timeout time.Duration) (*upstream, error) {
	cfg := Config{URL: url, RequestTimeout: timeout}.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return dial(ctx, cfg, nil)
}

// FetchChainID asks an upstream (any JSON-RPC node) for its chain id
// (eth_chainId).
func FetchChainID(ctx context.Context, url string, timeout time.Duration) (*big.Int, error) {
	up, err := dialURL(ctx, url, timeout)
	if err != nil {
		return nil, err
	}
	defer up.close()
	return up.chainID(ctx)
}

// decodeGenesis decodes a tipnode_genesis answer: a go-ethereum genesis
// JSON object.
func decodeGenesis(raw json.RawMessage) (*chain.Genesis, error) {
	if isNull(raw) || bytes.TrimSpace(raw)[0] != '{' {
		return nil, fmt.Errorf("%w: tipnode_genesis did not answer a JSON object", ErrBadResponse)
	}
	g, err := chain.ParseGenesis(bytes.Clone(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: tipnode_genesis: %w", ErrBadResponse, err)
	}
	return g, nil
}
