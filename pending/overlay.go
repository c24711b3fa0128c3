package pending

import (
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/store"
)

// layer is one immutable copy-on-write diff (the state written by one
// pre-confirmation, or several merged ones). Layers form a list, newest
// first; a new snapshot adds one layer in front and shares all older ones.
// Nothing reachable from a published layer is ever written again.
type layer struct {
	diff   *store.StateDiff
	txs    map[common.Hash]int // pre-confirmed tx hash -> index in the block
	parent *layer
	size   int // accounts + slots + wipes + txs: the merge policy's weight
	depth  int // number of layers from here to the end of the list
}

func diffSize(d *store.StateDiff) int {
	n := len(d.Accounts) + len(d.Wiped)
	for _, slots := range d.Storage {
		n += len(slots)
	}
	return n
}

// pushLayer puts diff (with the txs it pre-confirmed) in front of parent and
// keeps the list logarithmic: while the layer behind the new front is not
// more than twice its size, the two are merged into one new layer, so every
// layer is more than twice the size of the one in front of it. (Merging only
// when the one behind is not larger let diffs of shrinking size pile up one
// layer per pre-confirmation.) Older layers are never modified (snapshots
// still holding them keep their view), so the cost is the size of the merged
// layers; a slot is copied again only when its layer grows by half, so every
// slot is merged O(log n) times over a block and the depth (the read cost)
// stays O(log n).
func pushLayer(parent *layer, diff *store.StateDiff, txs map[common.Hash]int) *layer {
	l := &layer{diff: diff, txs: txs, parent: parent, size: diffSize(diff) + len(txs)}
	for l.parent != nil && l.parent.size <= 2*l.size {
		l = mergeLayers(l.parent, l)
	}
	l.depth = 1
	if l.parent != nil {
		l.depth += l.parent.depth
	}
	return l
}

// mergeLayers returns one new layer equivalent to newer on top of older.
// Within a diff a wipe hides older storage and then the diff's own slots
// apply, so: wiped = older ∪ newer; an address wiped by newer keeps only
// newer's slots; otherwise newer's slots override older's.
func mergeLayers(older, newer *layer) *layer {
	d := store.NewStateDiff()
	for a := range older.diff.Wiped {
		d.Wiped[a] = struct{}{}
	}
	for a := range newer.diff.Wiped {
		d.Wiped[a] = struct{}{}
	}
	for a, acc := range older.diff.Accounts {
		d.Accounts[a] = acc
	}
	for a, acc := range newer.diff.Accounts {
		d.Accounts[a] = acc
	}
	for a, slots := range older.diff.Storage {
		if _, wiped := newer.diff.Wiped[a]; wiped {
			continue
		}
		m := make(map[common.Hash]common.Hash, len(slots)+len(newer.diff.Storage[a]))
		for k, v := range slots {
			m[k] = v
		}
		d.Storage[a] = m
	}
	for a, slots := range newer.diff.Storage {
		m := d.Storage[a]
		if m == nil {
			m = make(map[common.Hash]common.Hash, len(slots))
			d.Storage[a] = m
		}
		for k, v := range slots {
			m[k] = v
		}
	}
	for h, c := range older.diff.Codes {
		d.Codes[h] = c
	}
	for h, c := range newer.diff.Codes {
		d.Codes[h] = c
	}
	var txs map[common.Hash]int
	if len(older.txs)+len(newer.txs) > 0 {
		txs = make(map[common.Hash]int, len(older.txs)+len(newer.txs))
		for h, i := range older.txs {
			txs[h] = i
		}
		for h, i := range newer.txs {
			txs[h] = i
		}
	}
	return &layer{diff: d, txs: txs, parent: older.parent, size: diffSize(d) + len(txs)}
}

// overlay reads newest layer -> older layers -> the store at the anchor.
// Within one layer the StateDiff order applies: a wipe hides older storage,
// then the layer's own slots apply. It only reads immutable data and is
// safe for concurrent use (as long as base is).
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

// ForEachStorage visits addr's non-zero storage slots (in no particular
// order) as the layers over the base show them, when the base can
// enumerate storage (chain.StorageIterator: the store's state readers, or
// another overlay over one); chain.ErrNoStateRoot otherwise. It costs
// addr's storage size: an OP block's withdrawals root (the
// L2ToL1MessagePasser's storage root) is computed with it.
func (o *overlay) ForEachStorage(addr common.Address, fn func(slot, value common.Hash) error) error {
	var layers []*layer // newest first
	wiped := false
	for l := o.layers; l != nil; l = l.parent {
		layers = append(layers, l)
		if _, w := l.diff.Wiped[addr]; w {
			wiped = true
		}
	}
	slots := make(map[common.Hash]common.Hash)
	if !wiped {
		it, ok := o.base.(chain.StorageIterator)
		if !ok {
			return fmt.Errorf("%w: the pending state's base cannot enumerate storage", chain.ErrNoStateRoot)
		}
		if err := it.ForEachStorage(addr, func(slot, value common.Hash) error {
			slots[slot] = value
			return nil
		}); err != nil {
			return err
		}
	}
	for i := len(layers) - 1; i >= 0; i-- {
		if _, w := layers[i].diff.Wiped[addr]; w {
			clear(slots)
		}
		for k, v := range layers[i].diff.Storage[addr] {
			slots[k] = v
		}
	}
	for k, v := range slots {
		if v == (common.Hash{}) {
			continue
		}
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return nil
}
