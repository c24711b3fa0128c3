package replica

import (
	"math/big"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/stream"
)

// headerFrom is the header template of the block base opens, on parent:
// what the message carries (number, parent hash, timestamp, fee recipient,
// prev-randao, gas limit, base fee, extra data, parent beacon root), the
// rest derived by pending.BuildHeader exactly as for the sequencer's
// blocks.
func headerFrom(cfg *params.ChainConfig, parent *types.Header, base *stream.Base) *types.Header {
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
	return pending.BuildHeader(cfg, parent, c)
}
