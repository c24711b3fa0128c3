package chaingen

import (
	"fmt"
	"math"
)

// Config sizes the benchmark chain and its request files. Start from
// DefaultConfig (the size) or QuickConfig.
type Config struct {
	// Slots is the number of ERC-20 balance slots in the genesis alloc,
	// spread evenly over the tokens (Slots/Tokens holders, each with a
	// balance on every token). Default 1,000,000.
	Slots int
	// Tokens is the number of BenchToken contracts. Default 4.
	Tokens int
	// Blocks is the number of blocks generated on top of the genesis.
	// Default 300.
	Blocks int
	// TxsPerBlock is the number of transactions in every block. Default 200.
	TxsPerBlock int
	// Senders is the number of funded accounts that sign the transactions.
	// Default 64.
	Senders int
	// Requests is the number of requests written per workload file (batch
	// files hold Requests/10 batches). Default 5,000.
	Requests int
	// Seed seeds the request sampler. Default 1.
	Seed uint64
}

// DefaultConfig is the chain: 1M balance slots over 4 tokens and 300
// blocks of 200 transfers.
func DefaultConfig() Config {
	return Config{Slots: 1_000_000, Tokens: 4, Blocks: 300, TxsPerBlock: 200, Senders: 64, Requests: 5000, Seed: 1}
}

// QuickConfig is a small chain for quick iterations: 20k slots, 40 blocks of
// 100 transactions.
func QuickConfig() Config {
	c := DefaultConfig()
	c.Slots, c.Blocks, c.TxsPerBlock, c.Requests = 20_000, 40, 100, 2000
	return c
}

// HoldersPerToken is the number of genesis holders (Slots / Tokens).
func (c Config) HoldersPerToken() int { return c.Slots / c.Tokens }

// Validate checks every field.
func (c Config) Validate() error {
	switch {
	case c.Tokens < 1 || c.Tokens > 64:
		return fmt.Errorf("%w: tokens %d, want 1..64", ErrConfig, c.Tokens)
	case c.Slots < 100*c.Tokens || c.Slots > math.MaxInt32:
		return fmt.Errorf("%w: slots %d, want at least 100 per token", ErrConfig, c.Slots)
	case c.Blocks < 1 || c.Blocks > 100_000:
		return fmt.Errorf("%w: blocks %d, want 1..100000", ErrConfig, c.Blocks)
	case c.TxsPerBlock < 1 || c.TxsPerBlock > 1000:
		return fmt.Errorf("%w: txs per block %d, want 1..1000", ErrConfig, c.TxsPerBlock)
	case c.Senders < 1 || c.Senders > 10_000:
		return fmt.Errorf("%w: senders %d, want 1..10000", ErrConfig, c.Senders)
	case c.Requests < 10:
		return fmt.Errorf("%w: requests %d, want at least 10", ErrConfig, c.Requests)
	}
	return nil
}

// Name is a directory name that identifies the chain part of the Config
// (the request files depend on Requests and Seed too, see RequestsName).
func (c Config) Name() string {
	return fmt.Sprintf("chain-s%d-t%d-b%d-x%d-n%d", c.Slots, c.Tokens, c.Blocks, c.TxsPerBlock, c.Senders)
}

// RequestsName is a directory name for the request files of the Config.
func (c Config) RequestsName() string {
	return fmt.Sprintf("requests-r%d-seed%d", c.Requests, c.Seed)
}
