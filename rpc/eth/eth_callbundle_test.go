package eth

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/rpc"
)

// TestCallBundle: on pending, after the pre-confirmed transaction; a
// coinbase payment, a transfer and a reverting creation; nothing
// committed; a nonce that does not fit the state block fails the call.
func TestCallBundle(t *testing.T) {
	d := newDevPendingNode(t, true)
	d.preconfirm(t, d.signedTransfer(t, 0))
	sign := func(n uint64, to *common.Address, value int64, data []byte, gas uint64) *types.Transaction {
		tx, err := types.SignNewTx(d.accs[0].Key, types.LatestSigner(d.g.Config), &types.DynamicFeeTx{
			ChainID: d.g.Config.ChainID, Nonce: n, GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(10 * params.GWei),
			Gas: gas, To: to, Value: big.NewInt(value), Data: data,
		})
		if err != nil {
			t.Fatal(err)
		}
		return tx
	}
	coinbase := common.Address{} // the dev sequencer's default
	other := common.Address{0xb0, 0x0b}
	txs := []*types.Transaction{
		sign(1, &coinbase, 5, nil, 21_000),
		sign(2, &other, 7, nil, 21_000),
		sign(3, nil, 0, []byte{0x60, 0x00, 0x60, 0x00, 0xfd}, 100_000), // creation that reverts
	}
	raws := make([]string, len(txs))
	var concat []byte
	for i, tx := range txs {
		raws[i] = rawHex(t, tx)
		concat = append(concat, tx.Hash().Bytes()...)
	}
	var res bundleResult
	wantResult(t, callRPC(t, d.url, "eth_callBundle", map[string]any{"txs": raws, "blockNumber": "0x1", "stateBlockNumber": "pending"}), &res)
	if res.BundleHash != crypto.Keccak256Hash(concat) || len(res.Results) != 3 || res.StateBlockNumber != 1 {
		t.Fatalf("bundle %+v", res)
	}
	gwei := big.NewInt(params.GWei)
	fee := func(gas uint64) string { return new(big.Int).Mul(gwei, new(big.Int).SetUint64(gas)).String() }
	r0, r1, r2 := res.Results[0], res.Results[1], res.Results[2]
	switch {
	case r0.TxHash != txs[0].Hash() || r0.FromAddress != d.accs[0].Address || r0.GasUsed != 21_000 || r0.GasPrice != gwei.String():
		t.Fatalf("result 0 %+v", r0)
	case r0.GasFees != fee(21_000) || r0.EthSentToCoinbase != "5" || r0.CoinbaseDiff != new(big.Int).Add(big.NewInt(5), new(big.Int).Mul(gwei, big.NewInt(21_000))).String():
		t.Fatalf("result 0 coinbase %+v", r0)
	case r0.Value == nil || len(*r0.Value) != 0 || r0.Revert != nil:
		t.Fatalf("result 0 value %+v", r0)
	case r1.EthSentToCoinbase != "0" || r1.CoinbaseDiff != fee(21_000) || *r1.ToAddress != other:
		t.Fatalf("result 1 %+v", r1)
	case r2.Revert == nil || r2.Value != nil || r2.ToAddress != nil || r2.GasUsed == 0:
		t.Fatalf("result 2 %+v", r2)
	case res.TotalGasUsed != 42_000+r2.GasUsed || res.EthSentToCoinbase != "5":
		t.Fatalf("totals %+v", res)
	}
	// Nothing committed.
	if n := callRPC(t, d.url, "eth_getTransactionCount", d.accs[0].Address, "pending"); string(n.Result) != `"0x1"` {
		t.Fatalf("pending nonce after eth_callBundle: %s", n.Result)
	}
	// On latest (block 0) nonce 1 is too high: the call fails naming it.
	r := callRPC(t, d.url, "eth_callBundle", map[string]any{"txs": raws[:1], "blockNumber": "0x1"})
	if r.Error == nil || r.Error.Code != rpc.CodeServerError {
		t.Fatalf("nonce too high on latest: %s %+v", r.Result, r.Error)
	}
	wantCode(t, callRPC(t, d.url, "eth_callBundle", map[string]any{"txs": []string{}, "blockNumber": "0x1"}), rpc.CodeInvalidParams)
	wantCode(t, callRPC(t, d.url, "eth_callBundle", map[string]any{"txs": raws}), rpc.CodeInvalidParams)
	wantCode(t, callRPC(t, d.url, "eth_callBundle", map[string]any{"txs": []string{"0x01"}, "blockNumber": "0x1"}), rpc.CodeInvalidParams)
}
