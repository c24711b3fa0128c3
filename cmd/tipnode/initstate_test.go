package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/store"
)

// initState runs `tipnode init` with args and returns its error and
// stderr.
//
//lint:ignore ST1008 callers read it as "what init returned, what it printed"
func initState(t *testing.T, args ...string) (error, string) {
	t.Helper()
	var stderr bytes.Buffer
	err := runInit(context.Background(), append(args, "--log.level", "warn"), io.Discard, &stderr)
	return err, stderr.String()
}

// TestInitState: `init --state` with go-ethereum's dump of the conformance
// chain at block 54 (headstate.json) and the headers from chain.rlp makes
// a store anchored at 54 whose state is the dump's; a broken dump is
// refused naming the line and leaves a data directory that init takes
// again; a data directory an interrupted init left is refused by every
// command with a message saying to delete it.
func TestInitState(t *testing.T) {
	conf := chaintest.Dir(t)
	genesis := filepath.Join(conf, "chain", "genesis.json")
	headers := filepath.Join(conf, "chain", "chain.rlp")
	dumpFile := filepath.Join(conf, "chain", "headstate.json")
	dir := filepath.Join(t.TempDir(), "data")
	args := func(dump string, extra ...string) []string {
		return append([]string{"--datadir", dir, "--genesis", genesis, "--state", dump, "--state.block", "54", "--state.headers", headers}, extra...)
	}

	// Flag combinations.
	for _, bad := range [][]string{
		{"--datadir", dir, "--genesis", genesis, "--state", dumpFile, "--state.headers", headers},                                                    // no block
		{"--datadir", dir, "--genesis", genesis, "--state", dumpFile, "--state.block", "54"},                                                         // no headers
		{"--datadir", dir, "--genesis", genesis, "--state.block", "54"},                                                                              // no dump
		{"--datadir", dir, "--genesis", genesis, "--state", dumpFile, "--state.block", "54", "--state.headers", headers, "--state.from", "http://x"}, // both
	} {
		if err, _ := initState(t, bad...); err == nil {
			t.Fatalf("init %v: accepted", bad)
		}
	}

	// A broken dump: refused naming the line; nothing is left behind.
	raw, err := os.ReadFile(dumpFile)
	if err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(t.TempDir(), "broken.json")
	if err := os.WriteFile(broken, bytes.Replace(raw, []byte(`"nonce": 0`), []byte(`"nonce": -1`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	err, _ = initState(t, args(broken)...)
	if err == nil || !strings.Contains(err.Error(), "line ") {
		t.Fatalf("broken dump: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, initMarker)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused init left its marker: %v", err)
	}
	// Another block's headers: the root check refuses it, naming both roots.
	err, _ = initState(t, "--datadir", dir, "--genesis", genesis, "--state", dumpFile, "--state.block", "53", "--state.headers", headers)
	if err == nil || !strings.Contains(err.Error(), "0x6da8f636cdc85dbe8c1b5299e5db22f462c041febaf3b78cac1040152ee30b3b") {
		t.Fatalf("dump of another block: %v", err)
	}

	// The real one.
	if err, log := initState(t, args(dumpFile)...); err != nil {
		t.Fatalf("init: %v\n%s", err, log)
	}
	if err, _ := initState(t, args(dumpFile)...); err == nil || !strings.Contains(err.Error(), "already initialised") {
		t.Fatalf("init twice: %v", err)
	}
	db, err := openStore(store.DefaultConfig(dir), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if a := db.Anchor(); a.State != 54 || a.History != 55 {
		t.Fatalf("anchor %+v", a)
	}
	view, err := db.View()
	if err != nil {
		t.Fatal(err)
	}
	st, err := view.StateAt(54)
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range chaintest.LoadHistory(t)[54] {
		acc, err := st.Account(addr)
		if err != nil {
			t.Fatal(err)
		}
		if acc == nil {
			if want.Balance != nil && want.Balance.ToInt().Sign() != 0 || want.Nonce != 0 {
				t.Fatalf("account %s missing", addr.Hex())
			}
			continue
		}
		if acc.Balance.ToBig().Cmp(want.Balance.ToInt()) != 0 || acc.Nonce != uint64(want.Nonce) {
			t.Fatalf("account %s: %s/%d, want %s/%d", addr.Hex(), acc.Balance, acc.Nonce, want.Balance, want.Nonce)
		}
		for slot, v := range want.Storage {
			got, err := st.Storage(addr, slot)
			if err != nil || got != v {
				t.Fatalf("slot %s/%s: %s %v, want %s", addr.Hex(), slot.Hex(), got.Hex(), err, v.Hex())
			}
		}
	}
	view.Close()
	db.Close()

	// An interrupted init (its marker left behind) is refused by run,
	// import and init, with what to do.
	half := filepath.Join(t.TempDir(), "half")
	if err := os.MkdirAll(filepath.Join(half, initMarker), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		run  func(context.Context, []string, io.Writer, io.Writer) error
		args []string
	}{
		{runRun, []string{"--datadir", half}},
		{runImport, []string{"--datadir", half, headers}},
		{runInit, []string{"--datadir", half, "--genesis", genesis}},
		{runInit, []string{"--datadir", half, "--genesis", genesis, "--state", dumpFile, "--state.block", "54", "--state.headers", headers}},
	} {
		err := tc.run(context.Background(), tc.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "interrupted") || !strings.Contains(err.Error(), "delete the directory") {
			t.Fatalf("half-initialised data directory: %v", err)
		}
	}
}
