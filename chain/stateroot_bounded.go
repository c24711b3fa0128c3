package chain

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/ethereum/go-ethereum/trie"

	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/extsort"
)

// flatRootMem bounds what StateRootBounded keeps in memory for one sort
// (the accounts', or one account's slots once they spill) before it spills
// sorted runs to disk: the store's trie build's budget.
const flatRootMem = 64 << 20

// flatRootSlots is how many slots of one account StateRootBounded sorts in
// memory; an account with more spills them (as the store's trie build).
const flatRootSlots = 1 << 18

// StateRootBounded is StateRoot in bounded memory: the accounts' trie
// entries, and the slots of an account with more than slotsInMem of them,
// are sorted externally (store/extsort, runs of at most mem bytes in a
// temporary directory) and fed to a StackTrie in key order, where
// StateRoot holds every entry in memory (about 100 B per account). The
// deep-reorg path (VerifyStateRootFlat) uses it; its cost is still one
// pass over the whole state, plus the sorted runs written and read once.
func StateRootBounded(b IterableBackend) (common.Hash, error) {
	return stateRootBounded(b, flatRootMem, flatRootSlots)
}

func stateRootBounded(b IterableBackend, mem, slotsInMem int) (root common.Hash, err error) {
	tmp, err := os.MkdirTemp("", "tipnode-root-")
	if err != nil {
		return common.Hash{}, err
	}
	defer os.RemoveAll(tmp)
	accounts, err := extsort.New(filepath.Join(tmp, "accounts"), mem)
	if err != nil {
		return common.Hash{}, err
	}
	defer func() { err = errors.Join(err, accounts.Close()) }()
	n := 0
	err = b.ForEachAccount(func(addr common.Address, acc *store.Account) error {
		n++
		sroot, err := boundedStorageRoot(b, addr, filepath.Join(tmp, "storage"), mem, slotsInMem)
		if err != nil {
			return err
		}
		enc, err := rlp.EncodeToBytes(&types.StateAccount{Nonce: acc.Nonce, Balance: acc.Balance, Root: sroot, CodeHash: acc.CodeHash.Bytes()})
		if err != nil {
			return err
		}
		return accounts.Add(crypto.Keccak256(addr[:]), enc)
	})
	if err != nil {
		return common.Hash{}, err
	}
	if n == 0 {
		return types.EmptyRootHash, nil
	}
	st := trie.NewStackTrie(nil)
	if err := accounts.Merge(func(k, v []byte) error { return st.Update(k, v) }); err != nil {
		return common.Hash{}, err
	}
	return st.Hash(), nil
}

// boundedStorageRoot is storageRoot sorting in memory up to slotsInMem
// slots, externally (in dir) beyond.
func boundedStorageRoot(b StorageIterator, addr common.Address, dir string, mem, slotsInMem int) (common.Hash, error) {
	var (
		leaves []leaf
		sorter *extsort.Sorter
	)
	defer func() {
		if sorter != nil {
			sorter.Close()
			os.RemoveAll(dir)
		}
	}()
	err := b.ForEachStorage(addr, func(slot, value common.Hash) error {
		l, err := storageLeaf(slot, value)
		if err != nil {
			return err
		}
		if sorter != nil {
			return sorter.Add(l.key[:], l.val)
		}
		leaves = append(leaves, l)
		if len(leaves) <= slotsInMem {
			return nil
		}
		if sorter, err = extsort.New(dir, mem); err != nil {
			return err
		}
		for _, l := range leaves {
			if err := sorter.Add(l.key[:], l.val); err != nil {
				return err
			}
		}
		leaves = nil
		return nil
	})
	if err != nil {
		return common.Hash{}, err
	}
	if sorter == nil {
		return storageTrieRoot(leaves)
	}
	st := trie.NewStackTrie(nil)
	if err := sorter.Merge(func(k, v []byte) error { return st.Update(k, v) }); err != nil {
		return common.Hash{}, err
	}
	return st.Hash(), nil
}

// storageRootBounded is addr's storage root in bounded memory
// (boundedStorageRoot in a temporary directory).
func storageRootBounded(b StorageIterator, addr common.Address) (common.Hash, error) {
	tmp, err := os.MkdirTemp("", "tipnode-root-")
	if err != nil {
		return common.Hash{}, err
	}
	defer os.RemoveAll(tmp)
	return boundedStorageRoot(b, addr, filepath.Join(tmp, "storage"), flatRootMem, flatRootSlots)
}
