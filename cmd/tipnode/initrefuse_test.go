package main

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// treeDigest is a data directory's content: every path with its size and
// content hash ("" when dir is absent).
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return ""
	}
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			fmt.Fprintf(&b, "%s/\n", rel)
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d %x\n", rel, len(data), sha256.Sum256(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestInitRefusesBadChainConfig (issue 37 part 5): a malformed or
// contradictory OP chain config given to `init --genesis` is refused before
// anything is written, the error naming the field and the chain; the data
// directory is as it was: absent stays absent, an empty directory stays
// empty, an initialised one (another chain's) is byte for byte unchanged.
// So is an unknown --chain name and a preset given a data directory of
// another chain.
func TestInitRefusesBadChainConfig(t *testing.T) {
	base := func() map[string]any {
		cfg := map[string]any{"chainId": 901, "homesteadBlock": 0, "eip150Block": 0, "eip155Block": 0, "eip158Block": 0,
			"byzantiumBlock": 0, "constantinopleBlock": 0, "petersburgBlock": 0, "istanbulBlock": 0, "muirGlacierBlock": 0,
			"berlinBlock": 0, "londonBlock": 0, "arrowGlacierBlock": 0, "grayGlacierBlock": 0, "mergeNetsplitBlock": 0,
			"terminalTotalDifficulty": 0, "shanghaiTime": 0, "cancunTime": 0, "pragueTime": 100,
			"bedrockBlock": 0, "regolithTime": 0, "canyonTime": 0, "ecotoneTime": 0, "fjordTime": 0, "graniteTime": 0,
			"holoceneTime": 0, "isthmusTime": 100, "jovianTime": 200,
			"optimism": map[string]any{"eip1559Elasticity": 6, "eip1559Denominator": 50, "eip1559DenominatorCanyon": 250}}
		return cfg
	}
	root := t.TempDir()
	write := func(name string, cfg map[string]any) string {
		t.Helper()
		spec := map[string]any{"config": cfg, "gasLimit": "0x1c9c380", "difficulty": "0x0", "baseFeePerGas": "0x3b9aca00",
			"timestamp": "0x0", "alloc": map[string]any{"0x1000000000000000000000000000000000000001": map[string]any{"balance": "0x1"}}}
		b, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(root, name+".json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A good genesis of chain 902 initialises the "other chain" directory.
	good := base()
	good["chainId"] = 902
	other := filepath.Join(root, "other")
	if err, stderr := initState(t, "--datadir", other, "--genesis", write("good", good)); err != nil {
		t.Fatalf("init of a valid OP genesis: %v\n%s", err, stderr)
	}

	type mutation func(c map[string]any)
	opt := func(c map[string]any) map[string]any { return c["optimism"].(map[string]any) }
	cases := []struct {
		name   string
		mutate mutation
		raw    string // a file's text instead of a mutated config
		want   []string
	}{
		{name: "malformed JSON", raw: `{"config":{"chainId":901,"optimism":{`, want: []string{"malformed.json"}},
		{name: "fork time of the wrong type", mutate: func(c map[string]any) { c["jovianTime"] = "soon" }, want: []string{"jovianTime"}},
		{name: "zero elasticity", mutate: func(c map[string]any) { opt(c)["eip1559Elasticity"] = 0 },
			want: []string{"chain 901", "optimism.eip1559Elasticity"}},
		{name: "no denominator", mutate: func(c map[string]any) { delete(opt(c), "eip1559Denominator") },
			want: []string{"chain 901", "optimism.eip1559Denominator"}},
		{name: "canyon without its denominator", mutate: func(c map[string]any) { delete(opt(c), "eip1559DenominatorCanyon") },
			want: []string{"chain 901", "eip1559DenominatorCanyon", "canyonTime"}},
		{name: "forks out of order", mutate: func(c map[string]any) { c["jovianTime"] = 50 },
			want: []string{"chain 901", "jovianTime (50) is before isthmusTime (100)"}},
		{name: "a fork without the one before", mutate: func(c map[string]any) {
			delete(c, "isthmusTime")
			delete(c, "pragueTime")
		}, want: []string{"chain 901", "jovianTime is set but isthmusTime"}},
		{name: "L1 time contradicting its OP fork", mutate: func(c map[string]any) { c["pragueTime"] = 101 },
			want: []string{"chain 901", "pragueTime (101) differs from isthmusTime (100)"}},
		{name: "L1 fork no OP fork schedules", mutate: func(c map[string]any) { c["bpo1Time"] = 300 },
			want: []string{"chain 901", "bpo1Time"}},
		{name: "negative bedrock block", mutate: func(c map[string]any) { c["bedrockBlock"] = -1 },
			want: []string{"bedrockBlock"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var file string
			if c.raw != "" {
				file = filepath.Join(root, "malformed.json")
				if err := os.WriteFile(file, []byte(c.raw), 0o644); err != nil {
					t.Fatal(err)
				}
			} else {
				cfg := base()
				c.mutate(cfg)
				file = write(strings.ReplaceAll(c.name, " ", "-"), cfg)
			}
			empty := filepath.Join(t.TempDir(), "empty")
			if err := os.Mkdir(empty, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, dir := range []string{filepath.Join(t.TempDir(), "absent"), empty, other} {
				before := treeDigest(t, dir)
				err, stderr := initState(t, "--datadir", dir, "--genesis", file)
				if err == nil {
					t.Fatalf("%s: accepted\n%s", dir, stderr)
				}
				for _, w := range c.want {
					if !strings.Contains(err.Error(), w) {
						t.Fatalf("%s: %v\nwant it to name %q", dir, err, w)
					}
				}
				if after := treeDigest(t, dir); after != before {
					t.Fatalf("%s: the refused init changed the data directory:\nbefore:\n%s\nafter:\n%s", dir, before, after)
				}
			}
		})
	}

	// An unknown --chain name and a preset on another chain's directory:
	// refused, the directory unchanged.
	before := treeDigest(t, other)
	if err, _ := initState(t, "--datadir", other, "--chain", "no-such-chain", "--genesis", write("good2", good)); err == nil ||
		!strings.Contains(err.Error(), `"no-such-chain"`) || !strings.Contains(err.Error(), "op-sepolia") {
		t.Fatalf("unknown preset: %v", err)
	}
	if err, _ := initState(t, "--datadir", other, "--chain", "unichain", "--state", filepath.Join(root, "none.jsonl"), "--state.block", "1",
		"--state.from", "http://127.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "is chain 902") || !strings.Contains(err.Error(), "--chain unichain is chain 130") {
		t.Fatalf("a preset on another chain's data directory: %v", err)
	}
	if after := treeDigest(t, other); after != before {
		t.Fatalf("refusals changed the data directory:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
