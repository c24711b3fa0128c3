package stream_test

import (
	"bytes"
	"encoding/json"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/trie"

	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/pendingtest"
	"github.com/tipnode/tipnode/pending/stream"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// sealedReceipts reads the stored receipts of canonical block b with their
// transaction types (what DeriveSha encodes).
func sealedReceipts(t *testing.T, n *pendingtest.Harness, b *chaintypes.Block) chaintypes.Receipts {
	t.Helper()
	view, err := n.DB.View()
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	stored, err := view.Receipts(b.NumberU64(), b.Hash())
	if err != nil {
		t.Fatal(err)
	}
	out := make(chaintypes.Receipts, len(stored))
	for i, r := range stored {
		rr := *r
		rr.Type = b.Transactions()[i].Type()
		rr.Bloom = types.CreateBloom(&rr.Receipt)
		out[i] = &rr
	}
	return out
}

// TestEncodeMatchesSealedBlock builds blocks with the real sequencer (several
// pre-confirmations, transfers and log-emitting deployments), encodes every
// published snapshot, and checks the messages against the SEALED blocks:
// index 0 opens each block with its context, indexes are consecutive, the
// payload id is constant per block, the messages' transactions concatenate
// to the block's, and the cumulative totals after each message equal the
// sealed receipts' prefix (go-ethereum's DeriveSha over them), so that the
// last message carries the sealed header's receipts root, gas used, bloom
// and blob gas used.
func TestEncodeMatchesSealedBlock(t *testing.T) {
	var rec pendingtest.Recorder
	n := newSeqNode(t, pendingtest.Options{OnPublish: rec.Add})
	// Block 1: four pre-confirmations (one interval with nothing new).
	n.Transfer(0)
	n.Transfer(1)
	n.Tick(1)
	n.Tick(1)
	logger(n, 2, 0x11)
	n.Tick(1)
	n.Transfer(0)
	logger(n, 3, 0x22)
	logger(n, 1, 0x33)
	n.Tick(1)
	n.Transfer(2)
	n.Seal()
	// Block 2: one pre-confirmation. Block 3: empty.
	logger(n, 0, 0x44)
	n.Seal()
	n.Seal()

	byBlock := map[uint64][]*stream.Payload{}
	for _, s := range rec.All() {
		p, err := stream.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		byBlock[p.Metadata.BlockNumber] = append(byBlock[p.Metadata.BlockNumber], p)
	}
	ids := map[[8]byte]uint64{}
	for num, wantMsgs := range map[uint64]int{1: 5, 2: 2, 3: 1} {
		msgs := byBlock[num]
		if len(msgs) != wantMsgs {
			t.Fatalf("block %d: %d messages, want %d", num, len(msgs), wantMsgs)
		}
		block := chaintest.CanonicalBlock(t, n.DB, num)
		h := block.Header()
		receipts := sealedReceipts(t, n, block)
		// The sealed roots (the Builder's, derived incrementally) are DeriveSha's.
		if h.TxHash != types.DeriveSha(block.Transactions(), trie.NewStackTrie(nil)) || h.ReceiptHash != types.DeriveSha(receipts, trie.NewStackTrie(nil)) {
			t.Fatalf("block %d: sealed roots %s %s differ from DeriveSha's", num, h.TxHash.Hex(), h.ReceiptHash.Hex())
		}
		// Index 0: the block's context, no transactions, zero totals.
		m0 := msgs[0]
		if m0.Index != 0 || m0.Base == nil || len(m0.Diff.Transactions) != 0 || m0.Diff.GasUsed != 0 || m0.Diff.ReceiptsRoot != types.EmptyReceiptsHash {
			t.Fatalf("block %d opens with %+v", num, m0)
		}
		want := stream.Base{ParentBeaconBlockRoot: *h.ParentBeaconRoot, ParentHash: h.ParentHash, FeeRecipient: h.Coinbase,
			PrevRandao: h.MixDigest, BlockNumber: hexutil.Uint64(num), GasLimit: hexutil.Uint64(h.GasLimit),
			Timestamp: hexutil.Uint64(h.Time), ExtraData: h.Extra, BaseFeePerGas: (*hexutil.Big)(h.BaseFee)}
		if got, _ := json.Marshal(m0.Base); !bytes.Equal(got, mustJSON(t, want)) {
			t.Fatalf("block %d base\n got %s\nwant %s", num, got, mustJSON(t, want))
		}
		if prev, dup := ids[m0.PayloadID]; dup {
			t.Fatalf("blocks %d and %d share payload id %s", prev, num, m0.PayloadID)
		}
		ids[m0.PayloadID] = num
		if m0.PayloadID != stream.PayloadIDOf(&want) {
			t.Fatalf("payload id %s is not derived from the base", m0.PayloadID)
		}
		var txs []hexutil.Bytes
		for i, m := range msgs {
			if m.Index != uint64(i) || m.PayloadID != m0.PayloadID || (i > 0 && m.Base != nil) {
				t.Fatalf("block %d message %d: index %d, id %s, base %v", num, i, m.Index, m.PayloadID, m.Base != nil)
			}
			if i > 0 && len(m.Diff.Transactions) == 0 {
				t.Fatalf("block %d index %d carries no transaction", num, i)
			}
			txs = append(txs, m.Diff.Transactions...)
			// Cumulative totals after this message = the sealed receipts' prefix.
			prefix := receipts[:len(txs)]
			var gas uint64
			if len(prefix) > 0 {
				gas = prefix[len(prefix)-1].CumulativeGasUsed
			}
			if root := types.DeriveSha(prefix, trie.NewStackTrie(nil)); m.Diff.ReceiptsRoot != root {
				t.Fatalf("block %d index %d: receipts root %s, sealed prefix %s", num, i, m.Diff.ReceiptsRoot, root)
			}
			if uint64(m.Diff.GasUsed) != gas || m.Diff.LogsBloom != types.MergeBloom(prefix.Eth()) {
				t.Fatalf("block %d index %d: gas %d bloom differs (want gas %d)", num, i, m.Diff.GasUsed, gas)
			}
			if m.Diff.StateRoot == (common.Hash{}) || m.Diff.BlockHash == (common.Hash{}) || m.Diff.Withdrawals == nil ||
				len(m.Diff.Withdrawals) != 0 || m.Diff.WithdrawalsRoot != types.EmptyWithdrawalsHash {
				t.Fatalf("block %d index %d: fixed fields %+v", num, i, m.Diff)
			}
		}
		last := msgs[len(msgs)-1].Diff
		// The last message's state root and block hash are the sealed
		// block's (nothing was added after it; the post-block system calls
		// changed nothing).
		if last.StateRoot != h.Root || last.BlockHash != block.Hash() {
			t.Fatalf("block %d: last message's state root %s and hash %s, sealed %s %s", num, last.StateRoot, last.BlockHash, h.Root, block.Hash())
		}
		if last.ReceiptsRoot != h.ReceiptHash || uint64(last.GasUsed) != h.GasUsed || last.LogsBloom != h.Bloom ||
			last.BlobGasUsed == nil || uint64(*last.BlobGasUsed) != *h.BlobGasUsed {
			t.Fatalf("block %d: last message totals %+v, sealed header %+v", num, last, h)
		}
		if len(txs) != len(block.Transactions()) {
			t.Fatalf("block %d: messages carry %d transactions, sealed %d", num, len(txs), len(block.Transactions()))
		}
		for i, tx := range block.Transactions() {
			b, _ := tx.MarshalBinary()
			if !bytes.Equal(b, txs[i]) {
				t.Fatalf("block %d transaction %d differs", num, i)
			}
		}
	}
	if len(byBlock[1][2].Diff.Transactions) != 1 || byBlock[1][3].Diff.LogsBloom == (types.Bloom{}) {
		t.Fatal("the test chain lost its shape (index 2: one deployment; index 3: logs)")
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEncodeJSONShape checks the wire shape of both kinds of message
// against literal FlashblocksPayloadV1 JSON: snake_case keys, index and
// metadata.block_number JSON numbers, quantities 0x-hex, base only on
// index 0, withdrawals [].
func TestEncodeJSONShape(t *testing.T) {
	var rec pendingtest.Recorder
	n := newSeqNode(t, pendingtest.Options{OnPublish: rec.Add})
	n.Transfer(0)
	n.Tick(1)
	snaps := rec.All()
	if len(snaps) != 2 {
		t.Fatalf("%d snapshots", len(snaps))
	}
	h := snaps[0].Header()
	tx, _ := snaps[1].Transactions()[0].MarshalBinary()
	id := stream.PayloadIDOf(stream.BaseOf(h))
	root0, _ := snaps[0].StateRoot()
	root1, _ := snaps[1].StateRoot()
	cases := []struct {
		name string
		snap *pending.Snapshot
		want string
	}{
		{"index 0", snaps[0], `{"payload_id":"` + hexutil.Encode(id[:]) + `","index":0,"base":{` +
			`"parent_beacon_block_root":"` + h.ParentBeaconRoot.Hex() + `","parent_hash":"` + h.ParentHash.Hex() +
			`","fee_recipient":"0x0000000000000000000000000000000000000000","prev_randao":"` + h.MixDigest.Hex() +
			`","block_number":"0x1","gas_limit":"` + hexutil.EncodeUint64(h.GasLimit) + `","timestamp":"` + hexutil.EncodeUint64(h.Time) +
			`","extra_data":"` + hexutil.Encode([]byte("tipnode")) + `","base_fee_per_gas":"` + hexutil.EncodeBig(h.BaseFee) + `"},` +
			`"diff":{"state_root":"` + root0.Hex() + `","receipts_root":"` + types.EmptyReceiptsHash.Hex() + `","logs_bloom":"` + hexutil.Encode(make([]byte, 256)) +
			`","gas_used":"0x0","block_hash":"` + snaps[0].BlockHash().Hex() + `","transactions":[],"withdrawals":[],"withdrawals_root":"` + types.EmptyWithdrawalsHash.Hex() +
			`","blob_gas_used":"0x0"},"metadata":{"block_number":1}}`},
		{"index 1", snaps[1], `{"payload_id":"` + hexutil.Encode(id[:]) + `","index":1,` +
			`"diff":{"state_root":"` + root1.Hex() + `","receipts_root":"` + types.DeriveSha(snaps[1].Receipts(), trie.NewStackTrie(nil)).Hex() +
			`","logs_bloom":"` + hexutil.Encode(make([]byte, 256)) +
			`","gas_used":"0x5208","block_hash":"` + snaps[1].BlockHash().Hex() + `","transactions":["` + hexutil.Encode(tx) + `"],"withdrawals":[],"withdrawals_root":"` +
			types.EmptyWithdrawalsHash.Hex() + `","blob_gas_used":"0x0"},"metadata":{"block_number":1}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := stream.Encode(c.snap)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(mustJSON(t, p)); got != c.want {
				t.Fatalf("\n got %s\nwant %s", got, c.want)
			}
		})
	}
	_ = big.NewInt
}

// TestPayloadIDDerivation: the id changes with every field of the base and
// with nothing else (a table of single-field changes).
func TestPayloadIDDerivation(t *testing.T) {
	base := func() *stream.Base {
		return &stream.Base{ParentHash: common.Hash{1}, ParentBeaconBlockRoot: common.Hash{2}, FeeRecipient: common.Address{3},
			PrevRandao: common.Hash{4}, BlockNumber: 5, GasLimit: 6, Timestamp: 7, ExtraData: []byte{8}, BaseFeePerGas: (*hexutil.Big)(big.NewInt(9))}
	}
	ref := stream.PayloadIDOf(base())
	if again := stream.PayloadIDOf(base()); again != ref {
		t.Fatal("not deterministic")
	}
	cases := map[string]func(*stream.Base){
		"parent hash":   func(b *stream.Base) { b.ParentHash[0]++ },
		"beacon root":   func(b *stream.Base) { b.ParentBeaconBlockRoot[0]++ },
		"fee recipient": func(b *stream.Base) { b.FeeRecipient[0]++ },
		"prev randao":   func(b *stream.Base) { b.PrevRandao[0]++ },
		"number":        func(b *stream.Base) { b.BlockNumber++ },
		"gas limit":     func(b *stream.Base) { b.GasLimit++ },
		"timestamp":     func(b *stream.Base) { b.Timestamp++ },
		"extra data":    func(b *stream.Base) { b.ExtraData = []byte{9} },
		"base fee":      func(b *stream.Base) { b.BaseFeePerGas = (*hexutil.Big)(big.NewInt(10)) },
		"no base fee":   func(b *stream.Base) { b.BaseFeePerGas = nil },
	}
	for name, change := range cases {
		b := base()
		change(b)
		if stream.PayloadIDOf(b) == ref {
			t.Errorf("%s: same id", name)
		}
	}
}
