//go:build linux

package main

import (
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/rlp"
	"golang.org/x/sys/unix"

	"github.com/tipnode/tipnode/chain/chaintest"
)

// TestCrashDuringImport kills `tipnode import` of the conformance chain
// (54 blocks after genesis, --trie.window 4: every block write prunes)
// with SIGKILL in the middle of the import, and runs `tipnode verify`
// after every kill: trie, state and headers stay consistent at whatever
// block the import reached. The import reads the chain from a named pipe
// that the test feeds: each round sends the blocks up to a random one
// short of the end and keeps the pipe open, so the import cannot finish
// (it waits for the rest) and the kill, a random pause (up to the time a
// whole import takes here) after the import read the last byte sent,
// always hits a live import: while it executes
// and writes the blocks sent, or while it waits for more (the last block
// read stays pending until the next one or the end of the file, as the
// file's last block gets the safe and finalized tags). The import is restarted
// each time (it skips the blocks already there); the last round (after
// TIPNODE_CRASH_ITERATIONS kills, 12 in make test) sends the whole chain
// and closes the pipe, and the store ends at the chain's last block,
// verified.
func TestCrashDuringImport(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the process crash test")
	}
	bin := buildTipnode(t)
	conf := chaintest.Dir(t)
	dir := t.TempDir()
	if out, err := exec.Command(bin, "init", "--datadir", dir, "--genesis", filepath.Join(conf, "chain", "genesis.json"), "--log.level", "warn").CombinedOutput(); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	blocks := rawBlocks(t, filepath.Join(conf, "chain", "chain.rlp"))
	last := len(blocks) // block numbers 1..last
	fifo := filepath.Join(t.TempDir(), "chain.rlp")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// Calibration: how long the whole import takes here (on a copy), so
	// that the pauses before the kills span an import's work under
	// whatever load the machine has.
	calib := filepath.Join(t.TempDir(), "calib")
	if err := os.CopyFS(calib, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if out, err := exec.Command(bin, "import", "--datadir", calib, "--trie.window", "4", "--log.level", "warn", filepath.Join(conf, "chain", "chain.rlp")).CombinedOutput(); err != nil {
		t.Fatalf("calibration import: %v\n%s", err, out)
	}
	full := time.Since(t0)
	latestRe := regexp.MustCompile(`(?m)^block (\d+) `)
	rng := rand.New(rand.NewPCG(5, 8))
	var reached []uint64
	rounds := crashIterations(t)
	latest, kept := uint64(0), 0
	for it := 0; it <= rounds; it++ {
		final := it == rounds
		// Send blocks 1..sent: all of them in the final round, else up to
		// a random block short of the end, at least two past the store's
		// latest (the last block read stays pending, so the one before it
		// is written). Not in small steps: the import does not sync, and
		// a kill loses what Pebble still holds of the write-ahead log in
		// its 32 KiB buffer, a few of these small blocks.
		sent := last
		if !final {
			lo := min(int(latest)+2, last-1)
			sent = lo + rng.IntN(last-lo)
		}
		var out lockedWriter
		cmd := exec.Command(bin, "import", "--datadir", dir, "--trie.window", "4", "--log.level", "info", fifo)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		// O_RDWR does not wait for the reader to open the pipe; the
		// feeder's writes block until the import reads them.
		pipe, err := os.OpenFile(fifo, os.O_RDWR, 0)
		if err != nil {
			cmd.Process.Kill()
			t.Fatal(err)
		}
		fd := int(pipe.Fd())
		fed := make(chan error, 1)
		go func() {
			var err error
			for _, b := range blocks[:sent] {
				if _, err = pipe.Write(b); err != nil {
					break
				}
			}
			if final {
				err = errors.Join(err, pipe.Close())
			}
			fed <- err
		}()
		if final {
			if err := <-done; err != nil {
				t.Fatalf("round %d: import failed: %v\n%s", it, err, out.String())
			}
			if err := <-fed; err != nil {
				t.Fatalf("round %d: feeding the pipe: %v", it, err)
			}
		} else {
			// Wait until the import has read everything sent (the pipe
			// is empty), then pause: the kill lands while it executes and
			// writes the blocks sent, or while it waits for more.
			feeding := fed
			for drained := false; !drained; {
				select {
				case err := <-done:
					// The pipe is open: the import waits for more blocks
					// and cannot end by itself.
					pipe.Close()
					t.Fatalf("round %d: the import ended (%v) before it read the whole chain\n%s", it, err, out.String())
				case err := <-feeding:
					if err != nil {
						t.Fatalf("round %d: feeding the pipe: %v", it, err)
					}
					feeding = nil
				case <-time.After(2 * time.Millisecond):
				}
				if feeding == nil {
					unread, err := unix.IoctlGetInt(fd, unix.TIOCINQ) // FIONREAD: bytes unread
					if err != nil {
						t.Fatal(err)
					}
					drained = unread == 0
				}
			}
			time.Sleep(time.Duration(rng.Int64N(int64(full))))
			cmd.Process.Kill()
			err := <-done
			pipe.Close()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("round %d: the import was not killed mid-import (exit %v)\n%s", it, err, out.String())
			}
		}
		vout, err := exec.Command(bin, "verify", "--datadir", dir, "--log.level", "warn").CombinedOutput()
		if err != nil || !strings.Contains(string(vout), "\nOK\n") {
			t.Fatalf("round %d (final %v): tipnode verify failed (%v):\n%s\nimport output:\n%s", it, final, err, vout, out.String())
		}
		m := latestRe.FindSubmatch(vout)
		if m == nil {
			t.Fatalf("round %d: no block in the verify output:\n%s", it, vout)
		}
		n, _ := strconv.ParseUint(string(m[1]), 10, 64)
		switch {
		case n > uint64(sent) && n > latest:
			t.Fatalf("round %d: the store is at block %d, but only blocks up to %d were sent", it, n, sent)
		case n < latest:
			t.Fatalf("round %d: the store went back from block %d to %d", it, latest, n)
		case final && n != uint64(last):
			t.Fatalf("the final import ended at block %d, want %d", n, last)
		case !final && n > latest:
			kept++
		}
		latest = n
		reached = append(reached, n)
	}
	if kept == 0 {
		t.Fatalf("no killed import left any block it imported (latest after each round: %v): the rounds exercised nothing", reached)
	}
	t.Logf("%d kill -9 rounds mid-import (%d of them moved the store forward; a whole import takes %v), latest after each round (verified): %v", rounds, kept, full.Round(time.Millisecond), reached)
}

// rawBlocks splits an RLP chain file into its blocks' encodings.
func rawBlocks(t *testing.T, file string) [][]byte {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := rlp.NewStream(f, 0)
	var blocks [][]byte
	for {
		raw, err := s.Raw()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, raw)
	}
	if len(blocks) < 3 {
		t.Fatalf("%s: %d blocks, want at least 3", file, len(blocks))
	}
	return blocks
}
