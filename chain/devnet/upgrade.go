package devnet

import (
	_ "embed"
	"fmt"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/vm/program"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/tipnode/tipnode/chain/op"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// The network-upgrade deposits op-node inserts in a fork's activation block
// (after the L1-info deposit and the user deposits), written from the OP
// specification: specs/protocol/ecotone/derivation.md, fjord/derivation.md,
// isthmus/derivation.md and jovian/derivation.md, "Network upgrade
// automation transactions". Each has the spec's sender, recipient, gas
// limit, calldata and source hash (the "Upgrade-deposited" domain of its
// intent string). The implementations they deploy are tipnode's own
// contracts (contracts/, compiled by compile.js), not OP's compiled ones:
// the deployment calldata is our runtime code behind a code-copying
// constructor, so the code hashes differ from those the spec lists, while
// the deployment addresses (sender and nonce 0) are the spec's. The EIP-4788
// and EIP-2935 system contracts are deployed with the EIPs' own init code.
//
// They live here, beside the contracts they deploy, so that the op-geth
// differential (cmd/tipnode) and dev chains that start before a fork can
// both build activation blocks from one source.

//go:embed contracts/OperatorFeeVault.bin-runtime
var operatorFeeVaultCodeHex string

// OperatorFeeVaultCode is the runtime code of tipnode's OperatorFeeVault
// implementation (recipient the BaseFeeVault, no minimum, withdrawals on
// L2), which the Isthmus upgrade deposits deploy behind the vault's proxy.
var OperatorFeeVaultCode = common.FromHex(strings.TrimSpace(operatorFeeVaultCodeHex))

// Accounts and calldata of the upgrade deposits.
var (
	// BeaconRootsDeployer and HistoryDeployer are the EIP-4788 and
	// EIP-2935 deployment transactions' senders (as the EIPs give them).
	BeaconRootsDeployer = common.HexToAddress("0x0B799C86a49DEeb90402691F1041aa3AF2d3C875")
	HistoryDeployer     = common.HexToAddress("0x3462413Af4609098e1E27A490f554f260213D685")
	// beaconRootsInitCode is EIP-4788's init code (ecotone/derivation.md),
	// historyInitCode EIP-2935's (isthmus/derivation.md).
	beaconRootsInitCode = common.FromHex("0x60618060095f395ff33373fffffffffffffffffffffffffffffffffffffffe14604d57602036146024575f5ffd5b5f35801560495762001fff810690815414603c575f5ffd5b62001fff01545f5260205ff35b5f5ffd5b62001fff42064281555f359062001fff015500")
	historyInitCode     = common.FromHex("0x60538060095f395ff33373fffffffffffffffffffffffffffffffffffffffe14604657602036036042575f35600143038111604257611fff81430311604257611fff9006545f5260205ff35b5f5ffd5b5f35611fff60014303065500")
)

// Function selectors the upgrade deposits call.
var (
	selUpgradeTo  = crypto.Keccak256([]byte("upgradeTo(address)"))[:4] // 0x3659cfe6
	selSetEcotone = crypto.Keccak256([]byte("setEcotone()"))[:4]       // 0x22b90ab3
	selSetFjord   = crypto.Keccak256([]byte("setFjord()"))[:4]         // 0x8e98b106
	selSetIsthmus = crypto.Keccak256([]byte("setIsthmus()"))[:4]       // 0x291b0383
	selSetJovian  = crypto.Keccak256([]byte("setJovian()"))[:4]        // 0xb3d72079
)

// upgradeDeployer is the sender of the i-th implementation deployment
// (0x4210…0000 .. 0x4210…0007), each deploying at its nonce 0.
func upgradeDeployer(i byte) common.Address {
	var a common.Address
	a[0], a[1], a[19] = 0x42, 0x10, i
	return a
}

// UpgradeTx is one network-upgrade deposit.
type UpgradeTx struct {
	// Intent names the deposit; its source hash derives from it.
	Intent string
	From   common.Address
	To     *common.Address // nil: a contract creation
	Gas    uint64
	Data   []byte
}

// SourceHash is the deposit's source hash: the "Upgrade-deposited" domain
// of its intent string.
func (u UpgradeTx) SourceHash() common.Hash { return op.UpgradeDepositSourceHash(u.Intent) }

// Deployed is the address a creating deposit deploys to (its sender at
// nonce 0, as the spec computes it); the zero address for a call.
func (u UpgradeTx) Deployed() common.Address {
	if u.To != nil {
		return common.Address{}
	}
	return crypto.CreateAddress(u.From, 0)
}

// Deposit is the deposit transaction: no mint, no value, not a system
// transaction (Regolith: upgrade deposits spend gas like user deposits).
func (u UpgradeTx) Deposit() *chaintypes.Deposit {
	return chaintypes.NewDeposit(chaintypes.DepositFields{SourceHash: u.SourceHash(), From: u.From, To: u.To, Gas: u.Gas, Data: u.Data})
}

// deployment is the creating deposit of runtime code from the deployer.
func deployment(intent string, from common.Address, gas uint64, runtime []byte) UpgradeTx {
	return UpgradeTx{Intent: intent, From: from, Gas: gas, Data: program.New().ReturnViaCodeCopy(runtime).Bytes()}
}

// proxyUpdate is upgradeTo(impl) on a predeploy's proxy, from address(0)
// (which the predeploy proxies accept as their admin).
func proxyUpdate(intent string, proxy, impl common.Address) UpgradeTx {
	data := append(append([]byte{}, selUpgradeTo...), common.LeftPadBytes(impl[:], 32)...)
	return UpgradeTx{Intent: intent, From: common.Address{}, To: &proxy, Gas: 50_000, Data: data}
}

// depositorCall is a call of the GasPriceOracle from the depositor account.
func depositorCall(intent string, gas uint64, selector []byte) UpgradeTx {
	gpo := GasPriceOracleAddr
	return UpgradeTx{Intent: intent, From: op.L1InfoDepositor, To: &gpo, Gas: gas, Data: append([]byte{}, selector...)}
}

// UpgradeForks are the OP forks with network-upgrade deposits, in
// activation order.
var UpgradeForks = []string{"ecotone", "fjord", "isthmus", "jovian"}

// UpgradeTxs returns the network-upgrade deposits of fork's activation
// block, in the spec's order; none for a fork without them (Canyon, Delta,
// Granite, Holocene; Karst's are not written yet). An unknown fork name is
// an error.
func UpgradeTxs(fork string) ([]UpgradeTx, error) {
	switch fork {
	case "ecotone":
		l1b := deployment("Ecotone: L1 Block Deployment", upgradeDeployer(0), 375_000, L1BlockCode)
		gpo := deployment("Ecotone: Gas Price Oracle Deployment", upgradeDeployer(1), 1_000_000, GasPriceOracleCode)
		return []UpgradeTx{l1b, gpo,
			proxyUpdate("Ecotone: L1 Block Proxy Update", op.L1BlockAddr, l1b.Deployed()),
			proxyUpdate("Ecotone: Gas Price Oracle Proxy Update", GasPriceOracleAddr, gpo.Deployed()),
			depositorCall("Ecotone: Gas Price Oracle Set Ecotone", 80_000, selSetEcotone),
			{Intent: "Ecotone: beacon block roots contract deployment", From: BeaconRootsDeployer, Gas: 0x3d090, Data: beaconRootsInitCode},
		}, nil
	case "fjord":
		gpo := deployment("Fjord: Gas Price Oracle Deployment", upgradeDeployer(2), 1_450_000, GasPriceOracleCode)
		return []UpgradeTx{gpo,
			proxyUpdate("Fjord: Gas Price Oracle Proxy Update", GasPriceOracleAddr, gpo.Deployed()),
			depositorCall("Fjord: Gas Price Oracle Set Fjord", 90_000, selSetFjord),
		}, nil
	case "isthmus":
		l1b := deployment("Isthmus: L1 Block Deployment", upgradeDeployer(3), 425_000, L1BlockCode)
		gpo := deployment("Isthmus: Gas Price Oracle Deployment", upgradeDeployer(4), 1_625_000, GasPriceOracleCode)
		vault := deployment("Isthmus: Operator Fee Vault Deployment", upgradeDeployer(5), 500_000, OperatorFeeVaultCode)
		return []UpgradeTx{l1b, gpo, vault,
			proxyUpdate("Isthmus: L1 Block Proxy Update", op.L1BlockAddr, l1b.Deployed()),
			proxyUpdate("Isthmus: Gas Price Oracle Proxy Update", GasPriceOracleAddr, gpo.Deployed()),
			proxyUpdate("Isthmus: Operator Fee Vault Proxy Update", op.OperatorFeeVault, vault.Deployed()),
			depositorCall("Isthmus: Gas Price Oracle Set Isthmus", 90_000, selSetIsthmus),
			{Intent: "Isthmus: EIP-2935 Contract Deployment", From: HistoryDeployer, Gas: 250_000, Data: historyInitCode},
		}, nil
	case "jovian":
		l1b := deployment("Jovian: L1Block Deployment", upgradeDeployer(6), 447_315, L1BlockCode)
		gpo := deployment("Jovian: GasPriceOracle Deployment", upgradeDeployer(7), 1_750_714, GasPriceOracleCode)
		return []UpgradeTx{l1b,
			proxyUpdate("Jovian: L1Block Proxy Update", op.L1BlockAddr, l1b.Deployed()),
			gpo,
			proxyUpdate("Jovian: GasPriceOracle Proxy Update", GasPriceOracleAddr, gpo.Deployed()),
			depositorCall("Jovian: Gas Price Oracle Set Jovian", 90_000, selSetJovian),
		}, nil
	case "regolith", "canyon", "delta", "granite", "holocene", "karst":
		return nil, nil
	}
	return nil, fmt.Errorf("upgrade deposits: unknown OP fork %q", fork)
}

// ActivationDeposits returns the network-upgrade deposits of an L2 block at
// time t whose parent is at parentTime: those of every fork of UpgradeForks
// that activates in between (active at t, not at parentTime), in fork order.
func ActivationDeposits(cfg *op.Config, parentTime, t uint64) []*chaintypes.Deposit {
	var out []*chaintypes.Deposit
	for _, f := range []struct {
		name   string
		active func(uint64) bool
	}{{"ecotone", cfg.IsEcotone}, {"fjord", cfg.IsFjord}, {"isthmus", cfg.IsIsthmus}, {"jovian", cfg.IsJovian}} {
		if !f.active(t) || f.active(parentTime) {
			continue
		}
		txs, _ := UpgradeTxs(f.name)
		for _, u := range txs {
			out = append(out, u.Deposit())
		}
	}
	return out
}
