package pending

import (
	"github.com/ethereum/go-ethereum/common"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/store"
)

// layer is one immutable copy-on-write diff (the state written by one
// pre-confirmation). Layers form a list, newest first; a new snapshot adds
// one layer in front and shares all older ones.
type layer struct {
	diff   *store.StateDiff
	parent *layer
}

// overlay reads newest layer -> older layers -> the store at the anchor.
// Within one layer the StateDiff order applies: a wipe hides older storage,
// then the layer's own slots apply.
type overlay struct {
	layers *layer
	base   chain.Backend
}

func (o *overlay) Account(addr common.Address) (*store.Account, error) {
	for l := o.layers; l != nil; l = l.parent {
		if acc, ok := l.diff.Accounts[addr]; ok {
			if acc == nil {
				return nil, nil
			}
			cp := *acc
			cp.Balance = new(uint256.Int).Set(acc.Balance)
			return &cp, nil
		}
	}
	return o.base.Account(addr)
}

func (o *overlay) Storage(addr common.Address, slot common.Hash) (common.Hash, error) {
	for l := o.layers; l != nil; l = l.parent {
		if v, ok := l.diff.Storage[addr][slot]; ok {
			return v, nil
		}
		if _, wiped := l.diff.Wiped[addr]; wiped {
			return common.Hash{}, nil
		}
	}
	return o.base.Storage(addr, slot)
}

func (o *overlay) Code(hash common.Hash) ([]byte, error) {
	for l := o.layers; l != nil; l = l.parent {
		if c, ok := l.diff.Codes[hash]; ok {
			return c, nil
		}
	}
	return o.base.Code(hash)
}
