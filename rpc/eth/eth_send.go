package eth

// eth_sendRawTransaction: decode a signed transaction in its canonical
// binary form (blob transactions in the network form with their sidecar),
// apply the RPC-level checks, and hand it to the pool.

import (
	"context"
	"errors"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tipnode/tipnode/rpc"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// registerSend installs eth_sendRawTransaction.
func (a *API) registerSend(s *rpc.Server) {
	s.Register("eth_sendRawTransaction", a.ethSendRawTransaction)
}

// Size limits of one raw transaction (as go-ethereum's pools): 128 KiB, or
// 1 MiB for a blob transaction carrying its sidecar.
const (
	maxRawTxBytes     = 128 * 1024
	maxRawBlobTxBytes = 1024 * 1024
)

func (a *API) ethSendRawTransaction(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(1); err != nil {
		return nil, err
	}
	tx, err := decodeRawTx(p)
	if err != nil {
		return nil, err
	}
	if err := a.submit(tx); err != nil {
		return nil, err
	}
	return tx.Hash(), nil
}

// decodeRawTx decodes argument 0, a signed transaction in its binary form,
// within the size limits.
func decodeRawTx(p rpc.Params) (*types.Transaction, error) {
	var raw hexutil.Bytes
	if err := p.Decode(0, "transaction", &raw); err != nil {
		return nil, err
	}
	if len(raw) == 0 {
		return nil, p.ArgError(0, "transaction", "empty transaction")
	}
	limit := maxRawTxBytes
	if raw[0] == types.BlobTxType {
		limit = maxRawBlobTxBytes
	}
	if len(raw) > limit {
		return nil, rpc.ErrLimit("transaction too large: %d bytes (limit %d)", len(raw), limit)
	}
	tx := new(types.Transaction)
	if len(raw) > 0 && raw[0] == chaintypes.DepositTxType {
		return nil, p.ArgError(0, "transaction", "deposit transactions (type 0x7e) are derived from L1 by the rollup and cannot be sent")
	}
	if err := tx.UnmarshalBinary(raw); err != nil {
		return nil, p.ArgError(0, "transaction", "cannot decode transaction: %v", err)
	}
	return tx, nil
}

// submit applies the RPC-level checks (replay protection, fee cap) and
// hands tx to the pool (eth_sendRawTransaction, eth_sendTransaction).
func (a *API) submit(tx *types.Transaction) error {
	if a.pool == nil {
		return ErrNoTxPool
	}
	if tx.Type() == types.LegacyTxType && !tx.Protected() {
		return ErrUnprotectedTx
	}
	fee := new(big.Int).Mul(tx.GasPrice(), new(big.Int).SetUint64(tx.Gas()))
	if feeCap := a.cfg.TxFeeCap; feeCap != nil && feeCap.Sign() > 0 && fee.Cmp(feeCap) > 0 {
		return fmt.Errorf("%w: %s wei > %s wei", ErrTxFeeTooHigh, fee, feeCap)
	}
	if err := a.pool.Add(tx); err != nil {
		var e *rpc.Error
		if errors.As(err, &e) {
			return err
		}
		return fmt.Errorf("%w: %v", ErrTxRejected, err)
	}
	return nil
}
