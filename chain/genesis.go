package chain

import (
	"encoding/json"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/chain/op"
	"github.com/tipnode/tipnode/store"
)

// Genesis is a parsed go-ethereum genesis spec with its block 0 and the
// flat state it describes.
type Genesis struct {
	Spec   []byte        // the JSON as given (stored so `run` needs no file)
	Core   *core.Genesis // go-ethereum's model of it
	Block  *types.Block  // block 0 (state root computed by go-ethereum's genesis code)
	Config *params.ChainConfig
	// OP is the OP Stack part of the chain config (nil on an L1 chain).
	// Config then runs the L1 forks the OP forks stand for (op.Config.ApplyTo).
	OP *op.Config
}

// opConfigKeys are the chain-config members op.ParseConfig reads: kept in
// the stored chain config beside go-ethereum's.
var opConfigKeys = []string{"bedrockBlock", "regolithTime", "canyonTime", "deltaTime", "ecotoneTime", "fjordTime",
	"graniteTime", "holoceneTime", "isthmusTime", "jovianTime", "karstTime", "optimism"}

// parseOP reads the OP part of a chain config's JSON into g.OP and applies
// its forks to g.Config (nothing on an L1 chain).
func (g *Genesis) parseOP(rawConfig []byte) error {
	oc, err := op.ParseConfig(rawConfig)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrGenesis, err)
	}
	if oc == nil {
		return nil
	}
	if err := oc.ApplyTo(g.Config); err != nil {
		return fmt.Errorf("%w: %v", ErrGenesis, err)
	}
	g.OP = oc
	return nil
}

// ParseChainConfig reads a chain config's JSON (the genesis JSON's
// "config", or the stored one) with its OP part: a Genesis with Config and
// OP set and no block (for tools and tests that execute blocks of a chain
// whose genesis they do not have).
func ParseChainConfig(raw []byte) (*Genesis, error) {
	config := new(params.ChainConfig)
	if err := json.Unmarshal(raw, config); err != nil {
		return nil, fmt.Errorf("%w: chain config: %v", ErrGenesis, err)
	}
	if config.ChainID == nil {
		return nil, fmt.Errorf("%w: config has no chainId", ErrGenesis)
	}
	g := &Genesis{Config: config}
	if err := g.parseOP(raw); err != nil {
		return nil, err
	}
	if err := config.CheckConfigForkOrder(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrGenesis, err)
	}
	return g, nil
}

// ConfigJSON is the chain config as the store keeps it: go-ethereum's
// members plus, on an OP chain, the OP members of rawConfig (the genesis
// JSON's "config").
func (g *Genesis) ConfigJSON(rawConfig []byte) ([]byte, error) {
	enc, err := json.Marshal(g.Config)
	if err != nil || g.OP == nil {
		return enc, err
	}
	var out, in map[string]json.RawMessage
	if err := json.Unmarshal(enc, &out); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(rawConfig, &in); err != nil {
		return nil, err
	}
	for _, k := range opConfigKeys {
		if v, ok := in[k]; ok {
			out[k] = v
		}
	}
	return json.Marshal(out)
}

// RawConfig is the "config" member of the spec the Genesis was parsed from
// (nil without a spec).
func (g *Genesis) RawConfig() json.RawMessage {
	var raw struct {
		Config json.RawMessage `json:"config"`
	}
	if len(g.Spec) > 0 && json.Unmarshal(g.Spec, &raw) == nil {
		return raw.Config
	}
	return nil
}

// StoredConfig is the chain config as the store keeps it (ConfigJSON) for a
// Genesis parsed from a spec (ParseGenesis, ParseGenesisConfig): on an OP
// chain go-ethereum's members and the OP ones. (json.Marshal of Config
// alone would drop the OP part: a store initialised with it runs L1 rules.)
func (g *Genesis) StoredConfig() ([]byte, error) {
	raw := g.RawConfig()
	if g.OP != nil && len(raw) == 0 {
		return nil, fmt.Errorf("%w: no chain config JSON to keep the OP part from", ErrGenesis)
	}
	return g.ConfigJSON(raw)
}

// Executor returns the executor of the chain's rules (OP Stack rules when
// the config has them).
func (g *Genesis) Executor() *Executor {
	e := NewExecutor(g.Config)
	if g.OP != nil {
		e.op = newOPRules(g.OP)
	}
	return e
}

// refusePreBedrock is ErrPreBedrock, saying how to start, when rawConfig
// is an OP chain config whose Bedrock block is after genesis; nil otherwise
// (an unusable config is reported by the full check).
func refusePreBedrock(rawConfig []byte) error {
	oc, err := op.ParseConfig(rawConfig)
	if err != nil || oc == nil || oc.BedrockBlock.Sign() == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w: chain %d starts Bedrock at block %s (bedrockBlock); the legacy blocks before it "+
		"cannot be executed, so this genesis cannot be initialised. Start at a recent block instead: "+
		"tipnode init --datadir DIR --genesis FILE --state DUMP --state.block N --state.from URL "+
		"(a state dump at block N, URL the JSON-RPC of an OP node of the chain), "+
		"or tipnode init --datadir DIR --snapshot-from URL (a tipnode of the chain running with --snapshot.serve)",
		ErrGenesis, ErrPreBedrock, oc.ChainID, oc.BedrockBlock)
}

// refuseOPBlobSchedule refuses an OP chain config that sets a
// blobSchedule, as op-geth does ("OP-Stack chains must have empty blob
// configuration"): OP chains carry no blobs, and ApplyTo gives the L1 forks
// their no-blobs schedule itself. Only a genesis the user gives is checked:
// the chain config a store keeps is the applied one, schedule included.
func refuseOPBlobSchedule(rawConfig []byte) error {
	oc, err := op.ParseConfig(rawConfig)
	if err != nil || oc == nil {
		return nil // not an OP config, or unusable: the full check reports it
	}
	var c struct {
		BlobSchedule json.RawMessage `json:"blobSchedule"`
	}
	if json.Unmarshal(rawConfig, &c) != nil || isJSONNull(c.BlobSchedule) {
		return nil
	}
	return fmt.Errorf("%w: chain %d is an OP Stack chain and its config sets blobSchedule: OP chains carry no blobs "+
		"and have no blob schedule (op-geth refuses one too); remove it", ErrGenesis, oc.ChainID)
}

// isJSONNull reports an absent or null member (json.Unmarshal gives a
// RawMessage member without surrounding space).
func isJSONNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// ParseGenesis parses go-ethereum's genesis JSON (chain config including
// blobSchedule; alloc with balance, nonce, code and storage). An OP genesis
// that starts before Bedrock is ErrPreBedrock.
func ParseGenesis(spec []byte) (*Genesis, error) {
	var raw struct {
		Config json.RawMessage `json:"config"`
	}
	if err := json.Unmarshal(spec, &raw); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrGenesis, err)
	}
	if err := refusePreBedrock(raw.Config); err != nil {
		return nil, err
	}
	if err := refuseOPBlobSchedule(raw.Config); err != nil {
		return nil, err
	}
	g := new(core.Genesis)
	if err := json.Unmarshal(spec, g); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrGenesis, err)
	}
	out, err := checkGenesis(g, raw.Config)
	if err != nil {
		return nil, err
	}
	out.Spec = spec
	out.Block = g.ToBlock()
	if out.isthmusGenesis() {
		// From Isthmus the withdrawals root is the L2ToL1MessagePasser's
		// storage root.
		root, err := SlotsRoot(g.Alloc[op.L2ToL1MessagePasser].Storage)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrGenesis, err)
		}
		h := out.Block.Header()
		h.WithdrawalsHash = &root
		out.Block = out.Block.WithSeal(h)
	}
	return out, nil
}

// checkGenesis checks a decoded genesis (config present with a chain id,
// OP part, fork order) and returns it without Spec and Block.
func checkGenesis(g *core.Genesis, rawConfig json.RawMessage) (*Genesis, error) {
	if g.Config == nil {
		return nil, fmt.Errorf("%w: missing \"config\"", ErrGenesis)
	}
	if g.Config.ChainID == nil {
		return nil, fmt.Errorf("%w: config has no chainId", ErrGenesis)
	}
	out := &Genesis{Core: g, Config: g.Config}
	if err := out.parseOP(rawConfig); err != nil {
		return nil, err
	}
	if err := g.Config.CheckConfigForkOrder(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrGenesis, err)
	}
	return out, nil
}

// isthmusGenesis reports an OP chain with Isthmus active at genesis: block
// 0's withdrawals root is then the L2ToL1MessagePasser's storage root.
func (g *Genesis) isthmusGenesis() bool {
	return g.OP != nil && g.OP.IsIsthmus(g.Core.Timestamp)
}

// ParseGenesisConfig parses only the chain config of a genesis spec: no
// alloc model and no block 0 (Core and Block stay nil). A store anchored
// at a later block (tipnode init --state) needs no more, and a spec with a
// large alloc is not built into a trie.
func ParseGenesisConfig(spec []byte) (*Genesis, error) {
	var raw struct {
		Config json.RawMessage `json:"config"`
	}
	if err := json.Unmarshal(spec, &raw); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrGenesis, err)
	}
	if isJSONNull(raw.Config) {
		return nil, fmt.Errorf("%w: missing \"config\"", ErrGenesis)
	}
	if err := refuseOPBlobSchedule(raw.Config); err != nil {
		return nil, err
	}
	g, err := ParseChainConfig(raw.Config)
	if err != nil {
		return nil, err
	}
	g.Spec = spec
	return g, nil
}

// LoadGenesis returns the chain of an initialised store from view: its
// chain config and block 0 (header only). Spec and Core stay nil: the
// genesis alloc, however large, is not parsed (the state is in the store;
// stores initialised before the config was stored get it from migration 3).
// A store without genesis is store.ErrNotFound.
func LoadGenesis(view store.ChainReader) (*Genesis, error) {
	hash, err := view.CanonicalHash(0)
	if err != nil {
		return nil, err
	}
	header, err := view.Header(0, hash)
	if err != nil {
		return nil, err
	}
	raw, err := view.ChainConfig()
	if err != nil {
		return nil, err
	}
	config := new(params.ChainConfig)
	if err := json.Unmarshal(raw, config); err != nil {
		return nil, fmt.Errorf("%w: stored chain config: %v", ErrGenesis, err)
	}
	g := &Genesis{Block: types.NewBlockWithHeader(header), Config: config}
	if err := g.parseOP(raw); err != nil {
		return nil, err
	}
	return g, nil
}

// Diff returns the genesis allocation as a state diff.
func (g *Genesis) Diff() *store.StateDiff {
	d := store.NewStateDiff()
	for addr, acc := range g.Core.Alloc {
		bal := new(uint256.Int)
		if acc.Balance != nil {
			bal = uint256.MustFromBig(acc.Balance)
		}
		a := &store.Account{Nonce: acc.Nonce, Balance: bal, CodeHash: types.EmptyCodeHash}
		if len(acc.Code) > 0 {
			a.CodeHash = crypto.Keccak256Hash(acc.Code)
			d.Codes[a.CodeHash] = acc.Code
		}
		d.Accounts[addr] = a
		for k, v := range acc.Storage {
			if v == (common.Hash{}) {
				continue
			}
			if d.Storage[addr] == nil {
				d.Storage[addr] = make(map[common.Hash]common.Hash)
			}
			d.Storage[addr][k] = v
		}
	}
	return d
}
