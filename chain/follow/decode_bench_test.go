package follow

import (
	"encoding/json"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/trie"

	"github.com/tipnode/tipnode/chain/follow/followtest"
)

// benchBlockJSON is a block of n dynamic-fee transactions with calldata as
// go-ethereum answers eth_getBlockByNumber(n, true): the header's fields,
// hash, size, uncles, withdrawals, and each transaction with its position
// fields and sender.
func benchBlockJSON(tb testing.TB, n int) (json.RawMessage, *types.Block) {
	txs := make([]*types.Transaction, n)
	for i := range txs {
		to := common.Address{0xc0, byte(i)}
		txs[i] = followtest.Tx(tb, i%4, uint64(i), &to, big.NewInt(int64(i)), 60_000, common.LeftPadBytes([]byte{byte(i)}, 64))
	}
	h := &types.Header{Number: big.NewInt(1234), Difficulty: new(big.Int), GasLimit: 60_000_000, GasUsed: 1_000_000, BaseFee: big.NewInt(7),
		Time: 1_700_000_000, Extra: []byte("bench"), ParentHash: common.Hash{9}, Coinbase: common.Address{0xcb}}
	b := types.NewBlock(h, &types.Body{Transactions: txs, Withdrawals: types.Withdrawals{}}, nil, trie.NewStackTrie(nil))
	fields := map[string]any{}
	hj, _ := json.Marshal(b.Header())
	json.Unmarshal(hj, &fields)
	fields["size"] = hexutil.Uint64(b.Size())
	fields["uncles"] = []any{}
	fields["withdrawals"] = []any{}
	var out []any
	for i, tx := range txs {
		txj, _ := json.Marshal(tx)
		var m map[string]any
		json.Unmarshal(txj, &m)
		m["blockHash"], m["blockNumber"], m["transactionIndex"] = b.Hash(), hexutil.Uint64(1234), hexutil.Uint64(i)
		m["from"] = followtest.Address(i % 4)
		m["gasPrice"] = (*hexutil.Big)(big.NewInt(2_000_000_007))
		out = append(out, m)
	}
	fields["transactions"] = out
	raw, err := json.Marshal(fields)
	if err != nil {
		tb.Fatal(err)
	}
	return raw, b
}

// The benchmark block decodes to the block it was made from.
func TestDecodeBenchBlock(t *testing.T) {
	raw, want := benchBlockJSON(t, 24)
	h, body, uncles, err := decodeBlock(raw)
	if err != nil {
		t.Fatal(err)
	}
	b, err := assembleBlock(h, body, uncles, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.Hash() != want.Hash() || types.DeriveSha(b.Transactions(), trie.NewStackTrie(nil)) != want.TxHash() ||
		len(b.Withdrawals()) != 0 || b.Withdrawals() == nil {
		t.Fatalf("decoded block differs: %v", b.Hash())
	}
}

// BenchmarkDecodeBlock decodes a go-ethereum-shaped JSON block of 24
// transactions (eth_getBlockByNumber with full transactions).
func BenchmarkDecodeBlock(b *testing.B) {
	raw, _ := benchBlockJSON(b, 24)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, err := decodeBlock(raw); err != nil {
			b.Fatal(err)
		}
	}
}
