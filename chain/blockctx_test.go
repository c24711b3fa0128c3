package chain

import (
	"errors"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
)

// mapHeaders is a HeaderSource over a map of headers by number.
type mapHeaders map[uint64]*types.Header

func (m mapHeaders) HeaderByHash(hash common.Hash) (*types.Header, error) {
	for _, h := range m {
		if h.Hash() == hash {
			return h, nil
		}
	}
	return nil, errors.New("unknown header")
}

func (m mapHeaders) HeaderByNumber(n uint64) (*types.Header, error) {
	if h, ok := m[n]; ok {
		return h, nil
	}
	return nil, errors.New("unknown header")
}

// chainOf returns headers 0..n, each the child of the one before, with
// extra in block 0 (two chains with different extras have different
// hashes at every height).
func chainOf(n uint64, extra byte) mapHeaders {
	m := mapHeaders{}
	var parent common.Hash
	for i := uint64(0); i <= n; i++ {
		h := &types.Header{ParentHash: parent, Number: new(big.Int).SetUint64(i), Difficulty: new(big.Int),
			BaseFee: big.NewInt(int64(1000*int(extra) + int(i))), Time: 100 + i, GasLimit: 30_000_000}
		if i == 0 {
			h.Extra = []byte{extra}
		}
		m[i] = h
		parent = h.Hash()
	}
	return m
}

// TestBlockContextReuse: BlockContext answers every header with its own
// context whether or not it reuses the last one built, and BLOCKHASH is
// always answered from the call's own headers.
func TestBlockContextReuse(t *testing.T) {
	e := NewExecutor(params.MergedTestChainConfig)
	a, b := chainOf(8, 1), chainOf(8, 2)
	state := NewStateDB(nil)
	for _, step := range []struct {
		headers mapHeaders
		n       uint64
	}{{a, 8}, {a, 8}, {a, 7}, {a, 8}, {b, 8}, {a, 8}, {b, 8}, {b, 8}} {
		h := step.headers[step.n]
		ctx := e.BlockContext(h, step.headers, state)
		if ctx.BlockNumber.Uint64() != step.n || ctx.Time != h.Time || ctx.BaseFee.Cmp(h.BaseFee) != 0 || ctx.Random == nil || *ctx.Random != h.MixDigest {
			t.Fatalf("block %d: context of block %d (time %d, base fee %v)", step.n, ctx.BlockNumber, ctx.Time, ctx.BaseFee)
		}
		if got, want := ctx.GetHash(step.n-2), step.headers[step.n-2].Hash(); got != want {
			t.Fatalf("block %d: BLOCKHASH(%d) = %x, want %x", step.n, step.n-2, got, want)
		}
	}
	if e.lastCtx.Load() == nil {
		t.Fatal("no context kept for reuse")
	}
	// The same header, read through headers that lack its ancestors: the
	// failed BLOCKHASH read is this call's (its state's), not the last's.
	first, second := NewStateDB(nil), NewStateDB(nil)
	e.BlockContext(a[8], a, first).GetHash(6)
	e.BlockContext(a[8], mapHeaders{}, second).GetHash(6)
	if first.Error() != nil || second.Error() == nil {
		t.Fatalf("header read errors: first call %v, second %v; want only the second's", first.Error(), second.Error())
	}
}
