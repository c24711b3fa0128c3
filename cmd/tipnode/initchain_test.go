package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain/op/optest"
	"github.com/tipnode/tipnode/chain/op/preset"
	"github.com/tipnode/tipnode/store"
)

// TestInitChainPreset: `init --chain NAME`: an unknown name, a preset
// without a source of state (OP Mainnet: how to start at a recent block),
// a genesis file of another chain or with one fork time changed, and a
// data directory of another chain are refused before anything is written,
// naming the chain and the field; op-geth's own genesis file of the
// preset's chain initialises, with the preset's genesis hash and OP forks.
func TestInitChainPreset(t *testing.T) {
	files := map[string]string{}
	for _, c := range optest.Chains(t) {
		files[c.Name] = c.Path
	}
	root := t.TempDir()
	fresh := func(name string) string { return filepath.Join(root, name) }
	untouched := func(dir string) {
		t.Helper()
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a refused init left %s behind (%v)", dir, err)
		}
	}
	refused := func(dir string, want []string, args ...string) {
		t.Helper()
		err, stderr := initState(t, append([]string{"--datadir", dir}, args...)...)
		if err == nil {
			t.Fatalf("init %v accepted\n%s", args, stderr)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Fatalf("init %v: %v\nwant it to say %q", args, err, w)
			}
		}
	}

	d := fresh("unknown")
	refused(d, []string{`unknown chain preset "base"`, "op-mainnet", "unichain"}, "--chain", "base", "--genesis", files["op-sepolia"])
	untouched(d)
	d = fresh("opm")
	refused(d, []string{"before Bedrock", "105235063", "--state.from", "--snapshot-from"}, "--chain", "op-mainnet")
	refused(d, []string{"before Bedrock", "--state"}, "--chain", "op-mainnet", "--genesis", files["op-mainnet"])
	untouched(d)
	d = fresh("uni")
	refused(d, []string{"not its genesis state", "geth --op-network unichain-mainnet dumpgenesis", "--state", "--snapshot-from"}, "--chain", "unichain")
	untouched(d)
	// Another chain's genesis file: its chain id named.
	refused(d, []string{"config.chainId is 11155420", "not chain 1301, --chain unichain-sepolia"}, "--chain", "unichain-sepolia", "--genesis", files["op-sepolia"])
	untouched(d)
	// One fork time changed: named, with both values.
	spec, err := os.ReadFile(files["op-sepolia"])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(spec, &m); err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	_ = json.Unmarshal(m["config"], &cfg)
	cfg["jovianTime"] = 1763568002
	m["config"], _ = json.Marshal(cfg)
	tampered := filepath.Join(root, "tampered.json")
	b, _ := json.Marshal(m)
	if err := os.WriteFile(tampered, b, 0o644); err != nil {
		t.Fatal(err)
	}
	refused(d, []string{"config.jovianTime is 1763568002", "1763568001"}, "--chain", "op-sepolia", "--genesis", tampered)
	untouched(d)

	// op-geth's file of the preset's chain: initialised, the preset's hash.
	d = fresh("ops")
	if err, stderr := initState(t, "--datadir", d, "--chain", "op-sepolia", "--genesis", files["op-sepolia"]); err != nil {
		t.Fatalf("init --chain op-sepolia: %v\n%s", err, stderr)
	}
	p, _ := preset.Lookup("op-sepolia")
	cfgStore := store.DefaultConfig(d)
	cfgStore.ReadOnly = true
	db, err := store.Open(cfgStore, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	g, err := loadChain(db, d)
	db.Close()
	if err != nil || g.Block.Hash() != p.Start.Hash || g.OP == nil || g.OP.KarstTime == nil || *g.OP.KarstTime != 1781712001 {
		t.Fatalf("stored chain %v: %+v", err, g)
	}
	// The same again: a no-op; another preset on it: refused, naming both
	// chains, the store untouched.
	if err, _ := initState(t, "--datadir", d, "--chain", "op-sepolia", "--genesis", files["op-sepolia"]); err != nil {
		t.Fatalf("init again: %v", err)
	}
	refused(d, []string{"the data directory", "is chain 11155420", "--chain unichain is chain 130", "another --datadir"}, "--chain", "unichain", "--genesis", files["unichain-mainnet"])
	// Upstreams that do not answer: refused before anything is written.
	d = fresh("up")
	refused(d, []string{"--snapshot-from http://127.0.0.1:1"}, "--chain", "op-sepolia", "--snapshot-from", "http://127.0.0.1:1")
	untouched(d)
}
