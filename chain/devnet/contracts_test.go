package devnet

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tipnode/tipnode/chain/chaintest"
)

// TestContractsCompile: the checked-in runtime code and ABIs of the
// predeploys are what contracts/compile.js makes of the .sol sources with
// the pinned solc-js (contracts/package-lock.json, installed with npm ci
// into a cache directory keyed by the lock file). It skips, saying so,
// without node and npm, or when the npm registry is unreachable.
func TestContractsCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("needs solc-js from the npm registry; skipped in -short mode")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed")
	}
	modules := chaintest.NPMModules(t, npm, "contracts", "devnet-solc")

	// Compile a copy of the sources and compare every output.
	work := t.TempDir()
	entries, err := os.ReadDir("contracts")
	if err != nil {
		t.Fatal(err)
	}
	var outputs []string
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, ".sol"), name == "compile.js":
			b, err := os.ReadFile(filepath.Join("contracts", name))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(work, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		case strings.HasSuffix(name, ".bin-runtime"), strings.HasSuffix(name, ".abi.json"):
			outputs = append(outputs, name)
		}
	}
	cmd := exec.Command(node, "compile.js")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node compile.js: %v\n%s", err, out)
	}
	if len(outputs) < 12 {
		t.Fatalf("%d checked-in outputs, want the code and ABI of 6 contracts", len(outputs))
	}
	for _, name := range outputs {
		want, err := os.ReadFile(filepath.Join("contracts", name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(work, name))
		if err != nil {
			t.Fatalf("compile.js made no %s: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what compile.js makes of the sources: run it (see its header) and check the result in", name)
		}
	}
}
