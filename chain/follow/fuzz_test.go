package follow

import (
	"encoding/json"
	"errors"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/ethereum/go-ethereum/trie"

	"github.com/tipnode/tipnode/chain/follow/followtest"
)

// seedBlock is a small block with a transaction, as JSON (go-ethereum's
// shape) and as RLP.
func seedBlock(t testing.TB) (jsonBlock, header, raw []byte) {
	to := common.Address{1}
	tx := followtest.Tx(t, 0, 0, &to, big.NewInt(1), 21_000, nil)
	h := &types.Header{Number: big.NewInt(7), Difficulty: new(big.Int), GasLimit: 30_000_000, BaseFee: big.NewInt(7),
		Extra: []byte("seed"), ParentHash: common.Hash{9}}
	b := types.NewBlock(h, &types.Body{Transactions: []*types.Transaction{tx}}, nil, trie.NewStackTrie(nil))
	fields := map[string]any{}
	hj, _ := json.Marshal(b.Header())
	json.Unmarshal(hj, &fields)
	header, _ = json.Marshal(fields)
	txj, _ := json.Marshal(tx)
	var txFields map[string]any
	json.Unmarshal(txj, &txFields)
	fields["transactions"] = []any{txFields}
	fields["uncles"] = []any{}
	jsonBlock, _ = json.Marshal(fields)
	enc, _ := rlp.EncodeToBytes(b)
	raw, _ = json.Marshal(hexutil.Bytes(enc))
	return jsonBlock, header, raw
}

// The seeds decode, and what a decoder accepts holds together: a header's
// fields hash to its announced hash, a block's transactions to theirs.
func TestDecodeSeeds(t *testing.T) {
	jb, hj, raw := seedBlock(t)
	h, err := decodeHeader(hj)
	if err != nil {
		t.Fatal(err)
	}
	hb, body, uncles, err := decodeBlock(jb)
	if err != nil || hb.Hash() != h.Hash() || len(body.Transactions) != 1 || len(uncles) != 0 {
		t.Fatalf("block: %v", err)
	}
	b, err := decodeRawBlock(raw)
	if err != nil || b.Hash() != h.Hash() || b.Transactions()[0].Hash() != body.Transactions[0].Hash() {
		t.Fatalf("raw block: %v", err)
	}
	for _, null := range []string{"null", ""} {
		if _, err := decodeHeader(json.RawMessage(null)); !errors.Is(err, ErrUnknownBlock) {
			t.Fatalf("header %q: %v", null, err)
		}
	}
	// A header whose announced hash is not its fields' is refused.
	var m map[string]any
	json.Unmarshal(hj, &m)
	m["gasUsed"] = "0x1"
	bad, _ := json.Marshal(m)
	if _, err := decodeHeader(bad); !errors.Is(err, ErrBadResponse) {
		t.Fatalf("tampered header: %v", err)
	}
}

func FuzzDecodeHeader(f *testing.F) {
	_, hj, _ := seedBlock(f)
	f.Add(hj)
	f.Add([]byte(`null`))
	f.Add([]byte(`{"number":"0x1"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := decodeHeader(data)
		if err == nil {
			var announced struct{ Hash common.Hash }
			if json.Unmarshal(data, &announced) != nil || announced.Hash != h.Hash() {
				t.Fatal("accepted a header that does not hash to its announced hash")
			}
		}
	})
}

func FuzzDecodeBlock(f *testing.F) {
	jb, _, _ := seedBlock(f)
	f.Add(jb)
	f.Add([]byte(`{"transactions":["0x01"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, body, uncles, err := decodeBlock(data)
		if err != nil {
			return
		}
		if _, err := assembleBlock(h, body, uncles, nil); err != nil && len(uncles) == 0 {
			t.Fatalf("a decoded block without uncles does not assemble: %v", err)
		}
	})
}

func FuzzDecodeRawBlock(f *testing.F) {
	_, _, raw := seedBlock(f)
	f.Add(raw)
	f.Add([]byte(`"0x"`))
	f.Add([]byte(`"0xc0"`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if b, err := decodeRawBlock(data); err == nil {
			if _, err := rlp.EncodeToBytes(b); err != nil {
				t.Fatalf("a decoded block does not encode: %v", err)
			}
		}
	})
}

func FuzzDecodeGenesis(f *testing.F) {
	f.Add([]byte(`{"config":{"chainId":1},"alloc":{}}`))
	f.Add([]byte(`{"config":{"chainId":1337,"londonBlock":0},"gasLimit":"0x1c9c380","difficulty":"0x0","alloc":{"0x0000000000000000000000000000000000000001":{"balance":"0x1"}}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if g, err := decodeGenesis(data); err == nil && (g.Block == nil || g.Config.ChainID == nil) {
			t.Fatal("accepted a genesis without block 0 or chain id")
		}
	})
}
