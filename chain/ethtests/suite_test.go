package ethtests

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// EnvDir names the environment variable that overrides the location of the
// suite (tests only).
const EnvDir = "TIPNODE_ETHTESTS"

// EnvRunSkipped, when set, runs the skipped tests too and logs whether each
// still fails (go test -v shows it): how to check that a skip entry is
// still needed. Their outcome never fails the run.
const EnvRunSkipped = "TIPNODE_ETHTESTS_RUN_SKIPPED"

// suiteDir returns the BlockchainTests directory of the suite or skips.
func suiteDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv(EnvDir); d != "" {
		return filepath.Join(d, "BlockchainTests")
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; filepath.Dir(d) != d; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			bt := filepath.Join(d, "..", "shared", "ethtests", "BlockchainTests")
			if _, err := os.Stat(bt); err == nil {
				return bt
			}
			break
		}
	}
	t.Skipf("Ethereum conformance suite not found (expected ../shared/ethtests/BlockchainTests beside the repository, or set %s): skipping", EnvDir)
	return ""
}

// skip is the skip list: tests matched by "<file under BlockchainTests>:<test
// name>" (a name may occur in several files), each with its reason.
var skip = []struct {
	re     *regexp.Regexp
	reason string
}{
	{regexp.MustCompile(`:(InitCollisionParis_|create2collisionStorageParis_|RevertInCreateInInit(_|Create2)Paris_|dynamicAccountOverwriteEmpty_Paris_)`),
		"EIP-7610 collisions with a pre-existing storage: states that cannot occur on a real chain; go-ethereum's own runner skips them (tests/block_test.go) and tipnode behaves as go-ethereum v1.17.10 does"},
	{regexp.MustCompile(`:blockChainFrontierWithLargerTDvsHomesteadBlockchain2?_FrontierToHomesteadAt5$`),
		"picks the pre-merge branch of larger total difficulty: tipnode keeps no total difficulty and, as go-ethereum's import since the merge, makes the last imported block the head (go-ethereum's runner skips these too)"},
	{regexp.MustCompile(`:powToPosBlockRejection_ArrowGlacierToParisAtDiffC0000$`),
		"the merge transition at a terminal total difficulty, which tipnode does not track (go-ethereum's runner skips it: total difficulties went with chain history removal)"},
	{regexp.MustCompile(`:DaoTransactions_HomesteadToDaoAt5$`),
		"returns to a branch that an imported side chain replaced: tipnode stores no non-canonical blocks, so that branch's next block has no known parent"},
}

func skipReason(key string) (string, int) {
	for i, s := range skip {
		if s.re.MatchString(key) {
			return s.reason, i
		}
	}
	return "", -1
}

// tally counts outcomes per network.
type tally struct {
	mu       sync.Mutex
	files    int
	run      map[string]int
	passed   map[string]int
	failed   map[string]int
	skipped  map[string]int
	skipUsed map[int]int
}

func newTally() *tally {
	return &tally{run: map[string]int{}, passed: map[string]int{}, failed: map[string]int{}, skipped: map[string]int{}, skipUsed: map[int]int{}}
}

// TestBlockchainSuite runs every blockchain test of the suite (see Run),
// one file per parallel subtest, and logs the counts per network.
func TestBlockchainSuite(t *testing.T) {
	dir := suiteDir(t)
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".json") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no test files under %s", dir)
	}
	start := time.Now()
	tl := newTally()
	t.Run("files", func(t *testing.T) {
		for _, path := range files {
			rel, _ := filepath.Rel(dir, path)
			t.Run(filepath.ToSlash(strings.TrimSuffix(rel, ".json")), func(t *testing.T) {
				t.Parallel()
				runFile(t, path, filepath.ToSlash(rel), tl)
			})
		}
	})
	var total, passed, failed, skipped int
	var nets []string
	for n := range tl.run {
		nets = append(nets, n)
	}
	for n := range tl.skipped {
		if _, ok := tl.run[n]; !ok {
			nets = append(nets, n)
		}
	}
	sort.Strings(nets)
	var b strings.Builder
	for _, n := range nets {
		total += tl.run[n] + tl.skipped[n]
		passed += tl.passed[n]
		failed += tl.failed[n]
		skipped += tl.skipped[n]
		b.WriteString("\n  " + n + ": " + itoa(tl.passed[n]) + " passed, " + itoa(tl.failed[n]) + " failed, " + itoa(tl.skipped[n]) + " skipped")
	}
	t.Logf("%d files, %d tests: %d passed, %d failed, %d skipped in %v%s", tl.files, total, passed, failed, skipped, time.Since(start).Round(time.Millisecond), b.String())
	if tl.files == len(files) {
		// The whole suite ran: every skip entry must still match a test.
		for i, s := range skip {
			if tl.skipUsed[i] == 0 {
				t.Errorf("skip entry %s matches no test: remove it", s.re)
			}
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// runFile runs the tests of one fixture file in order.
func runFile(t *testing.T, path, rel string, tl *tally) {
	tests, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tl.mu.Lock()
	tl.files++
	tl.mu.Unlock()
	for _, f := range tests {
		reason, entry := skipReason(rel + ":" + f.Name)
		if entry >= 0 {
			tl.mu.Lock()
			tl.skipped[f.Network]++
			tl.skipUsed[entry]++
			tl.mu.Unlock()
			if os.Getenv(EnvRunSkipped) != "" {
				// Is the entry still needed? Reported, never failed.
				if err := Run(f); err != nil {
					t.Logf("%s: skipped: %s; run anyway: still fails: %v", f.Name, reason, err)
				} else {
					t.Logf("%s: skipped: %s; run anyway: PASSES, the entry can go", f.Name, reason)
				}
				continue
			}
			t.Logf("%s: skipped: %s", f.Name, reason)
			continue
		}
		err := Run(f)
		tl.mu.Lock()
		tl.run[f.Network]++
		if err == nil {
			tl.passed[f.Network]++
		} else {
			tl.failed[f.Network]++
		}
		tl.mu.Unlock()
		if err != nil {
			if errors.Is(err, ErrForgedRootAccepted) {
				t.Errorf("%s (%s): %v (needs state-root verification on import)", f.Name, f.Network, err)
			} else {
				t.Errorf("%s (%s): %v", f.Name, f.Network, err)
			}
		}
	}
}
