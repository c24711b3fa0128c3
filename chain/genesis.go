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

	"github.com/tipnode/tipnode/store"
)

// Genesis is a parsed go-ethereum genesis spec with its block 0 and the
// flat state it describes.
type Genesis struct {
	Spec   []byte        // the JSON as given (stored so `run` needs no file)
	Core   *core.Genesis // go-ethereum's model of it
	Block  *types.Block  // block 0 (state root computed by go-ethereum's genesis code)
	Config *params.ChainConfig
}

// ParseGenesis parses go-ethereum's genesis JSON (chain config including
// blobSchedule; alloc with balance, nonce, code and storage).
func ParseGenesis(spec []byte) (*Genesis, error) {
	g := new(core.Genesis)
	if err := json.Unmarshal(spec, g); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrGenesis, err)
	}
	if g.Config == nil {
		return nil, fmt.Errorf("%w: missing \"config\"", ErrGenesis)
	}
	if g.Config.ChainID == nil {
		return nil, fmt.Errorf("%w: config has no chainId", ErrGenesis)
	}
	if err := g.Config.CheckConfigForkOrder(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrGenesis, err)
	}
	block := g.ToBlock()
	return &Genesis{Spec: spec, Core: g, Block: block, Config: g.Config}, nil
}

// ParseGenesisConfig parses only the chain config of a genesis spec: no
// alloc model and no block 0 (Core and Block stay nil). A store anchored
// at a later block (tipnode init --state) needs no more, and a spec with a
// large alloc is not built into a trie.
func ParseGenesisConfig(spec []byte) (*Genesis, error) {
	var g struct {
		Config *params.ChainConfig `json:"config"`
	}
	if err := json.Unmarshal(spec, &g); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrGenesis, err)
	}
	if g.Config == nil {
		return nil, fmt.Errorf("%w: missing \"config\"", ErrGenesis)
	}
	if g.Config.ChainID == nil {
		return nil, fmt.Errorf("%w: config has no chainId", ErrGenesis)
	}
	if err := g.Config.CheckConfigForkOrder(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrGenesis, err)
	}
	return &Genesis{Spec: spec, Config: g.Config}, nil
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
	return &Genesis{Block: types.NewBlockWithHeader(header), Config: config}, nil
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
