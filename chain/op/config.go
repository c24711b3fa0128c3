package op

import (
	"encoding/json"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/params"
)

// Default EIP-1559 parameters of the OP Stack. A chain config states its own
// in its "optimism" object; these are what OP Mainnet uses and what tests
// take when they need a value.
const (
	DefaultEIP1559Elasticity        = 6
	DefaultEIP1559Denominator       = 50
	DefaultEIP1559DenominatorCanyon = 250
)

// Config is the OP Stack part of a chain config: the OP fork schedule and the
// chain's EIP-1559 constants (used before Holocene moved them into headers).
//
// It is read from the same chain-config JSON as go-ethereum's
// params.ChainConfig (op-geth's genesis format): "bedrockBlock",
// "regolithTime", "canyonTime", "deltaTime", "ecotoneTime", "fjordTime",
// "graniteTime", "holoceneTime", "isthmusTime", "jovianTime", "karstTime" and
// "optimism": {"eip1559Elasticity", "eip1559Denominator",
// "eip1559DenominatorCanyon"}. A nil (absent) time means the fork is not
// active, as op-geth reads it.
//
// Delta changed only derivation (span batches): op-geth's chain config has
// no "deltaTime" and nothing here depends on it. A "deltaTime" present in
// the JSON is kept (DeltaTime) but neither required nor ordered.
//
// A Config is immutable after ParseConfig and safe for concurrent use.
type Config struct {
	// ChainID is the config's "chainId" (0 when absent), named in errors.
	ChainID uint64
	// BedrockBlock is the first Bedrock block (default 0: the chain starts
	// at Bedrock). Blocks before it are legacy OP blocks tipnode cannot
	// execute.
	BedrockBlock *big.Int

	RegolithTime *uint64
	CanyonTime   *uint64
	// DeltaTime is informational only (derivation, not execution).
	DeltaTime    *uint64
	EcotoneTime  *uint64
	FjordTime    *uint64
	GraniteTime  *uint64
	HoloceneTime *uint64
	IsthmusTime  *uint64
	JovianTime   *uint64
	KarstTime    *uint64

	// EIP1559Elasticity and EIP1559Denominator apply before Holocene (and
	// before Canyon for the denominator); both required, non-zero.
	EIP1559Elasticity  uint64
	EIP1559Denominator uint64
	// EIP1559DenominatorCanyon replaces EIP1559Denominator from Canyon;
	// required (non-zero) when canyonTime is set.
	EIP1559DenominatorCanyon uint64
}

// configJSON mirrors the OP fields of the chain-config JSON.
type configJSON struct {
	ChainID      *big.Int `json:"chainId"`
	BedrockBlock *big.Int `json:"bedrockBlock"`
	RegolithTime *uint64  `json:"regolithTime"`
	CanyonTime   *uint64  `json:"canyonTime"`
	DeltaTime    *uint64  `json:"deltaTime"`
	EcotoneTime  *uint64  `json:"ecotoneTime"`
	FjordTime    *uint64  `json:"fjordTime"`
	GraniteTime  *uint64  `json:"graniteTime"`
	HoloceneTime *uint64  `json:"holoceneTime"`
	IsthmusTime  *uint64  `json:"isthmusTime"`
	JovianTime   *uint64  `json:"jovianTime"`
	KarstTime    *uint64  `json:"karstTime"`
	Optimism     *struct {
		EIP1559Elasticity        *uint64 `json:"eip1559Elasticity"`
		EIP1559Denominator       *uint64 `json:"eip1559Denominator"`
		EIP1559DenominatorCanyon *uint64 `json:"eip1559DenominatorCanyon"`
	} `json:"optimism"`
}

// ParseConfig reads the OP part of a chain config (the genesis JSON's
// "config" object, or the stored chain config). It returns (nil, nil) when
// the config has no "optimism" object: the chain is an L1 chain. The result
// is validated (see Validate).
func ParseConfig(chainConfig []byte) (*Config, error) {
	var j configJSON
	if err := json.Unmarshal(chainConfig, &j); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if j.Optimism == nil {
		return nil, nil
	}
	c := &Config{
		BedrockBlock: j.BedrockBlock,
		RegolithTime: j.RegolithTime, CanyonTime: j.CanyonTime, DeltaTime: j.DeltaTime,
		EcotoneTime: j.EcotoneTime, FjordTime: j.FjordTime, GraniteTime: j.GraniteTime,
		HoloceneTime: j.HoloceneTime, IsthmusTime: j.IsthmusTime, JovianTime: j.JovianTime,
		KarstTime: j.KarstTime,
	}
	if c.BedrockBlock == nil {
		c.BedrockBlock = new(big.Int)
	}
	if j.ChainID != nil && j.ChainID.IsUint64() {
		c.ChainID = j.ChainID.Uint64()
	}
	if v := j.Optimism.EIP1559Elasticity; v != nil {
		c.EIP1559Elasticity = *v
	}
	if v := j.Optimism.EIP1559Denominator; v != nil {
		c.EIP1559Denominator = *v
	}
	if v := j.Optimism.EIP1559DenominatorCanyon; v != nil {
		c.EIP1559DenominatorCanyon = *v
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// forkTime is one OP fork in activation order.
type forkTime struct {
	name string // JSON field name
	t    *uint64
}

// forks are the OP forks that change execution, in activation order (Delta
// is not one of them).
func (c *Config) forks() []forkTime {
	return []forkTime{
		{"regolithTime", c.RegolithTime}, {"canyonTime", c.CanyonTime},
		{"ecotoneTime", c.EcotoneTime}, {"fjordTime", c.FjordTime}, {"graniteTime", c.GraniteTime},
		{"holoceneTime", c.HoloceneTime}, {"isthmusTime", c.IsthmusTime}, {"jovianTime", c.JovianTime},
		{"karstTime", c.KarstTime},
	}
}

// errConfig is an ErrConfig naming the chain (by chain id) and what was
// wrong.
func (c *Config) errConfig(format string, args ...any) error {
	return fmt.Errorf("%w (chain %d): %s", ErrConfig, c.ChainID, fmt.Sprintf(format, args...))
}

// Validate checks the EIP-1559 constants and the order of the execution
// forks: a fork needs the one before it scheduled, at the same time or
// earlier. op-geth itself reads each time alone; the order is what every
// published chain (and op-node's rollup config check) has, and tipnode's
// rules assume each fork includes the ones before it, so a config that
// breaks it is refused, naming the fields. deltaTime is not checked.
func (c *Config) Validate() error {
	if c.BedrockBlock == nil || c.BedrockBlock.Sign() < 0 {
		return c.errConfig("bedrockBlock must be a non-negative number")
	}
	if c.EIP1559Elasticity == 0 {
		return c.errConfig("optimism.eip1559Elasticity must be set and non-zero")
	}
	if c.EIP1559Denominator == 0 {
		return c.errConfig("optimism.eip1559Denominator must be set and non-zero")
	}
	if c.CanyonTime != nil && c.EIP1559DenominatorCanyon == 0 {
		return c.errConfig("optimism.eip1559DenominatorCanyon must be set and non-zero when canyonTime is set")
	}
	forks := c.forks()
	for i := 1; i < len(forks); i++ {
		prev, cur := forks[i-1], forks[i]
		if cur.t == nil {
			continue
		}
		if prev.t == nil {
			return c.errConfig("%s is set but %s, the fork before it, is not", cur.name, prev.name)
		}
		if *cur.t < *prev.t {
			return c.errConfig("%s (%d) is before %s (%d)", cur.name, *cur.t, prev.name, *prev.t)
		}
	}
	return nil
}

func active(fork *uint64, t uint64) bool { return fork != nil && *fork <= t }

// IsBedrock reports whether block number is a Bedrock (or later) block.
func (c *Config) IsBedrock(number *big.Int) bool {
	return c.BedrockBlock.Cmp(number) <= 0
}

// IsRegolith and the other Is<Fork> methods report whether the fork is
// active at block time t.
func (c *Config) IsRegolith(t uint64) bool { return active(c.RegolithTime, t) }
func (c *Config) IsCanyon(t uint64) bool   { return active(c.CanyonTime, t) }
func (c *Config) IsEcotone(t uint64) bool  { return active(c.EcotoneTime, t) }
func (c *Config) IsFjord(t uint64) bool    { return active(c.FjordTime, t) }
func (c *Config) IsGranite(t uint64) bool  { return active(c.GraniteTime, t) }
func (c *Config) IsHolocene(t uint64) bool { return active(c.HoloceneTime, t) }
func (c *Config) IsIsthmus(t uint64) bool  { return active(c.IsthmusTime, t) }
func (c *Config) IsJovian(t uint64) bool   { return active(c.JovianTime, t) }
func (c *Config) IsKarst(t uint64) bool    { return active(c.KarstTime, t) }

// Fork names the latest execution fork active at time t ("bedrock",
// "regolith", "canyon", "ecotone" ... "karst"; never "delta").
func (c *Config) Fork(t uint64) string {
	name := "bedrock"
	for _, f := range c.forks() {
		if active(f.t, t) {
			name = f.name[:len(f.name)-len("Time")]
		}
	}
	return name
}

// BaseFeeChangeDenominator is the pre-Holocene EIP-1559 denominator at time t
// (the Canyon one from Canyon).
func (c *Config) BaseFeeChangeDenominator(t uint64) uint64 {
	if c.IsCanyon(t) {
		return c.EIP1559DenominatorCanyon
	}
	return c.EIP1559Denominator
}

// NoBlobsSchedule is the blob schedule entry ApplyTo gives the Cancun
// (Ecotone) and Prague (Isthmus) forks of an OP chain. OP chains carry no
// blobs: every header's excessBlobGas is 0, so go-ethereum's blob base fee
// (eip4844.CalcBlobFee, the BLOBBASEFEE opcode) is MIN_BLOB_GASPRICE = 1 wei
// whatever the update fraction, as the OP spec requires. Target 0 says "no
// blob target"; Max is 1, not 0, because go-ethereum's post-Osaka
// CalcExcessBlobGas divides by Max. OP code must not use CalcExcessBlobGas
// (excessBlobGas is always 0, see BlobGasFields) nor VerifyEIP4844Header
// (from Jovian blobGasUsed is the DA footprint), and must refuse blob
// transactions itself.
func NoBlobsSchedule(fraction uint64) *params.BlobConfig {
	return &params.BlobConfig{Target: 0, Max: 1, UpdateFraction: fraction}
}

// ApplyTo sets the L1 forks an OP chain runs on go-ethereum's config:
// Shanghai = Canyon, Cancun = Ecotone, Prague = Isthmus, Osaka = Karst
// (the time fields the JSON already has must agree), every pre-merge block
// fork and London at block 0 when unset, the merge as reached, and the blob
// schedule entries (NoBlobsSchedule) that Cancun and Prague need and the
// JSON lacks. The result passes go-ethereum's CheckConfigForkOrder.
func (c *Config) ApplyTo(pc *params.ChainConfig) error {
	pairs := []struct {
		l1name string
		l1     **uint64
		opname string
		op     *uint64
	}{
		{"shanghaiTime", &pc.ShanghaiTime, "canyonTime", c.CanyonTime},
		{"cancunTime", &pc.CancunTime, "ecotoneTime", c.EcotoneTime},
		{"pragueTime", &pc.PragueTime, "isthmusTime", c.IsthmusTime},
		{"osakaTime", &pc.OsakaTime, "karstTime", c.KarstTime},
	}
	for _, p := range pairs {
		have := *p.l1
		switch {
		case have == nil && p.op == nil:
		case have == nil:
			v := *p.op
			*p.l1 = &v
		case p.op == nil:
			return c.errConfig("%s is set (%d) but %s, the OP fork it stands for, is not", p.l1name, *have, p.opname)
		case *have != *p.op:
			return c.errConfig("%s (%d) differs from %s (%d)", p.l1name, *have, p.opname, *p.op)
		}
	}
	for _, later := range []struct {
		name string
		t    *uint64
	}{{"amsterdamTime", pc.AmsterdamTime}, {"bpo1Time", pc.BPO1Time}, {"bpo2Time", pc.BPO2Time},
		{"bpo3Time", pc.BPO3Time}, {"bpo4Time", pc.BPO4Time}, {"bpo5Time", pc.BPO5Time}} {
		if later.t != nil {
			return c.errConfig("%s is an L1 fork no OP fork schedules", later.name)
		}
	}
	zero := func(b **big.Int) {
		if *b == nil {
			*b = new(big.Int)
		}
	}
	for _, b := range []**big.Int{&pc.HomesteadBlock, &pc.EIP150Block, &pc.EIP155Block, &pc.EIP158Block,
		&pc.ByzantiumBlock, &pc.ConstantinopleBlock, &pc.PetersburgBlock, &pc.IstanbulBlock,
		&pc.MuirGlacierBlock, &pc.BerlinBlock, &pc.LondonBlock, &pc.ArrowGlacierBlock,
		&pc.GrayGlacierBlock, &pc.MergeNetsplitBlock} {
		zero(b)
	}
	if pc.TerminalTotalDifficulty == nil {
		pc.TerminalTotalDifficulty = new(big.Int)
	}
	if pc.CancunTime != nil || pc.PragueTime != nil {
		if pc.BlobScheduleConfig == nil {
			pc.BlobScheduleConfig = new(params.BlobScheduleConfig)
		}
		if pc.CancunTime != nil && pc.BlobScheduleConfig.Cancun == nil {
			pc.BlobScheduleConfig.Cancun = NoBlobsSchedule(params.DefaultCancunBlobConfig.UpdateFraction)
		}
		if pc.PragueTime != nil && pc.BlobScheduleConfig.Prague == nil {
			pc.BlobScheduleConfig.Prague = NoBlobsSchedule(params.DefaultPragueBlobConfig.UpdateFraction)
		}
	}
	if err := pc.CheckConfigForkOrder(); err != nil {
		return c.errConfig("%v", err)
	}
	return nil
}

// ForkIDForks are the OP forks a fork identifier (EIP-2124, eth_config's
// forkId) counts besides the L1 ones, as op-geth counts them (its chain
// config holds these fields and its fork id takes every "...Block" and
// "...Time" field): the Bedrock block and the time of every OP fork the
// config sets, Regolith through Karst. Delta, which op-geth's config
// lacks, is not one of them.
func (c *Config) ForkIDForks() (blocks, times []uint64) {
	if c.BedrockBlock != nil && c.BedrockBlock.IsUint64() {
		blocks = append(blocks, c.BedrockBlock.Uint64())
	}
	for _, f := range c.forks() {
		if f.t != nil {
			times = append(times, *f.t)
		}
	}
	return blocks, times
}
