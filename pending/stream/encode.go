package stream

import (
	"encoding/binary"
	"fmt"

	"github.com/ethereum/go-ethereum/beacon/engine"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/tipnode/tipnode/pending"
)

// payloadIDDomain separates tipnode's payload ids from other hashes.
const payloadIDDomain = "tipnode/preconf/payload_id/v1"

// PayloadIDOf derives the payload id of the block whose context is b: the
// first 8 bytes of
//
//	keccak256("tipnode/preconf/payload_id/v1" ‖ parent_hash ‖
//	          parent_beacon_block_root ‖ fee_recipient ‖ prev_randao ‖
//	          uint64be(block_number) ‖ uint64be(gas_limit) ‖
//	          uint64be(timestamp) ‖ uint256be(base_fee_per_gas, 0 if absent) ‖
//	          extra_data)
//
// It depends only on the fields of Base, so every node that publishes the
// same block (the sequencer, or a replica re-publishing what it validated)
// derives the same id without coordination.
func PayloadIDOf(b *Base) engine.PayloadID {
	buf := make([]byte, 0, len(payloadIDDomain)+32*4+20+8*3+len(b.ExtraData))
	buf = append(buf, payloadIDDomain...)
	buf = append(buf, b.ParentHash[:]...)
	buf = append(buf, b.ParentBeaconBlockRoot[:]...)
	buf = append(buf, b.FeeRecipient[:]...)
	buf = append(buf, b.PrevRandao[:]...)
	buf = binary.BigEndian.AppendUint64(buf, uint64(b.BlockNumber))
	buf = binary.BigEndian.AppendUint64(buf, uint64(b.GasLimit))
	buf = binary.BigEndian.AppendUint64(buf, uint64(b.Timestamp))
	var fee [32]byte
	if b.BaseFeePerGas != nil {
		b.BaseFeePerGas.ToInt().FillBytes(fee[:])
	}
	buf = append(buf, fee[:]...)
	buf = append(buf, b.ExtraData...)
	var id engine.PayloadID
	copy(id[:], crypto.Keccak256(buf)[:8])
	return id
}

// BaseOf is the block context of a pending header (what index 0 carries).
func BaseOf(h *types.Header) *Base {
	b := &Base{
		ParentHash:   h.ParentHash,
		FeeRecipient: h.Coinbase,
		PrevRandao:   h.MixDigest,
		BlockNumber:  hexutil.Uint64(h.Number.Uint64()),
		GasLimit:     hexutil.Uint64(h.GasLimit),
		Timestamp:    hexutil.Uint64(h.Time),
		ExtraData:    common.CopyBytes(h.Extra),
	}
	if b.ExtraData == nil {
		b.ExtraData = hexutil.Bytes{}
	}
	if h.ParentBeaconRoot != nil {
		b.ParentBeaconBlockRoot = *h.ParentBeaconRoot
	}
	if h.BaseFee != nil {
		b.BaseFeePerGas = (*hexutil.Big)(h.BaseFee)
	}
	return b
}

// Encode turns one published snapshot into its message: the payload id of
// its block (PayloadIDOf its header's Base), its index, Base on index 0,
// and a Diff with the transactions this snapshot pre-confirmed
// (NewTransactions, EIP-2718, blob transactions without sidecar) and the
// block's cumulative totals after them: gas used, blob gas used, logs
// bloom, and the receipts root derived over ALL the block's receipts so
// far (Snapshot.ReceiptsRoot: the sealed block's receipts root once the
// block holds exactly these transactions).
// StateRoot is the snapshot's state root and BlockHash the hash of the
// block sealed as of it (Snapshot.StateRoot, Snapshot.BlockHash; zero when
// the node keeps no state trie, when its computation failed:
// Snapshot.RootErr, and when the publisher's Roots is off: zero is "not
// announced", never a claim); Withdrawals empty; WithdrawalsRoot is the
// header's (the empty list's root without one; on an OP chain from
// Isthmus the message passer's storage root as of the snapshot when it
// has a state root, else zero).
//
// Encode is chain-agnostic: on an OP chain the snapshot holds what the
// sequencer put there, which is what the stream carries: index 0 the
// L1-info deposit and the block's user deposits (chaintypes.Deposit, EIP-2718
// type 0x7e), Base the header's Holocene/Jovian extraData, and
// Diff.BlobGasUsed the header's blobGasUsed, the block's DA footprint from
// Jovian.
func Encode(s *pending.Snapshot) (*Payload, error) {
	h := s.Header()
	base := BaseOf(h)
	p := &Payload{
		PayloadID: PayloadIDOf(base),
		Index:     s.Index(),
		Diff: Diff{
			ReceiptsRoot:    s.ReceiptsRoot(),
			LogsBloom:       h.Bloom,
			GasUsed:         hexutil.Uint64(h.GasUsed),
			Withdrawals:     []*types.Withdrawal{},
			WithdrawalsRoot: types.EmptyWithdrawalsHash,
		},
		Metadata: Metadata{BlockNumber: h.Number.Uint64()},
	}
	if root, ok := s.StateRoot(); ok {
		p.Diff.StateRoot, p.Diff.BlockHash = root, s.BlockHash()
	}
	if s.Index() == 0 {
		p.Base = base
	}
	if h.WithdrawalsHash != nil {
		// An OP chain from Isthmus: the L2ToL1MessagePasser's storage root
		// the block will seal with (L1: the empty list's root, as above).
		p.Diff.WithdrawalsRoot = *h.WithdrawalsHash
	}
	if h.BlobGasUsed != nil {
		v := hexutil.Uint64(*h.BlobGasUsed)
		p.Diff.BlobGasUsed = &v
	}
	txs := s.NewTransactions()
	p.Diff.Transactions = make([]hexutil.Bytes, len(txs))
	for i, tx := range txs {
		if t, ok := tx.(*types.Transaction); ok {
			tx = t.WithoutBlobTxSidecar()
		}
		b, err := tx.MarshalBinary()
		if err != nil {
			return nil, fmt.Errorf("%w: transaction %s: %v", ErrEncode, tx.Hash().Hex(), err)
		}
		p.Diff.Transactions[i] = b
	}
	return p, nil
}
