package eth

import (
	"encoding/json"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/trie"

	"github.com/tipnode/tipnode/chain/op"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// TestOPMarshal pins two answers to op-geth's (found by the differential
// test against op-geth, make op-geth-diff): a deposit always shows "mint"
// ("0x0" when nothing is minted: nil and zero encode alike), and a Jovian
// receipt read back from the store shows blobGasUsed = its DA footprint
// (daFootprintGasScalar x the transaction's estimated DA size), which the
// store does not keep.
func TestOPMarshal(t *testing.T) {
	for _, mint := range []*big.Int{nil, new(big.Int), big.NewInt(7)} {
		d := chaintypes.NewDeposit(chaintypes.DepositFields{From: common.Address{1}, To: &common.Address{2}, Mint: mint, Gas: 21_000})
		raw, _ := json.Marshal(newRPCTransaction(d, nil, nil, params.MergedTestChainConfig))
		var got struct {
			Mint *hexutil.Big `json:"mint"`
		}
		json.Unmarshal(raw, &got)
		want := new(big.Int)
		if mint != nil {
			want = mint
		}
		if got.Mint == nil || got.Mint.ToInt().Cmp(want) != 0 {
			t.Errorf("mint %v: the deposit shows %s", mint, raw)
		}
	}

	key, _ := crypto.GenerateKey()
	signer := types.LatestSignerForChainID(big.NewInt(1))
	tx := types.MustSignNewTx(key, signer, &types.DynamicFeeTx{ChainID: big.NewInt(1), Gas: 21_000,
		GasFeeCap: big.NewInt(1), To: &common.Address{3}, Data: make([]byte, 400)})
	enc, _ := tx.MarshalBinary()
	scalar := uint64(400)
	want := scalar * op.NewCostData(enc).EstimatedDASize()
	for _, tc := range []struct {
		name   string
		scalar *uint64
		want   *uint64
	}{
		{"jovian", &scalar, &want},
		{"before jovian", nil, nil},
	} {
		// As stored: no BlobGasUsed.
		rs := chaintypes.Receipts{{Receipt: types.Receipt{Type: tx.Type(), Status: 1, CumulativeGasUsed: 21_000},
			OP: &chaintypes.OPReceipt{L1Fee: big.NewInt(1), DAFootprintGasScalar: tc.scalar}}}
		h := &types.Header{Number: big.NewInt(1), BaseFee: big.NewInt(1), Difficulty: new(big.Int)}
		b := chaintypes.FromEthBlock(types.NewBlock(h, &types.Body{Transactions: types.Transactions{tx}}, nil, trie.NewStackTrie(nil)))
		derived, err := deriveReceipts(params.MergedTestChainConfig, b, rs)
		if err != nil {
			t.Fatal(err)
		}
		m := marshalReceipt(derived[0], tx, signer)
		got, ok := m["blobGasUsed"]
		switch {
		case tc.want == nil && ok:
			t.Errorf("%s: blobGasUsed %v", tc.name, got)
		case tc.want != nil && (!ok || got != hexutil.Uint64(*tc.want)):
			t.Errorf("%s: blobGasUsed %v, want %d (the DA footprint)", tc.name, got, *tc.want)
		}
	}
}
