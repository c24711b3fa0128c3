package eth

// txpool_content, txpool_contentFrom, txpool_status and txpool_inspect:
// the pool's transactions in go-ethereum's shapes. "pending" are the
// executable ones (each sender's consecutive run of nonces from its nonce
// in the pending state), "queued" those behind a nonce gap. Keys are the
// sender's checksummed address and the nonce in decimal, as go-ethereum's.
// Pre-confirmed transactions have left the pool (they are in the pending
// block). A node whose pool cannot list its content (a replica forwarding
// to its sequencer, a read-only node) answers an empty pool.
//
// The answer is bounded by the pool's own bounds (sequencer.PoolConfig
// MaxTxs, MaxBytes) and the transport's response size limit.

import (
	"context"
	"fmt"
	"strconv"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tipnode/tipnode/rpc"
)

// registerTxPool installs the txpool_* methods.
func (a *API) registerTxPool(s *rpc.Server) {
	s.Register("txpool_content", a.txpoolContent)
	s.Register("txpool_contentFrom", a.txpoolContentFrom)
	s.Register("txpool_status", a.txpoolStatus)
	s.Register("txpool_inspect", a.txpoolInspect)
}

// poolContent is implemented by pools that list their transactions
// (*sequencer.Pool).
type poolContent interface {
	Content(sender *common.Address) map[common.Address][]*types.Transaction
}

// poolSplit is the pool split into executable and gapped transactions per
// sender, in nonce order.
type poolSplit struct {
	pending, queued map[common.Address][]*types.Transaction
}

// splitPool reads the pool (only sender's when not nil) and classifies
// each sender's transactions against its nonce in the pending state.
func (a *API) splitPool(ctx context.Context, sender *common.Address) (*poolSplit, error) {
	out := &poolSplit{pending: map[common.Address][]*types.Transaction{}, queued: map[common.Address][]*types.Transaction{}}
	pc, ok := a.pool.(poolContent)
	if !ok || a.pool == nil {
		return out, nil
	}
	content := pc.Content(sender)
	if len(content) == 0 {
		return out, nil
	}
	rc, err := a.Resolve(ctx, BlockSelector{Tag: TagPending})
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	for addr, txs := range content {
		acc, err := rc.State().Account(addr)
		if err != nil {
			return nil, err
		}
		next := uint64(0)
		if acc != nil {
			next = acc.Nonce
		}
		for _, tx := range txs {
			switch {
			case tx.Nonce() < next:
				// Pre-confirmed meanwhile: leaving the pool.
			case tx.Nonce() == next:
				out.pending[addr] = append(out.pending[addr], tx)
				next++
			default:
				out.queued[addr] = append(out.queued[addr], tx)
			}
		}
	}
	return out, nil
}

// byNonce is one sender's transactions keyed by decimal nonce.
func byNonce[T any](txs []*types.Transaction, f func(*types.Transaction) T) map[string]T {
	m := make(map[string]T, len(txs))
	for _, tx := range txs {
		m[strconv.FormatUint(tx.Nonce(), 10)] = f(tx)
	}
	return m
}

func bySender[T any](group map[common.Address][]*types.Transaction, f func(*types.Transaction) T) map[string]map[string]T {
	m := make(map[string]map[string]T, len(group))
	for addr, txs := range group {
		m[addr.Hex()] = byNonce(txs, f)
	}
	return m
}

func (a *API) poolTx(tx *types.Transaction) *rpcTransaction {
	return newRPCTransaction(tx, nil, nil, a.genesis.Config)
}

func (a *API) txpoolContent(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(0); err != nil {
		return nil, err
	}
	sp, err := a.splitPool(ctx, nil)
	if err != nil {
		return nil, err
	}
	return map[string]map[string]map[string]*rpcTransaction{
		"pending": bySender(sp.pending, a.poolTx),
		"queued":  bySender(sp.queued, a.poolTx),
	}, nil
}

func (a *API) txpoolContentFrom(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(1); err != nil {
		return nil, err
	}
	var addr common.Address
	if err := p.Decode(0, "address", &addr); err != nil {
		return nil, err
	}
	sp, err := a.splitPool(ctx, &addr)
	if err != nil {
		return nil, err
	}
	return map[string]map[string]*rpcTransaction{
		"pending": byNonce(sp.pending[addr], a.poolTx),
		"queued":  byNonce(sp.queued[addr], a.poolTx),
	}, nil
}

func (a *API) txpoolStatus(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(0); err != nil {
		return nil, err
	}
	sp, err := a.splitPool(ctx, nil)
	if err != nil {
		return nil, err
	}
	count := func(g map[common.Address][]*types.Transaction) hexutil.Uint {
		n := 0
		for _, txs := range g {
			n += len(txs)
		}
		return hexutil.Uint(n)
	}
	return map[string]hexutil.Uint{"pending": count(sp.pending), "queued": count(sp.queued)}, nil
}

// inspectLine is go-ethereum's txpool_inspect summary of a transaction.
func inspectLine(tx *types.Transaction) string {
	if to := tx.To(); to != nil {
		return fmt.Sprintf("%s: %v wei + %v gas × %v wei", to.Hex(), tx.Value(), tx.Gas(), tx.GasPrice())
	}
	return fmt.Sprintf("contract creation: %v wei + %v gas × %v wei", tx.Value(), tx.Gas(), tx.GasPrice())
}

func (a *API) txpoolInspect(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(0); err != nil {
		return nil, err
	}
	sp, err := a.splitPool(ctx, nil)
	if err != nil {
		return nil, err
	}
	return map[string]map[string]map[string]string{
		"pending": bySender(sp.pending, inspectLine),
		"queued":  bySender(sp.queued, inspectLine),
	}, nil
}
