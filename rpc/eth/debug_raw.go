package eth

// The debug_getRaw* methods: consensus encodings, as go-ethereum answers
// them. debug_getRawBlock and debug_getRawHeader give the RLP of a block
// or header, debug_getRawReceipts the binary (EIP-2718) encoding of each
// receipt of a block, debug_getRawTransaction the binary encoding of a
// transaction: canonical, pre-confirmed or pooled. Followers of a tipnode
// fetch raw blocks (cheaper to encode and decode than JSON). A block or
// transaction the node does not have is null; the pending block, not
// sealed, has no raw form (-32602).

import (
	"context"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/rlp"

	"github.com/tipnode/tipnode/rpc"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// registerRaw installs the debug_getRaw* methods.
func (a *API) registerRaw(s *rpc.Server) {
	s.Register("debug_getRawBlock", blockMethod(1, false, a.rawBlock))
	s.Register("debug_getRawHeader", blockMethod(1, false, a.rawHeader))
	s.Register("debug_getRawReceipts", blockMethod(1, false, a.rawReceipts))
	s.Register("debug_getRawTransaction", a.txMethod(a.rawTransaction))
}

// noRawPending refuses the pending block for the raw block methods.
func noRawPending(sel BlockSelector) error {
	if sel.Tag == TagPending {
		return rpc.ArgError(0, "block", "the pending block has no raw encoding")
	}
	return nil
}

// rawBlock: debug_getRawBlock(block): the RLP of a block.
func (a *API) rawBlock(ctx context.Context, sel BlockSelector, p rpc.Params) (any, error) {
	if err := noRawPending(sel); err != nil {
		return nil, err
	}
	return a.withBlock(ctx, sel, func(c *chainBlock) (any, error) {
		enc, err := rlp.EncodeToBytes(c.Block)
		if err != nil {
			return nil, err
		}
		return hexutil.Bytes(enc), nil
	})
}

// rawHeader: debug_getRawHeader(block): the RLP of a block's header.
func (a *API) rawHeader(ctx context.Context, sel BlockSelector, p rpc.Params) (any, error) {
	if err := noRawPending(sel); err != nil {
		return nil, err
	}
	return a.withBlock(ctx, sel, func(c *chainBlock) (any, error) {
		enc, err := rlp.EncodeToBytes(c.Block.Header())
		if err != nil {
			return nil, err
		}
		return hexutil.Bytes(enc), nil
	})
}

// rawReceipts: debug_getRawReceipts(block): each receipt's binary
// encoding, in block order.
func (a *API) rawReceipts(ctx context.Context, sel BlockSelector, p rpc.Params) (any, error) {
	if err := noRawPending(sel); err != nil {
		return nil, err
	}
	return a.withBlock(ctx, sel, func(c *chainBlock) (any, error) {
		rs, err := a.receipts(c)
		if err != nil {
			return nil, err
		}
		out := make([]hexutil.Bytes, len(rs))
		for i, r := range rs {
			if out[i], err = r.MarshalBinary(); err != nil {
				return nil, err
			}
		}
		return out, nil
	})
}

// rawTransaction: debug_getRawTransaction(hash): a canonical,
// pre-confirmed or pooled transaction's binary encoding.
func (a *API) rawTransaction(t *foundTx) (any, error) {
	var tx chaintypes.Tx
	if t.Pooled != nil {
		tx = t.Pooled
	}
	switch {
	case t.Block != nil:
		tx = t.Block.Transactions()[t.Index]
	case t.Snap != nil:
		if ptx, _, _, ok := t.Snap.Transaction(t.Hash); ok {
			tx = ptx
		}
	}
	if tx == nil {
		return nil, nil
	}
	enc, err := tx.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return hexutil.Bytes(enc), nil
}
