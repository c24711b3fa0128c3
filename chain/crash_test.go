package chain_test

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// TestCrashLeavesBlockBoundary imports the conformance chain on an
// in-memory filesystem and, after every few blocks, simulates a crash (a
// clone keeping a random part of the unsynced data). The reopened store must be
// at a block boundary: latest = some imported block L whose header, body,
// receipts and complete state are there (the flat state hashes to L's state
// root, and so does its state trie, walked node by node) and nothing of
// block L+1. With SyncWrites every written block
// survives.
func TestCrashLeavesBlockBoundary(t *testing.T) {
	g := chaintest.Genesis(t)
	blocks := chaintest.Blocks(t)
	for _, sync := range []bool{false, true} {
		name := map[bool]string{false: "no fsync", true: "fsync"}[sync]
		t.Run(name, func(t *testing.T) {
			fs := vfs.NewCrashableMem()
			open := func(fs vfs.FS, sync bool) *store.DB {
				cfg := store.DefaultConfig("/db")
				cfg.FS, cfg.SyncWrites = fs, sync
				cfg.CacheBytes, cfg.MemtableBytes = 16<<20, 1<<20
				db, err := store.Open(cfg, zerolog.Nop())
				if err != nil {
					t.Fatal(err)
				}
				return db
			}
			db := open(fs, sync)
			defer db.Close()
			if err := chain.InitGenesis(db, g); err != nil {
				t.Fatal(err)
			}
			im := chaintest.StartWriter(t, db, g)
			rng := rand.New(rand.NewPCG(1, 2))
			var survived []uint64
			defer func() { t.Logf("latest block after each simulated crash: %v", survived) }()
			for i, b := range blocks {
				if err := im.ImportBlock(b); err != nil {
					t.Fatal(err)
				}
				if i%5 != 0 && i != len(blocks)-1 {
					continue // a crash after every 5th block keeps the test fast
				}
				clone := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rng})
				latest := checkBoundary(t, open(clone, false), blocks)
				survived = append(survived, latest)
				if sync && latest != uint64(i+1) {
					t.Fatalf("with fsync, block %d was lost in the crash (latest %d)", i+1, latest)
				}
			}
		})
	}
}

// checkBoundary verifies a reopened store and returns its latest block.
func checkBoundary(t *testing.T, db *store.DB, blocks []*chaintypes.Block) uint64 {
	t.Helper()
	defer db.Close()
	view, err := db.View()
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	latest, err := view.Tag(store.TagLatest)
	if errors.Is(err, store.ErrNotFound) {
		// Nothing was synced yet, not even the genesis: an empty store.
		if _, err := view.CanonicalHash(0); err == nil {
			t.Fatal("no latest tag but block 0 present")
		}
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	if latest > 0 {
		want := blocks[latest-1]
		hash, err := view.CanonicalHash(latest)
		if err != nil || hash != want.Hash() {
			t.Fatalf("latest %d: canonical hash %s (%v), want %s", latest, hash, err, want.Hash())
		}
		if _, err := view.Body(latest, hash); err != nil {
			t.Fatalf("latest %d: body: %v", latest, err)
		}
		if rs, err := view.Receipts(latest, hash); err != nil || len(rs) != len(want.Transactions()) {
			t.Fatalf("latest %d: %d receipts (%v)", latest, len(rs), err)
		}
		if root := flatRoot(t, view, latest); root != want.Root() {
			t.Fatalf("latest %d: state root %s, header %s: state is not at a block boundary", latest, root, want.Root())
		}
		// The trie is written in the block's batch: whole, at the same
		// boundary (every node read checked against its hash).
		tr, err := view.StateTrie(latest)
		if err != nil {
			t.Fatalf("latest %d: state trie: %v", latest, err)
		}
		check, err := tr.Check(nil)
		if err != nil || check.Root != want.Root() {
			t.Fatalf("latest %d: state trie root %s (%v), header %s", latest, check.Root, err, want.Root())
		}
	}
	if _, err := view.CanonicalHash(latest + 1); err == nil {
		t.Fatalf("block %d is partly present above latest %d", latest+1, latest)
	}
	return latest
}
