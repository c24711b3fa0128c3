package main

import (
	"context"
	"fmt"
	"math/big"
	"os"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/devnet"
	"github.com/tipnode/tipnode/chain/remotestate"
	"github.com/tipnode/tipnode/store"
)

// devBalance is what every dev account holds on a new dev chain or fork.
var devBalance = new(uint256.Int).Mul(uint256.NewInt(10_000), uint256.NewInt(params.Ether))

// forkChain returns the chain of a forked dev data directory and the
// upstream source it reads missing state from (set on db): a new fork of
// target (URL[@BLOCK]) when the store is empty, else the fork it holds
// (target, when given, may name another URL of the same upstream; its
// block must be the fork block). chainID overrides the upstream's chain id
// (nil: the upstream's). Close the source after the node.
func forkChain(ctx context.Context, db *store.DB, target string, chainID *big.Int, accs []devnet.Account, dataDir string, log zerolog.Logger) (*chain.Genesis, *remotestate.Source, error) {
	var (
		url      string
		block    uint64
		hasBlock bool
		err      error
	)
	if target != "" {
		if url, block, hasBlock, err = remotestate.ParseTarget(target); err != nil {
			return nil, nil, err
		}
	}
	_, latestErr := db.Latest()
	existing := latestErr == nil
	a := db.Anchor()
	switch {
	case existing && a.Fork == "":
		return nil, nil, fmt.Errorf("%w: the data directory %s holds a dev chain that is not a fork: use another --datadir for --fork", remotestate.ErrNotFork, dataDir)
	case existing && hasBlock && block != a.State:
		return nil, nil, fmt.Errorf("%w: the data directory %s holds a fork at block %d, not %d: use another --datadir", remotestate.ErrNotFork, dataDir, a.State, block)
	case existing && url == "":
		url = a.Fork
	case existing && url != a.Fork:
		log.Warn().Str("recorded", a.Fork).Str("given", url).Msg("fork: reading the upstream's state through another URL than the fork was made with")
	}
	src, err := remotestate.Dial(ctx, remotestate.Config{URL: url}, log)
	if err != nil {
		return nil, nil, fmt.Errorf("--fork: %w", err)
	}
	if !existing {
		if err := os.RemoveAll(remotestate.TempDir(dataDir)); err != nil {
			src.Close()
			return nil, nil, err
		}
		addrs := make([]common.Address, len(accs))
		for i, acc := range accs {
			addrs[i] = acc.Address
		}
		_, err = remotestate.Init(ctx, db, remotestate.InitConfig{
			Source: src, Block: block, HasBlock: hasBlock, ChainID: chainID,
			Rules: devnet.ChainConfig, Accounts: addrs, Balance: devBalance, TempDir: remotestate.TempDir(dataDir),
		}, log)
		if err != nil {
			src.Close()
			return nil, nil, fmt.Errorf("--fork %s: %w", target, err)
		}
	}
	if err := db.SetForkSource(src); err != nil {
		src.Close()
		return nil, nil, err
	}
	g, err := loadChain(db, dataDir)
	if err != nil {
		src.Close()
		return nil, nil, err
	}
	if chainID != nil && g.Config.ChainID.Cmp(chainID) != 0 {
		src.Close()
		return nil, nil, fmt.Errorf("the data directory holds a fork with chain id %s, not %s: pass --chainid %s or use another --datadir", g.Config.ChainID, chainID, g.Config.ChainID)
	}
	return g, src, nil
}
