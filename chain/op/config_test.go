package op

import (
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/consensus/misc/eip4844"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
)

// opChainConfig is an op-geth style chain config with every OP fork
// scheduled: Bedrock..Delta at genesis, the later ones spaced out.
const opChainConfig = `{
	"chainId": 901,
	"homesteadBlock": 0, "eip150Block": 0, "eip155Block": 0, "eip158Block": 0,
	"byzantiumBlock": 0, "constantinopleBlock": 0, "petersburgBlock": 0, "istanbulBlock": 0,
	"muirGlacierBlock": 0, "berlinBlock": 0, "londonBlock": 0, "arrowGlacierBlock": 0,
	"grayGlacierBlock": 0, "mergeNetsplitBlock": 0,
	"terminalTotalDifficulty": 0,
	"bedrockBlock": 0, "regolithTime": 0, "canyonTime": 0, "deltaTime": 0,
	"ecotoneTime": 10, "fjordTime": 20, "graniteTime": 30, "holoceneTime": 40,
	"isthmusTime": 50, "jovianTime": 60, "karstTime": 70,
	"optimism": {"eip1559Elasticity": 6, "eip1559Denominator": 50, "eip1559DenominatorCanyon": 250}
}`

func TestParseConfig(t *testing.T) {
	cfg, err := ParseConfig([]byte(opChainConfig))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.EIP1559Elasticity != 6 || cfg.EIP1559Denominator != 50 || cfg.EIP1559DenominatorCanyon != 250 {
		t.Fatalf("1559 params: %+v", cfg)
	}
	forks := []struct {
		t    uint64
		want string
	}{{0, "canyon"}, {9, "canyon"}, {10, "ecotone"}, {25, "fjord"}, {30, "granite"}, {45, "holocene"},
		{50, "isthmus"}, {69, "jovian"}, {70, "karst"}, {1 << 40, "karst"}}
	for _, f := range forks {
		if got := cfg.Fork(f.t); got != f.want {
			t.Errorf("Fork(%d) = %s, want %s", f.t, got, f.want)
		}
	}
	is := []struct {
		name string
		fn   func(uint64) bool
		at   uint64
	}{{"regolith", cfg.IsRegolith, 0}, {"canyon", cfg.IsCanyon, 0},
		{"ecotone", cfg.IsEcotone, 10}, {"fjord", cfg.IsFjord, 20}, {"granite", cfg.IsGranite, 30},
		{"holocene", cfg.IsHolocene, 40}, {"isthmus", cfg.IsIsthmus, 50}, {"jovian", cfg.IsJovian, 60},
		{"karst", cfg.IsKarst, 70}}
	for _, f := range is {
		if !f.fn(f.at) || !f.fn(f.at+1) {
			t.Errorf("Is%s(%d) false", f.name, f.at)
		}
		if f.at > 0 && f.fn(f.at-1) {
			t.Errorf("Is%s(%d) true before activation", f.name, f.at-1)
		}
	}
	if !cfg.IsBedrock(big.NewInt(0)) {
		t.Error("IsBedrock(0) false")
	}
	if cfg.BaseFeeChangeDenominator(0) != 250 {
		t.Error("Canyon denominator not used")
	}

	// An L1 config (no "optimism" object) is not an OP chain.
	l1, err := ParseConfig([]byte(`{"chainId": 1, "londonBlock": 0}`))
	if l1 != nil || err != nil {
		t.Fatalf("L1 config: %v, %v", l1, err)
	}
}

func TestParseConfigErrors(t *testing.T) {
	cases := []struct {
		name, json, want string
	}{
		{"bad json", `{"optimism": `, "unexpected end"},
		{"no elasticity", `{"optimism": {"eip1559Denominator": 50}}`, "eip1559Elasticity"},
		{"zero denominator", `{"optimism": {"eip1559Elasticity": 6, "eip1559Denominator": 0}}`, "eip1559Denominator"},
		{"canyon without denominator", `{"canyonTime": 0, "regolithTime": 0, "optimism": {"eip1559Elasticity": 6, "eip1559Denominator": 50}}`, "eip1559DenominatorCanyon"},
		{"gap", `{"chainId": 7, "regolithTime": 0, "ecotoneTime": 5, "optimism": {"eip1559Elasticity": 6, "eip1559Denominator": 50}}`, "(chain 7): ecotoneTime is set but canyonTime, the fork before it, is not"},
		{"order", `{"chainId": 10, "regolithTime": 0, "canyonTime": 10, "ecotoneTime": 5, "optimism": {"eip1559Elasticity": 6, "eip1559Denominator": 50, "eip1559DenominatorCanyon": 250}}`, "(chain 10): ecotoneTime (5) is before canyonTime (10)"},
		{"karst without jovian", `{"chainId": 130, "regolithTime": 0, "canyonTime": 0, "ecotoneTime": 0, "fjordTime": 0, "graniteTime": 0, "holoceneTime": 0, "isthmusTime": 0, "karstTime": 9, "optimism": {"eip1559Elasticity": 6, "eip1559Denominator": 50, "eip1559DenominatorCanyon": 250}}`, "(chain 130): karstTime is set but jovianTime, the fork before it, is not"},
		{"negative bedrock", `{"bedrockBlock": -1, "optimism": {"eip1559Elasticity": 6, "eip1559Denominator": 50}}`, "bedrockBlock"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(c.json))
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrConfig naming %q", err, c.want)
			}
		})
	}
}

// TestParseConfigWithoutDelta: op-geth's chain configs (geth --op-network
// NAME dumpgenesis) have no deltaTime, Delta being a derivation-only fork.
// They are accepted; a deltaTime, when present, is neither required nor
// ordered; an unset later fork is simply not active.
func TestParseConfigWithoutDelta(t *testing.T) {
	noDelta := strings.Replace(opChainConfig, `"deltaTime": 0,`, ``, 1)
	cfg, err := ParseConfig([]byte(noDelta))
	if err != nil {
		t.Fatalf("a config without deltaTime is refused: %v", err)
	}
	if cfg.DeltaTime != nil || !cfg.IsEcotone(10) || cfg.IsEcotone(9) || cfg.Fork(9) != "canyon" || cfg.ChainID != 901 {
		t.Fatalf("parsed %+v", cfg)
	}
	// A deltaTime out of the execution forks' order is derivation's
	// business: accepted (op-geth ignores the field).
	late := strings.Replace(opChainConfig, `"deltaTime": 0,`, `"deltaTime": 1000,`, 1)
	if _, err := ParseConfig([]byte(late)); err != nil {
		t.Fatalf("deltaTime after ecotoneTime refused: %v", err)
	}
	// Later forks unset: not active at any time.
	short := `{"chainId": 5, "regolithTime": 0, "canyonTime": 0, "ecotoneTime": 3, "optimism": {"eip1559Elasticity": 6, "eip1559Denominator": 50, "eip1559DenominatorCanyon": 250}}`
	cfg, err = ParseConfig([]byte(short))
	if err != nil {
		t.Fatal(err)
	}
	for _, is := range []func(uint64) bool{cfg.IsFjord, cfg.IsGranite, cfg.IsHolocene, cfg.IsIsthmus, cfg.IsJovian, cfg.IsKarst} {
		if is(1 << 62) {
			t.Fatal("an unset fork reads as active")
		}
	}
	if cfg.Fork(1<<62) != "ecotone" {
		t.Fatalf("Fork = %s", cfg.Fork(1<<62))
	}
}

func TestApplyTo(t *testing.T) {
	cfg, err := ParseConfig([]byte(opChainConfig))
	if err != nil {
		t.Fatal(err)
	}
	pc := new(params.ChainConfig)
	if err := json.Unmarshal([]byte(opChainConfig), pc); err != nil {
		t.Fatal(err)
	}
	// Without the OP mapping go-ethereum has no Shanghai..Osaka at all.
	if pc.ShanghaiTime != nil || pc.CancunTime != nil {
		t.Fatal("unexpected L1 times before ApplyTo")
	}
	if err := cfg.ApplyTo(pc); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		got  *uint64
		want uint64
	}{{"shanghai", pc.ShanghaiTime, 0}, {"cancun", pc.CancunTime, 10}, {"prague", pc.PragueTime, 50}, {"osaka", pc.OsakaTime, 70}} {
		if c.got == nil || *c.got != c.want {
			t.Errorf("%s = %v, want %d", c.name, c.got, c.want)
		}
	}
	// The EVM's blob base fee is 1 wei in every blob fork (excessBlobGas is
	// always 0 on OP), and go-ethereum's excess-gas code does not panic.
	zero := uint64(0)
	for _, tm := range []uint64{10, 50, 70, 1 << 40} {
		h := &types.Header{Number: big.NewInt(1), Time: tm, ExcessBlobGas: &zero, BlobGasUsed: &zero, BaseFee: big.NewInt(1e9)}
		if fee := eip4844.CalcBlobFee(pc, h); fee.Cmp(big.NewInt(1)) != 0 {
			t.Errorf("blob base fee at %d = %v, want 1", tm, fee)
		}
		_ = eip4844.CalcExcessBlobGas(pc, h, tm+1)
	}

	// go-ethereum accepts the genesis now and builds block 0 with the
	// Cancun/Prague header fields.
	g := &core.Genesis{Config: pc, GasLimit: 30_000_000, BaseFee: big.NewInt(1e9), Timestamp: 100}
	b := g.ToBlock()
	if b.Header().ExcessBlobGas == nil || b.Header().RequestsHash == nil || b.Header().WithdrawalsHash == nil {
		t.Fatalf("genesis header lacks fork fields: %+v", b.Header())
	}

	// An L1 time that contradicts its OP fork is refused, naming both.
	pc2 := new(params.ChainConfig)
	_ = json.Unmarshal([]byte(opChainConfig), pc2)
	bad := uint64(11)
	pc2.CancunTime = &bad
	if err := cfg.ApplyTo(pc2); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "(chain 901): cancunTime (11) differs from ecotoneTime (10)") {
		t.Fatalf("conflict: %v", err)
	}
	// An L1 fork with no OP counterpart is refused.
	pc3 := new(params.ChainConfig)
	_ = json.Unmarshal([]byte(opChainConfig), pc3)
	pc3.BPO1Time = &bad
	if err := cfg.ApplyTo(pc3); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "bpo1Time") {
		t.Fatalf("bpo: %v", err)
	}
}

// TestApplyToGenesisWithoutBlobSchedule is the user-facing failure of issue
// 19: go-ethereum refuses an OP genesis whose config schedules cancunTime but
// has no blobSchedule. After ApplyTo it accepts it.
func TestApplyToGenesisWithoutBlobSchedule(t *testing.T) {
	raw := strings.Replace(opChainConfig, `"bedrockBlock"`, `"shanghaiTime": 0, "cancunTime": 10, "pragueTime": 50, "osakaTime": 70, "bedrockBlock"`, 1)
	pc := new(params.ChainConfig)
	if err := json.Unmarshal([]byte(raw), pc); err != nil {
		t.Fatal(err)
	}
	if err := pc.CheckConfigForkOrder(); err == nil || !strings.Contains(err.Error(), "blobSchedule") {
		t.Fatalf("expected go-ethereum's blobSchedule refusal, got %v", err)
	}
	cfg, err := ParseConfig([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.ApplyTo(pc); err != nil {
		t.Fatal(err)
	}
	if pc.BlobScheduleConfig.Cancun.Target != 0 || pc.BlobScheduleConfig.Prague == nil {
		t.Fatalf("blob schedule: %+v", pc.BlobScheduleConfig)
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(opChainConfig))
	f.Add([]byte(`{"optimism": {"eip1559Elasticity": 6, "eip1559Denominator": 50}}`))
	f.Add([]byte(`{"chainId": 1}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		cfg, err := ParseConfig(raw)
		if err != nil || cfg == nil {
			return
		}
		// An accepted config validates and maps onto go-ethereum's without
		// panicking.
		if err := cfg.Validate(); err != nil {
			t.Fatalf("accepted config fails Validate: %v", err)
		}
		_ = cfg.ApplyTo(new(params.ChainConfig))
	})
}
