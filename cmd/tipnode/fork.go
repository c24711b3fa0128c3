package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/devnet"
	"github.com/tipnode/tipnode/chain/op"
	"github.com/tipnode/tipnode/chain/op/preset"
	"github.com/tipnode/tipnode/chain/remotestate"
	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// devBalance is what every dev account holds on a new dev chain or fork.
var devBalance = new(uint256.Int).Mul(uint256.NewInt(10_000), uint256.NewInt(params.Ether))

// forkOptions are `tipnode dev --fork`'s choices.
type forkOptions struct {
	// Target is --fork's URL[@BLOCK] ("" on a restart: the recorded one).
	Target string
	// ChainID overrides the upstream's chain id (--chainid; nil: the
	// upstream's).
	ChainID *big.Int
	// OP (--op) requires an OP Stack upstream.
	OP bool
	// Chain (--chain NAME|FILE) is the upstream's OP chain config: a
	// preset's name, or a genesis or chain config JSON file.
	Chain string
}

// forkChain returns the chain of a forked dev data directory and the
// upstream source it reads missing state from (set on db): a new fork of
// fo.Target (URL[@BLOCK]) when the store is empty, else the fork it holds
// (the target, when given, may name another URL of the same upstream; its
// block must be the fork block). A new fork of an OP Stack upstream runs
// the upstream's chain config (forkRules); any other runs the dev chain's
// L1 rules. Close the source after the node.
func forkChain(ctx context.Context, db *store.DB, fo forkOptions, accs []devnet.Account, dataDir string, log zerolog.Logger) (*chain.Genesis, *remotestate.Source, error) {
	var (
		url      string
		block    uint64
		hasBlock bool
		err      error
	)
	if fo.Target != "" {
		if url, block, hasBlock, err = remotestate.ParseTarget(fo.Target); err != nil {
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
	fail := func(err error) (*chain.Genesis, *remotestate.Source, error) {
		src.Close()
		return nil, nil, err
	}
	if !existing {
		if err := os.RemoveAll(remotestate.TempDir(dataDir)); err != nil {
			return fail(err)
		}
		if !hasBlock {
			if block, err = src.BlockNumber(); err != nil {
				return fail(fmt.Errorf("--fork %s: %w", fo.Target, err))
			}
			hasBlock = true
		}
		rules, err := forkRules(ctx, src, block, fo)
		if err != nil {
			return fail(fmt.Errorf("--fork %s: %w", fo.Target, err))
		}
		addrs := make([]common.Address, len(accs))
		for i, acc := range accs {
			addrs[i] = acc.Address
		}
		_, err = remotestate.Init(ctx, db, remotestate.InitConfig{
			Source: src, Block: block, HasBlock: hasBlock, ChainID: fo.ChainID, Chain: rules,
			Rules: devnet.ChainConfig, Accounts: addrs, Balance: devBalance, TempDir: remotestate.TempDir(dataDir),
		}, log)
		if err != nil {
			return fail(fmt.Errorf("--fork %s: %w", fo.Target, err))
		}
	}
	if err := db.SetForkSource(src); err != nil {
		return fail(err)
	}
	g, err := loadChain(db, dataDir)
	if err != nil {
		return fail(err)
	}
	if fo.ChainID != nil && g.Config.ChainID.Cmp(fo.ChainID) != 0 {
		return fail(fmt.Errorf("the data directory holds a fork with chain id %s, not %s: pass --chainid %s or use another --datadir", g.Config.ChainID, fo.ChainID, g.Config.ChainID))
	}
	if fo.OP && g.OP == nil {
		return fail(fmt.Errorf("--op: the data directory %s holds a fork of %s with L1 rules, not an OP Stack one: use another --datadir", dataDir, a.Fork))
	}
	if fo.Chain != "" && existing {
		c, err := chainFlag(fo.Chain)
		if err != nil {
			return fail(err)
		}
		if id := c.Genesis.Config.ChainID; fo.ChainID == nil && id.Cmp(g.Config.ChainID) != 0 {
			return fail(fmt.Errorf("%w: --chain %s is chain %s, the data directory %s holds a fork of chain %s: use another --datadir", remotestate.ErrChain, fo.Chain, id, dataDir, g.Config.ChainID))
		}
	}
	return g, src, nil
}

// forkRules is the chain config a new fork of src at block runs: the
// upstream's OP chain config (--chain, else found by DetectChain), or nil
// for an L1 upstream (the dev chain's rules). An upstream without code at
// the L1Block predeploy at block is an L1 chain (nothing more is asked);
// --op on it, an OP Stack upstream whose config is not found and a
// --chain of another chain are refused, naming what was tried or what
// differs.
func forkRules(ctx context.Context, src *remotestate.Source, block uint64, fo forkOptions) (*remotestate.Chain, error) {
	id, err := src.ChainID()
	if err != nil {
		return nil, err
	}
	isOP, err := src.HasL1Block(block)
	if err != nil {
		return nil, err
	}
	notOP := func(why string) error {
		return fmt.Errorf("%w: the upstream %s (chain id %s) is not an OP Stack chain: %s", remotestate.ErrChain, src.URL(), id, why)
	}
	noL1Block := fmt.Sprintf("no code at the L1Block predeploy %s at block %d", op.L1BlockAddr, block)
	var c *remotestate.Chain
	switch {
	case fo.Chain != "":
		if c, err = chainFlag(fo.Chain); err != nil {
			return nil, err
		}
		if got := c.Genesis.Config.ChainID; got.Cmp(id) != 0 {
			return nil, fmt.Errorf("%w: --chain %s is chain %s, the upstream %s is chain %s", remotestate.ErrChain, fo.Chain, got, src.URL(), id)
		}
		if !isOP {
			return nil, fmt.Errorf("--chain %s: %w", fo.Chain, notOP(noL1Block))
		}
	case !isOP && fo.OP:
		return nil, fmt.Errorf("--op: %w", notOP(noL1Block))
	case !isOP:
		return nil, nil // an L1 upstream: the dev chain's rules
	default:
		var tried []string
		if c, tried, err = src.DetectChain(ctx, id); err != nil {
			return nil, err
		}
		if c == nil {
			return nil, fmt.Errorf("%w: the upstream %s (chain id %s) is an OP Stack chain (code at the L1Block predeploy %s) and its chain config was not found; tried %s. "+
				"Pass --chain NAME (a preset: %s) or --chain FILE (the chain's genesis or chain config JSON, e.g. geth --op-network NAME dumpgenesis)",
				remotestate.ErrChain, src.URL(), id, op.L1BlockAddr, strings.Join(tried, "; "), strings.Join(preset.Names(), ", "))
		}
		if !c.OP() {
			if fo.OP {
				return nil, fmt.Errorf("--op: %w", notOP(fmt.Sprintf("its chain config (%s) has no \"optimism\" part", c.From)))
			}
			return nil, nil // an L1 chain config: the dev chain's rules
		}
	}
	if bedrock := c.Genesis.OP.BedrockBlock; bedrock.Cmp(new(big.Int).SetUint64(block)) > 0 {
		return nil, fmt.Errorf("%w: block %d is before the chain's Bedrock block %s: fork at a later block", remotestate.ErrChain, block, bedrock)
	}
	if fo.ChainID != nil {
		return c.WithChainID(fo.ChainID)
	}
	return c, nil
}

// chainFlag resolves --chain NAME|FILE: a file's genesis JSON ("config"
// member) or bare chain config, else the preset of that name.
func chainFlag(arg string) (*remotestate.Chain, error) {
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		raw, err := os.ReadFile(arg)
		if err != nil {
			return nil, fmt.Errorf("--chain: %w", err)
		}
		var spec struct {
			Config json.RawMessage `json:"config"`
		}
		if err := json.Unmarshal(raw, &spec); err != nil {
			return nil, fmt.Errorf("--chain %s: not JSON: %w", arg, err)
		}
		if len(spec.Config) > 0 {
			raw = spec.Config
		}
		c, err := remotestate.NewChain(raw, "--chain "+arg)
		if err != nil {
			return nil, err
		}
		if !c.OP() {
			return nil, fmt.Errorf("%w: --chain %s: the chain config has no \"optimism\" part: not an OP Stack chain", remotestate.ErrChain, arg)
		}
		return c, nil
	}
	p, err := preset.Lookup(arg)
	if err != nil {
		return nil, fmt.Errorf("--chain: %w (or give a genesis or chain config JSON file)", err)
	}
	g, err := p.Genesis()
	if err != nil {
		return nil, err
	}
	return remotestate.NewChain(g.RawConfig(), "preset "+p.Name)
}

// forkHead is what an OP fork's sequencer continues from its head block
// (forkL1).
type forkHead struct {
	// L1 is the head's L1-info content.
	L1 *op.L1Info
	// EIP1559 are the base fee parameters the head's extraData carries
	// for its child (from Holocene; nil before), MinBaseFee Jovian's
	// minimum base fee (nil before Jovian).
	EIP1559    *op.EIP1559Params
	MinBaseFee *uint64
}

// forkL1 reads what an OP fork's sequencer continues from its head block:
// the head's L1-info content (its L1-info deposit; the L1Block
// predeploy's storage when the body is not kept, read through the fork's
// upstream) and the base fee parameters of its extraData.
func forkL1(db *store.DB, g *chain.Genesis) (forkHead, error) {
	var fh forkHead
	view, err := db.View()
	if err != nil {
		return fh, err
	}
	defer view.Close()
	n, err := view.Tag(store.TagLatest)
	if err != nil {
		return fh, err
	}
	hash, err := view.CanonicalHash(n)
	if err != nil {
		return fh, err
	}
	head, err := view.Header(n, hash)
	if err != nil {
		return fh, err
	}
	if body, err := view.Body(n, hash); err == nil && len(body.Transactions) > 0 {
		if d, ok := body.Transactions[0].(*chaintypes.Deposit); ok && d.From() == op.L1InfoDepositor {
			fh.L1, _ = op.ParseL1Info(d.Data())
		}
	}
	if fh.L1 == nil {
		st, err := view.StateAt(n)
		if err != nil {
			return fh, err
		}
		var readErr error
		fh.L1 = op.ReadL1Info(func(slot common.Hash) common.Hash {
			v, err := st.Storage(op.L1BlockAddr, slot)
			readErr = errors.Join(readErr, err)
			return v
		})
		if readErr != nil {
			return fh, fmt.Errorf("the L1Block predeploy at block %d: %w", n, readErr)
		}
	}
	if jovian := g.OP.IsJovian(head.Time); jovian || g.OP.IsHolocene(head.Time) {
		if p, err := op.DecodeExtraData(head.Extra, jovian); err == nil {
			fh.EIP1559 = &p
			if jovian {
				fh.MinBaseFee = &p.MinBaseFee
			}
		}
	}
	return fh, nil
}

// opL1Flags are the --op.* flags whose values an OP fork takes from its
// head block unless given.
var opL1Flags = []string{"op.l1.basefee", "op.l1.blobbasefee", "op.l1.basefeescalar", "op.l1.blobbasefeescalar",
	"op.operatorfee.scalar", "op.operatorfee.constant", "op.dafootprintscalar", "op.minbasefee"}

// continueL1 sets the --op.* values not given (set holds the flags given)
// and the L1-info batcher hash and EIP-1559 parameters from an OP fork's
// head block (forkL1), so the fork carries on the upstream's L1 and base
// fee rules.
func (f *NodeFlags) continueL1(fh forkHead, set map[string]bool) {
	l1 := op.DefaultSyntheticL1().Continuing(fh.L1)
	for _, name := range opL1Flags {
		if set[name] {
			continue
		}
		switch name {
		case "op.l1.basefee":
			f.OPL1BaseFee = l1.BaseFee.String()
		case "op.l1.blobbasefee":
			f.OPL1BlobBaseFee = l1.BlobBaseFee.String()
		case "op.l1.basefeescalar":
			f.OPBaseFeeScalar = uint64(l1.BaseFeeScalar)
		case "op.l1.blobbasefeescalar":
			f.OPBlobBaseFeeScalar = uint64(l1.BlobBaseFeeScalar)
		case "op.operatorfee.scalar":
			f.OPOperatorFeeScalar = uint64(l1.OperatorFeeScalar)
		case "op.operatorfee.constant":
			f.OPOperatorFeeConst = l1.OperatorFeeConstant
		case "op.dafootprintscalar":
			f.OPDAFootprintScalar = uint64(l1.DAFootprintGasScalar)
		case "op.minbasefee":
			if fh.MinBaseFee != nil {
				f.OPMinBaseFee = *fh.MinBaseFee
			}
		}
	}
	f.opBatcherHash = fh.L1.BatcherHash
	if fh.EIP1559 != nil {
		f.opEIP1559 = [2]uint32{fh.EIP1559.Denominator, fh.EIP1559.Elasticity}
	}
}
