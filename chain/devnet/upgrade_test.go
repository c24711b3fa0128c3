package devnet

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/vm/runtime"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/chain/op"
)

// specUpgrade is one upgrade deposit as the spec lists it.
type specUpgrade struct {
	intent     string
	from       string
	to         string // "" for a creation
	gas        uint64
	data       string // calldata of a call, "" for a deployment of our code
	sourceHash string
	deployed   string // a creation's address
}

// The predeploy proxies the upgrade deposits update.
const (
	specL1Block          = "0x4200000000000000000000000000000000000015"
	specGasPriceOracle   = "0x420000000000000000000000000000000000000F"
	specOperatorFeeVault = "0x420000000000000000000000000000000000001B"
)

// specDeploy is a creating deposit from a deployer at its nonce 0, landing
// at deployed; initCode is the EIP's init code, "" for our implementations'.
func specDeploy(intent, from string, gas uint64, initCode, sourceHash, deployed string) specUpgrade {
	return specUpgrade{intent, from, "", gas, initCode, sourceHash, deployed}
}

// specProxyUpdate is upgradeTo(impl) (selector 0x3659cfe6, impl padded to a
// word) on a predeploy's proxy, from address(0) with 50,000 gas.
func specProxyUpdate(intent, proxy, impl, sourceHash string) specUpgrade {
	data := "0x3659cfe6" + strings.Repeat("0", 24) + strings.ToLower(strings.TrimPrefix(impl, "0x"))
	return specUpgrade{intent, "0x0000000000000000000000000000000000000000", proxy, 50_000, data, sourceHash, ""}
}

// specSetFork is the depositor account's call of the GasPriceOracle's
// setter of a fork (selector).
func specSetFork(intent string, gas uint64, selector, sourceHash string) specUpgrade {
	return specUpgrade{intent, "0xDeaDDEaDDeAdDeAdDEAdDEaddeAddEAdDEAd0001", specGasPriceOracle, gas, selector, sourceHash, ""}
}

// specUpgrades are the network-upgrade deposits as specs/protocol/
// {ecotone,fjord,isthmus,jovian}/derivation.md list them, in their order.
var specUpgrades = map[string][]specUpgrade{
	"ecotone": {
		specDeploy("Ecotone: L1 Block Deployment", "0x4210000000000000000000000000000000000000", 375_000, "",
			"0x877a6077205782ea15a6dc8699fa5ebcec5e0f4389f09cb8eda09488231346f8", "0x07dbe8500fc591d1852B76feE44d5a05e13097Ff"),
		specDeploy("Ecotone: Gas Price Oracle Deployment", "0x4210000000000000000000000000000000000001", 1_000_000, "",
			"0xa312b4510adf943510f05fcc8f15f86995a5066bd83ce11384688ae20e6ecf42", "0xb528D11cC114E026F138fE568744c6D45ce6Da7A"),
		specProxyUpdate("Ecotone: L1 Block Proxy Update", specL1Block, "0x07dbe8500fc591d1852b76fee44d5a05e13097ff",
			"0x18acb38c5ff1c238a7460ebc1b421fa49ec4874bdf1e0a530d234104e5e67dbc"),
		specProxyUpdate("Ecotone: Gas Price Oracle Proxy Update", specGasPriceOracle, "0xb528d11cc114e026f138fe568744c6d45ce6da7a",
			"0xee4f9385eceef498af0be7ec5862229f426dec41c8d42397c7257a5117d9230a"),
		specSetFork("Ecotone: Gas Price Oracle Set Ecotone", 80_000, "0x22b90ab3", "0x0c1cb38e99dbc9cbfab3bb80863380b0905290b37eb3d6ab18dc01c1f3e75f93"),
		specDeploy("Ecotone: beacon block roots contract deployment", "0x0B799C86a49DEeb90402691F1041aa3AF2d3C875", 0x3d090,
			"0x60618060095f395ff33373fffffffffffffffffffffffffffffffffffffffe14604d57602036146024575f5ffd5b5f35801560495762001fff810690815414603c575f5ffd5b62001fff01545f5260205ff35b5f5ffd5b62001fff42064281555f359062001fff015500",
			"0x69b763c48478b9dc2f65ada09b3d92133ec592ea715ec65ad6e7f3dc519dc00c", "0x000F3df6D732807Ef1319fB7B8bB8522d0Beac02"),
	},
	"fjord": {
		specDeploy("Fjord: Gas Price Oracle Deployment", "0x4210000000000000000000000000000000000002", 1_450_000, "",
			"0x86122c533fdcb89b16d8713174625e44578a89751d96c098ec19ab40a51a8ea3", "0xa919894851548179A0750865e7974DA599C0Fac7"),
		specProxyUpdate("Fjord: Gas Price Oracle Proxy Update", specGasPriceOracle, "0xa919894851548179a0750865e7974da599c0fac7",
			"0x1e6bb0c28bfab3dc9b36ffb0f721f00d6937f33577606325692db0965a7d58c6"),
		specSetFork("Fjord: Gas Price Oracle Set Fjord", 90_000, "0x8e98b106", "0xbac7bb0d5961cad209a345408b0280a0d4686b1b20665e1b0f9cdafd73b19b6b"),
	},
	"isthmus": {
		specDeploy("Isthmus: L1 Block Deployment", "0x4210000000000000000000000000000000000003", 425_000, "",
			"0x3b2d0821ca2411ad5cd3595804d1213d15737188ae4cbd58aa19c821a6c211bf", "0xFf256497D61dcd71a9e9Ff43967C13fdE1F72D12"),
		specDeploy("Isthmus: Gas Price Oracle Deployment", "0x4210000000000000000000000000000000000004", 1_625_000, "",
			"0xfc70b48424763fa3fab9844253b4f8d508f91eb1f7cb11a247c9baec0afb8035", "0x93e57A196454CB919193fa9946f14943cf733845"),
		specDeploy("Isthmus: Operator Fee Vault Deployment", "0x4210000000000000000000000000000000000005", 500_000, "",
			"0x107a570d3db75e6110817eb024f09f3172657e920634111ce9875d08a16daa96", "0x4fa2Be8cd41504037F1838BcE3bCC93bC68Ff537"),
		specProxyUpdate("Isthmus: L1 Block Proxy Update", specL1Block, "0xff256497d61dcd71a9e9ff43967c13fde1f72d12",
			"0xebe8b5cb10ca47e0d8bda8f5355f2d66711a54ddeb0ef1d30e29418c9bf17a0e"),
		specProxyUpdate("Isthmus: Gas Price Oracle Proxy Update", specGasPriceOracle, "0x93e57a196454cb919193fa9946f14943cf733845",
			"0xecf2d9161d26c54eda6b7bfdd9142719b1e1199a6e5641468d1bf705bc531ab0"),
		specProxyUpdate("Isthmus: Operator Fee Vault Proxy Update", specOperatorFeeVault, "0x4fa2be8cd41504037f1838bce3bcc93bc68ff537",
			"0xad74e1adb877ccbe176b8fa1cc559388a16e090ddbe8b512f5b37d07d887a927"),
		specSetFork("Isthmus: Gas Price Oracle Set Isthmus", 90_000, "0x291b0383", "0x3ddf4b1302548dd92939826e970f260ba36167f4c25f18390a5e8b194b295319"),
		specDeploy("Isthmus: EIP-2935 Contract Deployment", "0x3462413Af4609098e1E27A490f554f260213D685", 250_000,
			"0x60538060095f395ff33373fffffffffffffffffffffffffffffffffffffffe14604657602036036042575f35600143038111604257611fff81430311604257611fff9006545f5260205ff35b5f5ffd5b5f35611fff60014303065500",
			"0xbfb734dae514c5974ddf803e54c1bc43d5cdb4a48ae27e1d9b875a5a150b553a", "0x0000F90827F1C53a10cb7A02335B175320002935"),
	},
	"jovian": {
		specDeploy("Jovian: L1Block Deployment", "0x4210000000000000000000000000000000000006", 447_315, "",
			"0x98faf23b9795967bc0b1c543144739d50dba3ea40420e77ad6ca9848dbfb62e8", "0x3Ba4007f5C922FBb33C454B41ea7a1f11E83df2C"),
		specProxyUpdate("Jovian: L1Block Proxy Update", specL1Block, "0x3ba4007f5c922fbb33c454b41ea7a1f11e83df2c",
			"0x08447273a4fbce97bc8c515f97ac74efc461f6a4001553712f31ebc11288bad2"),
		specDeploy("Jovian: GasPriceOracle Deployment", "0x4210000000000000000000000000000000000007", 1_750_714, "",
			"0xd939cca6eca7bd0ee0c7e89f7e5b5cf7bf6f7afe7b6966bb45dfb95344b31545", "0x4f1db3c6AbD250ba86E0928471A8F7DB3AFd88F1"),
		specProxyUpdate("Jovian: GasPriceOracle Proxy Update", specGasPriceOracle, "0x4f1db3c6abd250ba86e0928471a8f7db3afd88f1",
			"0x46b597e2d8346ed7749b46734074361e0b41a0ab9af7afda5bb4e367e072bcb8"),
		specSetFork("Jovian: Gas Price Oracle Set Jovian", 90_000, "0xb3d72079", "0xe836db6a959371756f8941be3e962d000f7e12a32e49e2c9ca42ba177a92716c"),
	},
}

// TestUpgradeTxsMatchSpec: every fork's upgrade deposits are the spec's, in
// its order: sender, recipient, gas limit, calldata (for calls and the EIP
// deployments), the source hash the spec lists (derived here from the
// intent), and the address each deployment lands at. Our implementations'
// deployments run their init code in an EVM: they return exactly our
// runtime code, and the EIP deployments go-ethereum's system contract code.
func TestUpgradeTxsMatchSpec(t *testing.T) {
	for _, fork := range UpgradeForks {
		got, err := UpgradeTxs(fork)
		if err != nil {
			t.Fatal(err)
		}
		want := specUpgrades[fork]
		if len(got) != len(want) {
			t.Fatalf("%s: %d upgrade deposits, the spec lists %d", fork, len(got), len(want))
		}
		for i, w := range want {
			g := got[i]
			if g.Intent != w.intent {
				t.Errorf("%s #%d: intent %q, spec %q", fork, i, g.Intent, w.intent)
			}
			if sh := g.SourceHash(); sh != common.HexToHash(w.sourceHash) {
				t.Errorf("%s: source hash %s, spec %s", w.intent, sh, w.sourceHash)
			}
			if d := g.Deposit(); d.SourceHash() != common.HexToHash(w.sourceHash) || d.From() != g.From || d.Gas() != g.Gas {
				t.Errorf("%s: deposit fields differ from the upgrade's", w.intent)
			}
			if g.From != common.HexToAddress(w.from) || g.Gas != w.gas {
				t.Errorf("%s: from %s gas %d, spec %s %d", w.intent, g.From, g.Gas, w.from, w.gas)
			}
			if (g.To == nil) != (w.to == "") || (g.To != nil && *g.To != common.HexToAddress(w.to)) {
				t.Errorf("%s: to %v, spec %q", w.intent, g.To, w.to)
			}
			if w.data != "" && !bytes.Equal(g.Data, common.FromHex(w.data)) {
				t.Errorf("%s: data %s, spec %s", w.intent, hexutil.Bytes(g.Data), w.data)
			}
			if w.deployed != "" && g.Deployed() != common.HexToAddress(w.deployed) {
				t.Errorf("%s: deploys to %s, spec %s", w.intent, g.Deployed(), w.deployed)
			}
			if g.To != nil {
				continue
			}
			// The deployment fits the spec's gas limit: intrinsic gas
			// (Shanghai's, with EIP-3860's init code words) and the init
			// code's run (Cancun) with its code deposit.
			rules := params.Rules{IsHomestead: true, IsEIP150: true, IsEIP155: true, IsEIP158: true, IsByzantium: true,
				IsConstantinople: true, IsPetersburg: true, IsIstanbul: true, IsBerlin: true, IsLondon: true, IsMerge: true,
				IsShanghai: true, IsCancun: true}
			intrinsic, err := core.IntrinsicGas(g.Data, nil, nil, g.From, nil, new(uint256.Int), rules)
			if err != nil || intrinsic >= g.Gas {
				t.Fatalf("%s: intrinsic gas %d (%v), limit %d", w.intent, intrinsic, err, g.Gas)
			}
			code, _, left, err := runtime.Create(g.Data, &runtime.Config{GasLimit: g.Gas - intrinsic, Time: 1})
			if err != nil {
				t.Errorf("%s: init code: %v", w.intent, err)
			}
			t.Logf("%s: %d gas of %d (%d bytes of code)", w.intent, g.Gas-left, g.Gas, len(code))
			var wantCode []byte
			switch g.Deployed() {
			case params.BeaconRootsAddress:
				wantCode = params.BeaconRootsCode
			case params.HistoryStorageAddress:
				wantCode = params.HistoryStorageCode
			default:
				switch {
				case bytes.Contains([]byte(w.intent), []byte("L1 Block")) || bytes.Contains([]byte(w.intent), []byte("L1Block")):
					wantCode = L1BlockCode
				case bytes.Contains([]byte(w.intent), []byte("Vault")):
					wantCode = OperatorFeeVaultCode
				default:
					wantCode = GasPriceOracleCode
				}
			}
			if !bytes.Equal(code, wantCode) {
				t.Errorf("%s: the init code returns %d bytes, want the %d of the implementation", w.intent, len(code), len(wantCode))
			}
		}
	}
	for _, f := range []string{"regolith", "canyon", "delta", "granite", "holocene", "karst"} {
		if txs, err := UpgradeTxs(f); err != nil || len(txs) != 0 {
			t.Errorf("%s: %d upgrade deposits (%v), want none", f, len(txs), err)
		}
	}
	if _, err := UpgradeTxs("ecotonee"); err == nil {
		t.Error("an unknown fork gave no error")
	}
}

// TestActivationDeposits: a block gets the upgrade deposits of the forks
// that activate between its parent's time and its own, in fork order, and
// no others.
func TestActivationDeposits(t *testing.T) {
	at := func(v uint64) *uint64 { return &v }
	cfg := &op.Config{RegolithTime: at(0), CanyonTime: at(0), EcotoneTime: at(10), FjordTime: at(20), GraniteTime: at(20),
		HoloceneTime: at(20), IsthmusTime: at(30), JovianTime: at(30)}
	count := func(forks ...string) int {
		n := 0
		for _, f := range forks {
			txs, _ := UpgradeTxs(f)
			n += len(txs)
		}
		return n
	}
	for _, tc := range []struct {
		parent, t uint64
		want      int
		first     string
	}{
		{0, 8, 0, ""},
		{8, 10, count("ecotone"), "Ecotone: L1 Block Deployment"},
		{10, 12, 0, ""},
		{18, 20, count("fjord"), "Fjord: Gas Price Oracle Deployment"},
		{28, 30, count("isthmus", "jovian"), "Isthmus: L1 Block Deployment"},
		{8, 22, count("ecotone", "fjord"), "Ecotone: L1 Block Deployment"},
		{30, 32, 0, ""},
	} {
		got := ActivationDeposits(cfg, tc.parent, tc.t)
		if len(got) != tc.want {
			t.Errorf("parent %d, block %d: %d deposits, want %d", tc.parent, tc.t, len(got), tc.want)
			continue
		}
		if tc.first != "" && got[0].SourceHash() != op.UpgradeDepositSourceHash(tc.first) {
			t.Errorf("parent %d, block %d: the first deposit is not %q", tc.parent, tc.t, tc.first)
		}
	}
}
