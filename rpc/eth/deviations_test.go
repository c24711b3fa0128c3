package eth

import (
	"encoding/json"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
)

func TestNetMethods(t *testing.T) {
	d := newDevPendingNode(t, false)
	for _, tc := range []struct {
		method string
		params []any
		want   string
	}{
		{"net_listening", nil, `true`},
		{"net_peerCount", nil, `"0x0"`},
		{"web3_sha3", []any{"0x68656c6c6f20776f726c64"}, `"0x47173285a8d7341e5e972fc677286384f802f8ef42a5ec5f03bbfa254cb01fad"`},
		{"web3_sha3", []any{"0x"}, `"0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"`},
		{"rpc_modules", nil, `{"debug":"1.0","eth":"1.0","net":"1.0","rpc":"1.0","tipnode":"1.0","txpool":"1.0","web3":"1.0"}`},
	} {
		r := callRPC(t, d.url, tc.method, tc.params...)
		if r.Error != nil || !jsonEqual(t, r.Result, tc.want) {
			t.Errorf("%s %v = %s %+v, want %s", tc.method, tc.params, r.Result, r.Error, tc.want)
		}
	}
	wantCode(t, callRPC(t, d.url, "web3_sha3", "zz"), -32602)
}

// TestPreconfirmedLocation: a pre-confirmed transaction shows one location
// everywhere: the pending block's number, the zero hash, its index.
func TestPreconfirmedLocation(t *testing.T) {
	d := newDevPendingNode(t, true)
	var txs []common.Hash
	for n := uint64(0); n < 2; n++ {
		tx := d.signedTransfer(t, n)
		if err := d.pool.Add(tx); err != nil {
			t.Fatal(err)
		}
		txs = append(txs, tx.Hash())
	}
	d.clock.Advance(d.seqCfg.PreconfInterval)
	d.seq.Sync()
	type loc struct {
		BlockHash        *common.Hash    `json:"blockHash"`
		BlockNumber      *hexutil.Uint64 `json:"blockNumber"`
		TransactionIndex *hexutil.Uint64 `json:"transactionIndex"`
	}
	var block struct {
		Transactions []loc `json:"transactions"`
	}
	wantResult(t, callRPC(t, d.url, "eth_getBlockByNumber", "pending", true), &block)
	for i, h := range txs {
		var byHash, byIndex, rec loc
		wantResult(t, callRPC(t, d.url, "eth_getTransactionByHash", h), &byHash)
		wantResult(t, callRPC(t, d.url, "eth_getTransactionByBlockNumberAndIndex", "pending", hexutil.Uint64(i)), &byIndex)
		wantResult(t, callRPC(t, d.url, "eth_getTransactionReceipt", h), &rec)
		for name, l := range map[string]loc{"byHash": byHash, "byIndex": byIndex, "receipt": rec, "block": block.Transactions[i]} {
			if l.BlockHash == nil || *l.BlockHash != (common.Hash{}) || l.BlockNumber == nil || *l.BlockNumber != 1 || l.TransactionIndex == nil || int(*l.TransactionIndex) != i {
				b, _ := json.Marshal(l)
				t.Errorf("tx %d %s: %s, want block 0x1, zero hash, index %d", i, name, b, i)
			}
		}
	}
}

// TestFeeHistoryPending: "pending" ends at the pending block, with its
// pre-confirmed transactions' gas and tips.
func TestFeeHistoryPending(t *testing.T) {
	d := newDevPendingNode(t, true)
	tx := d.signedTransfer(t, 0)
	if err := d.pool.Add(tx); err != nil {
		t.Fatal(err)
	}
	d.clock.Advance(d.seqCfg.PreconfInterval)
	d.seq.Sync()
	var fh struct {
		Oldest       hexutil.Uint64   `json:"oldestBlock"`
		BaseFee      []hexutil.Big    `json:"baseFeePerGas"`
		GasUsedRatio []float64        `json:"gasUsedRatio"`
		Reward       [][]*hexutil.Big `json:"reward"`
	}
	wantResult(t, callRPC(t, d.url, "eth_feeHistory", "0x2", "pending", []float64{50}), &fh)
	if fh.Oldest != 0 || len(fh.GasUsedRatio) != 2 || fh.GasUsedRatio[1] == 0 || len(fh.BaseFee) != 3 || len(fh.Reward) != 2 {
		t.Fatalf("fee history at pending: %+v", fh)
	}
	if tip := fh.Reward[1][0].ToInt(); tip.Sign() == 0 {
		t.Fatalf("pending block's median tip is zero: %+v", fh)
	}
	wantResult(t, callRPC(t, d.url, "eth_feeHistory", "0x2", "latest", []float64{50}), &fh)
	if fh.Oldest != 0 || len(fh.GasUsedRatio) != 1 {
		t.Fatalf("fee history at latest: %+v", fh)
	}
}
