package main

// What a newcomer meets on the command line: help, and messages about the
// data directory and the port.

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

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
