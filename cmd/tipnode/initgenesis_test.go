package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/store"
)

// TestInitGenesisFile: `init --genesis FILE` (streamed) refuses a broken
// genesis naming the file and the account, leaves nothing behind (no
// marker, init takes the directory again), initialises the conformance
// genesis, accepts the same genesis again, refuses another one, and the
// chain imports on top.
func TestInitGenesisFile(t *testing.T) {
	conf := chaintest.Dir(t)
	genesis := filepath.Join(conf, "chain", "genesis.json")
	spec, err := os.ReadFile(genesis)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "data")
	broken := filepath.Join(t.TempDir(), "broken.json")
	i := strings.Index(string(spec), `"balance"`)
	if err := os.WriteFile(broken, []byte(string(spec[:i])+`"balance":"0xzz"`+string(spec[i+len(`"balance"`):])), 0o644); err != nil {
		t.Fatal(err)
	}
	if err, _ := initState(t, "--datadir", dir, "--genesis", broken); err == nil || !strings.Contains(err.Error(), broken) || !strings.Contains(err.Error(), "account 0x") {
		t.Fatalf("broken genesis: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, initMarker)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("marker left after a refused genesis: %v", err)
	}
	for range 2 { // the second time: the same genesis, a no-op
		if err, stderr := initState(t, "--datadir", dir, "--genesis", genesis); err != nil {
			t.Fatalf("init: %v\n%s", err, stderr)
		}
	}
	other := filepath.Join(t.TempDir(), "other.json")
	if err := os.WriteFile(other, []byte(strings.Replace(string(spec), `"timestamp"`, `"nonce":"0x99","timestamp"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err, _ := initState(t, "--datadir", dir, "--genesis", other); !errors.Is(err, store.ErrGenesisMismatch) {
		t.Fatalf("another genesis: %v", err)
	}
	if err := runImport(context.Background(), []string{"--datadir", dir, "--log.level", "warn", filepath.Join(conf, "chain", "chain.rlp")}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
}
