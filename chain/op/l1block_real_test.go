package op

import (
	"encoding/json"
	"math/big"
	"os"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm/runtime"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/chain/op/optest"
)

// Implementations of the L1Block and GasPriceOracle predeploys in the real
// genesis allocs (behind the proxies at 0x4200...0015 and ...000F).
var (
	l1BlockImpl = common.HexToAddress("0xc0d3c0d3c0d3c0d3c0d3c0d3c0d3c0d3c0d30015")
	gpoImpl     = common.HexToAddress("0xc0d3c0d3c0d3c0d3c0d3c0d3c0d3c0d3c0d3000f")
	gpoAddr     = common.HexToAddress("0x420000000000000000000000000000000000000F")
)

// realPredeploys is the code of the L1Block and GasPriceOracle
// implementations of a real genesis (nil when absent).
func realPredeploys(t *testing.T, path string) (l1Block, gpo []byte) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Alloc map[string]struct {
			Code hexutil.Bytes `json:"code"`
		} `json:"alloc"`
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	for k, a := range g.Alloc {
		switch common.HexToAddress(k) {
		case l1BlockImpl:
			l1Block = a.Code
		case gpoImpl:
			gpo = a.Code
		}
	}
	return l1Block, gpo
}

// TestRealL1BlockLayout runs the real L1Block implementations of the OP
// chain genesis files in ../shared/op/chains (op-geth's dumpgenesis: the
// Bedrock L1Block of OP Sepolia and Zora, the Ecotone one of Unichain, Ink
// and World Chain) with the L1-info calldata tipnode encodes, and reads the
// storage they leave with ReadFeeParams and the L1-origin slots: every
// field must be where tipnode reads it. The real GasPriceOracle of the same
// genesis, reading that L1Block, must then give the L1 fee tipnode charges.
// (The Isthmus and Jovian L1Block arrive with their forks' upgrade
// deposits, which no genesis holds; their slot 8 is checked by
// TestL1InfoRoundTrip and the executor's tests.)
func TestRealL1BlockLayout(t *testing.T) {
	ran := 0
	for _, c := range optest.Chains(t) {
		l1Code, gpoCode := realPredeploys(t, c.Path)
		if len(l1Code) == 0 {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			versions := []L1InfoVersion{L1InfoBedrock}
			if hasSelector(l1Code, SelectorEcotone) {
				versions = append(versions, L1InfoEcotone)
			}
			for _, v := range versions {
				sdb, err := state.New(types.EmptyRootHash, state.NewDatabaseForTesting())
				if err != nil {
					t.Fatal(err)
				}
				sdb.SetCode(L1BlockAddr, l1Code, tracing.CodeChangeUnspecified)
				sdb.SetCode(gpoAddr, gpoCode, tracing.CodeChangeUnspecified)
				sdb.SetBalance(L1InfoDepositor, uint256.NewInt(params.Ether), tracing.BalanceChangeUnspecified)
				rc := &runtime.Config{ChainConfig: params.MergedTestChainConfig, State: sdb, Origin: L1InfoDepositor,
					GasLimit: 10_000_000, BlockNumber: big.NewInt(1), Time: 1, BaseFee: big.NewInt(1)}
				info := sampleInfo(v)
				data, err := info.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err := runtime.Call(L1BlockAddr, data, rc); err != nil {
					t.Fatalf("version %d: the real L1Block refused tipnode's calldata: %v", v, err)
				}
				read := func(slot common.Hash) common.Hash { return sdb.GetState(L1BlockAddr, slot) }
				// The L1 origin.
				origin := read(L1BlockNumberSlot)
				if got := new(big.Int).SetBytes(origin[24:]).Uint64(); got != info.Number {
					t.Errorf("version %d: number %d in slot 0 [24,32), want %d", v, got, info.Number)
				}
				if got := new(big.Int).SetBytes(origin[16:24]).Uint64(); got != info.Time {
					t.Errorf("version %d: timestamp %d in slot 0 [16,24), want %d", v, got, info.Time)
				}
				if read(L1BlockHashSlot) != info.BlockHash || read(L1BatcherHashSlot) != info.BatcherHash {
					t.Errorf("version %d: hash / batcherHash not in slots 2 / 4", v)
				}
				if seq := read(L1ScalarsSlot); new(big.Int).SetBytes(seq[24:]).Uint64() != info.SequenceNumber {
					t.Errorf("version %d: sequenceNumber not in slot 3 [24,32)", v)
				}
				// ReadL1Info (what a fork continues from) reads back the
				// calldata's origin and Ecotone fee parameters.
				if v == L1InfoEcotone {
					r := ReadL1Info(read)
					if r.Number != info.Number || r.Time != info.Time || r.BlockHash != info.BlockHash || r.SequenceNumber != info.SequenceNumber ||
						r.BaseFee.Cmp(info.BaseFee) != 0 || r.BlobBaseFee.Cmp(info.BlobBaseFee) != 0 || r.BaseFeeScalar != info.BaseFeeScalar ||
						r.BlobBaseFeeScalar != info.BlobBaseFeeScalar || r.BatcherHash != info.BatcherHash {
						t.Errorf("ReadL1Info of the real L1Block: %+v, the calldata %+v", r, info)
					}
				}
				// The fee parameters, as ReadFeeParams reads them, equal
				// the calldata's.
				cfg := fjordConfig()
				tm := uint64(1)
				if v == L1InfoBedrock {
					cfg.EcotoneTime, cfg.FjordTime, cfg.GraniteTime = nil, nil, nil
				} else {
					cfg.FjordTime, cfg.GraniteTime = nil, nil
				}
				got, want := ReadFeeParams(cfg, tm, read), info.FeeParams(cfg, tm)
				cd := CostData{Zeroes: 40, Ones: 160}
				fg, _ := got.L1Cost(cd)
				fw, _ := want.L1Cost(cd)
				if got.Formula != want.Formula || fg.Cmp(fw) != 0 || got.BaseFeeScalar != want.BaseFeeScalar ||
					got.BlobBaseFeeScalar != want.BlobBaseFeeScalar || got.L1BaseFee.Cmp(want.L1BaseFee) != 0 {
					t.Fatalf("version %d: storage gives %+v (fee %v), calldata %+v (fee %v)", v, got, fg, want, fw)
				}
				if len(gpoCode) == 0 {
					continue
				}
				// The real GasPriceOracle (Ecotone mode switched on by the
				// depositor, as the Ecotone upgrade does) prices calldata
				// as tipnode does: getL1Fee(data) adds 68 non-zero bytes
				// for the signature it lacks.
				if v == L1InfoEcotone {
					if !hasSelector(gpoCode, [4]byte(crypto.Keccak256([]byte("setEcotone()"))[:4])) {
						continue
					}
					if _, _, err := runtime.Call(gpoAddr, crypto.Keccak256([]byte("setEcotone()"))[:4], rc); err != nil {
						t.Fatalf("setEcotone: %v", err)
					}
				}
				payload := make([]byte, 200)
				for i := range payload {
					if i%5 != 0 {
						payload[i] = byte(i)
					}
				}
				zeroes, ones := uint64(0), uint64(0)
				for _, b := range payload {
					if b == 0 {
						zeroes++
					} else {
						ones++
					}
				}
				call := append(crypto.Keccak256([]byte("getL1Fee(bytes)"))[:4], encodeBytesArg(payload)...)
				out, _, err := runtime.Call(gpoAddr, call, rc)
				if err != nil {
					t.Fatalf("version %d: getL1Fee: %v", v, err)
				}
				mine, _ := got.L1Cost(CostData{Zeroes: zeroes, Ones: ones + 68})
				if new(big.Int).SetBytes(out).Cmp(mine) != 0 {
					t.Fatalf("version %d: the real GasPriceOracle's getL1Fee is %v, tipnode charges %v", v, new(big.Int).SetBytes(out), mine)
				}
			}
			ran++
		})
	}
	if ran == 0 {
		t.Fatal("no genesis had an L1Block implementation")
	}
}

func hasSelector(code []byte, sel [4]byte) bool {
	for i := 0; i+5 <= len(code); i++ {
		if code[i] == 0x63 && code[i+1] == sel[0] && code[i+2] == sel[1] && code[i+3] == sel[2] && code[i+4] == sel[3] { // PUSH4 sel
			return true
		}
	}
	return false
}

// encodeBytesArg is the ABI encoding of one dynamic bytes argument.
func encodeBytesArg(b []byte) []byte {
	out := common.LeftPadBytes(big.NewInt(32).Bytes(), 32)
	out = append(out, common.LeftPadBytes(new(big.Int).SetUint64(uint64(len(b))).Bytes(), 32)...)
	padded := make([]byte, (len(b)+31)/32*32)
	copy(padded, b)
	return append(out, padded...)
}
