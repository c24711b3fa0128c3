package chain

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/ethereum/go-ethereum/trie"

	"github.com/tipnode/tipnode/store"
)

// StateRoot computes the Merkle-Patricia state root of a complete flat
// state by hashing every account and slot. It costs O(state size): tipnode
// keeps no tries, so it is used only where a root is unavoidable
// (pre-Byzantium receipts carry the post-transaction root) and by tests as
// an oracle against header roots.
func StateRoot(b IterableBackend) (common.Hash, error) {
	var leaves []leaf
	err := b.ForEachAccount(func(addr common.Address, acc *store.Account) error {
		root, err := storageRoot(b, addr)
		if err != nil {
			return err
		}
		enc, err := rlp.EncodeToBytes(&types.StateAccount{Nonce: acc.Nonce, Balance: acc.Balance, Root: root, CodeHash: acc.CodeHash.Bytes()})
		if err != nil {
			return err
		}
		leaves = append(leaves, leaf{crypto.Keccak256Hash(addr[:]), enc})
		return nil
	})
	if err != nil {
		return common.Hash{}, fmt.Errorf("state root: %w", err)
	}
	return trieRoot(leaves)
}

// leaf is one trie entry: hashed key and RLP value.
type leaf struct {
	key common.Hash
	val []byte
}

// trieRoot returns the root of a trie holding leaves (in any order).
func trieRoot(leaves []leaf) (common.Hash, error) {
	slices.SortFunc(leaves, func(a, b leaf) int { return bytes.Compare(a.key[:], b.key[:]) })
	st := trie.NewStackTrie(nil)
	for _, l := range leaves {
		if err := st.Update(l.key[:], l.val); err != nil {
			return common.Hash{}, err
		}
	}
	return st.Hash(), nil
}

func storageRoot(b StorageIterator, addr common.Address) (common.Hash, error) {
	var leaves []leaf
	err := b.ForEachStorage(addr, func(slot, value common.Hash) error {
		l, err := storageLeaf(slot, value)
		leaves = append(leaves, l)
		return err
	})
	if err != nil {
		return common.Hash{}, err
	}
	return storageTrieRoot(leaves)
}

// storageLeaf is a storage slot's trie entry.
func storageLeaf(slot, value common.Hash) (leaf, error) {
	enc, err := rlp.EncodeToBytes(common.TrimLeftZeroes(value[:]))
	return leaf{crypto.Keccak256Hash(slot[:]), enc}, err
}

func storageTrieRoot(leaves []leaf) (common.Hash, error) {
	if len(leaves) == 0 {
		return types.EmptyRootHash, nil
	}
	return trieRoot(leaves)
}

// SlotsRoot is the storage root of an account holding slots (zero values
// are absent slots).
func SlotsRoot(slots map[common.Hash]common.Hash) (common.Hash, error) {
	var leaves []leaf
	for slot, value := range slots {
		if value == (common.Hash{}) {
			continue
		}
		l, err := storageLeaf(slot, value)
		if err != nil {
			return common.Hash{}, err
		}
		leaves = append(leaves, l)
	}
	return storageTrieRoot(leaves)
}

// overlayBackend is an IterableBackend showing a StateDB's uncommitted
// changes on top of its backend (for intermediate roots).
type overlayBackend struct {
	s    *StateDB
	base IterableBackend
}

func (o overlayBackend) Account(addr common.Address) (*store.Account, error) {
	panic("overlayBackend is iterate-only")
}
func (o overlayBackend) Storage(common.Address, common.Hash) (common.Hash, error) {
	panic("overlayBackend is iterate-only")
}
func (o overlayBackend) Code(common.Hash) ([]byte, error) { panic("overlayBackend is iterate-only") }

func (o overlayBackend) ForEachAccount(fn func(common.Address, *store.Account) error) error {
	seen := make(map[common.Address]bool)
	err := o.base.ForEachAccount(func(addr common.Address, acc *store.Account) error {
		seen[addr] = true
		ref, ok := o.s.objects[addr]
		if !ok || ref.obj == nil {
			if ok && ref.dead && ref.obj == nil {
				return nil // cannot happen: backend has it, so it was loaded live
			}
			return fn(addr, acc)
		}
		if ref.dead {
			return nil
		}
		return fn(addr, &ref.obj.data)
	})
	if err != nil {
		return err
	}
	for addr, ref := range o.s.objects {
		if seen[addr] || ref.dead || ref.obj == nil {
			continue
		}
		if err := fn(addr, &ref.obj.data); err != nil {
			return err
		}
	}
	return nil
}

func (o overlayBackend) ForEachStorage(addr common.Address, fn func(slot, value common.Hash) error) error {
	ref := o.s.objects[addr]
	var obj *object
	if ref != nil && !ref.dead {
		obj = ref.obj
	}
	if obj == nil {
		return o.base.ForEachStorage(addr, fn)
	}
	if !obj.wiped {
		err := o.base.ForEachStorage(addr, func(slot, value common.Hash) error {
			if _, ok := obj.storage[slot]; ok {
				return nil
			}
			return fn(slot, value)
		})
		if err != nil {
			return err
		}
	}
	for slot, v := range obj.storage {
		if v == (common.Hash{}) {
			continue
		}
		if err := fn(slot, v); err != nil {
			return err
		}
	}
	return nil
}

// IntermediateRoot returns the state root of the backend plus every change
// finalised so far. It requires an IterableBackend.
func (s *StateDB) IntermediateRoot() (common.Hash, error) {
	base, ok := s.backend.(IterableBackend)
	if !ok {
		return common.Hash{}, fmt.Errorf("%w: backend cannot enumerate state", ErrNoStateRoot)
	}
	return StateRoot(overlayBackend{s: s, base: base})
}
