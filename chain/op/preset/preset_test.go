package preset_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/op"
	"github.com/tipnode/tipnode/chain/op/optest"
	"github.com/tipnode/tipnode/chain/op/preset"
)

// TestPresets: every embedded preset parses; the chains the issue names
// are there (Base is not: it left the OP Stack); each has its predeploys at
// the addresses the execution rules use and Karst scheduled where the
// registry schedules it.
func TestPresets(t *testing.T) {
	all, err := preset.All()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*preset.Preset{}
	for _, p := range all {
		byName[p.Name] = p
		for name, want := range map[string]common.Address{"L1Block": op.L1BlockAddr, "L2ToL1MessagePasser": op.L2ToL1MessagePasser,
			"SequencerFeeVault": op.SequencerFeeVault, "BaseFeeVault": op.BaseFeeVault, "L1FeeVault": op.L1FeeVault, "OperatorFeeVault": op.OperatorFeeVault} {
			if p.Predeploys[name] != want {
				t.Errorf("%s: %s at %s, the rules use %s", p.Name, name, p.Predeploys[name], want)
			}
		}
		g, err := p.Genesis()
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		if g.Config.ChainID.Uint64() != p.ChainID() || g.OP.EIP1559Elasticity == 0 || g.OP.JovianTime == nil {
			t.Errorf("%s: chain %v, OP config %+v", p.Name, g.Config.ChainID, g.OP)
		}
		if p.Sources["registry"] == "" || p.Sources["config"] == "" || p.Sources["predeploys"] == "" {
			t.Errorf("%s: sources %v", p.Name, p.Sources)
		}
	}
	for _, name := range []string{"op-mainnet", "op-sepolia", "unichain", "unichain-sepolia", "ink", "soneium"} {
		if byName[name] == nil {
			t.Errorf("no %s preset", name)
		}
	}
	if byName["base"] != nil {
		t.Error("a Base preset")
	}
	for _, c := range []struct {
		name  string
		karst uint64
	}{{"op-mainnet", 1783526401}, {"unichain", 1783526401}, {"op-sepolia", 1781712001}} {
		g, _ := byName[c.name].Genesis()
		if g.OP.KarstTime == nil || *g.OP.KarstTime != c.karst {
			t.Errorf("%s: karstTime %v, want %d", c.name, g.OP.KarstTime, c.karst)
		}
	}
	// OP Mainnet starts at Bedrock, and says so.
	opm := byName["op-mainnet"]
	if opm.StartsAtGenesis() || opm.Start.Number != 105_235_063 || opm.ChainID() != 10 {
		t.Fatalf("op-mainnet start %+v", opm.Start)
	}
	// Names, aliases and unknown names.
	for name, want := range map[string]string{"unichain-mainnet": "unichain", "op-sepolia": "op-sepolia", "optimism": "op-mainnet"} {
		if p, err := preset.Lookup(name); err != nil || p.Name != want {
			t.Errorf("Lookup(%q) = %v, %v; want %s", name, p, err, want)
		}
	}
	if _, err := preset.Lookup("base"); !errors.Is(err, preset.ErrUnknown) || !strings.Contains(err.Error(), "op-mainnet") || !strings.Contains(err.Error(), `"base"`) {
		t.Fatalf("Lookup(base): %v", err)
	}
}

// TestPresetsAgainstOPGethGenesis: for every chain of ../shared/op/chains
// (op-geth's own dumpgenesis), the preset's chain config is the file's,
// member for member, and the preset's genesis hash (the registry's) is the
// one op-geth computes (the README's) and tipnode computes from the file.
func TestPresetsAgainstOPGethGenesis(t *testing.T) {
	names := map[string]string{"op-mainnet": "op-mainnet", "op-sepolia": "op-sepolia", "unichain-mainnet": "unichain",
		"unichain-sepolia": "unichain-sepolia", "ink-mainnet": "ink", "worldchain-mainnet": "worldchain", "zora-mainnet": "zora"}
	for _, c := range optest.Chains(t) {
		t.Run(c.Name, func(t *testing.T) {
			p, err := preset.Lookup(c.Name)
			if err != nil {
				t.Fatalf("no preset for op-geth's network %s: %v", c.Name, err)
			}
			if p.Name != names[c.Name] || p.OPGethNetwork != c.Name {
				t.Fatalf("%s is preset %s (op-geth network %q)", c.Name, p.Name, p.OPGethNetwork)
			}
			spec, err := os.ReadFile(c.Path)
			if err != nil {
				t.Fatal(err)
			}
			var file struct {
				Config json.RawMessage `json:"config"`
			}
			if err := json.Unmarshal(spec, &file); err != nil {
				t.Fatal(err)
			}
			if err := p.CheckConfig(file.Config); err != nil {
				t.Fatalf("op-geth's config is not the preset's: %v", err)
			}
			if !p.StartsAtGenesis() {
				return
			}
			if p.Start.Hash != c.GenesisHash || p.ChainID() != c.ChainID {
				t.Fatalf("preset genesis %s (chain %d), op-geth's %s (chain %d)", p.Start.Hash, p.ChainID(), c.GenesisHash, c.ChainID)
			}
			g, err := chain.ParseGenesis(spec)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.CheckGenesisHash("the genesis file", g.Block.Hash()); err != nil {
				t.Fatal(err)
			}
			if g.Block.Time() != p.Start.Time {
				t.Fatalf("genesis time %d, the registry's %d", g.Block.Time(), p.Start.Time)
			}
			// A config that differs in one member is refused, naming it
			// and both values; deltaTime (derivation only) is ignored.
			var m map[string]any
			_ = json.Unmarshal(file.Config, &m)
			m["deltaTime"] = 0
			withDelta, _ := json.Marshal(m)
			if err := p.CheckConfig(withDelta); err != nil {
				t.Fatalf("deltaTime refused: %v", err)
			}
			m["graniteTime"] = 1
			bad, _ := json.Marshal(m)
			if err := p.CheckConfig(bad); !errors.Is(err, preset.ErrMismatch) || !strings.Contains(err.Error(), "config.graniteTime is 1") {
				t.Fatalf("a changed graniteTime: %v", err)
			}
			m["graniteTime"] = json.RawMessage(nil)
			delete(m, "graniteTime")
			missing, _ := json.Marshal(m)
			if err := p.CheckConfig(missing); !errors.Is(err, preset.ErrMismatch) || !strings.Contains(err.Error(), "config.graniteTime is absent") {
				t.Fatalf("no graniteTime: %v", err)
			}
		})
	}
}
