package pending

import (
	"errors"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/store"
)

// flat is the reference model: the base plus diffs applied in order.
type flat struct {
	accounts map[common.Address]*store.Account
	storage  map[common.Address]map[common.Hash]common.Hash
	wiped    map[common.Address]bool
}

type nilBase struct{}

func (nilBase) Account(common.Address) (*store.Account, error)           { return nil, nil }
func (nilBase) Storage(common.Address, common.Hash) (common.Hash, error) { return common.Hash{1}, nil }
func (nilBase) Code(common.Hash) ([]byte, error)                         { return nil, nil }

// iterBase is nilBase whose storage can be enumerated: every address holds
// the given slots at value {1}.
type iterBase struct {
	nilBase
	slots []common.Hash
}

func (b iterBase) ForEachStorage(_ common.Address, fn func(slot, value common.Hash) error) error {
	for _, k := range b.slots {
		if err := fn(k, common.Hash{1}); err != nil {
			return err
		}
	}
	return nil
}

// Pushing random diffs (with wipes and deletions) and merging layers reads
// exactly like applying the diffs in order, for every snapshot ever taken.
func TestLayersMatchFlatModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	addrs := []common.Address{{1}, {2}, {3}, {4}}
	slots := []common.Hash{{1}, {2}, {3}, {4}, {5}}
	model := flat{accounts: map[common.Address]*store.Account{}, storage: map[common.Address]map[common.Hash]common.Hash{}, wiped: map[common.Address]bool{}}
	type snap struct {
		l *layer
		m flat
	}
	var snaps []snap
	var l *layer
	for step := 0; step < 300; step++ {
		d := store.NewStateDiff()
		n := 1 + r.IntN(6)
		for i := 0; i < n; i++ {
			a := addrs[r.IntN(len(addrs))]
			switch r.IntN(6) {
			case 0:
				d.Wiped[a] = struct{}{}
				delete(d.Storage, a)
			case 1:
				d.Accounts[a] = nil
			case 2:
				d.Accounts[a] = &store.Account{Nonce: uint64(step), Balance: uint256.NewInt(uint64(r.IntN(100)))}
			default:
				if d.Storage[a] == nil {
					d.Storage[a] = map[common.Hash]common.Hash{}
				}
				d.Storage[a][slots[r.IntN(len(slots))]] = common.Hash{byte(r.IntN(3))}
			}
		}
		// apply to the model (copy-on-write so older snapshots keep theirs)
		m := flat{accounts: map[common.Address]*store.Account{}, storage: map[common.Address]map[common.Hash]common.Hash{}, wiped: map[common.Address]bool{}}
		for a := range model.wiped {
			m.wiped[a] = true
		}
		for k, v := range model.accounts {
			m.accounts[k] = v
		}
		for a, s := range model.storage {
			if _, w := d.Wiped[a]; w {
				m.storage[a] = map[common.Hash]common.Hash{}
				continue
			}
			c := map[common.Hash]common.Hash{}
			for k, v := range s {
				c[k] = v
			}
			m.storage[a] = c
		}
		for a := range d.Wiped {
			m.wiped[a] = true
			m.storage[a] = map[common.Hash]common.Hash{}
		}
		for a, acc := range d.Accounts {
			m.accounts[a] = acc
		}
		for a, s := range d.Storage {
			if m.storage[a] == nil {
				m.storage[a] = map[common.Hash]common.Hash{}
			}
			for k, v := range s {
				m.storage[a][k] = v
			}
		}
		model = m
		l = pushLayer(l, d, nil)
		snaps = append(snaps, snap{l, m})
		if step%50 == 0 && l.depth > 12 {
			t.Fatalf("depth %d after %d pushes: merging does not bound it", l.depth, step+1)
		}
	}
	for i, s := range snaps {
		o := &overlay{layers: s.l, base: iterBase{slots: slots}}
		for _, a := range addrs {
			// Enumeration (an OP withdrawals root's input) agrees with
			// the reads: every non-zero slot, once.
			seen := map[common.Hash]common.Hash{}
			if err := o.ForEachStorage(a, func(k, v common.Hash) error {
				if _, dup := seen[k]; dup || v == (common.Hash{}) {
					t.Fatalf("snapshot %d: slot %x/%x enumerated twice or zero", i, a, k)
				}
				seen[k] = v
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			for _, k := range slots {
				v, _ := o.Storage(a, k)
				if seen[k] != v {
					t.Fatalf("snapshot %d slot %x/%x: enumerated %x, read %x", i, a, k, seen[k], v)
				}
			}
			got, _ := o.Account(a)
			want, ok := s.m.accounts[a]
			if !ok {
				want = nil
			}
			if (got == nil) != (want == nil) || (got != nil && (got.Nonce != want.Nonce || !got.Balance.Eq(want.Balance))) {
				t.Fatalf("snapshot %d account %x: got %+v want %+v", i, a, got, want)
			}
			for _, k := range slots {
				got, _ := o.Storage(a, k)
				want, ok := s.m.storage[a][k]
				if !ok {
					if s.m.wiped[a] {
						want = common.Hash{}
					} else {
						want = common.Hash{1} // base value
					}
				}
				if got != want {
					t.Fatalf("snapshot %d slot %x/%x: got %x want %x", i, a, k, got, want)
				}
			}
		}
	}
}

// An overlay over a base that cannot enumerate storage says so (unless a
// layer wiped the account: then the base is not needed).
func TestOverlayForEachStorageNeedsIterableBase(t *testing.T) {
	d := store.NewStateDiff()
	d.Wiped[common.Address{2}] = struct{}{}
	o := &overlay{layers: pushLayer(nil, d, nil), base: nilBase{}}
	if err := o.ForEachStorage(common.Address{1}, func(common.Hash, common.Hash) error { return nil }); !errors.Is(err, chain.ErrNoStateRoot) {
		t.Fatalf("%v, want ErrNoStateRoot", err)
	}
	if err := o.ForEachStorage(common.Address{2}, func(common.Hash, common.Hash) error { return nil }); err != nil {
		t.Fatal(err)
	}
}

// Diffs of shrinking size (a burst that tapers off within a block) still
// keep the read depth logarithmic in the pending diff size.
func TestLayerDepthLogarithmicForShrinkingDiffs(t *testing.T) {
	var l *layer
	total := 0
	for i := 60; i >= 1; i-- {
		d := store.NewStateDiff()
		slots := make(map[common.Hash]common.Hash, i*10)
		for k := 0; k < i*10; k++ {
			slots[common.Hash{byte(i), byte(k), byte(k >> 8)}] = common.Hash{1}
		}
		d.Storage[common.Address{1}] = slots
		total += i * 10
		l = pushLayer(l, d, nil)
		if limit := bits.Len(uint(total)) + 1; l.depth > limit {
			t.Fatalf("depth %d after %d pushes holding %d slots, want at most %d", l.depth, 61-i, total, limit)
		}
	}
}
