package devnet

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/chain/op"
)

// The OP predeploys' runtime bytecode and ABI, compiled once from the .sol
// sources in contracts/ by contracts/compile.js (solc 0.8.30, optimizer 200
// runs, EVM prague, no metadata) and checked in.
var (
	//go:embed contracts/L1Block.bin-runtime
	l1BlockCodeHex string
	//go:embed contracts/L1Block.abi.json
	l1BlockABIJSON string
	//go:embed contracts/L2ToL1MessagePasser.bin-runtime
	messagePasserCodeHex string
	//go:embed contracts/L2ToL1MessagePasser.abi.json
	messagePasserABIJSON string

	// L1BlockCode is the runtime code of tipnode's L1Block predeploy: the
	// spec's storage layout (op.L1BaseFeeSlot ...) and its four setters
	// (setL1BlockValues, ...Ecotone, ...Isthmus, ...Jovian), callable by
	// the depositor account only, and the public getters.
	L1BlockCode = common.FromHex(strings.TrimSpace(l1BlockCodeHex))
	// MessagePasserCode is the runtime code of tipnode's
	// L2ToL1MessagePasser: initiateWithdrawal records the withdrawal hash
	// in its storage (whose root is the header's withdrawalsRoot).
	MessagePasserCode = common.FromHex(strings.TrimSpace(messagePasserCodeHex))
	// VaultCode is the fee vaults' code: STOP (they accept ether; the dev
	// chain has no L1 to withdraw to).
	VaultCode = []byte{0x00}
)

// L1BlockABI and MessagePasserABI encode calls to the predeploys.
func L1BlockABI() (abi.ABI, error)       { return abi.JSON(strings.NewReader(l1BlockABIJSON)) }
func MessagePasserABI() (abi.ABI, error) { return abi.JSON(strings.NewReader(messagePasserABIJSON)) }

// OP Stack EIP-1559 constants of the dev chain (OP Mainnet's).
const (
	OPElasticity        = 6
	OPDenominator       = 50
	OPDenominatorCanyon = 250
)

// OPPredeploys is the genesis alloc of the OP predeploys the execution
// rules need: the L1Block predeploy, the L2ToL1MessagePasser, and the four
// fee vaults (sequencer, base fee, L1 fee, operator fee).
func OPPredeploys() types.GenesisAlloc {
	alloc := types.GenesisAlloc{
		op.L1BlockAddr:         {Nonce: 1, Code: L1BlockCode, Balance: common.Big0},
		op.L2ToL1MessagePasser: {Nonce: 1, Code: MessagePasserCode, Balance: common.Big0},
	}
	for _, v := range []common.Address{op.SequencerFeeVault, op.BaseFeeVault, op.L1FeeVault, op.OperatorFeeVault} {
		alloc[v] = types.Account{Nonce: 1, Code: VaultCode, Balance: common.Big0}
	}
	return alloc
}

// OPGenesis returns the OP Stack dev genesis JSON in op-geth's format: the
// L1 forks of ChainConfig without a blob schedule, every OP fork from
// Bedrock through Karst active at 0, the "optimism" EIP-1559 constants,
// extraData in Jovian's form (the first block's base fee reads it), the
// accounts prefunded, and the system contracts and OPPredeploys deployed.
func OPGenesis(c GenesisConfig) ([]byte, error) {
	if c.ChainID == 0 {
		return nil, errors.New("dev genesis: chain id must be > 0")
	}
	if c.Balance == nil {
		c.Balance = new(big.Int).Mul(big.NewInt(10_000), big.NewInt(params.Ether))
	}
	if c.GasLimit == 0 {
		c.GasLimit = 60_000_000
	}
	cfg := ChainConfig(new(big.Int).SetUint64(c.ChainID))
	cfg.BlobScheduleConfig = nil // op.Config.ApplyTo gives OP's no-blobs schedule
	alloc := SystemContracts()
	for a, acc := range OPPredeploys() {
		alloc[a] = acc
	}
	for _, a := range c.Accounts {
		alloc[a] = types.Account{Balance: new(big.Int).Set(c.Balance)}
	}
	extra := op.EIP1559Params{Denominator: OPDenominatorCanyon, Elasticity: OPElasticity}.Encode(true)
	g := &core.Genesis{
		Config:     cfg,
		Timestamp:  c.Timestamp,
		ExtraData:  extra,
		GasLimit:   c.GasLimit,
		Difficulty: big.NewInt(0),
		BaseFee:    big.NewInt(params.InitialBaseFee),
		Alloc:      alloc,
	}
	enc, err := json.Marshal(g)
	if err != nil {
		return nil, err
	}
	var spec map[string]json.RawMessage
	if err := json.Unmarshal(enc, &spec); err != nil {
		return nil, err
	}
	var config map[string]any
	if err := json.Unmarshal(spec["config"], &config); err != nil {
		return nil, err
	}
	config["bedrockBlock"] = 0
	for _, f := range []string{"regolithTime", "canyonTime", "deltaTime", "ecotoneTime", "fjordTime", "graniteTime",
		"holoceneTime", "isthmusTime", "jovianTime", "karstTime"} {
		config[f] = 0
	}
	config["optimism"] = map[string]uint64{
		"eip1559Elasticity": OPElasticity, "eip1559Denominator": OPDenominator, "eip1559DenominatorCanyon": OPDenominatorCanyon,
	}
	if spec["config"], err = json.Marshal(config); err != nil {
		return nil, fmt.Errorf("dev genesis: %w", err)
	}
	return json.MarshalIndent(spec, "", "  ")
}
