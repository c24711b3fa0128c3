package store

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// stateReader reads the versioned flat state at one height of a view.
type stateReader struct {
	v      *view
	height uint64
}

var _ StateReader = (*stateReader)(nil)

// Account returns the account at the reader's height, nil if absent or
// deleted.
func (s *stateReader) Account(addr common.Address) (*Account, error) {
	val, found, err := s.seekVersion(accountKey(addr, s.height))
	if err != nil {
		return nil, fmt.Errorf("account %s at %d: %w", addr, s.height, err)
	}
	if !found {
		return nil, nil
	}
	acc, err := decodeAccount(val)
	if err != nil {
		return nil, fmt.Errorf("account %s at %d: %w", addr, s.height, err)
	}
	return acc, nil
}

// Storage returns the slot value at the reader's height (zero if never set).
func (s *stateReader) Storage(addr common.Address, slot common.Hash) (common.Hash, error) {
	val, found, err := s.seekVersion(storageKey(addr, slot, s.height))
	if err == nil && found {
		var h common.Hash
		if h, err = decodeValue(val); err == nil {
			return h, nil
		}
	}
	if err != nil {
		return common.Hash{}, fmt.Errorf("storage %s/%s at %d: %w", addr, slot, s.height, err)
	}
	return common.Hash{}, nil
}

// seekVersion implements the ordering contract: one SeekPrefixGE to
// entity+^height lands on the newest version <= height of that entity, or
// leaves the iterator invalid when the entity has none. The value is copied.
func (s *stateReader) seekVersion(key []byte) (val []byte, found bool, err error) {
	if err := s.v.enter(); err != nil {
		return nil, false, err
	}
	defer s.v.exit()
	it, err := s.v.snap.NewIter(nil)
	if err != nil {
		return nil, false, err
	}
	if it.SeekPrefixGE(key) {
		var v []byte
		if v, err = it.ValueAndErr(); err == nil {
			val, found = append([]byte{}, v...), true
		}
	}
	return val, found, errors.Join(err, it.Error(), it.Close())
}

// Code returns contract code by hash; nil for the empty code hash or an
// unknown hash.
func (s *stateReader) Code(hash common.Hash) ([]byte, error) {
	if hash == types.EmptyCodeHash || hash == (common.Hash{}) {
		return nil, nil
	}
	val, _, err := s.v.get(codeKey(hash))
	if err != nil {
		return nil, fmt.Errorf("code %s: %w", hash, err)
	}
	return val, nil
}

// ForEachStorage visits every non-zero slot of addr at the height in slot
// order.
func (s *stateReader) ForEachStorage(addr common.Address, fn func(slot, value common.Hash) error) error {
	prefix := storageAddrPrefix(addr)
	err := s.scanLatest(prefix, func(key, val []byte) error {
		if len(val) == 0 { // zero version: the slot is cleared at this height
			return nil
		}
		value, err := decodeValue(val)
		if err != nil {
			return err
		}
		return fn(common.BytesToHash(key[storageAddrLen:storageEntityLen]), value)
	})
	if err != nil {
		return fmt.Errorf("storage of %s at %d: %w", addr, s.height, err)
	}
	return nil
}

// ForEachAccount visits every live account at the height in address order.
func (s *stateReader) ForEachAccount(fn func(addr common.Address, acc *Account) error) error {
	err := s.scanLatest([]byte{prefixAccount}, func(key, val []byte) error {
		acc, err := decodeAccount(val)
		if err != nil || acc == nil { // deleted at this height
			return err
		}
		return fn(common.BytesToAddress(key[1:accountEntityLen]), acc)
	})
	if err != nil {
		return fmt.Errorf("accounts at %d: %w", s.height, err)
	}
	return nil
}

// scanLatest calls fn, in key order, with the newest version <= height of
// every entity whose versioned keys start with prefix. key and val are only
// valid during the call.
func (s *stateReader) scanLatest(prefix []byte, fn func(key, val []byte) error) error {
	if err := s.v.enter(); err != nil {
		return err
	}
	defer s.v.exit()
	it, err := s.v.snap.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return err
	}
	err = scanNewest(it, prefix, s.height, fn)
	return errors.Join(err, it.Error(), it.Close())
}

// scanNewest walks an iterator bounded to the versioned keys under prefix
// and calls fn with the newest version <= height of each entity. Versions
// above height are skipped with one seek to entity+^height; after a hit the
// iterator jumps to the next entity with NextPrefix.
func scanNewest(it *pebble.Iterator, prefix []byte, height uint64, fn func(key, val []byte) error) error {
	seek := make([]byte, 0, storageKeyLen)
	valid := it.SeekGE(prefix)
	for valid {
		key := it.Key()
		if splitKey(key) == len(key) {
			return fmt.Errorf("%w: unversioned key %x in versioned table", ErrCorrupt, key)
		}
		if keyVersion(key) > height {
			entity := key[:splitKey(key)]
			seek = appendVersion(append(seek[:0], entity...), height)
			valid = it.SeekGE(seek)
			continue
		}
		val, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		if err := fn(key, val); err != nil {
			return err
		}
		valid = it.NextPrefix()
	}
	return nil
}
