package op

import (
	"math/big"
	"testing"
)

func TestSyntheticNextOrigin(t *testing.T) {
	s := DefaultSyntheticL1()
	for _, tc := range []struct {
		name string
		prev L1Origin
		t    uint64
		want L1Origin
	}{
		{"predeploy never set: start at time t", L1Origin{Number: 7}, 1000, L1Origin{Number: 7, Time: 1000, Hash: SyntheticL1Hash(7)}},
		{"same epoch", L1Origin{Number: 7, Time: 1000, SequenceNumber: 3}, 1011, L1Origin{Number: 7, Time: 1000, Hash: SyntheticL1Hash(7), SequenceNumber: 4}},
		{"one L1 block later", L1Origin{Number: 7, Time: 1000, SequenceNumber: 5}, 1012, L1Origin{Number: 8, Time: 1012, Hash: SyntheticL1Hash(8)}},
		{"a gap of 30 s: two L1 blocks", L1Origin{Number: 7, Time: 1000, SequenceNumber: 1}, 1030, L1Origin{Number: 9, Time: 1024, Hash: SyntheticL1Hash(9)}},
		{"origin after t (clock moved back): restart at t", L1Origin{Number: 7, Time: 2000}, 1500, L1Origin{Number: 7, Time: 1500, Hash: SyntheticL1Hash(7)}},
	} {
		if got := s.NextOrigin(tc.prev, tc.t); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestSyntheticValidate(t *testing.T) {
	ok := DefaultSyntheticL1()
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*SyntheticL1){
		"nil base fee":       func(s *SyntheticL1) { s.BaseFee = nil },
		"negative blob fee":  func(s *SyntheticL1) { s.BlobBaseFee = big.NewInt(-1) },
		"base fee > uint256": func(s *SyntheticL1) { s.BaseFee = new(big.Int).Lsh(big.NewInt(1), 256) },
		"zero block time":    func(s *SyntheticL1) { s.BlockTime = 0 },
		"zero DA scalar":     func(s *SyntheticL1) { s.DAFootprintGasScalar = 0 },
	} {
		s := DefaultSyntheticL1()
		mut(&s)
		if err := s.Validate(); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}

// Continuing takes every fee parameter of the L1-info it continues and
// keeps its own L1 block time; an encoding without a DA footprint scalar
// (before Jovian) keeps the default, which Validate requires non-zero.
func TestSyntheticContinuing(t *testing.T) {
	base := DefaultSyntheticL1()
	base.BlockTime = 2
	for _, v := range []L1InfoVersion{L1InfoEcotone, L1InfoIsthmus, L1InfoJovian} {
		info := sampleInfo(v)
		info.DAFootprintGasScalar = map[bool]uint16{true: 777}[v == L1InfoJovian]
		s := base.Continuing(info)
		if err := s.Validate(); err != nil {
			t.Fatalf("version %d: %v", v, err)
		}
		wantDA := uint16(DefaultDAFootprintGasScalar)
		if v == L1InfoJovian {
			wantDA = 777
		}
		if s.BaseFee.Cmp(info.BaseFee) != 0 || s.BlobBaseFee.Cmp(info.BlobBaseFee) != 0 || s.BaseFeeScalar != info.BaseFeeScalar ||
			s.BlobBaseFeeScalar != info.BlobBaseFeeScalar || s.OperatorFeeScalar != info.OperatorFeeScalar ||
			s.OperatorFeeConstant != info.OperatorFeeConstant || s.BatcherHash != info.BatcherHash ||
			s.DAFootprintGasScalar != wantDA || s.BlockTime != 2 {
			t.Fatalf("version %d: %+v continuing %+v", v, s, info)
		}
		// The next block's L1-info, in the same encoding, carries the
		// same parameters.
		next := s.Info(L1Origin{Number: info.Number, Time: info.Time, Hash: info.BlockHash, SequenceNumber: info.SequenceNumber + 1}, v)
		if next.BaseFeeScalar != info.BaseFeeScalar || next.OperatorFeeConstant != info.OperatorFeeConstant || next.BatcherHash != info.BatcherHash {
			t.Fatalf("version %d: next L1-info %+v", v, next)
		}
		info.BaseFee.SetInt64(1) // no aliasing
		if s.BaseFee.Int64() == 1 {
			t.Fatal("Continuing shares the base fee")
		}
	}
}
