package op

import (
	"bytes"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

func TestL1InfoSelectors(t *testing.T) {
	for sig, sel := range map[string][4]byte{
		"setL1BlockValues(uint64,uint64,uint256,bytes32,uint64,bytes32,uint256,uint256)": SelectorBedrock,
		"setL1BlockValuesEcotone()": SelectorEcotone,
		"setL1BlockValuesIsthmus()": SelectorIsthmus,
		"setL1BlockValuesJovian()":  SelectorJovian,
	} {
		if got := crypto.Keccak256([]byte(sig))[:4]; !bytes.Equal(got, sel[:]) {
			t.Errorf("%s: selector %x, want %x", sig, sel, got)
		}
	}
}

func sampleInfo(v L1InfoVersion) *L1Info {
	info := &L1Info{Version: v, Number: 7_000_123, Time: 1_700_000_000, BaseFee: big.NewInt(31e9),
		BlockHash: common.HexToHash("0xaa01"), SequenceNumber: 5, BatcherHash: common.HexToHash("0x6887246668a3b87f54deb3b94ba47a6f63f32985")}
	if v == L1InfoBedrock {
		info.L1FeeOverhead, info.L1FeeScalar = big.NewInt(188), big.NewInt(684000)
		return info
	}
	info.BaseFeeScalar, info.BlobBaseFeeScalar, info.BlobBaseFee = 5227, 1014213, big.NewInt(3)
	if v >= L1InfoIsthmus {
		info.OperatorFeeScalar, info.OperatorFeeConstant = 1234, 1<<40+1
	}
	if v == L1InfoJovian {
		info.DAFootprintGasScalar = 400
	}
	return info
}

func TestL1InfoRoundTrip(t *testing.T) {
	for _, v := range []L1InfoVersion{L1InfoBedrock, L1InfoEcotone, L1InfoIsthmus, L1InfoJovian} {
		info := sampleInfo(v)
		data, err := info.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		want := map[L1InfoVersion]int{L1InfoBedrock: 260, L1InfoEcotone: 164, L1InfoIsthmus: 176, L1InfoJovian: 178}[v]
		if len(data) != want {
			t.Fatalf("version %d: %d bytes, want %d", v, len(data), want)
		}
		back, err := ParseL1Info(data)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := back.Marshal()
		if !bytes.Equal(again, data) || back.Number != info.Number || back.Time != info.Time ||
			back.BaseFee.Cmp(info.BaseFee) != 0 || back.SequenceNumber != 5 || back.DAFootprintGasScalar != info.DAFootprintGasScalar ||
			back.OperatorFeeConstant != info.OperatorFeeConstant || back.BatcherHash != info.BatcherHash {
			t.Errorf("version %d: round trip %+v != %+v", v, back, info)
		}
		// The storage the call leaves and the calldata give the same fees.
		cfg := fjordConfig()
		cfg.HoloceneTime, cfg.IsthmusTime, cfg.JovianTime = cfg.GraniteTime, cfg.GraniteTime, cfg.GraniteTime
		cd := CostData{Zeroes: 40, Ones: 160, FastLZSize: 170}
		pa, pb := ReadFeeParams(cfg, 1, reader(infoSlots(back))), back.FeeParams(cfg, 1)
		// The DA footprint gas scalar is not read from storage (whose
		// layout changed within L1Block 1.7.0): the executor takes the
		// L1-info deposit's.
		if pa.DAFootprintGasScalar != 0 {
			t.Errorf("version %d: ReadFeeParams read a DA scalar %d from storage", v, pa.DAFootprintGasScalar)
		}
		pa.DAFootprintGasScalar = back.DAFootprintGasScalar
		a, b := pa.ReceiptFields(cd), pb.ReceiptFields(cd)
		if a.L1Fee.Cmp(b.L1Fee) != 0 || a.L1GasUsed.Cmp(b.L1GasUsed) != 0 || *a.BlobGasUsed != *b.BlobGasUsed {
			t.Errorf("version %d: storage %+v, calldata %+v", v, a, b)
		}
		if pa.OperatorFeeScalar != info.OperatorFeeScalar || pa.OperatorFeeConstant != info.OperatorFeeConstant ||
			pa.DAFootprintGasScalar != info.DAFootprintGasScalar || pa.OperatorFee(100_000).Cmp(pb.OperatorFee(100_000)) != 0 {
			t.Errorf("version %d: operator/DA params from storage %+v, calldata %+v", v, pa, pb)
		}
	}
}

// TestL1InfoPublishedEcotone decodes the OP Mainnet L1-info deposit of
// block 124665056 field by field (the packed words read by hand; the base
// fee and scalars are the published receipt's l1GasPrice and scalars).
func TestL1InfoPublishedEcotone(t *testing.T) {
	info, err := ParseL1Info(depositData(t, opMainnetL1Info))
	if err != nil {
		t.Fatal(err)
	}
	if info.BaseFeeScalar != 5227 || info.BlobBaseFeeScalar != 1014213 || info.SequenceNumber != 4 ||
		info.Time != 1724928743 || info.Number != 20633763 || info.BaseFee.Uint64() != 1055991687 || info.BlobBaseFee.Uint64() != 1 ||
		info.BatcherHash != common.HexToHash("0x6887246668a3b87f54deb3b94ba47a6f63f32985") {
		t.Errorf("decoded %+v", info)
	}
}

func TestParseL1InfoErrors(t *testing.T) {
	good, _ := sampleInfo(L1InfoIsthmus).Marshal()
	bed, _ := sampleInfo(L1InfoBedrock).Marshal()
	bigNum := append([]byte{}, bed...)
	bigNum[4+23] = 1 // number word above uint64
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "no selector"},
		{"unknown selector", []byte{1, 2, 3, 4, 5}, "unknown selector"},
		{"short", good[:175], "needs 176 bytes, have 175"},
		{"long", append(append([]byte{}, good...), 0), "needs 176 bytes, have 177"},
		{"bedrock uint64 overflow", bigNum, "number does not fit uint64"},
	}
	for _, c := range cases {
		_, err := ParseL1Info(c.data)
		if !errors.Is(err, ErrL1Info) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if _, err := (&L1Info{Version: L1InfoEcotone, BaseFee: new(big.Int).Lsh(big.NewInt(1), 256)}).Marshal(); !errors.Is(err, ErrL1Info) {
		t.Errorf("oversized basefee: %v", err)
	}
}

func TestL1InfoVersionAt(t *testing.T) {
	eco, ist, jov := uint64(10), uint64(20), uint64(30)
	z := uint64(0)
	cfg := &Config{BedrockBlock: new(big.Int), RegolithTime: &z, CanyonTime: &z, DeltaTime: &z, EcotoneTime: &eco,
		FjordTime: &eco, GraniteTime: &eco, HoloceneTime: &eco, IsthmusTime: &ist, JovianTime: &jov,
		EIP1559Elasticity: 6, EIP1559Denominator: 50, EIP1559DenominatorCanyon: 250}
	cases := []struct {
		t, prev uint64
		want    L1InfoVersion
	}{
		{8, 6, L1InfoBedrock}, {10, 8, L1InfoBedrock}, {12, 10, L1InfoEcotone},
		{20, 18, L1InfoEcotone}, {22, 20, L1InfoIsthmus}, {30, 28, L1InfoIsthmus}, {32, 30, L1InfoJovian},
	}
	for _, c := range cases {
		if got := L1InfoVersionAt(cfg, c.t, c.prev); got != c.want {
			t.Errorf("L1InfoVersionAt(%d, %d) = %d, want %d", c.t, c.prev, got, c.want)
		}
	}
	// Forks active at genesis: block 1 already uses the newest encoding.
	all := &Config{BedrockBlock: new(big.Int), RegolithTime: &z, CanyonTime: &z, DeltaTime: &z, EcotoneTime: &z,
		FjordTime: &z, GraniteTime: &z, HoloceneTime: &z, IsthmusTime: &z, JovianTime: &z,
		EIP1559Elasticity: 6, EIP1559Denominator: 50, EIP1559DenominatorCanyon: 250}
	if got := L1InfoVersionAt(all, 2, 0); got != L1InfoJovian {
		t.Errorf("genesis forks: %d", got)
	}
}

func FuzzParseL1Info(f *testing.F) {
	for _, v := range []L1InfoVersion{L1InfoBedrock, L1InfoEcotone, L1InfoIsthmus, L1InfoJovian} {
		b, _ := sampleInfo(v).Marshal()
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := ParseL1Info(data)
		if err != nil {
			return
		}
		out, err := info.Marshal()
		if err != nil || !bytes.Equal(out, data) {
			t.Fatalf("accepted calldata does not round-trip: %v", err)
		}
	})
}
