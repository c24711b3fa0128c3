package pending

import (
	"encoding/binary"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus/misc/eip1559"
	"github.com/ethereum/go-ethereum/consensus/misc/eip4844"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
)

// HeaderParams are the sequencer's choices for a new block.
type HeaderParams struct {
	Coinbase common.Address
	// GasLimit is the desired gas limit; each block moves toward it by at
	// most the protocol's 1/1024 step (core.CalcGasLimit). 0 keeps the
	// parent's limit.
	GasLimit uint64
	Extra    []byte
}

// NextHeader returns the header template of the block after parent, built
// at time now: Number = parent+1; Time = now in seconds, but at least
// parent.Time+1 (with sub-second block times the chain's clock runs ahead of
// the wall clock); Difficulty 0 and Nonce 0 (post-merge); MixDigest (the
// prev-randao value) = keccak256(parent hash ‖ number); BaseFee from
// EIP-1559; and, per active fork, an empty withdrawals root (Shanghai), blob
// gas fields from EIP-4844/7918 and ParentBeaconRoot = keccak256("tipnode
// beacon root" ‖ parent hash) (Cancun; tipnode has no beacon chain, so the
// root is derived), and the empty requests hash (Prague; replaced by the
// real requests hash at seal). Root is set at seal (the block's state trie
// update, Builder.Seal; zero on a fork, which keeps no trie). GasUsed, Bloom and BlobGasUsed are
// kept current in every snapshot's header; TxHash and ReceiptHash are set at
// seal (readers of the pending block derive them from the snapshot's
// transactions and receipts, so building a snapshot stays proportional to
// its new diff).
func NextHeader(cfg *params.ChainConfig, parent *types.Header, now time.Time, p HeaderParams) *types.Header {
	num := new(big.Int).Add(parent.Number, common.Big1)
	t := uint64(max(now.Unix(), 0))
	if t <= parent.Time {
		t = parent.Time + 1
	}
	gasLimit := parent.GasLimit
	if p.GasLimit != 0 {
		gasLimit = core.CalcGasLimit(parent.GasLimit, p.GasLimit)
	}
	var nb [8]byte
	binary.BigEndian.PutUint64(nb[:], num.Uint64())
	parentHash := parent.Hash()
	c := BlockContext{
		ParentHash: parentHash,
		Number:     num,
		Time:       t,
		Coinbase:   p.Coinbase,
		GasLimit:   gasLimit,
		Extra:      p.Extra,
		PrevRandao: crypto.Keccak256Hash(parentHash[:], nb[:]),
		BeaconRoot: crypto.Keccak256Hash([]byte("tipnode beacon root"), parentHash[:]),
	}
	if cfg.IsLondon(num) {
		c.BaseFee = eip1559.CalcBaseFee(cfg, parent)
	}
	return BuildHeader(cfg, parent, c)
}

// BlockContext is what a driver chooses for a pending block's header (the
// Sequencer through NextHeader, a stream replica from the message that
// opens the block).
type BlockContext struct {
	ParentHash common.Hash
	Number     *big.Int
	Time       uint64
	Coinbase   common.Address
	GasLimit   uint64
	Extra      []byte // copied
	PrevRandao common.Hash
	BaseFee    *big.Int    // used from London (nil: zero)
	BeaconRoot common.Hash // the parent beacon root, used from Cancun
}

// BuildHeader is the header template of a pending block on parent with the
// context c, and what every pending block derives the same way: the
// post-merge constants, per active fork an empty withdrawals root
// (Shanghai), the blob gas fields from EIP-4844/7918 with the excess from
// parent and zero used (Cancun), and the empty requests hash placeholder
// (Prague).
func BuildHeader(cfg *params.ChainConfig, parent *types.Header, c BlockContext) *types.Header {
	num, t := c.Number, c.Time
	h := &types.Header{
		ParentHash:  c.ParentHash,
		UncleHash:   types.EmptyUncleHash,
		Coinbase:    c.Coinbase,
		TxHash:      types.EmptyTxsHash,
		ReceiptHash: types.EmptyReceiptsHash,
		Difficulty:  new(big.Int),
		Number:      num,
		GasLimit:    c.GasLimit,
		Time:        t,
		Extra:       common.CopyBytes(c.Extra),
		MixDigest:   c.PrevRandao,
	}
	if cfg.IsLondon(num) {
		h.BaseFee = new(big.Int)
		if c.BaseFee != nil {
			h.BaseFee.Set(c.BaseFee)
		}
	}
	if cfg.IsShanghai(num, t) {
		h.WithdrawalsHash = &types.EmptyWithdrawalsHash
	}
	if cfg.IsCancun(num, t) {
		excess := eip4844.CalcExcessBlobGas(cfg, parent, t)
		used := uint64(0)
		root := c.BeaconRoot
		h.ExcessBlobGas, h.BlobGasUsed, h.ParentBeaconRoot = &excess, &used, &root
	}
	if cfg.IsPrague(num, t) {
		h.RequestsHash = &types.EmptyRequestsHash
	}
	return h
}
