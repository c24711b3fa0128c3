package store

import (
	"bytes"
	"errors"
	"math/big"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/store/chaintypes"
)

// trieCrashSteps is how many operations TestTrieCrashConsistent runs, each
// followed by a simulated crash: 5 x TIPNODE_CRASH_ITERATIONS (make crash
// sets 60), else 30 for make test.
func trieCrashSteps(t *testing.T) int {
	if s := os.Getenv("TIPNODE_CRASH_ITERATIONS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("TIPNODE_CRASH_ITERATIONS=%q: want a positive number", s)
		}
		return 5 * n
	}
	return 30
}

// lockedBuffer is a log sink the store writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestTrieCrashConsistent: a store with a small trie window (W = 5, so
// every block write prunes) goes through block writes, unwinds and reorgs
// within the window, and unwinds and reorgs deeper than it (the trie is
// dropped and rebuilt from the flat state, with progress in the log).
// After every operation a crash is simulated (a clone of the in-memory
// filesystem keeping a random part of the unsynced data) and the clone is
// reopened as `tipnode run` would (a store that keeps a trie but holds
// none builds it) and checked as `tipnode verify` does, against an oracle:
// the latest block is one the test wrote, and the state root recomputed
// from the flat state, the trie walked node by node, and go-ethereum's
// from-scratch root of the model state of that block all agree (with the
// same account and slot counts), at every height the trie's window holds.
// The clone then writes one more block whose root is the oracle's.
func TestTrieCrashConsistent(t *testing.T) {
	const W = 5
	fs := vfs.NewCrashableMem()
	cfgFor := func(fs vfs.FS) Config {
		cfg := testConfig(t)
		cfg.Dir, cfg.FS = "/db", fs
		cfg.TrieWindow = W
		return cfg
	}
	logs := new(lockedBuffer)
	db, err := Open(cfgFor(fs), zerolog.New(logs))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	writeGenesis(t, db, NewStateDiff())

	r := &rng{s: 2026}
	models := map[common.Hash]*trieModel{canonicalHash(t, db, 0): newTrieModel()}
	var (
		canon []common.Hash // canonical hashes by number, as the test wrote them
		salt  uint64        // makes every written header distinct
	)
	canon = append(canon, canonicalHash(t, db, 0))
	newBlock := func(n uint64, parent common.Hash, m *trieModel) (*BlockWrite, *trieModel) {
		d := randomTrieDiff(r, m)
		next := m.clone()
		next.apply(d)
		salt++
		h := &types.Header{ParentHash: parent, Number: new(big.Int).SetUint64(n), Difficulty: big.NewInt(1),
			GasLimit: 30_000_000, Time: n, Extra: big.NewInt(int64(salt)).Bytes()}
		w := &BlockWrite{Block: chaintypes.NewBlockWithHeader(h), Diff: d}
		models[w.Block.Hash()] = next
		return w, next
	}
	latest := func() uint64 { return uint64(len(canon) - 1) }
	prng := rand.New(rand.NewPCG(3, 5))
	// The crash clones draw from their own source: how many numbers a
	// clone draws depends on Pebble's background file state, and sharing
	// prng made the operations below (and so whether a deep reorg ran)
	// differ from run to run.
	crng := rand.New(rand.NewPCG(7, 11))
	counts := map[string]int{}
	rebuiltAfterCrash, empty := 0, 0

	// check reopens a crash clone, verifies it and writes a block on it.
	check := func(op string) {
		t.Helper()
		clone := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: crng.IntN(101), RNG: crng})
		c, err := Open(cfgFor(clone), zerolog.Nop())
		if err != nil {
			t.Fatalf("after %s: reopen: %v", op, err)
		}
		defer c.Close()
		v, err := c.View()
		if err != nil {
			t.Fatal(err)
		}
		L, err := v.Tag(TagLatest)
		if errors.Is(err, ErrNotFound) {
			// Nothing was synced yet, not even the genesis.
			if _, err := v.CanonicalHash(0); err == nil {
				t.Fatalf("after %s: no latest tag but block 0 present", op)
			}
			v.Close()
			empty++
			return
		}
		if err != nil {
			t.Fatalf("after %s: latest: %v", op, err)
		}
		hash, err := v.CanonicalHash(L)
		v.Close()
		if err != nil {
			t.Fatal(err)
		}
		if models[hash] == nil {
			t.Fatalf("after %s: latest block %d %s is none the test wrote", op, L, hash)
		}
		if _, ok := c.TrieBase(); !ok {
			// The crash came between an unwind deeper than the window
			// and the trie's rebuild: the node builds it at startup.
			rebuiltAfterCrash++
			if _, err := c.BuildTrie(nil); err != nil {
				t.Fatalf("after %s: rebuild at startup: %v", op, err)
			}
		}
		base, _ := c.TrieBase()
		if base > L {
			// (The base may lag the window by a few blocks: a reorg's
			// later blocks leave the pruning to the next block write.)
			t.Fatalf("after %s: trie base %d above latest %d", op, base, L)
		}
		v, err = c.View()
		if err != nil {
			t.Fatal(err)
		}
		for h := base; h <= L; h++ {
			hh, err := v.CanonicalHash(h)
			if err != nil {
				t.Fatal(err)
			}
			m := models[hh]
			if m == nil {
				t.Fatalf("after %s: canonical block %d %s is none the test wrote", op, h, hh)
			}
			want := oracleRoot(t, m.accounts, m.slots)
			tr, err := v.StateTrie(h)
			if err != nil {
				t.Fatalf("after %s: state trie at %d (base %d, latest %d): %v", op, h, base, L, err)
			}
			if h < L {
				// Below the latest: the root read through the versioned
				// nodes (the latest gets the whole verify).
				if got, err := tr.Root(); err != nil || got != want {
					t.Fatalf("after %s: trie root at %d: %s (%v), oracle %s", op, h, got, err, want)
				}
				continue
			}
			ck, err := tr.Check(nil)
			if err != nil || ck.Root != want {
				t.Fatalf("after %s: trie at %d: root %s (%v), oracle %s", op, h, ck.Root, err, want)
			}
			flat, err := c.StateRootFromFlat(h, nil)
			if err != nil || flat.Root != want {
				t.Fatalf("after %s: flat root at %d: %s (%v), oracle %s", op, h, flat.Root, err, want)
			}
			if ck.Accounts != flat.Accounts || ck.Slots != flat.Slots {
				t.Fatalf("after %s: at %d the trie holds %d accounts and %d slots, the flat state %d and %d",
					op, h, ck.Accounts, ck.Slots, flat.Accounts, flat.Slots)
			}
		}
		v.Close()
		// The reopened store carries on.
		w, m := newBlock(L+1, hash, models[hash])
		if err := c.WriteBlock(w); err != nil {
			t.Fatalf("after %s: a block on the reopened store: %v", op, err)
		}
		want := oracleRoot(t, m.accounts, m.slots)
		v, err = c.View()
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		tr, err := v.StateTrie(L + 1)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := tr.Root(); err != nil || got != want {
			t.Fatalf("after %s: the next block's root %s (%v), oracle %s", op, got, err, want)
		}
	}

	for step := 0; step < trieCrashSteps(t); step++ {
		L := latest()
		base, _ := db.TrieBase()
		var op string
		k := prng.IntN(17)
		switch step % 10 {
		case 2:
			k = 12 // an unwind
		case 5:
			k = 17 // a deep unwind
		case 8:
			k = 18 // a deep reorg
		}
		switch {
		case k < 12 || L < 3:
			op = "block"
			w, _ := newBlock(L+1, canon[L], models[canon[L]])
			must(t, db.WriteBlock(w))
			canon = append(canon, w.Block.Hash())
		case k < 14:
			op = "unwind"
			to := max(base, L-1-uint64(prng.IntN(3)))
			must(t, db.UnwindTo(to))
			canon = canon[:to+1]
		case k < 17:
			op = "reorg"
			anc := max(base, L-uint64(prng.IntN(4)))
			var writes []*BlockWrite
			parent := canon[anc]
			canon = canon[:anc+1]
			for n := anc + 1; n <= anc+1+uint64(prng.IntN(4)); n++ {
				w, _ := newBlock(n, parent, models[parent])
				writes = append(writes, w)
				parent = w.Block.Hash()
				canon = append(canon, parent)
			}
			must(t, db.Reorg(anc, writes))
		case k < 18 && base >= 2:
			op = "deep unwind"
			to := base - 1 - uint64(prng.IntN(2))
			must(t, db.UnwindTo(to))
			canon = canon[:to+1]
			if b, ok := db.TrieBase(); !ok || b != to {
				t.Fatalf("after a deep unwind to %d: trie base %d %v", to, b, ok)
			}
		case base >= 2:
			op = "deep reorg"
			anc := base - 1 - uint64(prng.IntN(2))
			var writes []*BlockWrite
			parent := canon[anc]
			canon = canon[:anc+1]
			for n := anc + 1; n <= anc+2; n++ {
				w, _ := newBlock(n, parent, models[parent])
				writes = append(writes, w)
				parent = w.Block.Hash()
				canon = append(canon, parent)
			}
			must(t, db.Reorg(anc, writes))
			if b, ok := db.TrieBase(); !ok || b != anc+2 {
				t.Fatalf("after a deep reorg onto %d: trie base %d %v", anc, b, ok)
			}
		default:
			continue
		}
		counts[op]++
		if step%10 == 9 {
			must(t, db.pdb.Flush()) // a durable base for the crashes that follow
		}
		check(op)
	}
	for _, op := range []string{"block", "unwind", "reorg", "deep unwind", "deep reorg"} {
		if counts[op] == 0 {
			t.Fatalf("no %s was exercised: %v", op, counts)
		}
	}
	// The rebuilds after deep unwinds and reorgs are shown: a warning
	// naming the target, then the build's start and result.
	out := logs.String()
	for _, msg := range []string{"unwinding below the state trie's window", "building the state trie from the flat state", "state trie built"} {
		if n := strings.Count(out, msg); n < counts["deep unwind"]+counts["deep reorg"] {
			t.Fatalf("%q logged %d times for %d deep unwinds and reorgs:\n%s", msg, n, counts["deep unwind"]+counts["deep reorg"], out)
		}
	}
	t.Logf("operations: %v; %d crash clones rebuilt a trie dropped before the crash, %d kept nothing", counts, rebuiltAfterCrash, empty)
}
