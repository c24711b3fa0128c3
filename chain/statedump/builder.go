package statedump

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/extsort"
)

// Builder verifies a state given entry by entry (accounts, their slots
// and code, in any order; a source other than a JSON dump, such as a
// peer's snapshot stream) exactly as Load verifies a dump: Finish sorts
// the entries into trie order, computes the state root with go-ethereum's
// StackTrie and hands every entry to the sink. "item" in the errors is
// the number the caller gives each entry (a frame index).
type Builder struct {
	dir    string
	sorter *extsort.Sorter
	sink   Sink
	key    []byte
	val    []byte
	// Accounts and Slots count what was added.
	Accounts, Slots int64
}

// NewBuilder returns a builder whose sort files go to cfg.TempDir.
func NewBuilder(sink Sink, cfg Config) (*Builder, error) {
	if cfg.TempDir == "" {
		return nil, errors.New("statedump: no TempDir")
	}
	if cfg.MemBytes <= 0 {
		cfg.MemBytes = DefaultMemBytes
	}
	dir := filepath.Join(cfg.TempDir, "builder")
	sorter, err := extsort.New(dir, cfg.MemBytes)
	if err != nil {
		return nil, err
	}
	return &Builder{dir: dir, sorter: sorter, sink: sink}, nil
}

// Account adds an account (its code, if any, separately with Code).
func (b *Builder) Account(item int64, addr common.Address, acc *store.Account) error {
	b.Accounts++
	hashed := crypto.Keccak256Hash(addr[:])
	return addAccountRecord(b.sorter, &b.key, &b.val, hashed, item, addr, acc.Nonce, acc.Balance.Bytes32(), acc.CodeHash, nil)
}

// Storage adds a non-zero slot of addr (zero values are skipped).
func (b *Builder) Storage(item int64, addr common.Address, slot, value common.Hash) error {
	if value == (common.Hash{}) {
		return nil
	}
	return b.Slot(item, addr, slot, value)
}

// Slot adds a slot of addr as Storage does, but a zero value is kept
// until the sort (and then dropped), so that a slot given twice is refused
// even when one of the two is zero (a source whose last value would win,
// such as a genesis JSON).
func (b *Builder) Slot(item int64, addr common.Address, slot, value common.Hash) error {
	if value != (common.Hash{}) {
		b.Slots++
	}
	hashed := crypto.Keccak256Hash(addr[:])
	return addSlotRecord(b.sorter, &b.key, &b.val, hashed, item, slot[:], value[:])
}

// Code hands code to the sink at once, checking its hash.
func (b *Builder) Code(item int64, hash common.Hash, code []byte) error {
	if got := crypto.Keccak256Hash(code); got != hash {
		return fmt.Errorf("%w: item %d: code %s hashes to %s", ErrMismatch, item, hash.Hex(), got.Hex())
	}
	if hash == types.EmptyCodeHash {
		return nil
	}
	if err := b.sink.Code(hash, code); err != nil {
		return fmt.Errorf("%w: code %s: %w", ErrSink, hash.Hex(), err)
	}
	return nil
}

// Finish emits every entry to the sink in trie order and returns the
// state root (a duplicate account or slot, or slots of an account not
// given, are refused).
func (b *Builder) Finish(ctx context.Context) (common.Hash, error) {
	return emit(ctx, b.sorter, b.sink, nil)
}

// Close removes the builder's files.
func (b *Builder) Close() error {
	return errors.Join(b.sorter.Close(), os.RemoveAll(b.dir))
}

// addAccountRecord adds an account record to the hashed-order sort: key
// hashed address + kindAccount; value item, address, nonce, balance, code
// hash and the claimed storage root (root nil: none claimed).
func addAccountRecord(s *extsort.Sorter, key, val *[]byte, hashed common.Hash, item int64, addr common.Address, nonce uint64, bal [32]byte, codeHash common.Hash, root *common.Hash) error {
	*key = append(append((*key)[:0], hashed[:]...), kindAccount)
	v := binary.BigEndian.AppendUint64((*val)[:0], uint64(item))
	v = append(v, addr[:]...)
	v = binary.BigEndian.AppendUint64(v, nonce)
	v = append(v, bal[:]...)
	v = append(v, codeHash[:]...)
	if root != nil {
		v = append(v, 1)
		v = append(v, root[:]...)
	} else {
		v = append(v, 0)
	}
	*val = v
	return s.Add(*key, v)
}

// addSlotRecord adds a slot record: key hashed address + kindSlot +
// hashed slot; value item, slot, value (32 bytes each).
func addSlotRecord(s *extsort.Sorter, key, val *[]byte, hashed common.Hash, item int64, slot, value []byte) error {
	k := append(append((*key)[:0], hashed[:]...), kindSlot)
	*key = append(k, crypto.Keccak256(slot)...)
	v := binary.BigEndian.AppendUint64((*val)[:0], uint64(item))
	v = append(v, slot...)
	*val = append(v, value...)
	return s.Add(*key, *val)
}
