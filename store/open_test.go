package store

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// lockHolderEnv names the directory TestLockHolder opens when this test
// binary is run as the other process of TestOpenLockedStore.
const lockHolderEnv = "TIPNODE_STORE_TEST_HOLD"

// TestLockHolder is the other process of TestOpenLockedStore: it opens the
// store, says so, and holds it until its stdin closes.
func TestLockHolder(t *testing.T) {
	dir := os.Getenv(lockHolderEnv)
	if dir == "" {
		t.Skip("helper process of TestOpenLockedStore")
	}
	db, err := Open(testOpenConfig(dir), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	os.Stdout.WriteString("open\n")
	io.Copy(io.Discard, os.Stdin)
}

func testOpenConfig(dir string) Config {
	cfg := DefaultConfig(dir)
	cfg.CacheBytes, cfg.MemtableBytes = 8<<20, 1<<20
	return cfg
}

// A store open in another process is refused with ErrLocked naming the
// directory; so is a second open in the same process.
func TestOpenLockedStore(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHolder$")
	cmd.Env = append(os.Environ(), lockHolderEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "open\n" {
		stdin.Close()
		cmd.Wait()
		t.Fatalf("helper process: %q, %v", line, err)
	}
	_, err = Open(testOpenConfig(dir), zerolog.Nop())
	stdin.Close()
	if werr := cmd.Wait(); werr != nil {
		t.Errorf("helper process: %v", werr)
	}
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("open while another process holds the store: %v, want ErrLocked naming %s", err, dir)
	}
	// Released: it opens, and a second open in this process is refused.
	db, err := Open(testOpenConfig(dir), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := Open(testOpenConfig(dir), zerolog.Nop()); !errors.Is(err, ErrLocked) {
		t.Fatalf("second open in one process: %v, want ErrLocked", err)
	}
}

// MustExist opens an existing store and creates nothing otherwise.
func TestOpenMustExist(t *testing.T) {
	base := t.TempDir()
	cfg := DefaultConfig("")
	cfg.CacheBytes, cfg.MemtableBytes, cfg.MustExist = 8<<20, 1<<20, true
	missing := filepath.Join(base, "missing")
	empty := filepath.Join(base, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{missing, empty} {
		cfg.Dir = dir
		if _, err := Open(cfg, zerolog.Nop()); !errors.Is(err, ErrNoStore) {
			t.Fatalf("%s: %v, want ErrNoStore", dir, err)
		}
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the missing directory was created (%v)", err)
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Fatalf("files created in the empty directory: %v", ents)
	}
	// An existing store opens.
	cfg.Dir, cfg.MustExist = empty, false
	db, err := Open(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	cfg.MustExist = true
	db, err = Open(cfg, zerolog.Nop())
	if err != nil {
		t.Fatalf("existing store with MustExist: %v", err)
	}
	db.Close()
}

// TestBulkImportDefersL0Compaction writes flushes whose keys overlap (as an
// import's state and trie versions do) to a store opened with BulkImport:
// they stay in L0 as sublevels, none compacted, up to its threshold. A
// normal open of the store then compacts them in the background.
func TestBulkImportDefersL0Compaction(t *testing.T) {
	cfg := DefaultConfig(t.TempDir())
	cfg.SyncWrites = false
	cfg.CacheBytes = 8 << 20
	cfg.MemtableBytes = 1 << 20
	cfg.MinFreeBytes = 0
	cfg.BulkImport = true
	db, err := Open(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	key, val := make([]byte, 33), make([]byte, 304)
	const flushes = l0CompactionThreshold + 3 // past the normal threshold, below the bulk one
	for range flushes {
		rb, err := db.NewRawBatch()
		if err != nil {
			t.Fatal(err)
		}
		for range 500 { // keys spread over the whole table: each flush overlaps all others
			key[0] = prefixTxLookup
			for i := 1; i < len(key); i += 8 {
				binary.LittleEndian.PutUint64(key[i:], rng.Uint64())
			}
			for i := 0; i < len(val); i += 8 {
				binary.LittleEndian.PutUint64(val[i:], rng.Uint64())
			}
			if err := rb.Set(key, val); err != nil {
				t.Fatal(err)
			}
		}
		if err := errors.Join(rb.Commit(), db.Flush()); err != nil {
			t.Fatal(err)
		}
	}
	m := db.pdb.Metrics()
	if got := m.Levels[0].Sublevels; got < flushes || m.Compact.Count != 0 {
		t.Fatalf("BulkImport: %d L0 sublevels after %d overlapping flushes and %d compactions, want %d and none", got, flushes, m.Compact.Count, flushes)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.BulkImport = false
	if db, err = Open(cfg, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := 0; ; i++ {
		m := db.pdb.Metrics()
		if m.Levels[0].Sublevels < l0CompactionThreshold && m.Compact.Count > 0 {
			break
		}
		if i == 6000 {
			t.Fatalf("a normal open left %d L0 sublevels uncompacted after a minute (%d compactions)", m.Levels[0].Sublevels, m.Compact.Count)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
