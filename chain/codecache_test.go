package chain

import (
	"errors"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/store"
)

// codeBackend is a Backend of contracts (address -> code) that counts its
// code reads and fails them while failCode is set.
type codeBackend struct {
	code     map[common.Address][]byte
	reads    int
	failCode bool
}

func (b *codeBackend) Account(addr common.Address) (*store.Account, error) {
	c, ok := b.code[addr]
	if !ok {
		return nil, nil
	}
	return &store.Account{Nonce: 1, Balance: new(uint256.Int), CodeHash: crypto.Keccak256Hash(c)}, nil
}

func (b *codeBackend) Storage(common.Address, common.Hash) (common.Hash, error) {
	return common.Hash{}, nil
}

func (b *codeBackend) Code(hash common.Hash) ([]byte, error) {
	b.reads++
	if b.failCode {
		return nil, errors.New("code read failed")
	}
	for _, c := range b.code {
		if crypto.Keccak256Hash(c) == hash {
			return append([]byte{}, c...), nil
		}
	}
	return nil, nil
}

// TestCodeCacheShared: StateDBs sharing a CodeCache read a contract's code
// from their backend once; the next StateDB (on another backend holding the
// same code) gets it from the cache, at another address too. A failed read
// is not cached: it is an error on its StateDB, and the next StateDB reads
// the backend again.
func TestCodeCacheShared(t *testing.T) {
	a, b, c := common.Address{1}, common.Address{2}, common.Address{3}
	code, other := []byte{0x60, 0x01, 0x00}, []byte{0x60, 0x02, 0x00}
	cache := NewCodeCache(1 << 20)
	read := func(be *codeBackend, addr common.Address) ([]byte, error) {
		st := NewStateDB(be)
		st.SetCodeCache(cache)
		got := st.GetCode(addr)
		return got, st.Error()
	}
	be1 := &codeBackend{code: map[common.Address][]byte{a: code, c: other}}
	if got, err := read(be1, a); err != nil || string(got) != string(code) || be1.reads != 1 {
		t.Fatalf("first read: %x, %v, %d backend reads", got, err, be1.reads)
	}
	be2 := &codeBackend{code: map[common.Address][]byte{b: code, c: other}}
	if got, err := read(be2, b); err != nil || string(got) != string(code) || be2.reads != 0 {
		t.Fatalf("cached read: %x, %v, %d backend reads", got, err, be2.reads)
	}
	be2.failCode = true
	if _, err := read(be2, c); err == nil || be2.reads != 1 {
		t.Fatalf("failed read: %v, %d backend reads", err, be2.reads)
	}
	be2.failCode = false
	if got, err := read(be2, c); err != nil || string(got) != string(other) || be2.reads != 2 {
		t.Fatalf("read after a failure: %x, %v, %d backend reads", got, err, be2.reads)
	}
	// An account without code never asks the backend or the cache.
	st := NewStateDB(&codeBackend{})
	st.SetCodeCache(cache)
	if got := st.GetCode(common.Address{9}); got != nil || st.GetCodeHash(common.Address{9}) != (common.Hash{}) {
		t.Fatalf("absent account: code %x", got)
	}
}
