package store

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/holiman/uint256"
)

// reader is what both *pebble.DB and *pebble.Snapshot provide.
type reader interface {
	Get(key []byte) ([]byte, io.Closer, error)
	NewIter(o *pebble.IterOptions) (*pebble.Iterator, error)
}

// getCopy returns a copy of the value of key, found=false if absent.
func getCopy(r reader, key []byte) (val []byte, found bool, err error) {
	v, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("get %x: %w", key, err)
	}
	val = append([]byte{}, v...)
	return val, true, closer.Close()
}

func decodeBE8(v []byte, what string) (uint64, error) {
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: %s has %d bytes, want 8", ErrCorrupt, what, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// accountEncodingV1 leads every live account value:
//
//	0x01 | uvarint(nonce) | len(balance) (0..32) | balance (big-endian, no leading zeros) | [codeHash(32)]
//
// The code hash is omitted when it is types.EmptyCodeHash. A deleted account
// is the single byte deletedMarker (0x00).
const accountEncodingV1 byte = 0x01

// encodeAccount encodes a live account.
func encodeAccount(acc *Account) []byte {
	out := make([]byte, 0, 1+binary.MaxVarintLen64+1+32+32)
	out = append(out, accountEncodingV1)
	out = binary.AppendUvarint(out, acc.Nonce)
	var bal []byte
	if acc.Balance != nil && !acc.Balance.IsZero() {
		bal = acc.Balance.Bytes()
	}
	out = append(out, byte(len(bal)))
	out = append(out, bal...)
	if acc.CodeHash != types.EmptyCodeHash && acc.CodeHash != (common.Hash{}) {
		out = append(out, acc.CodeHash[:]...)
	}
	return out
}

// decodeAccount decodes an account value; (nil, nil) for the deleted marker.
// The result never aliases v.
func decodeAccount(v []byte) (*Account, error) {
	if len(v) == 1 && v[0] == deletedMarker {
		return nil, nil
	}
	if len(v) < 3 || v[0] != accountEncodingV1 {
		return nil, fmt.Errorf("%w: account value %s", ErrCorrupt, hex.EncodeToString(v))
	}
	nonce, n := readUvarint(v[1:])
	if n <= 0 {
		return nil, fmt.Errorf("%w: account nonce in %s", ErrCorrupt, hex.EncodeToString(v))
	}
	rest := v[1+n:]
	if len(rest) < 1 || int(rest[0]) > 32 || len(rest) < 1+int(rest[0]) {
		return nil, fmt.Errorf("%w: account balance in %s", ErrCorrupt, hex.EncodeToString(v))
	}
	bl := int(rest[0])
	if bl > 0 && rest[1] == 0 {
		return nil, fmt.Errorf("%w: account balance has leading zero in %s", ErrCorrupt, hex.EncodeToString(v))
	}
	acc := &Account{Nonce: nonce, Balance: new(uint256.Int).SetBytes(rest[1 : 1+bl]), CodeHash: types.EmptyCodeHash}
	rest = rest[1+bl:]
	switch len(rest) {
	case 0:
	case common.HashLength:
		copy(acc.CodeHash[:], rest)
		if acc.CodeHash == types.EmptyCodeHash || acc.CodeHash == (common.Hash{}) {
			return nil, fmt.Errorf("%w: explicit empty code hash in %s", ErrCorrupt, hex.EncodeToString(v))
		}
	default:
		return nil, fmt.Errorf("%w: account code hash in %s", ErrCorrupt, hex.EncodeToString(v))
	}
	return acc, nil
}

// trimValue returns the storage value encoding: leading zero bytes removed.
func trimValue(h common.Hash) []byte {
	for i, b := range h {
		if b != 0 {
			return h[i:]
		}
	}
	return nil
}

// decodeValue is the inverse of trimValue.
func decodeValue(v []byte) (common.Hash, error) {
	if len(v) > common.HashLength {
		return common.Hash{}, fmt.Errorf("%w: storage value of %d bytes", ErrCorrupt, len(v))
	}
	var h common.Hash
	copy(h[common.HashLength-len(v):], v)
	return h, nil
}

// changeList is the set of state entities written at one block; UnwindTo
// deletes exactly their versions at that block.
type changeList struct {
	accounts []common.Address
	slots    []slotRef
}

type slotRef struct {
	addr common.Address
	slot common.Hash
}

// encodeChangeList: uvarint(#accounts) | addr(20)... | uvarint(#slots) | (addr(20) slot(32))...
func encodeChangeList(cl *changeList) []byte {
	out := make([]byte, 0, 2*binary.MaxVarintLen64+len(cl.accounts)*20+len(cl.slots)*52)
	out = binary.AppendUvarint(out, uint64(len(cl.accounts)))
	for _, a := range cl.accounts {
		out = append(out, a[:]...)
	}
	out = binary.AppendUvarint(out, uint64(len(cl.slots)))
	for _, s := range cl.slots {
		out = append(out, s.addr[:]...)
		out = append(out, s.slot[:]...)
	}
	return out
}

func decodeChangeList(v []byte) (*changeList, error) {
	bad := func(what string) error { return fmt.Errorf("%w: change list %s", ErrCorrupt, what) }
	na, n := readUvarint(v)
	if n <= 0 || na > uint64(len(v))/20 {
		return nil, bad("account count")
	}
	v = v[n:]
	if uint64(len(v)) < na*20 {
		return nil, bad("accounts truncated")
	}
	cl := &changeList{accounts: make([]common.Address, na)}
	for i := range cl.accounts {
		copy(cl.accounts[i][:], v[:20])
		v = v[20:]
	}
	ns, n := readUvarint(v)
	if n <= 0 || ns > uint64(len(v))/52 {
		return nil, bad("slot count")
	}
	v = v[n:]
	if uint64(len(v)) != ns*52 {
		return nil, bad("slots length")
	}
	cl.slots = make([]slotRef, ns)
	for i := range cl.slots {
		copy(cl.slots[i].addr[:], v[:20])
		copy(cl.slots[i].slot[:], v[20:52])
		v = v[52:]
	}
	return cl, nil
}

// encodeTxLookup: blockhash(32) | num BE8 | index BE8.
func encodeTxLookup(l TxLookup) []byte {
	out := make([]byte, 0, 48)
	out = append(out, l.BlockHash[:]...)
	out = binary.BigEndian.AppendUint64(out, l.BlockNumber)
	return binary.BigEndian.AppendUint64(out, l.Index)
}

func decodeTxLookup(v []byte) (TxLookup, error) {
	if len(v) != 48 {
		return TxLookup{}, fmt.Errorf("%w: tx lookup of %d bytes", ErrCorrupt, len(v))
	}
	return TxLookup{
		BlockHash:   common.BytesToHash(v[:32]),
		BlockNumber: binary.BigEndian.Uint64(v[32:40]),
		Index:       binary.BigEndian.Uint64(v[40:48]),
	}, nil
}

// readUvarint is binary.Uvarint that also rejects non-minimal encodings, so
// every value has exactly one encoding. n <= 0 means invalid.
func readUvarint(b []byte) (uint64, int) {
	x, n := binary.Uvarint(b)
	if n > 0 && n != len(binary.AppendUvarint(nil, x)) {
		return 0, -1
	}
	return x, n
}
