package chain_test

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/op"
)

// TestOPCanyonCreate2Deployer: the block whose timestamp is exactly
// canyonTime gets the create2Deployer preinstall's code (canyon/overview.md,
// preinstalls.md), set before its transactions as op-geth's state processor
// sets it (EnsureCreate2Deployer); a block before or after it, a chain with
// Canyon unset and an L1 chain do not. Found by the op-geth differential on
// OP Sepolia's genesis with Canyon re-timed to block 2: without the code,
// tipnode import refused op-geth's block 2 ("state root …, header says …
// (the block's state diverges from its header)").
func TestOPCanyonCreate2Deployer(t *testing.T) {
	// The code hash op-geth checks the code against
	// (consensus/misc/create2deployer.go).
	if h := crypto.Keccak256Hash(op.Create2DeployerCode); h != common.HexToHash("0xb0550b5b431e30d38000efb7107aaa0ade03d48a7198a140edda9d27134468b2") {
		t.Fatalf("create2Deployer code hash %s", h)
	}
	const canyon = 10
	// Bedrock and Regolith at genesis, Canyon (with Shanghai) as given, no
	// later fork.
	cfg := func(canyonTime string) string {
		return `{"chainId":901,"homesteadBlock":0,"eip150Block":0,"eip155Block":0,"eip158Block":0,
"byzantiumBlock":0,"constantinopleBlock":0,"petersburgBlock":0,"istanbulBlock":0,"muirGlacierBlock":0,"berlinBlock":0,
"londonBlock":0,"arrowGlacierBlock":0,"grayGlacierBlock":0,"mergeNetsplitBlock":0,"terminalTotalDifficulty":0,
"bedrockBlock":0,"regolithTime":0,` + canyonTime + `"optimism":{"eip1559Elasticity":6,"eip1559Denominator":50,"eip1559DenominatorCanyon":250}}`
	}
	for _, tc := range []struct {
		name   string
		config string
		time   uint64
		want   bool
	}{
		{"at canyonTime", cfg(`"canyonTime":10,"shanghaiTime":10,`), canyon, true},
		{"before canyonTime", cfg(`"canyonTime":10,"shanghaiTime":10,`), canyon - 2, false},
		{"after canyonTime", cfg(`"canyonTime":10,"shanghaiTime":10,`), canyon + 2, false},
		{"Canyon at genesis, a later block", jovianChainConfig, canyon, false},
		{"Canyon unset", cfg(``), canyon, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := chain.ParseChainConfig([]byte(tc.config))
			if err != nil {
				t.Fatal(err)
			}
			var withdrawals *common.Hash
			if g.Config.IsShanghai(big.NewInt(1), tc.time) {
				withdrawals = &types.EmptyWithdrawalsHash
			}
			parent := &types.Header{Number: big.NewInt(0), Time: tc.time - 2, Difficulty: new(big.Int), GasLimit: 30_000_000, BaseFee: big.NewInt(params.GWei)}
			h := &types.Header{ParentHash: parent.Hash(), Number: big.NewInt(1), Time: tc.time, Difficulty: new(big.Int), GasLimit: 30_000_000,
				BaseFee: big.NewInt(params.GWei), WithdrawalsHash: withdrawals}
			state := chain.NewStateDB(emptyBackend{})
			g.Executor().NewBlockProcessor(h, parent, common.Hash{}, state, headerList{parent}, vm.Config{})
			code := state.GetCode(op.Create2DeployerAddr)
			if got := len(code) > 0; got != tc.want {
				t.Fatalf("create2Deployer code set %v, want %v", got, tc.want)
			}
			if tc.want && string(code) != string(op.Create2DeployerCode) {
				t.Fatal("create2Deployer code differs from the spec's")
			}
		})
	}
	// An L1 chain: never.
	g, err := chain.ParseChainConfig([]byte(`{"chainId":1,"homesteadBlock":0,"eip150Block":0,"eip155Block":0,"eip158Block":0,
"byzantiumBlock":0,"constantinopleBlock":0,"petersburgBlock":0,"istanbulBlock":0,"berlinBlock":0,"londonBlock":0,
"mergeNetsplitBlock":0,"terminalTotalDifficulty":0,"shanghaiTime":10}`))
	if err != nil {
		t.Fatal(err)
	}
	parent := &types.Header{Number: big.NewInt(0), Time: 8, Difficulty: new(big.Int), GasLimit: 30_000_000, BaseFee: big.NewInt(params.GWei)}
	h := &types.Header{ParentHash: parent.Hash(), Number: big.NewInt(1), Time: canyon, Difficulty: new(big.Int), GasLimit: 30_000_000,
		BaseFee: big.NewInt(params.GWei), WithdrawalsHash: &types.EmptyWithdrawalsHash}
	state := chain.NewStateDB(emptyBackend{})
	g.Executor().NewBlockProcessor(h, parent, common.Hash{}, state, headerList{parent}, vm.Config{})
	if len(state.GetCode(op.Create2DeployerAddr)) != 0 {
		t.Fatal("an L1 chain got the create2Deployer")
	}
}
