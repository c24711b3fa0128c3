package op

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
)

func u64p(v uint64) *uint64 { return &v }

func holoceneConfig(holocene, jovian *uint64) *Config {
	z := uint64(0)
	return &Config{BedrockBlock: new(big.Int), RegolithTime: &z, CanyonTime: &z, DeltaTime: &z, EcotoneTime: &z,
		FjordTime: &z, GraniteTime: &z, HoloceneTime: holocene, IsthmusTime: jovian, JovianTime: jovian,
		EIP1559Elasticity: 6, EIP1559Denominator: 50, EIP1559DenominatorCanyon: 250}
}

func TestDecodeExtraData(t *testing.T) {
	hol := EIP1559Params{Denominator: 250, Elasticity: 6}.Encode(false)
	jov := EIP1559Params{Denominator: 250, Elasticity: 6, MinBaseFee: 1e9}.Encode(true)
	if !bytes.Equal(hol, hexutil.MustDecode("0x00000000fa00000006")) {
		t.Fatalf("holocene encoding %x", hol)
	}
	if p, err := DecodeExtraData(jov, true); err != nil || p.MinBaseFee != 1e9 || p.Denominator != 250 {
		t.Fatalf("jovian: %+v %v", p, err)
	}
	cases := []struct {
		name   string
		extra  []byte
		jovian bool
		want   string
	}{
		{"empty", nil, false, "length 0, Holocene requires 9"},
		{"jovian form before jovian", jov, false, "length 17, Holocene requires 9"},
		{"holocene form in jovian", hol, true, "length 9, Jovian requires 17"},
		{"version", append([]byte{1}, hol[1:]...), false, "version 1, Holocene requires 0"},
		{"jovian version", append([]byte{0}, jov[1:]...), true, "version 0, Jovian requires 1"},
		{"zero denominator", EIP1559Params{Elasticity: 6}.Encode(false), false, "denominator is zero"},
		{"zero elasticity", EIP1559Params{Denominator: 6}.Encode(true), true, "elasticity is zero"},
		{"trailing byte", append(append([]byte{}, hol...), 0), false, "length 10"},
	}
	for _, c := range cases {
		_, err := DecodeExtraData(c.extra, c.jovian)
		if !errors.Is(err, ErrExtraData) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

func TestVerifyExtraData(t *testing.T) {
	cfg := holoceneConfig(u64p(100), u64p(200))
	hol := EIP1559Params{Denominator: 250, Elasticity: 6}.Encode(false)
	jov := EIP1559Params{Denominator: 250, Elasticity: 6, MinBaseFee: 7}.Encode(true)
	cases := []struct {
		num    int64
		time   uint64
		extra  []byte
		wantOK bool
	}{
		{0, 0, []byte("any genesis extra"), true},
		{1, 50, nil, true},
		{1, 50, []byte{0}, false}, // pre-Holocene blocks have empty extraData
		{2, 100, hol, true},
		{2, 100, nil, false},
		{2, 100, jov, false},
		{3, 200, jov, true},
		{3, 200, hol, false},
	}
	for _, c := range cases {
		err := VerifyExtraData(cfg, &types.Header{Number: big.NewInt(c.num), Time: c.time, Extra: c.extra})
		if (err == nil) != c.wantOK {
			t.Errorf("block %d at %d extra %x: %v", c.num, c.time, c.extra, err)
		}
	}
}

func TestExtraDataFromAttributes(t *testing.T) {
	cfg := holoceneConfig(u64p(100), u64p(200))
	zero := make([]byte, 8)
	if got, err := ExtraDataFromAttributes(cfg, 150, zero, nil); err != nil || !bytes.Equal(got, hexutil.MustDecode("0x00000000fa00000006")) {
		t.Errorf("zero params -> constants: %x %v", got, err)
	}
	if got, err := ExtraDataFromAttributes(cfg, 250, hexutil.MustDecode("0x0000003200000004"), u64p(9)); err != nil ||
		!bytes.Equal(got, hexutil.MustDecode("0x01000000320000000400000000000000"+"09")) {
		t.Errorf("jovian: %x %v", got, err)
	}
	for name, c := range map[string]struct {
		t      uint64
		params []byte
		min    *uint64
	}{
		"params before holocene": {50, zero, nil},
		"short params":           {150, zero[:7], nil},
		"one zero":               {150, hexutil.MustDecode("0x0000003200000000"), nil},
		"min before jovian":      {150, zero, u64p(1)},
		"no min in jovian":       {250, zero, nil},
	} {
		if _, err := ExtraDataFromAttributes(cfg, c.t, c.params, c.min); !errors.Is(err, ErrExtraData) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if got, err := ExtraDataFromAttributes(cfg, 50, nil, nil); got != nil || err != nil {
		t.Errorf("pre-holocene: %x %v", got, err)
	}
}

func TestCalcBaseFee(t *testing.T) {
	cfg := holoceneConfig(u64p(100), u64p(200))
	pre := func(gasUsed uint64) *types.Header {
		return &types.Header{Number: big.NewInt(10), Time: 50, GasLimit: 60_000_000, GasUsed: gasUsed, BaseFee: big.NewInt(1_000_000)}
	}
	hol := func(gasUsed uint64, denom, elast uint32) *types.Header {
		return &types.Header{Number: big.NewInt(10), Time: 150, GasLimit: 60_000_000, GasUsed: gasUsed, BaseFee: big.NewInt(1_000_000),
			Extra: EIP1559Params{Denominator: denom, Elasticity: elast}.Encode(false)}
	}
	jov := func(gasUsed, blobGasUsed, min uint64) *types.Header {
		return &types.Header{Number: big.NewInt(10), Time: 250, GasLimit: 60_000_000, GasUsed: gasUsed, BlobGasUsed: &blobGasUsed,
			BaseFee: big.NewInt(1_000_000), Extra: EIP1559Params{Denominator: 250, Elasticity: 6, MinBaseFee: min}.Encode(true)}
	}
	cases := []struct {
		name   string
		parent *types.Header
		want   int64
	}{
		// target 10M; Canyon denominator 250 from the config.
		{"at target", pre(10_000_000), 1_000_000},
		{"full block", pre(60_000_000), 1_000_000 + 1_000_000*50_000_000/10_000_000/250},
		{"empty block", pre(0), 1_000_000 - 1_000_000/250},
		// Holocene: the parent's extraData decides (target 60M/4 = 15M, denominator 8).
		{"holocene params", hol(30_000_000, 8, 4), 1_000_000 + 1_000_000*15_000_000/15_000_000/8},
		{"holocene empty", hol(0, 8, 4), 1_000_000 - 1_000_000/8},
		// Jovian: max(gasUsed, blobGasUsed) is metered.
		{"jovian da footprint", jov(0, 60_000_000, 0), 1_000_000 + 1_000_000*50_000_000/10_000_000/250},
		{"jovian gas used", jov(60_000_000, 5, 0), 1_000_000 + 1_000_000*50_000_000/10_000_000/250},
		// Jovian: clamped at the minimum base fee.
		{"jovian min base fee", jov(0, 0, 5_000_000), 5_000_000},
		{"jovian min below", jov(0, 0, 10), 1_000_000 - 1_000_000/250},
	}
	for _, c := range cases {
		got, err := CalcBaseFee(cfg, c.parent, c.parent.Time+2)
		if err != nil || got.Int64() != c.want {
			t.Errorf("%s: %v %v, want %d", c.name, got, err, c.want)
		}
	}
	// The smallest increase is 1 wei.
	tiny := pre(10_000_001)
	tiny.BaseFee = big.NewInt(7)
	if got, _ := CalcBaseFee(cfg, tiny, 52); got.Int64() != 8 {
		t.Errorf("min increase: %v", got)
	}
	// Pre-Canyon denominator.
	fifty := uint64(1_000)
	cfg2 := holoceneConfig(nil, nil)
	cfg2.CanyonTime, cfg2.DeltaTime, cfg2.EcotoneTime, cfg2.FjordTime, cfg2.GraniteTime = &fifty, &fifty, &fifty, &fifty, &fifty
	if got, _ := CalcBaseFee(cfg2, pre(0), 52); got.Int64() != 1_000_000-1_000_000/50 {
		t.Errorf("pre-canyon: %v", got)
	}
	// A Holocene parent with bad extraData is an error naming it.
	bad := hol(0, 8, 4)
	bad.Extra = nil
	if _, err := CalcBaseFee(cfg, bad, 152); !errors.Is(err, ErrExtraData) || !strings.Contains(err.Error(), "parent 10") {
		t.Errorf("bad parent extra: %v", err)
	}
}

func TestBlockDAFootprint(t *testing.T) {
	jovInfo, _ := (&L1Info{Version: L1InfoJovian, DAFootprintGasScalar: 400}).Marshal()
	isthInfo, _ := (&L1Info{Version: L1InfoIsthmus}).Marshal()
	ecoInfo, _ := (&L1Info{Version: L1InfoEcotone}).Marshal()
	costs := []CostData{{FastLZSize: 10}, {FastLZSize: 200}} // 100 and 124 bytes
	if got, err := BlockDAFootprint(jovInfo, costs); err != nil || got != (100+124)*400 {
		t.Errorf("jovian: %d %v", got, err)
	}
	if got, err := BlockDAFootprint(isthInfo, nil); err != nil || got != 0 {
		t.Errorf("activation block: %d %v", got, err)
	}
	for name, c := range map[string]struct {
		info  []byte
		costs []CostData
	}{"user tx in activation block": {isthInfo, costs}, "ecotone info": {ecoInfo, nil}, "not l1 info": {[]byte{1, 2}, nil}} {
		if _, err := BlockDAFootprint(c.info, c.costs); !errors.Is(err, ErrDAFootprint) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if DAFootprint(0xffff, []CostData{{FastLZSize: 1 << 50}, {FastLZSize: 1 << 50}}) != ^uint64(0) {
		t.Error("DAFootprint does not saturate")
	}
}

func TestVerifyBlobGas(t *testing.T) {
	eco := uint64(100)
	cfg := holoceneConfig(u64p(200), u64p(300))
	cfg.EcotoneTime, cfg.FjordTime, cfg.GraniteTime = &eco, &eco, &eco
	zero := uint64(0)
	fp := uint64(5000)
	cases := []struct {
		name        string
		h           types.Header
		footprint   uint64
		wantOK      bool
		wantMessage string
	}{
		{"pre-ecotone absent", types.Header{Time: 50}, 0, true, ""},
		{"pre-ecotone present", types.Header{Time: 50, BlobGasUsed: &zero, ExcessBlobGas: &zero}, 0, false, "blobGasUsed 0, want absent"},
		{"ecotone zero", types.Header{Time: 150, BlobGasUsed: &zero, ExcessBlobGas: &zero}, 999, true, ""},
		{"jovian footprint", types.Header{Time: 350, GasLimit: 1e6, BlobGasUsed: &fp, ExcessBlobGas: &zero}, 5000, true, ""},
		{"jovian wrong footprint", types.Header{Time: 350, GasLimit: 1e6, BlobGasUsed: &zero, ExcessBlobGas: &zero}, 5000, false, "blobGasUsed 0, want 5000"},
		{"jovian excess", types.Header{Time: 350, GasLimit: 1e6, BlobGasUsed: &fp, ExcessBlobGas: &fp}, 5000, false, "excessBlobGas 5000, want 0"},
		{"over gas limit", types.Header{Time: 350, GasLimit: 4999, BlobGasUsed: &fp, ExcessBlobGas: &zero}, 5000, false, "exceeds the gas limit 4999"},
	}
	for _, c := range cases {
		err := VerifyBlobGas(cfg, &c.h, c.footprint)
		if (err == nil) != c.wantOK || (err != nil && !strings.Contains(err.Error(), c.wantMessage)) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// konaFixture is the part of a ../shared/op/kona fixture the header and
// L1-info tests use.
type konaFixture struct {
	Rollup struct {
		Regolith *uint64 `json:"regolith_time"`
		Canyon   *uint64 `json:"canyon_time"`
		Delta    *uint64 `json:"delta_time"`
		Ecotone  *uint64 `json:"ecotone_time"`
		Fjord    *uint64 `json:"fjord_time"`
		Granite  *uint64 `json:"granite_time"`
		Holocene *uint64 `json:"holocene_time"`
		Isthmus  *uint64 `json:"isthmus_time"`
		Jovian   *uint64 `json:"jovian_time"`
		OP       struct {
			Elasticity        uint64 `json:"eip1559Elasticity"`
			Denominator       uint64 `json:"eip1559Denominator"`
			DenominatorCanyon uint64 `json:"eip1559DenominatorCanyon"`
		} `json:"chain_op_config"`
	} `json:"rollup_config"`
	Parent  *types.Header `json:"parent_header"`
	Payload struct {
		Timestamp     hexutil.Uint64  `json:"timestamp"`
		Transactions  []hexutil.Bytes `json:"transactions"`
		EIP1559Params hexutil.Bytes   `json:"eip1559Params"`
	} `json:"executing_payload"`
	Expected common.Hash `json:"expected_block_hash"`
}

func (f *konaFixture) config() *Config {
	r := f.Rollup
	if r.Regolith == nil {
		r.Regolith = u64p(0)
	}
	c := &Config{BedrockBlock: new(big.Int), RegolithTime: r.Regolith, CanyonTime: r.Canyon, DeltaTime: r.Delta,
		EcotoneTime: r.Ecotone, FjordTime: r.Fjord, GraniteTime: r.Granite, HoloceneTime: r.Holocene,
		IsthmusTime: r.Isthmus, JovianTime: r.Jovian,
		EIP1559Elasticity: r.OP.Elasticity, EIP1559Denominator: r.OP.Denominator, EIP1559DenominatorCanyon: r.OP.DenominatorCanyon}
	return c
}

var konaDir = filepath.Join("..", "..", "..", "shared", "op", "kona")

// loadKona reads every fixture.json of ../shared/op/kona, by block number,
// skipping the test when they are absent.
func loadKona(t *testing.T) map[uint64]*konaFixture {
	t.Helper()
	fx := loadKonaOptional(t)
	if fx == nil {
		t.Skipf("no kona fixtures in %s (../shared/op absent)", konaDir)
	}
	return fx
}

// loadKonaOptional is loadKona returning nil when the fixtures are absent.
func loadKonaOptional(t *testing.T) map[uint64]*konaFixture {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(konaDir, "block-*.tar.gz"))
	if len(files) == 0 {
		return nil
	}
	out := map[uint64]*konaFixture{}
	for _, name := range files {
		raw, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var r io.Reader = bytes.NewReader(raw)
		if len(raw) > 2 && raw[0] == 0x1f && raw[1] == 0x8b {
			if r, err = gzip.NewReader(r); err != nil {
				t.Fatal(err)
			}
		}
		tr := tar.NewReader(r)
		for {
			hdr, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if filepath.Base(hdr.Name) != "fixture.json" {
				continue
			}
			f := new(konaFixture)
			if err := json.NewDecoder(tr).Decode(f); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			out[f.Parent.Number.Uint64()+1] = f
		}
	}
	return out
}

// TestKonaHeaders checks the header rules on real OP Sepolia blocks
// (Holocene): for consecutive fixtures, the parent header of block N+1 is
// block N, so block N's base fee and extraData must come out of CalcBaseFee
// and ExtraDataFromAttributes applied to block N-1 and N's payload.
func TestKonaHeaders(t *testing.T) {
	fx := loadKona(t)
	var nums []uint64
	for n := range fx {
		nums = append(nums, n)
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	pairs := 0
	for _, n := range nums {
		f := fx[n]
		cfg := f.config()
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		if err := VerifyExtraData(cfg, f.Parent); err != nil {
			t.Errorf("block %d extraData: %v", n-1, err)
		}
		if err := VerifyBlobGas(cfg, f.Parent, 0); err != nil {
			t.Errorf("block %d blob gas: %v", n-1, err)
		}
		// The L1-info deposit of every block decodes (Ecotone encoding:
		// Isthmus is not active on these blocks).
		l1 := f.Payload.Transactions[0]
		if l1[0] != 0x7e {
			t.Fatalf("block %d: first transaction type %#x", n, l1[0])
		}
		info, err := ParseL1Info(depositData(t, hexutil.Encode(l1)))
		if err != nil || info.Version != L1InfoEcotone {
			t.Fatalf("block %d: L1 info %v %v", n, info, err)
		}
		next, ok := fx[n+1]
		if !ok {
			continue
		}
		block := next.Parent // the header of block n
		if block.ParentHash != f.Parent.Hash() {
			t.Fatalf("block %d: parent hash %s, fixture parent hashes to %s", n, block.ParentHash, f.Parent.Hash())
		}
		pairs++
		fee, err := CalcBaseFee(cfg, f.Parent, uint64(f.Payload.Timestamp))
		if err != nil || fee.Cmp(block.BaseFee) != 0 {
			t.Errorf("block %d: base fee %v (%v), header has %v", n, fee, err, block.BaseFee)
		}
		extra, err := ExtraDataFromAttributes(cfg, uint64(f.Payload.Timestamp), f.Payload.EIP1559Params, nil)
		if err != nil || !bytes.Equal(extra, block.Extra) {
			t.Errorf("block %d: extraData %x (%v), header has %x", n, extra, err, block.Extra)
		}
	}
	if pairs < 3 {
		t.Fatalf("only %d consecutive fixture pairs", pairs)
	}
}

func FuzzDecodeExtraData(f *testing.F) {
	f.Add(EIP1559Params{Denominator: 250, Elasticity: 6}.Encode(false), false)
	f.Add(EIP1559Params{Denominator: 250, Elasticity: 6, MinBaseFee: 9}.Encode(true), true)
	f.Fuzz(func(t *testing.T, extra []byte, jovian bool) {
		p, err := DecodeExtraData(extra, jovian)
		if err != nil {
			return
		}
		if !bytes.Equal(p.Encode(jovian), extra) {
			t.Fatalf("accepted extraData %x does not round-trip", extra)
		}
		// The base fee from such a parent is computable.
		cfg := holoceneConfig(u64p(0), map[bool]*uint64{true: u64p(0)}[jovian])
		h := &types.Header{Number: big.NewInt(1), GasLimit: 30_000_000, GasUsed: 1, BaseFee: big.NewInt(1000), Extra: extra}
		if _, err := CalcBaseFee(cfg, h, 2); err != nil {
			t.Fatal(err)
		}
	})
}
