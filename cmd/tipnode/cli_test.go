package main

// What a newcomer meets on the command line: help, messages about the data
// directory and the port, and the log lines.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/rpc/rpctest"
	"github.com/tipnode/tipnode/store"
)

// `tipnode dev -h` does not call --datadir required; run's does.
func TestDevHelpDatadirOptional(t *testing.T) {
	for _, tc := range []struct {
		name     string
		run      func(context.Context, []string, io.Writer, io.Writer) error
		required bool
	}{{"dev", runDev, false}, {"run", runRun, true}} {
		var stdout, stderr bytes.Buffer
		if err := tc.run(context.Background(), []string{"-h"}, &stdout, &stderr); !errors.Is(err, flag.ErrHelp) {
			t.Fatalf("%s -h: %v", tc.name, err)
		}
		i := strings.Index(stderr.String(), "-datadir")
		if i < 0 {
			t.Fatalf("%s -h does not list --datadir:\n%s", tc.name, stderr.String())
		}
		line := stderr.String()[i:]
		line = line[:strings.Index(line, "\n  -")+1]
		if strings.Contains(line, "required") != tc.required {
			t.Fatalf("%s -h: --datadir described as %q", tc.name, line)
		}
	}
}

// `run` (and `import`) on an empty or missing directory say it is not
// initialised and create nothing there.
func TestRunOnEmptyDataDirCreatesNothing(t *testing.T) {
	base := t.TempDir()
	empty := filepath.Join(base, "empty")
	missing := filepath.Join(base, "missing")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{empty, missing} {
		var stdout, stderr bytes.Buffer
		err := runRun(context.Background(), []string{"--datadir", dir, "--log.level", "error"}, &stdout, &stderr)
		want := "the data directory " + dir + " is not initialised: run 'tipnode init --datadir " + dir + " --genesis FILE' first"
		if err == nil || err.Error() != want {
			t.Fatalf("run on %s: %v\nwant %s", dir, err, want)
		}
		err = runImport(context.Background(), []string{"--datadir", dir, "--log.level", "error", "x.rlp"}, &stdout, &stderr)
		if err == nil || err.Error() != want {
			t.Fatalf("import on %s: %v", dir, err)
		}
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Fatalf("run created %d entries in the empty directory", len(ents))
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("run created the missing directory (%v)", err)
	}
}

// A second node on a data directory another one holds says so.
func TestSecondNodeOnDataDir(t *testing.T) {
	dir := t.TempDir()
	cfg := store.DefaultConfig(dir)
	cfg.CacheBytes, cfg.MemtableBytes = 8<<20, 1<<20
	db, err := openStore(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var stdout, stderr bytes.Buffer
	for _, c := range []struct {
		name string
		run  func(context.Context, []string, io.Writer, io.Writer) error
	}{{"run", runRun}, {"dev", runDev}} {
		err := c.run(context.Background(), []string{"--datadir", dir, "--log.level", "error"}, &stdout, &stderr)
		want := "another tipnode holds the data directory " + dir + ": stop it, or pass another --datadir"
		if err == nil || err.Error() != want {
			t.Fatalf("%s: %v\nwant %s", c.name, err, want)
		}
	}
}

// A busy port fails before the dev banner is printed.
func TestDevBusyPortPrintsNoBanner(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var stdout, stderr bytes.Buffer
	err = runDev(context.Background(), []string{"--http.addr", l.Addr().String(), "--log.level", "error"}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("dev on a busy port: %v", err)
	}
	if stdout.Len() != 0 {
		t.Fatalf("banner printed before the port failed:\n%s", stdout.String())
	}
}

// The JSON log lines of a dev node at work: no key twice in a line (the
// component is named once), durations are strings with their unit, a
// sealed block's time is "timestamp" (blockTime is the configured
// duration), and a new store logs no migration.
func TestLogLines(t *testing.T) {
	var logs bytes.Buffer
	lc := LogConfig{Level: "debug", Format: "json"}
	log := lc.logger(&logs)
	d := openDev(t, devOptions{dir: t.TempDir(), log: log, accounts: 2, store: func(cfg *store.Config) {
		cfg.CacheBytes, cfg.MemtableBytes = 8<<20, 1<<20
	}})
	defer d.db.Close()
	n, clock, accs, g := d.n, d.clock, d.accs, d.g
	url := "http://" + n.Server.Addr().String()
	tx, err := types.SignNewTx(accs[0].Key, types.LatestSigner(g.Config), &types.DynamicFeeTx{ChainID: g.Config.ChainID, Nonce: 0,
		GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(10 * params.GWei), Gas: 21_000, To: &common.Address{1}, Value: big.NewInt(1)})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := tx.MarshalBinary()
	rpctest.Post(t, url, `{"jsonrpc":"2.0","id":1,"method":"eth_sendRawTransaction","params":["`+hexutil.Encode(raw)+`"]}`)
	rpctest.Post(t, url, `{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0x1","-0x1"]}`)
	tick(t, n, clock, 10) // a pre-confirmation and a seal
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}

	messages := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if dup := duplicateKey(line); dup != "" {
			t.Errorf("key %q twice in %s", dup, line)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %s", line)
		}
		messages[m["message"].(string)] = m
		for _, k := range []string{"duration", "took", "build", "preconfInterval", "blockTime", "lifetime", "limit"} {
			if v, ok := m[k]; ok {
				s, isStr := v.(string)
				if _, err := time.ParseDuration(s); !isStr || err != nil {
					t.Errorf("%q = %v is not a duration with its unit: %s", k, v, line)
				}
			}
		}
	}
	for _, msg := range []string{"store opened", "sequencer started", "snapshot published", "sealed block", "rpc call", "transaction pooled"} {
		if messages[msg] == nil {
			t.Errorf("no %q line in the log", msg)
		}
	}
	// A new store is created at the current format: nothing to migrate.
	for _, msg := range []string{"migrating", "migrated"} {
		if messages[msg] != nil {
			t.Errorf("a new store logged %q: %v", msg, messages[msg])
		}
	}
	if sealed := messages["sealed block"]; sealed != nil && (sealed["timestamp"] == nil || sealed["blockTime"] != nil) {
		t.Errorf("sealed block line: %v (the block's time is \"timestamp\")", sealed)
	}
}

// duplicateKey returns a top-level key that occurs twice in a JSON object
// line ("" if none).
func duplicateKey(line string) string {
	d := json.NewDecoder(strings.NewReader(line))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	seen := map[string]bool{}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return ""
		}
		k := tok.(string)
		if seen[k] {
			return k
		}
		seen[k] = true
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return ""
		}
	}
	return ""
}

// The flags of follow mode, forwarding and the stream are combined into a
// node.Config or refused with a message naming the flags.
func TestNodeFlagCombinations(t *testing.T) {
	cases := []struct {
		name    string
		dev     bool
		set     func(f *NodeFlags)
		wantErr string
		check   func(t *testing.T, f NodeFlags)
	}{
		{name: "dev streams by default", dev: true, set: func(f *NodeFlags) { f.Sequencer = true },
			check: func(t *testing.T, f NodeFlags) {
				cfg, err := f.nodeConfig()
				if err != nil || cfg.Stream == nil {
					t.Fatalf("stream %v, err %v", cfg.Stream, err)
				}
			}},
		{name: "run does not stream by default", set: func(f *NodeFlags) { f.Sequencer = true },
			check: func(t *testing.T, f NodeFlags) {
				if cfg, err := f.nodeConfig(); err != nil || cfg.Stream != nil {
					t.Fatalf("stream %v, err %v", cfg.Stream, err)
				}
			}},
		{name: "stream without a driver", set: func(f *NodeFlags) { f.Stream = true }, wantErr: "--stream needs --sequencer or --follow.rpc"},
		{name: "txforward without follow", set: func(f *NodeFlags) { f.FollowTxForward = "http://127.0.0.1:1" }, wantErr: "--follow.txforward needs --follow.rpc"},
		{name: "follow and sequencer", set: func(f *NodeFlags) { f.FollowRPC, f.Sequencer = "ws://127.0.0.1:1", true }, wantErr: "exclude each other"},
		{name: "follow forwards to its upstream by default", set: func(f *NodeFlags) { f.FollowRPC = "ws://127.0.0.1:1" },
			check: func(t *testing.T, f NodeFlags) {
				cfg, err := f.nodeConfig()
				if err != nil || cfg.TxForward == nil || cfg.TxForward.URL != "ws://127.0.0.1:1" {
					t.Fatalf("forward %+v, err %v", cfg.TxForward, err)
				}
			}},
		{name: "txforward none pools locally", set: func(f *NodeFlags) { f.FollowRPC, f.FollowTxForward = "ws://127.0.0.1:1", "none" },
			check: func(t *testing.T, f NodeFlags) {
				if cfg, err := f.nodeConfig(); err != nil || cfg.TxForward != nil {
					t.Fatalf("forward %+v, err %v", cfg.TxForward, err)
				}
			}},
		{name: "txforward bad url", set: func(f *NodeFlags) { f.FollowRPC, f.FollowTxForward = "ws://127.0.0.1:1", "ftp://x" }, wantErr: "--follow.txforward"},
		{name: "stream queue negative", set: func(f *NodeFlags) { f.Sequencer, f.Stream, f.StreamQueue = true, true, -1 }, wantErr: "--stream"},
		// --stream.roots=off also turns off a sequencer's per-pre-confirmation
		// roots without --stream: a value other than on or off is refused there too.
		{name: "stream roots typo without stream", set: func(f *NodeFlags) { f.Sequencer, f.StreamRoots = true, "of" }, wantErr: `--stream.roots "of": want on or off`},
		{name: "stream roots typo on a follower", set: func(f *NodeFlags) { f.FollowRPC, f.StreamRoots = "ws://127.0.0.1:1", "Off" }, wantErr: "--stream.roots"},
		{name: "stream roots off without stream", set: func(f *NodeFlags) { f.Sequencer, f.StreamRoots = true, "off" },
			check: func(t *testing.T, f NodeFlags) {
				if cfg, err := f.nodeConfig(); err != nil || cfg.Sequencer == nil || !cfg.Sequencer.NoPendingRoots {
					t.Fatalf("sequencer %+v, err %v", cfg.Sequencer, err)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var f NodeFlags
			fs := newFlagSet()
			f.register(fs, tc.dev)
			f.HTTPAddr = "127.0.0.1:0"
			tc.set(&f)
			if tc.check != nil {
				tc.check(t, f)
				return
			}
			_, err := f.nodeConfig()
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// tipnode import's --memory.gcpercent: a negative target is refused
// before anything is opened, and the GC target the import sets is the
// process's again when it returns.
func TestImportGCPercent(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := runImport(context.Background(), []string{"--datadir", t.TempDir(), "--memory.gcpercent", "-1", "x.rlp"}, &stdout, &stderr)
	if want := "--memory.gcpercent -1: want 0 (GOGC from the environment) or more"; err == nil || err.Error() != want {
		t.Fatalf("import --memory.gcpercent -1: %v, want %s", err, want)
	}
	before := debug.SetGCPercent(77)
	defer debug.SetGCPercent(before)
	err = runImport(context.Background(), []string{"--datadir", filepath.Join(t.TempDir(), "missing"), "--memory.gcpercent", "900", "--log.level", "error", "x.rlp"}, &stdout, &stderr)
	if err == nil {
		t.Fatal("import into a missing data directory succeeded")
	}
	if got := debug.SetGCPercent(77); got != 77 {
		t.Fatalf("GC target after the import: %d, want 77 (restored)", got)
	}
}
