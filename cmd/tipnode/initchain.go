package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain/follow"
	"github.com/tipnode/tipnode/chain/op/preset"
	"github.com/tipnode/tipnode/store"
)

// lookupPreset resolves `init --chain NAME` and refuses, before anything
// is written, a data directory that already holds another chain.
func lookupPreset(name string, sf StoreFlags) (*preset.Preset, error) {
	p, err := preset.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("--chain: %w", err)
	}
	if sf.DataDir == "" {
		return p, nil
	}
	db, err := store.Open(sf.readOnlyConfig(), zerolog.Nop())
	if errors.Is(err, store.ErrNoStore) {
		return p, nil
	}
	if err != nil {
		return nil, err
	}
	defer db.Close()
	g, err := loadChain(db, sf.DataDir)
	if err != nil {
		// A store without a chain (an init that failed before its
		// commit): nothing to compare.
		return p, nil
	}
	what := fmt.Sprintf("the data directory %s", sf.DataDir)
	if err := p.CheckChainID(what, g.Config.ChainID.Uint64()); err != nil {
		return nil, fmt.Errorf("%w: use another --datadir", err)
	}
	if err := p.CheckGenesisHash(what, g.Block.Hash()); err != nil {
		return nil, fmt.Errorf("%w: use another --datadir", err)
	}
	return p, nil
}

// errPresetNeedsSource is the answer to `init --chain NAME` without a
// source of state: what to add.
func errPresetNeedsSource(p *preset.Preset) error {
	recent := fmt.Sprintf("start at a recent block: tipnode init --chain %s --datadir DIR --state DUMP --state.block N "+
		"--state.from URL (a state dump at block N, URL the JSON-RPC of a node of the chain, e.g. op-geth or op-reth), "+
		"or tipnode init --chain %s --datadir DIR --snapshot-from URL (a tipnode of the chain running with --snapshot.serve)", p.Name, p.Name)
	if !p.StartsAtGenesis() {
		return fmt.Errorf("--chain %s: %s's history starts before Bedrock (block %d, %s): its genesis cannot be executed; %s",
			p.Name, p.Title, p.Start.Number, p.Start.Hash.Hex(), recent)
	}
	return fmt.Errorf("--chain %s gives %s's chain config and genesis hash, not its genesis state: add --genesis FILE "+
		"(op-geth: geth --op-network %s dumpgenesis > FILE; checked against the preset), or %s", p.Name, p.Title, p.OPGethNetwork, recent)
}

// checkUpstreamChain refuses an upstream (--snapshot-from) of another
// chain than the preset's, before anything is written.
func checkUpstreamChain(ctx context.Context, p *preset.Preset, flag, url string) error {
	id, err := follow.FetchChainID(ctx, url, 30*time.Second)
	if err != nil {
		return fmt.Errorf("%s %s: %w", flag, url, err)
	}
	return p.CheckChainID(fmt.Sprintf("%s %s", flag, url), id.Uint64())
}
