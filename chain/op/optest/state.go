package optest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/ethereum/go-ethereum/triedb/database"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/store"
)

// nodeDB serves trie nodes from the preimage map. It implements
// go-ethereum's database.NodeDatabase and database.NodeReader; a node
// absent from the map reads as empty, which go-ethereum's trie reports as a
// *trie.MissingNodeError naming the owner, path and hash.
type nodeDB map[common.Hash][]byte

func (db nodeDB) NodeReader(common.Hash) (database.NodeReader, error) { return db, nil }

func (db nodeDB) Node(_ common.Hash, _ []byte, hash common.Hash) ([]byte, error) {
	return db[hash], nil
}

// missing wraps a trie error so that errors.Is(err, ErrMissing) holds for a
// node absent from the preimages.
func missing(what string, err error) error {
	if mn := (*trie.MissingNodeError)(nil); errors.As(err, &mn) {
		return fmt.Errorf("%s: %w: %w", what, ErrMissing, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// State is the fixture's parent state read through its trie: it has the
// method set of chain.Backend. It is safe for concurrent use.
type State struct {
	mu       sync.Mutex
	root     common.Hash
	db       nodeDB
	accounts *trie.StateTrie
	storage  map[common.Address]*trie.StateTrie
}

// State returns a reader of the parent state (rooted at Parent.Root).
func (f *Fixture) State() *State {
	return &State{root: f.Parent.Root, db: nodeDB(f.Preimages), storage: make(map[common.Address]*trie.StateTrie)}
}

func (s *State) account(addr common.Address) (*types.StateAccount, error) {
	if s.accounts == nil {
		t, err := trie.NewStateTrie(trie.StateTrieID(s.root), s.db)
		if err != nil {
			return nil, missing("state root "+s.root.Hex(), err)
		}
		s.accounts = t
	}
	acc, err := s.accounts.GetAccount(addr)
	if err != nil {
		return nil, missing("account "+addr.Hex(), err)
	}
	return acc, nil
}

// Account returns the account at addr, or (nil, nil) when it does not exist.
func (s *State) Account(addr common.Address) (*store.Account, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	acc, err := s.account(addr)
	if acc == nil || err != nil {
		return nil, err
	}
	return &store.Account{Nonce: acc.Nonce, Balance: new(uint256.Int).Set(acc.Balance), CodeHash: common.BytesToHash(acc.CodeHash)}, nil
}

// Storage returns the value of slot in addr's storage (zero when the slot
// or the account is absent).
func (s *State) Storage(addr common.Address, slot common.Hash) (common.Hash, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.storage[addr]
	if st == nil {
		acc, err := s.account(addr)
		if err != nil {
			return common.Hash{}, err
		}
		if acc == nil || acc.Root == types.EmptyRootHash {
			return common.Hash{}, nil
		}
		st, err = trie.NewStateTrie(trie.StorageTrieID(s.root, crypto.Keccak256Hash(addr[:]), acc.Root), s.db)
		if err != nil {
			return common.Hash{}, missing("storage root of "+addr.Hex(), err)
		}
		s.storage[addr] = st
	}
	v, err := st.GetStorage(addr, slot[:])
	if err != nil {
		return common.Hash{}, missing(fmt.Sprintf("storage %s slot %s", addr.Hex(), slot.Hex()), err)
	}
	return common.BytesToHash(v), nil
}

// Code returns the code with the given hash: nil for the empty code hash,
// an error wrapping ErrMissing when the preimages do not hold it.
func (s *State) Code(hash common.Hash) ([]byte, error) {
	if hash == types.EmptyCodeHash {
		return nil, nil
	}
	code, ok := s.db[hash]
	if !ok {
		return nil, fmt.Errorf("code %s: %w", hash.Hex(), ErrMissing)
	}
	return code, nil
}

// PostStateRoot applies a block's state diff to the parent state (in the
// order store.StateDiff documents: wipes, then accounts, then storage) with
// go-ethereum's trie over the preimages, and returns the new state root.
// Every account the diff touches is written with its recomputed storage
// root; an account the diff deletes is removed with its storage. Storage
// written to an account that is absent after the diff, or a node the
// update needs but the preimages lack, is an error. Each call starts from
// the parent state.
func (f *Fixture) PostStateRoot(diff *store.StateDiff) (common.Hash, error) {
	db := nodeDB(f.Preimages)
	root := f.Parent.Root
	accounts, err := trie.NewStateTrie(trie.StateTrieID(root), db)
	if err != nil {
		return common.Hash{}, missing("state root "+root.Hex(), err)
	}
	touched := make(map[common.Address]struct{})
	for a := range diff.Wiped {
		touched[a] = struct{}{}
	}
	for a := range diff.Accounts {
		touched[a] = struct{}{}
	}
	for a := range diff.Storage {
		touched[a] = struct{}{}
	}
	addrs := make([]common.Address, 0, len(touched))
	for a := range touched {
		addrs = append(addrs, a)
	}
	slices.SortFunc(addrs, func(a, b common.Address) int { return bytes.Compare(a[:], b[:]) })

	for _, addr := range addrs {
		parent, err := accounts.GetAccount(addr)
		if err != nil {
			return common.Hash{}, missing("account "+addr.Hex(), err)
		}
		acc, listed := diff.Accounts[addr]
		if listed && acc == nil {
			for slot, v := range diff.Storage[addr] {
				if v != (common.Hash{}) {
					return common.Hash{}, fmt.Errorf("%w: account %s is deleted but slot %s is set to %s", ErrDiff, addr.Hex(), slot.Hex(), v.Hex())
				}
			}
			if parent != nil {
				if err := accounts.DeleteAccount(addr); err != nil {
					return common.Hash{}, missing("delete account "+addr.Hex(), err)
				}
			}
			continue
		}
		next := parent
		if listed {
			if acc.Balance == nil {
				return common.Hash{}, fmt.Errorf("%w: account %s has a nil balance", ErrDiff, addr.Hex())
			}
			next = &types.StateAccount{Nonce: acc.Nonce, Balance: new(uint256.Int).Set(acc.Balance), CodeHash: acc.CodeHash.Bytes(), Root: types.EmptyRootHash}
			if parent != nil {
				next.Root = parent.Root
			}
		}
		if next == nil {
			if _, wiped := diff.Wiped[addr]; wiped && len(diff.Storage[addr]) == 0 {
				continue // wiped, and absent before and after
			}
			return common.Hash{}, fmt.Errorf("%w: storage of %s written but the account exists neither in the parent state nor in the diff", ErrDiff, addr.Hex())
		}
		if _, wiped := diff.Wiped[addr]; wiped {
			next.Root = types.EmptyRootHash
		}
		if slots := diff.Storage[addr]; len(slots) > 0 {
			st, err := trie.NewStateTrie(trie.StorageTrieID(root, crypto.Keccak256Hash(addr[:]), next.Root), db)
			if err != nil {
				return common.Hash{}, missing("storage root of "+addr.Hex(), err)
			}
			keys := make([]common.Hash, 0, len(slots))
			for k := range slots {
				keys = append(keys, k)
			}
			slices.SortFunc(keys, func(a, b common.Hash) int { return bytes.Compare(a[:], b[:]) })
			for _, k := range keys {
				v := slots[k]
				if v == (common.Hash{}) {
					err = st.DeleteStorage(addr, k[:])
				} else {
					err = st.UpdateStorage(addr, k[:], common.TrimLeftZeroes(v[:]))
				}
				if err != nil {
					return common.Hash{}, missing(fmt.Sprintf("storage %s slot %s", addr.Hex(), k.Hex()), err)
				}
			}
			next.Root = st.Hash()
		}
		if err := accounts.UpdateAccount(addr, next, 0); err != nil {
			return common.Hash{}, missing("update account "+addr.Hex(), err)
		}
	}
	return accounts.Hash(), nil
}
