package chaintest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// NPMModules runs `npm ci` for the package.json and package-lock.json in
// src into a cache directory (the user cache, under tipnode/<cache>/,
// keyed by a hash of both files: once, later runs reuse it) and returns
// its node_modules. It skips the test, saying so, when the npm registry is
// unreachable; any other install failure fails it.
func NPMModules(t testing.TB, npm, src, cache string) string {
	t.Helper()
	pkg, err := os.ReadFile(filepath.Join(src, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append(append([]byte{}, pkg...), lock...))
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	root := filepath.Join(base, "tipnode", cache)
	dir := filepath.Join(root, hex.EncodeToString(sum[:8]))
	modules := filepath.Join(dir, "node_modules")
	if _, err := os.Stat(filepath.Join(dir, "installed")); err == nil {
		return modules
	}
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
		ping := exec.Command(npm, "ping", "--fetch-timeout=15000", "--fetch-retries=0")
		if pout, perr := ping.CombinedOutput(); perr != nil {
			t.Skipf("the npm registry is unreachable (npm ping: %v: %s)", perr, lastBytes(pout, 300))
		}
		t.Fatalf("npm ci of %s: %v\n%s", src, err, lastBytes(out, 3000))
	}
	if err := os.WriteFile(filepath.Join(tmp, "installed"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another run installed it meanwhile: use that one.
		if _, serr := os.Stat(filepath.Join(dir, "installed")); serr != nil {
			t.Fatal(err)
		}
	}
	return modules
}

// lastBytes is the end of b, at most n bytes of it.
func lastBytes(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	return b[len(b)-n:]
}
