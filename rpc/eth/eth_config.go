package eth

// eth_config (EIP-7910) and eth_capabilities (execution-apis PR 755).

import (
	"context"

	"encoding/binary"
	"hash/crc32"
	"math/big"
	"reflect"
	"slices"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/forkid"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/chain/op"

	"github.com/tipnode/tipnode/rpc"
)

// registerConfig installs eth_config and eth_capabilities.
func (a *API) registerConfig(s *rpc.Server) {
	s.Register("eth_config", a.ethConfig)
	s.Register("eth_capabilities", a.ethCapabilities)
}

// forkConfig describes one fork in eth_config.
type forkConfig struct {
	ActivationTime  uint64                    `json:"activationTime"`
	BlobSchedule    *params.BlobConfig        `json:"blobSchedule"`
	ChainID         *hexutil.Big              `json:"chainId"`
	ForkID          hexutil.Bytes             `json:"forkId"`
	Precompiles     map[string]common.Address `json:"precompiles"`
	SystemContracts map[string]common.Address `json:"systemContracts"`
}

type configResult struct {
	Current *forkConfig `json:"current"`
	Next    *forkConfig `json:"next"`
	Last    *forkConfig `json:"last"`
}

// ethConfig answers the fork in force at the head's timestamp, the next
// scheduled timestamp fork and the last one (both null when nothing is
// scheduled after the current fork).
func (a *API) ethConfig(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(0); err != nil {
		return nil, err
	}
	head, err := a.headHeader(ctx)
	if err != nil {
		return nil, err
	}
	c := a.genesis.Config
	genesis := a.genesis.Block
	describe := func(ts *uint64) *forkConfig {
		if ts == nil {
			return nil
		}
		t := *ts
		rules := c.Rules(c.LondonBlock, true, t)
		pre := make(map[string]common.Address)
		for addr, pc := range a.exec.Precompiles(rules, t) {
			pre[pc.Name()] = addr
		}
		activation := t
		if genesis.Time() >= t {
			activation = 0
		}
		var id [4]byte
		blobs := c.BlobConfig(c.LatestFork(t))
		if opc := a.genesis.OP; opc != nil {
			// op-geth's answer: its fork id counts the OP forks too, and
			// an OP chain has no blob schedule (null).
			id, blobs = opForkID(c, opc, genesis, t), nil
		} else {
			id = forkid.NewID(c, genesis, ^uint64(0), t).Hash
		}
		return &forkConfig{
			ActivationTime:  activation,
			BlobSchedule:    blobs,
			ChainID:         (*hexutil.Big)(c.ChainID),
			ForkID:          id[:],
			Precompiles:     pre,
			SystemContracts: c.ActiveSystemContracts(t),
		}
	}
	current := c.LatestFork(head.Time)
	last := c.LatestFork(^uint64(0))
	var next *uint64
	for f := current + 1; f <= last; f++ {
		if ts := c.Timestamp(f); ts != nil {
			next = ts
			break
		}
	}
	res := configResult{Current: describe(c.Timestamp(current)), Next: describe(next)}
	if res.Next != nil {
		res.Last = describe(c.Timestamp(last))
	}
	return res, nil
}

// opForkID is the EIP-2124 fork hash of an OP chain at time t with every
// block fork passed, as op-geth computes it for eth_config: the CRC32 of
// the genesis hash updated with each fork block (block 0 excepted) and
// then each fork time after the genesis time and at most t, in order,
// without repeats; the forks are those of the L1 chain config (every
// "...Block" and "...Time" field, as go-ethereum gathers them) and the OP
// forks op-geth's chain config adds (op.Config.ForkIDForks).
func opForkID(c *params.ChainConfig, opc *op.Config, genesis *types.Block, t uint64) [4]byte {
	blocks, times := opc.ForkIDForks()
	v := reflect.ValueOf(c).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		switch {
		case strings.HasSuffix(f.Name, "Block") && f.Type == reflect.TypeFor[*big.Int]():
			if b := v.Field(i).Interface().(*big.Int); b != nil {
				blocks = append(blocks, b.Uint64())
			}
		case strings.HasSuffix(f.Name, "Time") && f.Type == reflect.TypeFor[*uint64]():
			if ts := v.Field(i).Interface().(*uint64); ts != nil {
				times = append(times, *ts)
			}
		}
	}
	slices.Sort(blocks)
	slices.Sort(times)
	blocks, times = slices.Compact(blocks), slices.Compact(times)
	sum := crc32.ChecksumIEEE(genesis.Hash().Bytes())
	var be [8]byte
	for _, b := range blocks {
		if b == 0 {
			continue
		}
		binary.BigEndian.PutUint64(be[:], b)
		sum = crc32.Update(sum, crc32.IEEETable, be[:])
	}
	for _, ts := range times {
		if ts <= genesis.Time() || ts > t {
			continue
		}
		binary.BigEndian.PutUint64(be[:], ts)
		sum = crc32.Update(sum, crc32.IEEETable, be[:])
	}
	var id [4]byte
	binary.BigEndian.PutUint32(id[:], sum)
	return id
}

// Capabilities of eth_capabilities.
type capabilityHead struct {
	Number hexutil.Uint64 `json:"number"`
	Hash   common.Hash    `json:"hash"`
}

type capabilityResource struct {
	Disabled    bool            `json:"disabled"`
	OldestBlock *hexutil.Uint64 `json:"oldestBlock,omitempty"`
}

type capabilitiesResult struct {
	Head        capabilityHead     `json:"head"`
	State       capabilityResource `json:"state"`
	Tx          capabilityResource `json:"tx"`
	Logs        capabilityResource `json:"logs"`
	Receipts    capabilityResource `json:"receipts"`
	Blocks      capabilityResource `json:"blocks"`
	StateProofs capabilityResource `json:"stateproofs"`
}

// ethCapabilities: tipnode keeps every block, receipt, transaction lookup
// and state version from genesis on and never prunes (so no deleteStrategy);
// it keeps flat state without tries, so state proofs are disabled.
func (a *API) ethCapabilities(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(0); err != nil {
		return nil, err
	}
	head, err := a.headHeader(ctx)
	if err != nil {
		return nil, err
	}
	zero := hexutil.Uint64(0)
	all := capabilityResource{OldestBlock: &zero}
	return capabilitiesResult{
		Head:        capabilityHead{Number: hexutil.Uint64(head.Number.Uint64()), Hash: head.Hash()},
		State:       all,
		Tx:          all,
		Logs:        all,
		Receipts:    all,
		Blocks:      all,
		StateProofs: capabilityResource{Disabled: true},
	}, nil
}
