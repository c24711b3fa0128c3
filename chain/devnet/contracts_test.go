package devnet

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	lock, err := os.ReadFile("contracts/package-lock.json")
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := os.ReadFile("contracts/package.json")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append(append([]byte{}, pkg...), lock...))
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	root := filepath.Join(base, "tipnode", "devnet-solc")
	dir := filepath.Join(root, hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(dir, "installed")); err != nil {
		if err := os.MkdirAll(root, 0o755); err != nil {
			t.Fatal(err)
		}
		tmp, err := os.MkdirTemp(root, "install-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(tmp)
		for name, b := range map[string][]byte{"package.json": pkg, "package-lock.json": lock} {
			if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--prefer-offline", "--loglevel=error")
		cmd.Dir = tmp
		if out, err := cmd.CombinedOutput(); err != nil {
			if pout, perr := exec.Command(npm, "ping", "--fetch-timeout=15000", "--fetch-retries=0").CombinedOutput(); perr != nil {
				t.Skipf("the npm registry is unreachable (npm ping: %v: %s)", perr, pout)
			}
			t.Fatalf("npm ci: %v\n%s", err, out)
		}
		if err := os.WriteFile(filepath.Join(tmp, "installed"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, dir); err != nil {
			if _, serr := os.Stat(filepath.Join(dir, "installed")); serr != nil {
				t.Fatal(err)
			}
		}
	}

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
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(dir, "node_modules"))
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
