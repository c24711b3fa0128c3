package eth

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/devnet"
	"github.com/tipnode/tipnode/chain/op"
	"github.com/tipnode/tipnode/pending/pendingtest"
	"github.com/tipnode/tipnode/pending/sequencer"
)

// TestOPSuggestedTip: on an OP chain eth_maxPriorityFeePerGas and
// eth_gasPrice follow op-geth's OP oracle (eth/gasprice
// SuggestOptimismPriorityFee), not the L1 percentile oracle: 0.001 gwei
// while the head block has room for another transaction as large as its
// largest; when it is nearly full (gas used + largest transaction's gas
// used > gas limit), 110% of the median effective tip of its transactions
// (the deposits count, with tip 0). The L1 oracle answered 1 gwei.
func TestOPSuggestedTip(t *testing.T) {
	accs := pendingtest.Accounts(t, 1)
	spec, err := devnet.OPGenesis(devnet.GenesisConfig{ChainID: pendingtest.ChainID, Accounts: []common.Address{accs[0].Address},
		Timestamp: pendingtest.GenesisTime, GasLimit: 1_200_000})
	if err != nil {
		t.Fatal(err)
	}
	pc := chain.DefaultProducerConfig()
	cfg := sequencer.DefaultConfig()
	cfg.Dev, cfg.Chain, cfg.Coinbase = true, &pc, op.SequencerFeeVault
	h := pendingtest.New(t, pendingtest.Options{Accounts: accs, Spec: spec, Config: &cfg})
	_, url := startAPI(t, DefaultAPIConfig(), h.Genesis, h.Mgr, h.Writer, h.Pool)
	suggested := func() (tip, price *big.Int, baseFee *big.Int) {
		t.Helper()
		var tp, pr hexutil.Big
		wantResult(t, callRPC(t, url, "eth_maxPriorityFeePerGas"), &tp)
		wantResult(t, callRPC(t, url, "eth_gasPrice"), &pr)
		var head struct {
			BaseFee *hexutil.Big `json:"baseFeePerGas"`
		}
		wantResult(t, callRPC(t, url, "eth_getBlockByNumber", "latest", false), &head)
		return tp.ToInt(), pr.ToInt(), head.BaseFee.ToInt()
	}
	check := func(what string, want *big.Int) {
		t.Helper()
		tip, price, base := suggested()
		if tip.Cmp(want) != 0 || price.Cmp(new(big.Int).Add(want, base)) != 0 {
			t.Fatalf("%s: eth_maxPriorityFeePerGas %v, eth_gasPrice %v (base fee %v); want tip %v", what, tip, price, base, want)
		}
	}
	// An endless loop (JUMPDEST PUSH1 0 JUMP): a call uses all its gas.
	_, loop := h.Deploy(0, []byte{0x5b, 0x60, 0x00, 0x56}, 200_000)
	h.Seal()
	check("a block with room", big.NewInt(1_000_000))
	h.Send(0, &loop, new(big.Int), 700_000, nil) // tip 1 gwei (the harness's cap)
	h.Seal()
	var blk struct {
		GasUsed  hexutil.Uint64 `json:"gasUsed"`
		GasLimit hexutil.Uint64 `json:"gasLimit"`
		Txs      []common.Hash  `json:"transactions"`
	}
	wantResult(t, callRPC(t, url, "eth_getBlockByNumber", "latest", false), &blk)
	t.Logf("block: %d of %d gas, %d transactions", blk.GasUsed, blk.GasLimit, len(blk.Txs))
	// L1-info deposit (tip 0) and the loop call (1 gwei): the median is
	// the call's; 1.1 gwei.
	check("a nearly full block", big.NewInt(params.GWei+params.GWei/10))
	h.Seal()
	check("an empty block after it", big.NewInt(1_000_000))
}
