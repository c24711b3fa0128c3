package optest

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
)

// Chain is one real OP chain genesis of ../shared/op/chains: the file as
// op-geth v1.101702.3 writes it (geth --op-network NAME dumpgenesis) and,
// for a chain that starts at genesis, the genesis block hash op-geth
// computes for it (the directory's README table).
type Chain struct {
	Name        string // file name without .json (op-geth's network name)
	Path        string
	ChainID     uint64      // from the README table (0 when not listed)
	GenesisHash common.Hash // zero when the README gives none (OP Mainnet: pre-Bedrock history)
}

// readmeRow is a README table row: | name | chain id | `0xhash` |.
var readmeRow = regexp.MustCompile("^\\|\\s*([a-z0-9-]+)\\s*\\|\\s*([0-9]+)\\s*\\|\\s*`(0x[0-9a-f]{64})`\\s*\\|")

// Chains returns every genesis of ../shared/op/chains, by name, with the
// hashes of its README; it skips the test when the directory is absent and
// fails when the README lists a chain without a file.
func Chains(t testing.TB) []Chain {
	t.Helper()
	dir := filepath.Join(Dir(t), "chains")
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Skipf("no OP chain genesis files (%v): skipping", err)
	}
	listed := map[string]Chain{}
	for _, line := range strings.Split(string(readme), "\n") {
		m := readmeRow.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		id, err := strconv.ParseUint(m[2], 10, 64)
		if err != nil {
			t.Fatalf("README row %q: %v", line, err)
		}
		listed[m[1]] = Chain{Name: m[1], ChainID: id, GenesisHash: common.HexToHash(m[3])}
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Skipf("no OP chain genesis files in %s: skipping", dir)
	}
	var out []Chain
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		c, ok := listed[name]
		if !ok {
			c = Chain{Name: name}
		}
		delete(listed, name)
		c.Path = f
		out = append(out, c)
	}
	for name := range listed {
		t.Fatalf("%s/README.md lists %s but %s.json is missing", dir, name, name)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
