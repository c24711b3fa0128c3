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
	key := accountKey(addr, s.height)
	var buf [readBufLen]byte
	val, err := s.read(buf[:0], key, accountEntityLen, absentAccount)
	if err != nil {
		return nil, fmt.Errorf("account %s at %d: %w", addr, s.height, err)
	}
	acc, err := decodeAccount(val)
	if err != nil {
		return nil, fmt.Errorf("account %s at %d: %w", addr, s.height, err)
	}
	return acc, nil
}

// Storage returns the slot value at the reader's height (zero if never set).
func (s *stateReader) Storage(addr common.Address, slot common.Hash) (common.Hash, error) {
	var buf [readBufLen]byte
	val, err := s.read(buf[:0], storageKey(addr, slot, s.height), storageEntityLen, nil)
	var h common.Hash
	if err == nil {
		h, err = decodeValue(val)
	}
	if err != nil {
		return common.Hash{}, fmt.Errorf("storage %s/%s at %d: %w", addr, slot, s.height, err)
	}
	return h, nil
}

// readBufLen is the stack buffer a point read hands the state cache: a
// cache entry's header and an account's encoding or a slot's value fit.
const readBufLen = 128

// absentAccount is the stored form of an absent account (as deleted).
var absentAccount = []byte{deletedMarker}

// read returns the stored value of the versioned key at the reader's
// height (absent when the entity has no version there): from the state
// cache when it holds it for this view and height, else from Pebble (one
// seek), filling the cache when the read is at the view's latest block.
// Below the view's latest block a miss goes to the past cache
// (pastcache.go). A state-cache hit is appended to dst[:0] (the caller's
// buffer). The returned value must not be modified.
func (s *stateReader) read(dst, key []byte, entityLen int, absent []byte) ([]byte, error) {
	if s.v.db.fork.Load() == nil {
		return s.readLocal(dst, key, entityLen, absent)
	}
	// A forked store: an entity without a local version at or below the
	// height is read from the upstream at the fork block (fork.go).
	val, err := s.readLocal(dst, key, entityLen, forkMissing)
	if err != nil || !isForkMissing(val) {
		return val, err
	}
	return s.readFork(key, entityLen)
}

// readLocal is read from the store alone: absent for an entity without a
// version at or below the height (forkMissing on a forked store, which is
// never filled into the state cache).
func (s *stateReader) readLocal(dst, key []byte, entityLen int, absent []byte) ([]byte, error) {
	c, entity := s.v.db.state, key[:entityLen]
	if val, ok := c.get(dst, entity, s.v.epoch, s.v.latest, s.height); ok {
		if s.v.guard.isClosed() { // a closed view answers nothing
			return nil, ErrClosed
		}
		return val, nil
	}
	if s.height < s.v.latest {
		return s.readPast(key, entityLen, absent) // pastcache.go
	}
	val, found, err := s.seekVersion(key)
	if err != nil {
		return nil, err
	}
	var from uint64
	if found {
		from = val.version
	}
	v := val.value
	if !found {
		v = absent
	}
	if s.height == s.v.latest && !isForkMissing(v) {
		c.fill(entity, s.v.epoch, s.v.latest, from, v)
	}
	return v, nil
}

// version is a stored value and the block of its version key.
type version struct {
	value   []byte
	version uint64
}

// seekVersion implements the ordering contract: one SeekPrefixGE to
// entity+^height lands on the newest version <= height of that entity, or
// leaves the iterator invalid when the entity has none. The value is copied.
func (s *stateReader) seekVersion(key []byte) (val version, found bool, err error) {
	if err := s.v.enter(); err != nil {
		return version{}, false, err
	}
	defer s.v.exit()
	it, err := s.v.pointIter()
	if err != nil {
		return version{}, false, err
	}
	if it.SeekPrefixGE(key) {
		var v []byte
		if v, err = it.ValueAndErr(); err == nil {
			val, found = version{value: append([]byte{}, v...), version: keyVersion(it.Key())}, true
		}
	}
	return val, found, errors.Join(err, s.v.doneIter(it))
}

// Code returns contract code by hash; nil for the empty code hash or an
// unknown hash.
func (s *stateReader) Code(hash common.Hash) ([]byte, error) {
	if hash == types.EmptyCodeHash || hash == (common.Hash{}) {
		return nil, nil
	}
	key := codeKey(hash)
	if val, ok := s.v.db.state.code(key); ok {
		return val, nil
	}
	val, found, err := s.v.get(key)
	if err != nil {
		return nil, fmt.Errorf("code %s: %w", hash, err)
	}
	if !found && s.v.db.fork.Load() != nil {
		// Code a fork fetched after this view's snapshot, or not persisted yet.
		if val, found, err = s.forkCode(key); err != nil {
			return nil, fmt.Errorf("code %s: %w", hash, err)
		}
	}
	if found {
		s.v.db.state.fillCode(key, val)
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
