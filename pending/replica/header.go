package replica

import (
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus/misc/eip4844"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/pending/stream"
)

// headerFrom is the header template of the block base opens, on parent:
// what the message carries (number, parent hash, timestamp, fee recipient,
// prev-randao, gas limit, base fee, extra data, parent beacon root) and
// what is derived exactly as pending.NextHeader derives it for the
// sequencer (post-merge constants, the empty withdrawals root from
// Shanghai, excess blob gas from the parent and zero blob gas used from
// Cancun, the empty requests hash placeholder from Prague).
func headerFrom(cfg *params.ChainConfig, parent *types.Header, base *stream.Base) *types.Header {
	num := new(big.Int).SetUint64(uint64(base.BlockNumber))
	t := uint64(base.Timestamp)
	h := &types.Header{
		ParentHash:  base.ParentHash,
		UncleHash:   types.EmptyUncleHash,
		Coinbase:    base.FeeRecipient,
		TxHash:      types.EmptyTxsHash,
		ReceiptHash: types.EmptyReceiptsHash,
		Difficulty:  new(big.Int),
		Number:      num,
		GasLimit:    uint64(base.GasLimit),
		Time:        t,
		Extra:       common.CopyBytes(base.ExtraData),
		MixDigest:   base.PrevRandao,
	}
	if cfg.IsLondon(num) {
		h.BaseFee = new(big.Int)
		if base.BaseFeePerGas != nil {
			h.BaseFee.Set(base.BaseFeePerGas.ToInt())
		}
	}
	if cfg.IsShanghai(num, t) {
		h.WithdrawalsHash = &types.EmptyWithdrawalsHash
	}
	if cfg.IsCancun(num, t) {
		excess := eip4844.CalcExcessBlobGas(cfg, parent, t)
		used := uint64(0)
		root := base.ParentBeaconBlockRoot
		h.ExcessBlobGas, h.BlobGasUsed, h.ParentBeaconRoot = &excess, &used, &root
	}
	if cfg.IsPrague(num, t) {
		h.RequestsHash = &types.EmptyRequestsHash
	}
	return h
}
