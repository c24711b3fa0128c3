package chain

import (
	"github.com/ethereum/go-ethereum/common"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/store"
)

// diffStack is the state after a run of blocks that exist only in memory:
// their block diffs (oldest first) stacked on the store's state at the
// block they build on. Writer.Reorg executes a new branch on it, block
// after block, before anything of the branch is written. Reads follow the
// store's apply order within each diff (a wipe hides older storage, then
// the diff's own slots apply), newest diff first. It is an IterableBackend
// when base is (pre-Byzantium receipts need intermediate state roots);
// the iteration order is not sorted.
type diffStack struct {
	base  Backend
	diffs []*store.StateDiff // oldest first
}

func (d *diffStack) push(diff *store.StateDiff) { d.diffs = append(d.diffs, diff) }

func (d *diffStack) Account(addr common.Address) (*store.Account, error) {
	for i := len(d.diffs) - 1; i >= 0; i-- {
		if acc, ok := d.diffs[i].Accounts[addr]; ok {
			if acc == nil {
				return nil, nil
			}
			cp := *acc
			cp.Balance = new(uint256.Int).Set(acc.Balance)
			return &cp, nil
		}
	}
	return d.base.Account(addr)
}

func (d *diffStack) Storage(addr common.Address, slot common.Hash) (common.Hash, error) {
	for i := len(d.diffs) - 1; i >= 0; i-- {
		if v, ok := d.diffs[i].Storage[addr][slot]; ok {
			return v, nil
		}
		if _, wiped := d.diffs[i].Wiped[addr]; wiped {
			return common.Hash{}, nil
		}
	}
	return d.base.Storage(addr, slot)
}

func (d *diffStack) Code(hash common.Hash) ([]byte, error) {
	for i := len(d.diffs) - 1; i >= 0; i-- {
		if c, ok := d.diffs[i].Codes[hash]; ok {
			return c, nil
		}
	}
	return d.base.Code(hash)
}

// ForEachAccount visits every live account (unsorted).
func (d *diffStack) ForEachAccount(fn func(addr common.Address, acc *store.Account) error) error {
	base, ok := d.base.(IterableBackend)
	if !ok {
		return ErrNoStateRoot
	}
	final := make(map[common.Address]*store.Account)
	for _, diff := range d.diffs {
		for a, acc := range diff.Accounts {
			final[a] = acc
		}
	}
	err := base.ForEachAccount(func(addr common.Address, acc *store.Account) error {
		if _, changed := final[addr]; changed {
			return nil
		}
		return fn(addr, acc)
	})
	if err != nil {
		return err
	}
	for addr, acc := range final {
		if acc != nil {
			if err := fn(addr, acc); err != nil {
				return err
			}
		}
	}
	return nil
}

// ForEachStorage visits every non-zero slot of addr (unsorted).
func (d *diffStack) ForEachStorage(addr common.Address, fn func(slot, value common.Hash) error) error {
	base, ok := d.base.(IterableBackend)
	if !ok {
		return ErrNoStateRoot
	}
	slots := make(map[common.Hash]common.Hash)
	useBase := true
	for _, diff := range d.diffs {
		if _, wiped := diff.Wiped[addr]; wiped {
			clear(slots)
			useBase = false
		}
		for k, v := range diff.Storage[addr] {
			slots[k] = v
		}
	}
	if useBase {
		err := base.ForEachStorage(addr, func(slot, value common.Hash) error {
			if _, changed := slots[slot]; changed {
				return nil
			}
			return fn(slot, value)
		})
		if err != nil {
			return err
		}
	}
	for k, v := range slots {
		if v != (common.Hash{}) {
			if err := fn(k, v); err != nil {
				return err
			}
		}
	}
	return nil
}
