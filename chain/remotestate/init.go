package remotestate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain/follow"
	"github.com/tipnode/tipnode/store"
)

// InitConfig describes a new fork.
type InitConfig struct {
	// Source is the upstream (its URL is recorded in the store).
	Source *Source
	// Block is the fork block; with HasBlock false, the upstream's latest.
	Block    uint64
	HasBlock bool
	// ChainID overrides the upstream's chain id (nil: the upstream's).
	ChainID *big.Int
	// Rules returns the chain config of the dev chain for a chain id
	// (an L1 fork: the dev chain's rules). Unused when Chain is set.
	Rules func(chainID *big.Int) *params.ChainConfig
	// Chain is the chain config the fork runs (an OP fork: the
	// upstream's, DetectChain), its chain id the fork's (ChainID is then
	// unused); nil: Rules.
	Chain *Chain
	// Accounts are funded with Balance on top of their upstream state
	// (nonce and code kept).
	Accounts []common.Address
	Balance  *uint256.Int
	// TempDir is a directory for the store import's files (created,
	// removed by Init).
	TempDir string
}

// Result describes the fork Init made.
type Result struct {
	Block   uint64
	Hash    common.Hash
	ChainID *big.Int
}

// Init makes db (an empty store) a fork of c.Source at the fork block: its
// anchor headers, the dev accounts funded, the upstream recorded.
func Init(ctx context.Context, db *store.DB, c InitConfig, log zerolog.Logger) (Result, error) {
	src := c.Source
	up := src.cfg.URL
	if !c.HasBlock {
		var n hexutil.Uint64
		if err := src.batch("the latest block number", []rpcElem{{Method: "eth_blockNumber", Result: &n}}); err != nil {
			return Result{}, err
		}
		c.Block = uint64(n)
	}
	a, err := follow.FetchAnchor(ctx, up, c.Block, src.cfg.RequestTimeout)
	if err != nil {
		return Result{}, fmt.Errorf("fork of %s at block %d: %w", up, c.Block, err)
	}
	chainID := a.ChainID
	if c.ChainID != nil {
		chainID = c.ChainID
	}
	var cfg *params.ChainConfig
	var config []byte
	if c.Chain != nil {
		cfg, config = c.Chain.Genesis.Config, c.Chain.Config
		chainID = cfg.ChainID
	} else {
		cfg = c.Rules(chainID)
		if config, err = json.Marshal(cfg); err != nil {
			return Result{}, err
		}
	}
	// The spec tipnode_genesis answers: the fork's chain config (with its
	// OP members) over block 0's fields.
	spec, err := forkSpec(config, &core.Genesis{Config: cfg, Difficulty: new(big.Int), GasLimit: a.Genesis.GasLimit, Timestamp: a.Genesis.Time})
	if err != nil {
		return Result{}, err
	}
	if err := os.MkdirAll(c.TempDir, 0o755); err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(c.TempDir)
	si, err := db.NewStateImport(c.TempDir, c.Block, 16<<20)
	if err != nil {
		return Result{}, err
	}
	defer si.Close()
	for _, addr := range c.Accounts {
		acc, code, err := src.Account(c.Block, addr)
		if err != nil {
			return Result{}, err
		}
		if acc == nil {
			acc = &store.Account{CodeHash: emptyCodeHash}
		}
		acc.Balance = new(uint256.Int).Set(c.Balance)
		if err := errors.Join(si.Account(addr, acc), si.Code(acc.CodeHash, code)); err != nil {
			return Result{}, err
		}
	}
	body, receipts := a.Body, a.Receipts
	if body == nil {
		log.Warn().Str("why", a.NoHistory).Uint64("block", c.Block).Msg("fork: the fork block's body is not kept")
	}
	start := time.Now()
	if _, err := si.Commit(ctx, &store.AnchorWrite{
		Genesis: a.Genesis, Headers: a.Headers, Body: body, Receipts: receipts,
		Spec: spec, Config: config, Fork: up,
	}); err != nil {
		return Result{}, err
	}
	top := a.Headers[len(a.Headers)-1]
	rules := "the dev chain's L1 rules"
	if c.Chain != nil {
		rules = c.Chain.From
	}
	log.Info().Str("chainConfig", rules).Str("upstream", up).Uint64("block", c.Block).Str("hash", top.Hash().Hex()).
		Str("chainId", chainID.String()).Bool("op", c.Chain != nil && c.Chain.OP()).Int("devAccounts", len(c.Accounts)).
		Str("elapsed", time.Since(start).Round(time.Millisecond).String()).Msg("fork created")
	return Result{Block: c.Block, Hash: top.Hash(), ChainID: chainID}, nil
}

// forkSpec is g's genesis JSON with config as its "config" member.
func forkSpec(config []byte, g *core.Genesis) ([]byte, error) {
	enc, err := json.Marshal(g)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(enc, &m); err != nil {
		return nil, err
	}
	m["config"] = config
	return json.Marshal(m)
}

// TempDir is the directory Init works in, inside a data directory.
func TempDir(dataDir string) string { return filepath.Join(dataDir, "fork-init.tmp") }
