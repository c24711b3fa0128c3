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
