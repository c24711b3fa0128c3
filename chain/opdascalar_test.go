package chain_test

import (
	"encoding/binary"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/op"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// jovianChainConfig: every OP fork from genesis through Jovian (op-geth's
// format, no deltaTime).
const jovianChainConfig = `{"chainId":901,"homesteadBlock":0,"eip150Block":0,"eip155Block":0,"eip158Block":0,
"byzantiumBlock":0,"constantinopleBlock":0,"petersburgBlock":0,"istanbulBlock":0,"muirGlacierBlock":0,"berlinBlock":0,
"londonBlock":0,"arrowGlacierBlock":0,"grayGlacierBlock":0,"mergeNetsplitBlock":0,"terminalTotalDifficulty":0,
"bedrockBlock":0,"regolithTime":0,"canyonTime":0,"ecotoneTime":0,"fjordTime":0,"graniteTime":0,"holoceneTime":0,
"isthmusTime":0,"jovianTime":0,"optimism":{"eip1559Elasticity":6,"eip1559Denominator":50,"eip1559DenominatorCanyon":250}}`

// TestOPDAScalarFromL1Info: a Jovian block's DA footprint gas scalar is the
// one its L1-info deposit carries, as op-geth reads it, whatever the
// L1Block predeploy's storage holds: the L1Block 1.7.0 released with Jovian
// packs it into slot 8 at offset 12 (bytes [18,20)), a pre-release 1.7.0
// (the one the spec described until October 2025) kept it in slot 9 at
// offset 0, and a contract may keep it nowhere. Reading slot 8 alone (as
// tipnode did) gave a footprint of 0 on a chain with the pre-release
// contract: "invalid DA footprint: blobGasUsed 40000, want 0".
func TestOPDAScalarFromL1Info(t *testing.T) {
	g, err := chain.ParseChainConfig([]byte(jovianChainConfig))
	if err != nil {
		t.Fatal(err)
	}
	const scalar = 400
	key, _ := crypto.HexToECDSA("b71c71a67e1177ad4e901695e1b4b9ee17ae16c6668d313eac2f96dbcda3f291")
	sender := crypto.PubkeyToAddress(key.PublicKey)
	to := common.HexToAddress("0x1234")
	layouts := map[string]map[common.Hash]common.Hash{
		"1.7.0 as released: slot 8 offset 12": {op.L1OperatorFeeSlot: func() common.Hash {
			var w common.Hash
			binary.BigEndian.PutUint16(w[18:], scalar)
			return w
		}()},
		"pre-release 1.7.0: slot 9 offset 0": {common.BigToHash(big.NewInt(9)): common.BigToHash(big.NewInt(scalar))},
		"not in storage":                     {},
	}
	for name, slots := range layouts {
		t.Run(name, func(t *testing.T) {
			zero := uint64(0)
			parent := &types.Header{Number: big.NewInt(0), Difficulty: new(big.Int), GasLimit: 30_000_000, BaseFee: big.NewInt(params.GWei),
				ExcessBlobGas: &zero, BlobGasUsed: &zero}
			h := &types.Header{ParentHash: parent.Hash(), Number: big.NewInt(1), Time: 2, Difficulty: new(big.Int), GasLimit: 30_000_000,
				BaseFee: big.NewInt(params.GWei), ExcessBlobGas: &zero, ParentBeaconRoot: &common.Hash{}}
			state := chain.NewStateDB(emptyBackend{})
			// The L1Block stand-in keeps what the test stores: the fee
			// slots op-geth reads, and the DA scalar where the layout
			// under test puts it.
			state.SetCode(op.L1BlockAddr, []byte{0x00}, tracing.CodeChangeUnspecified)
			var scalars common.Hash
			binary.BigEndian.PutUint32(scalars[16:], 1368)   // baseFeeScalar
			binary.BigEndian.PutUint32(scalars[20:], 810949) // blobBaseFeeScalar
			state.SetState(op.L1BlockAddr, op.L1BaseFeeSlot, common.BigToHash(big.NewInt(params.GWei)))
			state.SetState(op.L1BlockAddr, op.L1ScalarsSlot, scalars)
			state.SetState(op.L1BlockAddr, op.L1BlobBaseFeeSlot, common.BigToHash(big.NewInt(1)))
			for k, v := range slots {
				state.SetState(op.L1BlockAddr, k, v)
			}
			state.SetBalance(sender, uint256.NewInt(params.Ether))

			info := &op.L1Info{Version: op.L1InfoJovian, Number: 100, Time: 1, BaseFee: big.NewInt(params.GWei), BlobBaseFee: big.NewInt(1),
				BaseFeeScalar: 1368, BlobBaseFeeScalar: 810949, DAFootprintGasScalar: scalar}
			data, err := info.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			l1Block := op.L1BlockAddr
			dep := chaintypes.NewDeposit(chaintypes.DepositFields{SourceHash: op.L1InfoDepositSourceHash(common.Hash{1}, 0),
				From: op.L1InfoDepositor, To: &l1Block, Gas: 1_000_000, Data: data})
			tx := types.MustSignNewTx(key, types.LatestSignerForChainID(g.Config.ChainID), &types.DynamicFeeTx{
				ChainID: g.Config.ChainID, Nonce: 0, To: &to, Gas: 50_000, GasFeeCap: big.NewInt(2 * params.GWei),
				GasTipCap: big.NewInt(1), Data: make([]byte, 300)})
			proc := g.Executor().NewBlockProcessor(h, parent, common.Hash{}, state, headerList{parent}, vm.Config{})
			if _, err := proc.ApplyTx(dep); err != nil {
				t.Fatal(err)
			}
			r, err := proc.ApplyTx(tx)
			if err != nil {
				t.Fatal(err)
			}
			enc, _ := tx.MarshalBinary()
			cd := op.NewCostData(enc)
			want := cd.EstimatedDASize() * scalar
			if r.OP == nil || r.OP.DAFootprintGasScalar == nil || *r.OP.DAFootprintGasScalar != scalar || r.BlobGasUsed != want {
				t.Fatalf("receipt DA scalar %v, blobGasUsed %d; want %d, %d", r.OP, r.BlobGasUsed, scalar, want)
			}
			block, err := op.BlockDAFootprint(data, []op.CostData{cd})
			if err != nil || proc.BlobGasUsed() != block || block != want {
				t.Fatalf("block DA footprint %d (%v), the header's rule gives %d, want %d", proc.BlobGasUsed(), err, block, want)
			}
		})
	}
}

// TestOPJovianActivationBlockDepositsOnly: in the Jovian activation block
// (a Jovian block whose L1-info deposit still has the Isthmus encoding) a
// sequenced transaction is refused, as op-geth refuses the block
// (CalcDAFootprint: "unexpected non-deposit transactions in Jovian
// activation block"); the deposits themselves run.
func TestOPJovianActivationBlockDepositsOnly(t *testing.T) {
	g, err := chain.ParseChainConfig([]byte(jovianChainConfig))
	if err != nil {
		t.Fatal(err)
	}
	key, _ := crypto.HexToECDSA("b71c71a67e1177ad4e901695e1b4b9ee17ae16c6668d313eac2f96dbcda3f291")
	sender := crypto.PubkeyToAddress(key.PublicKey)
	zero := uint64(0)
	parent := &types.Header{Number: big.NewInt(0), Difficulty: new(big.Int), GasLimit: 30_000_000, BaseFee: big.NewInt(params.GWei),
		ExcessBlobGas: &zero, BlobGasUsed: &zero}
	h := &types.Header{ParentHash: parent.Hash(), Number: big.NewInt(1), Time: 2, Difficulty: new(big.Int), GasLimit: 30_000_000,
		BaseFee: big.NewInt(params.GWei), ExcessBlobGas: &zero, ParentBeaconRoot: &common.Hash{}}
	state := chain.NewStateDB(emptyBackend{})
	state.SetCode(op.L1BlockAddr, []byte{0x00}, tracing.CodeChangeUnspecified)
	state.SetBalance(sender, uint256.NewInt(params.Ether))
	info := &op.L1Info{Version: op.L1InfoIsthmus, Number: 100, Time: 1, BaseFee: big.NewInt(params.GWei), BlobBaseFee: big.NewInt(1)}
	data, err := info.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	l1Block := op.L1BlockAddr
	proc := g.Executor().NewBlockProcessor(h, parent, common.Hash{}, state, headerList{parent}, vm.Config{})
	if _, err := proc.ApplyTx(chaintypes.NewDeposit(chaintypes.DepositFields{SourceHash: common.Hash{2}, From: op.L1InfoDepositor, To: &l1Block, Gas: 1_000_000, Data: data})); err != nil {
		t.Fatal(err)
	}
	to := common.HexToAddress("0x1234")
	tx := types.MustSignNewTx(key, types.LatestSignerForChainID(g.Config.ChainID), &types.DynamicFeeTx{
		ChainID: g.Config.ChainID, To: &to, Gas: 50_000, GasFeeCap: big.NewInt(2 * params.GWei), GasTipCap: big.NewInt(1)})
	if _, err := proc.ApplyTx(tx); !errors.Is(err, op.ErrDAFootprint) || !strings.Contains(err.Error(), "Jovian activation block") {
		t.Fatalf("a user transaction in the Jovian activation block: %v", err)
	}
}

// TestOPKarstActivationBlockDepositsOnly: the Karst activation block (its
// parent before Karst) holds deposits only, as op-reth refuses a user
// transaction there (fork activation blocks from Jovian); the next Karst
// block takes one.
func TestOPKarstActivationBlockDepositsOnly(t *testing.T) {
	cfg := strings.Replace(jovianChainConfig, `"jovianTime":0,`, `"jovianTime":0,"karstTime":2,"osakaTime":2,`, 1)
	g, err := chain.ParseChainConfig([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	key, _ := crypto.HexToECDSA("b71c71a67e1177ad4e901695e1b4b9ee17ae16c6668d313eac2f96dbcda3f291")
	sender := crypto.PubkeyToAddress(key.PublicKey)
	info := &op.L1Info{Version: op.L1InfoJovian, Number: 100, Time: 1, BaseFee: big.NewInt(params.GWei), BlobBaseFee: big.NewInt(1),
		DAFootprintGasScalar: 400}
	data, err := info.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	l1Block := op.L1BlockAddr
	to := common.HexToAddress("0x1234")
	for _, c := range []struct {
		name               string
		parentTime, time   uint64
		wantActivationFail bool
	}{{"activation block", 0, 2, true}, {"next block", 2, 4, false}} {
		t.Run(c.name, func(t *testing.T) {
			zero := uint64(0)
			parent := &types.Header{Number: big.NewInt(0), Time: c.parentTime, Difficulty: new(big.Int), GasLimit: 30_000_000,
				BaseFee: big.NewInt(params.GWei), ExcessBlobGas: &zero, BlobGasUsed: &zero}
			h := &types.Header{ParentHash: parent.Hash(), Number: big.NewInt(1), Time: c.time, Difficulty: new(big.Int), GasLimit: 30_000_000,
				BaseFee: big.NewInt(params.GWei), ExcessBlobGas: &zero, ParentBeaconRoot: &common.Hash{}}
			state := chain.NewStateDB(emptyBackend{})
			state.SetCode(op.L1BlockAddr, []byte{0x00}, tracing.CodeChangeUnspecified)
			state.SetBalance(sender, uint256.NewInt(params.Ether))
			proc := g.Executor().NewBlockProcessor(h, parent, common.Hash{}, state, headerList{parent}, vm.Config{})
			if _, err := proc.ApplyTx(chaintypes.NewDeposit(chaintypes.DepositFields{SourceHash: common.Hash{2}, From: op.L1InfoDepositor, To: &l1Block, Gas: 1_000_000, Data: data})); err != nil {
				t.Fatal(err)
			}
			tx := types.MustSignNewTx(key, types.LatestSignerForChainID(g.Config.ChainID), &types.DynamicFeeTx{
				ChainID: g.Config.ChainID, To: &to, Gas: 50_000, GasFeeCap: big.NewInt(2 * params.GWei), GasTipCap: big.NewInt(1)})
			_, err := proc.ApplyTx(tx)
			if c.wantActivationFail != (err != nil) || err != nil && (!errors.Is(err, op.ErrActivationBlock) || !strings.Contains(err.Error(), "Karst activation block")) {
				t.Fatalf("a user transaction: %v", err)
			}
		})
	}
}
