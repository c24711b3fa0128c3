package follow

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/follow/followtest"
	"github.com/tipnode/tipnode/store"
)

// Kill -9 tests. A child process (this test binary, running
// TestFollowCrashChild) follows the upstream into a store whose writes
// go through crashStore, which kills the process with SIGKILL at a chosen
// point of a chosen write: before it, right after it committed, or at a
// random moment while it commits. The parent then checks the store as the
// crash left it (one linked chain, its state hashing to the head's state
// root: nothing half-written, no mix of branches), restarts following in
// process and checks that the store ends as the upstream's chain with the
// right state at every height.

const crashChildEnv = "TIPNODE_FOLLOW_CRASH_CHILD" // set for the child only

// crashStore wraps the store and kills the process at one write.
type crashStore struct {
	*store.DB
	op    string // "block" (catch-up write of block at) or "reorg"
	at    uint64
	phase string // "before", "after" or "during"
}

func (s *crashStore) WriteBlock(w *store.BlockWrite) error {
	if s.op == "block" && w.Block.NumberU64() == s.at {
		return s.crash(func() error { return s.DB.WriteBlock(w) })
	}
	return s.DB.WriteBlock(w)
}

func (s *crashStore) Reorg(ancestor uint64, blocks []*store.BlockWrite) error {
	if s.op == "reorg" {
		return s.crash(func() error { return s.DB.Reorg(ancestor, blocks) })
	}
	return s.DB.Reorg(ancestor, blocks)
}

func (s *crashStore) crash(write func() error) error {
	kill := func() {
		fmt.Println("crash")
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	switch s.phase {
	case "before":
		kill()
	case "after":
		write()
		kill()
	default: // during: SIGKILL lands before, inside or after the commit
		go func() {
			time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
			kill()
		}()
		write()
		select {}
	}
	return nil
}

// TestFollowCrashChild is the child process (skipped otherwise): it
// follows FOLLOW_URL into the store at FOLLOW_DIR and prints "head N" at
// every new head.
func TestFollowCrashChild(t *testing.T) {
	if os.Getenv(crashChildEnv) == "" {
		t.Skip("the child of TestFollowCrash")
	}
	env := func(k string) string { return os.Getenv("FOLLOW_" + k) }
	spec, err := os.ReadFile(env("SPEC"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := chain.ParseGenesis(spec)
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(store.DefaultConfig(env("DIR")), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := chain.InitGenesis(db, g); err != nil {
		t.Fatal(err)
	}
	at, _ := strconv.ParseUint(env("AT"), 10, 64)
	cs := &crashStore{DB: db, op: env("OP"), at: at, phase: env("PHASE")}
	w, err := chain.NewWriter(cs, chain.NewExecutor(g.Config), chain.DefaultWriterConfig(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	w.Start()
	w.SubscribeHeads(func(ev *chain.HeadEvent) { fmt.Printf("head %d\n", ev.Head.Number()) })
	cfg := testConfig(env("URL"))
	f, err := New(cfg, w, g, nil, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("head %d\n", w.Head().Number())
	<-f.Done() // only the kill ends it
	t.Fatalf("following stopped: %v", f.Err())
}

// child is a running child process.
type child struct {
	cmd   *exec.Cmd
	heads chan uint64 // every head it announced
	out   strings.Builder
	exit  chan error
}

func startChild(t *testing.T, dir, specPath, url, op string, at uint64, phase string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFollowCrashChild$", "-test.v")
	cmd.Env = append(os.Environ(), crashChildEnv+"=1", "FOLLOW_DIR="+dir, "FOLLOW_SPEC="+specPath, "FOLLOW_URL="+url,
		"FOLLOW_OP="+op, "FOLLOW_AT="+strconv.FormatUint(at, 10), "FOLLOW_PHASE="+phase)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, heads: make(chan uint64, 1024), exit: make(chan error, 1)}
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			line := s.Text()
			c.out.WriteString(line + "\n")
			if n, err := strconv.ParseUint(strings.TrimPrefix(line, "head "), 10, 64); err == nil && strings.HasPrefix(line, "head ") {
				c.heads <- n
			}
		}
		close(c.heads)
		c.exit <- cmd.Wait()
	}()
	t.Cleanup(func() { cmd.Process.Kill() })
	return c
}

// waitHead waits until the child announced head n.
func (c *child) waitHead(t *testing.T, n uint64) {
	t.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case h, ok := <-c.heads:
			if !ok {
				t.Fatalf("the child exited before head %d:\n%s", n, c.out.String())
			}
			if h >= n {
				return
			}
		case <-timeout:
			t.Fatalf("the child did not reach head %d", n)
		}
	}
}

// waitKilled waits until the child died of SIGKILL.
func (c *child) waitKilled(t *testing.T) {
	t.Helper()
	for range c.heads {
	}
	var err error
	select {
	case err = <-c.exit:
	case <-time.After(2 * time.Minute):
		t.Fatal("the child was not killed")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the child ended with %v, not SIGKILL:\n%s", err, c.out.String())
	}
}

// TestFollowCrash: kill -9 during catch-up (at the write of block 12)
// and during a reorg of depth 6, before, right after and while the write
// commits; each time the store is at a block (or reorg) boundary and
// following resumes to the upstream's chain.
func TestFollowCrash(t *testing.T) {
	u := startUpstream(t, followtest.Options{})
	for i := range 16 { // below 32 blocks: the upstream's finalized block stays the genesis
		u.block(i%5+1, 'a')
	}
	specPath := filepath.Join(t.TempDir(), "genesis.json")
	if err := os.WriteFile(specPath, u.Spec, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, phase := range []string{"before", "after", "during"} {
		t.Run("catch-up "+phase, func(t *testing.T) {
			dir := t.TempDir()
			c := startChild(t, dir, specPath, u.WS, "block", 12, phase)
			c.waitKilled(t)
			latest := checkCrashedStore(t, dir, u, nil)
			if want := map[string]uint64{"before": 11, "after": 12}[phase]; want != 0 && latest != want || latest < 11 || latest > 12 {
				t.Fatalf("latest after a kill %s writing block 12: %d", phase, latest)
			}
			resume(t, dir, u)
		})
		t.Run("reorg "+phase, func(t *testing.T) {
			dir := t.TempDir()
			c := startChild(t, dir, specPath, u.WS, "reorg", 0, phase)
			top := u.head().Number.Uint64()
			c.waitHead(t, top)
			old := make(map[uint64]common.Hash)
			for n := top - 5; n <= top; n++ {
				old[n] = u.hashAt(n)
			}
			u.fork(top - 6)
			for range 8 {
				u.block(2, byte('r'+len(phase)))
			}
			c.waitKilled(t)
			latest := checkCrashedStore(t, dir, u, old)
			t.Logf("store after the kill: head %d", latest)
			resume(t, dir, u)
		})
	}
}

// checkCrashedStore opens the store a child left: its canonical chain links
// from genesis to latest; every block is the upstream's, or (oldBranch) a
// block of the branch the reorg replaced — never both above the ancestor;
// the flat state at latest hashes to its state root. It returns latest.
func checkCrashedStore(t *testing.T, dir string, u *upstreamChain, oldBranch map[uint64]common.Hash) uint64 {
	t.Helper()
	db, err := store.Open(store.DefaultConfig(dir), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	view, err := db.View()
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	latest, err := view.Tag(store.TagLatest)
	if err != nil {
		t.Fatal(err)
	}
	headers := chain.ViewHeaders{View: view}
	var parent common.Hash
	olds, news := 0, 0
	for n := uint64(0); n <= latest; n++ {
		h, err := headers.HeaderByNumber(n)
		if err != nil {
			t.Fatalf("block %d: %v", n, err)
		}
		if n > 0 && h.ParentHash != parent {
			t.Fatalf("block %d does not link to block %d", n, n-1)
		}
		parent = h.Hash()
		switch {
		case oldBranch[n] == h.Hash():
			olds++
		case u.hashAt(n) == h.Hash():
			if _, ok := oldBranch[n]; ok {
				news++
			}
		default:
			t.Fatalf("block %d %s is neither the upstream's nor the old branch's", n, h.Hash().Hex())
		}
	}
	if olds > 0 && news > 0 {
		t.Fatalf("mixed chain: %d blocks of the old branch, %d of the new", olds, news)
	}
	checkStateRoot(t, view, latest)
	return latest
}

// checkStateRoot: the flat state at n hashes to block n's state root.
func checkStateRoot(t *testing.T, view store.View, n uint64) {
	t.Helper()
	h, err := chain.ViewHeaders{View: view}.HeaderByNumber(n)
	if err != nil {
		t.Fatal(err)
	}
	st, err := view.StateAt(n)
	if err != nil {
		t.Fatal(err)
	}
	root, err := chain.StateRoot(st)
	if err != nil {
		t.Fatal(err)
	}
	if root != h.Root {
		t.Fatalf("flat state at %d hashes to %s, the header says %s", n, root.Hex(), h.Root.Hex())
	}
}

// resume follows the upstream again from the store in dir and checks the
// result at every height (block hashes and state roots).
func resume(t *testing.T, dir string, u *upstreamChain) {
	t.Helper()
	g, err := chain.ParseGenesis(u.Spec)
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(store.DefaultConfig(dir), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	w, err := chain.NewWriter(db, chain.NewExecutor(g.Config), chain.DefaultWriterConfig(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	w.Start()
	t.Cleanup(w.Stop)
	f := startFollower(t, db, g, w, testConfig(u.WS))
	f.waitHead(u.head().Hash(), 0)
	f.checkSameChain(u)
	view, err := db.View()
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	for n := uint64(0); n <= w.Head().Number(); n++ {
		checkStateRoot(t, view, n)
	}
}
