package devnet

import (
	"bytes"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/chain/op"
	"github.com/tipnode/tipnode/store/chaintypes"
)

func opDevSpec(t *testing.T) []byte {
	t.Helper()
	accs, err := Accounts(Mnemonic, 2)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := OPGenesis(GenesisConfig{ChainID: 901, Accounts: []common.Address{accs[0].Address, accs[1].Address}, Timestamp: 1_700_000_000})
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestOPGenesis: the OP dev genesis parses as an OP chain with every fork
// through Karst at 0, carries Jovian extraData the first block's base fee
// can read, and deploys the predeploys.
func TestOPGenesis(t *testing.T) {
	g, err := chain.ParseGenesis(opDevSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	if g.OP == nil || !g.OP.IsKarst(0) || !g.OP.IsJovian(0) || !g.Config.IsOsaka(common.Big0, 0) {
		t.Fatalf("not an OP chain with Karst at 0: %+v", g.OP)
	}
	h := g.Block.Header()
	if err := op.VerifyExtraData(g.OP, h); err != nil {
		t.Fatal(err)
	}
	if _, err := op.CalcBaseFee(g.OP, h, h.Time+2); err != nil {
		t.Fatal(err)
	}
	if h.WithdrawalsHash == nil || *h.WithdrawalsHash != types.EmptyRootHash {
		t.Fatalf("withdrawals root %v, want the empty message passer's", h.WithdrawalsHash)
	}
	for _, a := range []common.Address{op.L1BlockAddr, op.L2ToL1MessagePasser, GasPriceOracleAddr, WETH9Addr, MessengerAddr, BridgeAddr, op.SequencerFeeVault, op.BaseFeeVault, op.L1FeeVault, op.OperatorFeeVault, params.BeaconRootsAddress} {
		if acc, ok := g.Core.Alloc[a]; !ok || len(acc.Code) == 0 {
			t.Errorf("predeploy %s missing", a.Hex())
		}
	}
	if got := g.Core.Alloc[GasPriceOracleAddr].Storage[common.Hash{}]; got != common.HexToHash("0x01010101") {
		t.Errorf("GasPriceOracle flags %s, want every fork through Jovian set", got)
	}
}

// TestL1BlockSetters runs each of the L1Block predeploy's setters (the four
// L1-info encodings, made by op.L1Info.Marshal) as the depositor's deposit
// and reads the storage back with chain/op's slot readers (ReadFeeParams,
// ReadOrigin): the layout is the spec's. A deposit from another sender
// reverts and changes nothing.
func TestL1BlockSetters(t *testing.T) {
	db, g, w := chaintest.InitStore(t, opDevSpec(t))
	_ = db
	head, view, err := w.OpenHead()
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	parent := head.Header()
	exec := g.Executor()
	base := op.SyntheticL1{BaseFee: big.NewInt(7_000_000_001), BlobBaseFee: big.NewInt(3_000_003), BaseFeeScalar: 1368, BlobBaseFeeScalar: 810949,
		OperatorFeeScalar: 77, OperatorFeeConstant: 1_000_000_007, DAFootprintGasScalar: 401, BlockTime: 12, BatcherHash: common.HexToHash("0xba7c4e5")}
	origin := op.L1Origin{Number: 21_000_123, Time: 1_699_999_990, Hash: op.SyntheticL1Hash(21_000_123), SequenceNumber: 5}
	for _, v := range []op.L1InfoVersion{op.L1InfoBedrock, op.L1InfoEcotone, op.L1InfoIsthmus, op.L1InfoJovian} {
		info := base.Info(origin, v)
		data, err := info.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		for _, from := range []common.Address{op.L1InfoDepositor, common.HexToAddress("0xbad")} {
			h := &types.Header{ParentHash: head.Hash(), UncleHash: types.EmptyUncleHash, Number: big.NewInt(1), GasLimit: parent.GasLimit,
				Time: parent.Time + 2, Difficulty: new(big.Int), BaseFee: big.NewInt(1), ParentBeaconRoot: &common.Hash{}}
			reader, err := view.StateAt(0)
			if err != nil {
				t.Fatal(err)
			}
			state := chain.NewStateDB(reader)
			proc := exec.NewBlockProcessor(h, parent, common.Hash{}, state, chain.ViewHeaders{Head: head, View: view}, vm.Config{})
			to := op.L1BlockAddr
			r, err := proc.ApplyTx(chaintypes.NewDeposit(chaintypes.DepositFields{From: from, To: &to, Gas: op.SystemTxGas, Data: data}))
			if err != nil {
				t.Fatalf("%d from %s: %v", v, from, err)
			}
			read := func(slot common.Hash) common.Hash { return state.GetState(op.L1BlockAddr, slot) }
			if from != op.L1InfoDepositor {
				if r.Status != types.ReceiptStatusFailed || read(op.L1BaseFeeSlot) != (common.Hash{}) || read(op.L1BlockNumberSlot) != (common.Hash{}) {
					t.Fatalf("encoding %d: a deposit from %s set the L1 block values (status %d)", v, from, r.Status)
				}
				continue
			}
			if r.Status != types.ReceiptStatusSuccessful {
				t.Fatalf("encoding %d: setter reverted", v)
			}
			if got := op.ReadOrigin(read); got != origin {
				t.Errorf("encoding %d: origin %+v, want %+v", v, got, origin)
			}
			if got := read(op.L1BatcherHashSlot); got != base.BatcherHash {
				t.Errorf("encoding %d: batcher hash %s", v, got)
			}
			got := op.ReadFeeParams(g.OP, h.Time, read)
			want := info.FeeParams(g.OP, h.Time)
			if v == op.L1InfoBedrock {
				// The Ecotone slots unset: ReadFeeParams takes the Bedrock formula.
				if got.Formula != op.FormulaBedrock || got.L1BaseFee.Cmp(base.BaseFee) != 0 || got.Scalar.Cmp(info.L1FeeScalar) != 0 || got.Overhead.Sign() != 0 {
					t.Errorf("bedrock: %+v", got)
				}
				continue
			}
			if got.Formula != want.Formula || got.L1BaseFee.Cmp(want.L1BaseFee) != 0 || got.BlobBaseFee.Cmp(want.BlobBaseFee) != 0 ||
				got.BaseFeeScalar != want.BaseFeeScalar || got.BlobBaseFeeScalar != want.BlobBaseFeeScalar ||
				got.OperatorFeeScalar != want.OperatorFeeScalar || got.OperatorFeeConstant != want.OperatorFeeConstant ||
				got.DAFootprintGasScalar != 0 {
				// (ReadFeeParams leaves the DA scalar to the L1-info
				// deposit, as op-geth does.)
				t.Errorf("encoding %d: fee params %+v, want %+v", v, got, want)
			}
			// Packed words as L1Block.sol lays them out, byte for byte.
			w3, w8 := read(op.L1ScalarsSlot), read(op.L1OperatorFeeSlot)
			if !bytes.Equal(w3[16:20], data[4:8]) || !bytes.Equal(w3[20:24], data[8:12]) || !bytes.Equal(w3[24:32], data[12:20]) {
				t.Errorf("encoding %d: slot 3 %x", v, w3)
			}
			if v >= op.L1InfoIsthmus && (!bytes.Equal(w8[20:24], data[164:168]) || !bytes.Equal(w8[24:32], data[168:176])) {
				t.Errorf("encoding %d: slot 8 %x", v, w8)
			}
			// daFootprintGasScalar where the L1Block 1.7.0 released with
			// Jovian keeps it: slot 8, offset 12 (the spec's "Scalar
			// loading" since October 2025; the deployment bytecode of the
			// Jovian upgrade deposit stores it there).
			if v == op.L1InfoJovian && !bytes.Equal(w8[18:20], data[176:178]) {
				t.Errorf("jovian: slot 8 %x", w8)
			}
		}
	}
}
