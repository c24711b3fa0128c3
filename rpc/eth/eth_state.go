package eth

import (
	"context"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tipnode/tipnode/pending/sequencer"
	"github.com/tipnode/tipnode/rpc"
)

// registerState installs the account and storage getters.
func (a *API) registerState(s *rpc.Server) {
	s.Register("eth_getStorageAt", a.getStorageAt, rpc.HonoursContext)
	s.Register("eth_getStorageValues", a.getStorageValues, rpc.HonoursContext)
	s.Register("eth_getBalance", a.getBalance, rpc.HonoursContext)
	s.Register("eth_getCode", a.getCode, rpc.HonoursContext)
	s.Register("eth_getTransactionCount", a.getTransactionCount, rpc.HonoursContext)
}

// maxStorageValuesSlots caps the slots of one eth_getStorageValues request.
const maxStorageValuesSlots = 10_000

// decodeSlot parses a storage key: 1–64 hex digits, left-padded to 32 bytes.
func decodeSlot(p rpc.Params, i int) (common.Hash, error) {
	var s string
	if err := p.Decode(i, "storage key", &s); err != nil {
		return common.Hash{}, err
	}
	w, err := parseSlot(s)
	if err != nil {
		return common.Hash{}, rpc.ErrInvalidParams("%s", err.Error())
	}
	return w, nil
}

func parseSlot(s string) (common.Hash, error) {
	h := s
	if len(h) >= 2 && h[0] == '0' && (h[1] == 'x' || h[1] == 'X') {
		h = h[2:]
	}
	if len(h) > 64 {
		return common.Hash{}, fmt.Errorf("storage key too long (want at most 32 bytes): %s", quoteInput(s))
	}
	w, err := ParseWord(s)
	if err != nil {
		return common.Hash{}, fmt.Errorf("invalid hex in storage key: %s", quoteInput(s))
	}
	return common.Hash(w), nil
}

// accountArgs decodes (address, block?) of the account getters.
func accountArgs(p rpc.Params) (common.Address, BlockSelector, error) {
	var addr common.Address
	if err := p.AtMost(2); err != nil {
		return addr, BlockSelector{}, err
	}
	if err := p.Decode(0, "address", &addr); err != nil {
		return addr, BlockSelector{}, err
	}
	sel, err := DecodeSelector(p, 1, "block")
	return addr, sel, err
}

// withAccount decodes (address, block) of the account getters and reads
// the account through one resolved block.
func (a *API) withAccount(ctx context.Context, p rpc.Params, fn func(blk *ReadContext, addr common.Address) (any, error)) (any, error) {
	addr, sel, err := accountArgs(p)
	if err != nil {
		return nil, err
	}
	blk, err := a.Resolve(ctx, sel)
	if err != nil {
		return nil, err
	}
	defer blk.Close()
	return fn(blk, addr)
}

func (a *API) getBalance(ctx context.Context, p rpc.Params) (any, error) {
	return a.withAccount(ctx, p, func(blk *ReadContext, addr common.Address) (any, error) {
		acc, err := blk.State().Account(addr)
		if err != nil || acc == nil {
			return (*hexutil.Big)(new(big.Int)), err
		}
		return (*hexutil.Big)(acc.Balance.ToBig()), nil
	})
}

// getTransactionCount is the account's nonce at the block. At "pending" it
// also counts the sender's pooled transactions (the run of consecutive
// nonces from its pre-confirmed nonce): the nonce its next transaction must
// take, as go-ethereum and anvil answer, so that a client sending several
// transactions in a row never reuses one.
func (a *API) getTransactionCount(ctx context.Context, p rpc.Params) (any, error) {
	addr, sel, err := accountArgs(p)
	if err != nil {
		return nil, err
	}
	n, err := a.nonceAt(ctx, addr, sel)
	return hexutil.Uint64(n), err
}

// nonceAt is addr's nonce at sel; at "pending", pool included.
func (a *API) nonceAt(ctx context.Context, addr common.Address, sel BlockSelector) (uint64, error) {
	var pooled sequencer.PooledNonces
	if sel.Tag == TagPending && a.pool != nil {
		pooled = a.pool.Nonces(addr) // before the state read (see sequencer.Pool.Nonces)
	}
	blk, err := a.Resolve(ctx, sel)
	if err != nil {
		return 0, err
	}
	defer blk.Close()
	acc, err := blk.State().Account(addr)
	if err != nil {
		return 0, err
	}
	var n uint64
	if acc != nil {
		n = acc.Nonce
	}
	return pooled.Next(n), nil
}

func (a *API) getCode(ctx context.Context, p rpc.Params) (any, error) {
	return a.withAccount(ctx, p, func(blk *ReadContext, addr common.Address) (any, error) {
		st := blk.State()
		acc, err := st.Account(addr)
		if err != nil || acc == nil || acc.CodeHash == types.EmptyCodeHash {
			return hexutil.Bytes{}, err
		}
		code, err := st.Code(acc.CodeHash)
		return hexutil.Bytes(code), err
	})
}

func (a *API) getStorageAt(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(3); err != nil {
		return nil, err
	}
	var addr common.Address
	if err := p.Decode(0, "address", &addr); err != nil {
		return nil, err
	}
	slot, err := decodeSlot(p, 1)
	if err != nil {
		return nil, err
	}
	blk, err := a.resolveParam(ctx, p, 2)
	if err != nil {
		return nil, err
	}
	defer blk.Close()
	v, err := blk.State().Storage(addr, slot)
	if err != nil {
		return nil, err
	}
	return hexutil.Bytes(v[:]), nil
}

// getStorageValues implements eth_getStorageValues({address: [slots]}, block):
// many slots of many accounts from one consistent view.
func (a *API) getStorageValues(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(2); err != nil {
		return nil, err
	}
	var req map[common.Address][]string
	if err := p.Decode(0, "storage request", &req); err != nil {
		return nil, err
	}
	if len(req) == 0 {
		return nil, rpc.ErrInvalidParams("empty request")
	}
	total := 0
	keys := make(map[common.Address][]common.Hash, len(req))
	for addr, slots := range req {
		total += len(slots)
		if total > maxStorageValuesSlots {
			return nil, rpc.ErrInvalidParams("too many slots (limit %d)", maxStorageValuesSlots)
		}
		ks := make([]common.Hash, len(slots))
		for i, s := range slots {
			k, err := parseSlot(s)
			if err != nil {
				return nil, rpc.ErrInvalidParams("account %s slot %d: %v", addr.Hex(), i, err)
			}
			ks[i] = k
		}
		keys[addr] = ks
	}
	blk, err := a.resolveParam(ctx, p, 1)
	if err != nil {
		return nil, err
	}
	defer blk.Close()
	st := blk.State()
	out := make(map[common.Address][]hexutil.Bytes, len(keys))
	for addr, ks := range keys {
		vals := make([]hexutil.Bytes, len(ks))
		for i, k := range ks {
			v, err := st.Storage(addr, k)
			if err != nil {
				return nil, err
			}
			vals[i] = v[:]
		}
		out[addr] = vals
	}
	return out, nil
}
