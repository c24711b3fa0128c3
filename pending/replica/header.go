package replica

import (
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/op"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/stream"
)

// headerFrom is the header template of the block base opens, on parent:
// what the message carries (number, parent hash, timestamp, fee recipient,
// prev-randao, gas limit, base fee, extra data, parent beacon root), the
// rest derived by pending.BuildHeader exactly as for the sequencer's
// blocks.
//
// On an OP chain (exec.OP() != nil) the OP header rules apply: the base fee
// must be op.CalcBaseFee of the parent (Canyon denominator, Holocene
// parameters from the parent's extraData, Jovian's DA footprint and
// minimum) and the extraData the fork's form (op.VerifyExtraData), else the
// block is refused (ErrMismatch, field base_fee or extra_data); the blob gas
// fields are op.BlobGasFields' (excessBlobGas 0; blobGasUsed the DA
// footprint, kept current by the executor); from Isthmus the withdrawals
// root is the node's own, never the stream's (OP subblocks send it zero):
// the L2ToL1MessagePasser's storage root as of the parent's sealed header
// (computed by the executor's SealHeader when the parent was finished in
// memory, verified at import when canonical) until the block is finished,
// when Builder.Finish computes it from the block's own state as the
// sequencer's seal does.
func headerFrom(exec *chain.Executor, parent *types.Header, base *stream.Base) (*types.Header, error) {
	c := pending.BlockContext{
		ParentHash: base.ParentHash,
		Number:     new(big.Int).SetUint64(uint64(base.BlockNumber)),
		Time:       uint64(base.Timestamp),
		Coinbase:   base.FeeRecipient,
		GasLimit:   uint64(base.GasLimit),
		Extra:      base.ExtraData,
		PrevRandao: base.PrevRandao,
		BeaconRoot: base.ParentBeaconBlockRoot,
	}
	if base.BaseFeePerGas != nil {
		c.BaseFee = base.BaseFeePerGas.ToInt()
	}
	h := pending.BuildHeader(exec.Config(), parent, c)
	cfg := exec.OP()
	if cfg == nil {
		return h, nil
	}
	want, err := op.CalcBaseFee(cfg, parent, h.Time)
	if err != nil {
		return nil, fmt.Errorf("%w: base_fee: block %d: %v", ErrMismatch, h.Number, err)
	}
	if h.BaseFee == nil || h.BaseFee.Cmp(want) != 0 {
		return nil, fmt.Errorf("%w: base_fee: block %d announces base fee %v, the OP rules give %v", ErrMismatch, h.Number, h.BaseFee, want)
	}
	if err := op.VerifyExtraData(cfg, h); err != nil {
		return nil, fmt.Errorf("%w: extra_data: block %d: %v", ErrMismatch, h.Number, err)
	}
	h.BlobGasUsed, h.ExcessBlobGas = op.BlobGasFields(cfg, h.Time, 0)
	if h.WithdrawalsHash != nil && cfg.IsIsthmus(h.Time) && parent.WithdrawalsHash != nil && cfg.IsIsthmus(parent.Time) {
		root := *parent.WithdrawalsHash
		h.WithdrawalsHash = &root
	}
	return h, nil
}
