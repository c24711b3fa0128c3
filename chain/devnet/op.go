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
	//go:embed contracts/GasPriceOracle.bin-runtime
	gasPriceOracleCodeHex string
	//go:embed contracts/GasPriceOracle.abi.json
	gasPriceOracleABIJSON string
	//go:embed contracts/WETH9.bin-runtime
	weth9CodeHex string
	//go:embed contracts/WETH9.abi.json
	weth9ABIJSON string
	//go:embed contracts/L2CrossDomainMessenger.bin-runtime
	messengerCodeHex string
	//go:embed contracts/L2CrossDomainMessenger.abi.json
	messengerABIJSON string
	//go:embed contracts/L2StandardBridge.bin-runtime
	bridgeCodeHex string
	//go:embed contracts/L2StandardBridge.abi.json
	bridgeABIJSON string

	// L1BlockCode is the runtime code of tipnode's L1Block predeploy: the
	// spec's storage layout (op.L1BaseFeeSlot ...) and its four setters
	// (setL1BlockValues, ...Ecotone, ...Isthmus, ...Jovian), callable by
	// the depositor account only, and the public getters.
	L1BlockCode = common.FromHex(strings.TrimSpace(l1BlockCodeHex))
	// MessagePasserCode is the runtime code of tipnode's
	// L2ToL1MessagePasser: initiateWithdrawal records the withdrawal hash
	// in its storage (whose root is the header's withdrawalsRoot).
	MessagePasserCode = common.FromHex(strings.TrimSpace(messagePasserCodeHex))
	// GasPriceOracleCode is the runtime code of tipnode's GasPriceOracle:
	// every getter of the Jovian version (getL1Fee, getL1GasUsed,
	// getL1FeeUpperBound, getOperatorFee, the L1 fee parameters, the fork
	// flags), computing the fee formulas chain/op charges from the L1Block
	// predeploy's values.
	GasPriceOracleCode = common.FromHex(strings.TrimSpace(gasPriceOracleCodeHex))
	// WETH9Code is the runtime code of tipnode's WETH9 (wrapped ether).
	WETH9Code = common.FromHex(strings.TrimSpace(weth9CodeHex))
	// MessengerCode is the runtime code of tipnode's
	// L2CrossDomainMessenger (sendMessage: the L2 -> L1 half) and
	// BridgeCode that of its L2StandardBridge (ether withdrawals through
	// the messenger).
	MessengerCode = common.FromHex(strings.TrimSpace(messengerCodeHex))
	BridgeCode    = common.FromHex(strings.TrimSpace(bridgeCodeHex))
	// VaultCode is the fee vaults' code: STOP (they accept ether; the dev
	// chain has no L1 to withdraw to).
	VaultCode = []byte{0x00}
)

// L1BlockABI, MessagePasserABI, GasPriceOracleABI and WETH9ABI encode
// calls to the predeploys.
func L1BlockABI() (abi.ABI, error)        { return abi.JSON(strings.NewReader(l1BlockABIJSON)) }
func MessagePasserABI() (abi.ABI, error)  { return abi.JSON(strings.NewReader(messagePasserABIJSON)) }
func GasPriceOracleABI() (abi.ABI, error) { return abi.JSON(strings.NewReader(gasPriceOracleABIJSON)) }
func WETH9ABI() (abi.ABI, error)          { return abi.JSON(strings.NewReader(weth9ABIJSON)) }

// MessengerABI and BridgeABI encode calls to the L2CrossDomainMessenger and
// the L2StandardBridge.
func MessengerABI() (abi.ABI, error) { return abi.JSON(strings.NewReader(messengerABIJSON)) }
func BridgeABI() (abi.ABI, error)    { return abi.JSON(strings.NewReader(bridgeABIJSON)) }

// The OP predeploys the dev chain adds to those chain/op names.
var (
	// GasPriceOracleAddr is the GasPriceOracle predeploy, which wallets and
	// SDKs (viem's OP Stack actions, ethers, MetaMask) call for L1 fee
	// estimates.
	GasPriceOracleAddr = common.HexToAddress("0x420000000000000000000000000000000000000F")
	// WETH9Addr is the wrapped ether predeploy.
	WETH9Addr = common.HexToAddress("0x4200000000000000000000000000000000000006")
	// MessengerAddr is the L2CrossDomainMessenger, BridgeAddr the
	// L2StandardBridge.
	MessengerAddr = common.HexToAddress("0x4200000000000000000000000000000000000007")
	BridgeAddr    = common.HexToAddress("0x4200000000000000000000000000000000000010")
)

// GasPriceOracleFlags is the GasPriceOracle's storage slot 0 for a chain
// whose forks through the given ones are active: isEcotone, isFjord,
// isIsthmus and isJovian packed as bools at offsets 0..3 from the
// low-order end, as the depositor's setEcotone ... setJovian calls leave
// them.
func GasPriceOracleFlags(ecotone, fjord, isthmus, jovian bool) common.Hash {
	var w common.Hash
	for i, on := range []bool{ecotone, fjord, isthmus, jovian} {
		if on {
			w[31-i] = 1
		}
	}
	return w
}

// OP Stack EIP-1559 constants of the dev chain (OP Mainnet's).
const (
	OPElasticity        = 6
	OPDenominator       = 50
	OPDenominatorCanyon = 250
)

// OPPredeploys is the genesis alloc of the OP predeploys: those the
// execution rules need (the L1Block predeploy, the L2ToL1MessagePasser, and
// the four fee vaults: sequencer, base fee, L1 fee, operator fee) and those
// wallets, SDKs and bridges call (the GasPriceOracle, its fork flags all
// set: every fork through Jovian active; WETH9; the L2CrossDomainMessenger
// and L2StandardBridge, whose ether withdrawals reach the message passer).
func OPPredeploys() types.GenesisAlloc {
	return opPredeploys(GasPriceOracleFlags(true, true, true, true))
}

func opPredeploys(gpoFlags common.Hash) types.GenesisAlloc {
	gpo := types.Account{Nonce: 1, Code: GasPriceOracleCode, Balance: common.Big0}
	if gpoFlags != (common.Hash{}) {
		gpo.Storage = map[common.Hash]common.Hash{{}: gpoFlags}
	}
	alloc := types.GenesisAlloc{
		op.L1BlockAddr:         {Nonce: 1, Code: L1BlockCode, Balance: common.Big0},
		op.L2ToL1MessagePasser: {Nonce: 1, Code: MessagePasserCode, Balance: common.Big0},
		GasPriceOracleAddr:     gpo,
		WETH9Addr:              {Nonce: 1, Code: WETH9Code, Balance: common.Big0},
		MessengerAddr:          {Nonce: 1, Code: MessengerCode, Balance: common.Big0},
		BridgeAddr:             {Nonce: 1, Code: BridgeCode, Balance: common.Big0},
	}
	for _, v := range []common.Address{op.SequencerFeeVault, op.BaseFeeVault, op.L1FeeVault, op.OperatorFeeVault} {
		alloc[v] = types.Account{Nonce: 1, Code: VaultCode, Balance: common.Big0}
	}
	return alloc
}

// opForks are the OP forks after Bedrock in activation order (deltaTime is
// op-node's, kept for configs that list it).
var opForks = []string{"regolith", "canyon", "delta", "ecotone", "fjord", "granite", "holocene", "isthmus", "jovian", "karst"}

// OPGenesis returns the OP Stack dev genesis JSON in op-geth's format: the
// L1 forks of ChainConfig without a blob schedule, every OP fork from
// Bedrock through Karst active at 0, the "optimism" EIP-1559 constants,
// extraData in Jovian's form (the first block's base fee reads it), the
// accounts prefunded, and the system contracts and OPPredeploys deployed.
func OPGenesis(c GenesisConfig) ([]byte, error) {
	return opGenesis(c, "karst")
}

// opGenesis is OPGenesis with the OP forks through last active at 0 and
// the later ones unset, the L1 forks they stand for (Shanghai = Canyon,
// Cancun = Ecotone, Prague = Isthmus, Osaka = Karst) likewise, and the
// GasPriceOracle's flags set for the forks active.
func opGenesis(c GenesisConfig, last string) ([]byte, error) {
	if c.ChainID == 0 {
		return nil, errors.New("dev genesis: chain id must be > 0")
	}
	if c.Balance == nil {
		c.Balance = new(big.Int).Mul(big.NewInt(10_000), big.NewInt(params.Ether))
	}
	if c.GasLimit == 0 {
		c.GasLimit = 60_000_000
	}
	active := map[string]bool{}
	for _, f := range opForks {
		active[f] = true
		if f == last {
			break
		}
	}
	if !active[last] {
		return nil, fmt.Errorf("dev genesis: unknown OP fork %q", last)
	}
	cfg := ChainConfig(new(big.Int).SetUint64(c.ChainID))
	cfg.BlobScheduleConfig = nil // op.Config.ApplyTo gives OP's no-blobs schedule
	for _, l1 := range []struct {
		t  **uint64
		op string
	}{{&cfg.ShanghaiTime, "canyon"}, {&cfg.CancunTime, "ecotone"}, {&cfg.PragueTime, "isthmus"}, {&cfg.OsakaTime, "karst"}} {
		if !active[l1.op] {
			*l1.t = nil
		}
	}
	alloc := SystemContracts()
	for a, acc := range opPredeploys(GasPriceOracleFlags(active["ecotone"], active["fjord"], active["isthmus"], active["jovian"])) {
		alloc[a] = acc
	}
	for _, a := range c.Accounts {
		alloc[a] = types.Account{Balance: new(big.Int).Set(c.Balance)}
	}
	var extra []byte
	if active["holocene"] {
		extra = op.EIP1559Params{Denominator: OPDenominatorCanyon, Elasticity: OPElasticity}.Encode(active["jovian"])
	}
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
	for _, f := range opForks {
		if active[f] {
			config[f+"Time"] = 0
		}
	}
	config["optimism"] = map[string]uint64{
		"eip1559Elasticity": OPElasticity, "eip1559Denominator": OPDenominator, "eip1559DenominatorCanyon": OPDenominatorCanyon,
	}
	if spec["config"], err = json.Marshal(config); err != nil {
		return nil, fmt.Errorf("dev genesis: %w", err)
	}
	return json.MarshalIndent(spec, "", "  ")
}
