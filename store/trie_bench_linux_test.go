package store

import (
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/holiman/uint256"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/store/chaintypes"
)

// trieBenchState imports a state of `accounts` funded accounts and one
// contract holding `slots` slots at block 0 (a state import: sorted,
// ingested, its trie built in one pass) and returns the store.
//
// With TIPNODE_BENCH_TRIE_DIR set, the built state is kept in that
// directory (one subdirectory per size) and later runs start from a copy
// of it (sstables hard-linked, the rest copied) instead of building it
// again: the 10M-slot state takes minutes of CPU to build.
func trieBenchState(b *testing.B, accounts, slots int) (*DB, common.Address) {
	b.Helper()
	dir := b.TempDir()
	contract := common.Address{0xc0, 0x17}
	cfg := DefaultConfig(filepath.Join(dir, "db"))
	cfg.SyncWrites = false
	open := func() *DB {
		db, err := Open(cfg, zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		return db
	}
	keep := os.Getenv("TIPNODE_BENCH_TRIE_DIR")
	if keep != "" {
		keep = filepath.Join(keep, fmt.Sprintf("accounts=%d,slots=%d", accounts, slots))
		if _, err := os.Stat(filepath.Join(keep, "complete")); err == nil {
			must(b, cloneStoreDir(filepath.Join(keep, "db"), cfg.Dir))
			return open(), contract
		}
	}
	db := open()
	buildTrieBenchState(b, db, dir, contract, accounts, slots)
	if keep == "" {
		return db, contract
	}
	// Keep a copy of the store as built (closed), then reopen it.
	must(b, db.Close())
	must(b, os.RemoveAll(keep))
	must(b, cloneStoreDir(cfg.Dir, filepath.Join(keep, "db")))
	must(b, os.WriteFile(filepath.Join(keep, "complete"), nil, 0o644))
	return open(), contract
}

func buildTrieBenchState(b *testing.B, db *DB, dir string, contract common.Address, accounts, slots int) {
	si, err := db.NewStateImport(filepath.Join(dir, "tmp"), 0, 256<<20)
	if err != nil {
		b.Fatal(err)
	}
	defer si.Close()
	code := []byte{0x60, 0x00}
	must(b, si.Code(crypto.Keccak256Hash(code), code))
	must(b, si.Account(contract, &Account{Nonce: 1, Balance: new(uint256.Int), CodeHash: crypto.Keccak256Hash(code)}))
	for i := range slots {
		must(b, si.Storage(contract, benchSlot(i), common.BigToHash(big.NewInt(int64(i+1)))))
	}
	for i := range accounts {
		must(b, si.Account(benchAddr(i), &Account{Nonce: uint64(i % 7), Balance: uint256.NewInt(uint64(i) + 1), CodeHash: types.EmptyCodeHash}))
	}
	g := &types.Header{Number: big.NewInt(0), Difficulty: big.NewInt(0), GasLimit: 30_000_000}
	if _, err := si.Commit(context.Background(), &AnchorWrite{Genesis: g, Headers: []*types.Header{g}, Body: &chaintypes.Body{}, Spec: []byte(`{"config":{}}`), Config: []byte(`{}`)}); err != nil {
		b.Fatal(err)
	}
	flush(b, db)
}

// threadCPU is the CPU time of the calling OS thread.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU is the CPU time of the whole process (every thread: a
// prefetcher's, but also Pebble's background work and the GC's).
func procCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rusageThread is RUSAGE_THREAD (Linux).
const rusageThread = 1

func benchSlot(i int) common.Hash    { return crypto.Keccak256Hash(big.NewInt(int64(i)).Bytes()) }
func benchAddr(i int) common.Address { return common.BigToAddress(big.NewInt(int64(0x10000 + i))) }

// benchBlocks seals blocks of `keys` changed keys each on db (a tenth of
// them account changes, the rest slot writes of the contract, a tenth of
// those new slots): each iteration computes the block's root (timed and
// reported as p50/p99) and writes the block with its trie (write time
// reported apart).
func benchBlocks(b *testing.B, db *DB, contract common.Address, accounts, slots, keys int) {
	r := rand.New(rand.NewPCG(1, 2))
	var roots, cpus, procs, writes []time.Duration
	var nodes, nodeBytes, seeks int
	// The root's CPU time is its thread's (the trie update runs on the
	// calling goroutine): Pebble's background work and other processes on
	// the machine are not counted.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	latest, _ := db.Latest()
	parent := canonicalHash(b, db, latest)
	next := slots
	for b.Loop() {
		d := NewStateDiff()
		d.Storage[contract] = map[common.Hash]common.Hash{}
		for range keys / 10 {
			i := r.IntN(accounts)
			d.Accounts[benchAddr(i)] = &Account{Nonce: uint64(r.IntN(100)), Balance: uint256.NewInt(r.Uint64()), CodeHash: types.EmptyCodeHash}
		}
		for k := 0; k < keys-keys/10; k++ {
			s := r.IntN(slots)
			if k%10 == 0 {
				s = next
				next++
			}
			d.Storage[contract][benchSlot(s)] = common.BigToHash(new(big.Int).SetUint64(r.Uint64()))
		}
		latest++
		start, cpu0, proc0 := time.Now(), threadCPU(), procCPU()
		v, err := db.View()
		if err != nil {
			b.Fatal(err)
		}
		tr, err := v.StateTrie(latest - 1)
		if err != nil {
			b.Fatal(err)
		}
		upd, err := tr.Update(d)
		if err != nil {
			b.Fatal(err)
		}
		roots = append(roots, time.Since(start))
		cpus = append(cpus, threadCPU()-cpu0)
		procs = append(procs, procCPU()-proc0)
		nodes += upd.Nodes()
		seeks += upd.seeks
		for _, nd := range upd.nodes {
			nodeBytes += len(nd.blob) + trieKeyLen
		}
		v.Close()
		w := diffBlockWrite(latest, parent, d)
		w.Trie = upd
		start = time.Now()
		if err := db.WriteBlock(w); err != nil {
			b.Fatal(err)
		}
		writes = append(writes, time.Since(start))
		parent = w.Block.Hash()
	}
	pct := func(ds []time.Duration, p float64) float64 {
		s := slices.Clone(ds)
		slices.Sort(s)
		return float64(s[int(float64(len(s)-1)*p)].Microseconds()) / 1000
	}
	b.ReportMetric(pct(cpus, 0.5), "root-cpu-ms-p50")
	b.ReportMetric(pct(cpus, 0.99), "root-cpu-ms-p99")
	b.ReportMetric(pct(procs, 0.5), "root-proccpu-ms-p50")
	b.ReportMetric(pct(roots, 0.5), "root-ms-p50")
	b.ReportMetric(pct(roots, 0.99), "root-ms-p99")
	b.ReportMetric(pct(writes, 0.5), "write-ms-p50")
	b.ReportMetric(float64(nodes)/float64(len(roots)), "nodes/block")
	b.ReportMetric(float64(seeks)/float64(len(roots)), "own-store-reads/block")
	b.ReportMetric(float64(nodeBytes)/float64(len(roots))/1024, "trie-KiB/block")
}

// BenchmarkTrieRoot: the state root of a sealed block on a large state,
// computed incrementally from the block's diff (the targets: 200
// keys on a 1M-slot state, 1,000 keys on a 10M-slot one). The 10M-slot
// state (1M accounts) takes minutes and gigabytes to build: it runs only
// with TIPNODE_BENCH_TRIE_10M=1, e.g.
//
//	TIPNODE_BENCH_TRIE_10M=1 go test -run '^$' -bench 'TrieRoot/slots=10000000' -benchtime 200x ./store/
func BenchmarkTrieRoot(b *testing.B) {
	cases := []struct{ accounts, slots, keys int }{
		{100_000, 1_000_000, 200},
		{100_000, 1_000_000, 1_000},
	}
	if os.Getenv("TIPNODE_BENCH_TRIE_10M") != "" {
		cases = append(cases, struct{ accounts, slots, keys int }{1_000_000, 10_000_000, 1_000})
	}
	for _, c := range cases {
		b.Run(fmt.Sprintf("slots=%d/keys=%d", c.slots, c.keys), func(b *testing.B) {
			db, contract := trieBenchState(b, c.accounts, c.slots)
			benchBlocks(b, db, contract, c.accounts, c.slots, c.keys)
		})
	}
}

// BenchmarkTrieCut: the state root of one pre-confirmation (the issue's
// target: 500 changed keys every 200 ms on a 1M-slot state, <= 15 ms):
// each iteration is one cut's update, its own diff applied on the trie of
// the cuts before it (StateTrie.On(layers...).Update), then pushed onto
// the layers as the pending builder's live trie does (squashed into the
// one below while that one is at most twice its size). Every 10 cuts (a
// 2 s block of 200 ms pre-confirmations) the block is sealed: its layers
// squashed (timed apart: seal-squash-ms; side by side, the update of the
// block's whole diff the seal computed before: seal-wholediff-ms) and
// written with the block.
func BenchmarkTrieCut(b *testing.B) {
	const accounts, slots, keys, perBlock = 100_000, 1_000_000, 500, 10
	db, contract := trieBenchState(b, accounts, slots)
	r := rand.New(rand.NewPCG(3, 4))
	var walls, cpus, procs, squashes, scratches []time.Duration
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	latest, _ := db.Latest()
	parent := canonicalHash(b, db, latest)
	next := slots
	var (
		layers []*TrieUpdate
		cuts   []*StateDiff
		v      View
		base   *StateTrie
	)
	open := func() {
		var err error
		if v, err = db.View(); err != nil {
			b.Fatal(err)
		}
		if base, err = v.StateTrie(latest); err != nil {
			b.Fatal(err)
		}
		layers, cuts = nil, nil
	}
	open()
	for b.Loop() {
		d := NewStateDiff()
		d.Storage[contract] = map[common.Hash]common.Hash{}
		for range keys / 10 {
			i := r.IntN(accounts)
			d.Accounts[benchAddr(i)] = &Account{Nonce: uint64(r.IntN(100)), Balance: uint256.NewInt(r.Uint64()), CodeHash: types.EmptyCodeHash}
		}
		for k := 0; k < keys-keys/10; k++ {
			s := r.IntN(slots)
			if k%10 == 0 {
				s = next
				next++
			}
			d.Storage[contract][benchSlot(s)] = common.BigToHash(new(big.Int).SetUint64(r.Uint64()))
		}
		start, cpu0, proc0 := time.Now(), threadCPU(), procCPU()
		u, err := base.On(layers...).Update(d)
		if err != nil {
			b.Fatal(err)
		}
		layers = append(layers, u)
		for n := len(layers); n >= 2 && layers[n-2].Nodes() <= 2*layers[n-1].Nodes(); n = len(layers) {
			m, err := SquashTrieUpdates(layers[n-2:]...)
			if err != nil {
				b.Fatal(err)
			}
			layers = append(layers[:n-2:n-2], m)
		}
		walls = append(walls, time.Since(start))
		cpus = append(cpus, threadCPU()-cpu0)
		procs = append(procs, procCPU()-proc0)
		cuts = append(cuts, d)
		if len(cuts) < perBlock {
			continue
		}
		start = time.Now()
		upd, err := SquashTrieUpdates(layers...)
		if err != nil {
			b.Fatal(err)
		}
		squashes = append(squashes, time.Since(start))
		// Side by side: the block's update from its whole diff (the seal's
		// work without pending roots).
		start = time.Now()
		whole, err := base.Update(composeDiffs(cuts))
		if err != nil || whole.Root != upd.Root {
			b.Fatalf("whole-diff root %s (%v), squashed %s", whole.Root, err, upd.Root)
		}
		scratches = append(scratches, time.Since(start))
		v.Close()
		latest++
		w := diffBlockWrite(latest, parent, composeDiffs(cuts))
		w.Trie = upd
		if err := db.WriteBlock(w); err != nil {
			b.Fatal(err)
		}
		parent = w.Block.Hash()
		open()
	}
	v.Close()
	pct := func(ds []time.Duration, p float64) float64 {
		if len(ds) == 0 {
			return 0
		}
		s := slices.Clone(ds)
		slices.Sort(s)
		return float64(s[int(float64(len(s)-1)*p)].Microseconds()) / 1000
	}
	b.ReportMetric(pct(cpus, 0.5), "cut-cpu-ms-p50")
	b.ReportMetric(pct(cpus, 0.99), "cut-cpu-ms-p99")
	b.ReportMetric(pct(procs, 0.5), "cut-proccpu-ms-p50")
	b.ReportMetric(pct(walls, 0.5), "cut-ms-p50")
	b.ReportMetric(pct(walls, 0.99), "cut-ms-p99")
	b.ReportMetric(pct(squashes, 0.5), "seal-squash-ms-p50")
	b.ReportMetric(pct(scratches, 0.5), "seal-wholediff-ms-p50")
}

// BenchmarkTrieNodeCacheHit: one hit of the clean node cache for a node of
// the upper levels (4,369 branch-sized blobs, the top four levels of a
// large trie), in the fastcache and in the hot maps in front of it.
func BenchmarkTrieNodeCacheHit(b *testing.B) {
	c := newNodeCache(DefaultTrieCacheBytes)
	const n = 1 + 16 + 256 + 4096
	hashes := make([]common.Hash, n)
	for i := range hashes {
		blob := make([]byte, 532)
		blob[0], blob[1] = byte(i), byte(i>>8)
		hashes[i] = crypto.Keccak256Hash(blob)
		c.set(hashes[i], blob)
		c.hot.put(hashes[i], blob)
	}
	b.Run("fastcache", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if c.get(hashes[i%n]) == nil {
				b.Fatal("miss")
			}
			i++
		}
	})
	b.Run("hot", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if c.hot.get(hashes[i%n]) == nil {
				b.Fatal("miss")
			}
			i++
		}
	})
}

// cloneStoreDir copies the closed store in src to dst: Pebble never
// modifies an sstable, so they are hard-linked; every other file (the
// manifest, the WAL, options) is copied.
func cloneStoreDir(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if filepath.Ext(path) == ".sst" {
			return os.Link(path, target)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}
