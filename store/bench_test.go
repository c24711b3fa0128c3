package store

import (
	"math/rand/v2"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/rs/zerolog"
)

// flush moves the memtable into sstables so reads exercise the LSM (bloom
// filters, block cache) rather than the memtable.
func flush(b *testing.B, db *DB) {
	b.Helper()
	if err := db.pdb.Flush(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkStorageReadLatest: point slot read at latest with 10,000 slots
// written over 100 blocks (100 slots per block over 10 contracts).
func BenchmarkStorageReadLatest(b *testing.B) {
	db := openTest(b)
	c := newTestChain(b, db, nil)
	const blocks, perBlock = 100, 100
	for n := 0; n < blocks; n++ {
		d := NewStateDiff()
		for i := 0; i < perBlock; i++ {
			k := n*perBlock + i
			a := addr(k % 10)
			if d.Storage[a] == nil {
				d.Storage[a] = map[common.Hash]common.Hash{}
			}
			d.Storage[a][slot(k)] = val(k + 1)
		}
		c.add(d)
	}
	flush(b, db)
	withView(b, db, func(v View) {
		s := stateAt(b, v, blocks)
		i := 0
		for b.Loop() {
			k := (i * 7919) % (blocks * perBlock)
			got, err := s.Storage(addr(k%10), slot(k))
			if err != nil || got != val(k+1) {
				b.Fatalf("slot %d = %x, %v", k, got, err)
			}
			i++
		}
	})
}

// BenchmarkStorageReadHistorical: a slot with 10,000 versions (one per
// block), read at a height deep in history.
func BenchmarkStorageReadHistorical(b *testing.B) {
	db := openTest(b)
	c := newTestChain(b, db, nil)
	const versions = 10_000
	a, k := addr(1), slot(1)
	for n := 1; n <= versions; n++ {
		d := NewStateDiff()
		d.Storage[a] = map[common.Hash]common.Hash{k: val(n)}
		c.write(c.makeBlockOnly(), nil, d)
	}
	flush(b, db)
	withView(b, db, func(v View) {
		s := stateAt(b, v, 1234)
		for b.Loop() {
			got, err := s.Storage(a, k)
			if err != nil || got != val(1234) {
				b.Fatalf("historical read = %x, %v", got, err)
			}
		}
	})
}

// BenchmarkWriteBlock: one block with 200 account and 500 slot changes per
// iteration, with and without a WAL fsync per block.
func BenchmarkWriteBlock(b *testing.B) {
	for _, sync := range []bool{false, true} {
		name := "nosync"
		if sync {
			name = "sync"
		}
		b.Run(name, func(b *testing.B) {
			cfg := DefaultConfig(b.TempDir())
			cfg.SyncWrites = sync
			cfg.CacheBytes, cfg.MemtableBytes = 128<<20, 32<<20
			db, err := Open(cfg, zerolog.Nop())
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			c := newTestChain(b, db, nil)
			n := 0
			for b.Loop() {
				b.StopTimer()
				d := NewStateDiff()
				for i := 0; i < 200; i++ {
					d.Accounts[addr(n*200+i)] = acct(uint64(n), uint64(i))
				}
				for i := 0; i < 500; i++ {
					a := addr(i % 50)
					if d.Storage[a] == nil {
						d.Storage[a] = map[common.Hash]common.Hash{}
					}
					d.Storage[a][slot(n*500+i)] = val(i + 1)
				}
				blk, rcpts := c.makeBlock(0, 0)
				b.StartTimer()
				c.write(blk, rcpts, d)
				n++
			}
		})
	}
}

// BenchmarkReadAtHeight: what a request at a block number costs the store
// after the block selector: the canonical hash and header of the block
// (below the Head's in-memory window they come from the store) and one
// slot read at it, on a reopened store (sstables, empty caches) of 300
// blocks over 1000 slots of one contract, 20 of them changed per block.
// Requests cycle through 2000 random (slot, height) pairs: at random past
// heights, or at the latest block.
func BenchmarkReadAtHeight(b *testing.B) {
	const blocks, slots, perBlock, pairs = 300, 1000, 20, 2000
	dir := b.TempDir()
	cfg := DefaultConfig(dir)
	cfg.SyncWrites = false
	db, err := Open(cfg, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	c := newTestChain(b, db, nil)
	a := addr(1)
	r := rand.New(rand.NewPCG(1, 2))
	for n := 1; n <= blocks; n++ {
		d := NewStateDiff()
		d.Storage[a] = map[common.Hash]common.Hash{}
		for i := 0; i < perBlock; i++ {
			d.Storage[a][slot(r.IntN(slots))] = val(n*1000 + i)
		}
		c.write(c.makeBlockOnly(), nil, d)
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	for _, past := range []bool{true, false} {
		name := "latest"
		if past {
			name = "past"
		}
		b.Run(name, func(b *testing.B) {
			db, err := Open(cfg, zerolog.Nop())
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			type pair struct {
				slot   common.Hash
				height uint64
			}
			ps := make([]pair, pairs)
			r := rand.New(rand.NewPCG(3, 4))
			for i := range ps {
				ps[i] = pair{slot(r.IntN(slots)), blocks}
				if past {
					ps[i].height = r.Uint64N(blocks + 1)
				}
			}
			withView(b, db, func(v View) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					p := ps[i%pairs]
					i++
					hash, err := v.CanonicalHash(p.height)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := v.Header(p.height, hash); err != nil {
						b.Fatal(err)
					}
					s, err := v.StateAt(p.height)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := s.Storage(a, p.slot); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkStorageReadMiss: a point slot read at latest that the state
// cache cannot answer (cache off), so every read seeks Pebble: 100,000
// slots of 10 contracts in sstables, read in a scattered order, from one
// view by one goroutine and by all (-cpu) in parallel.
func BenchmarkStorageReadMiss(b *testing.B) {
	cfg := DefaultConfig(b.TempDir())
	cfg.SyncWrites = false
	cfg.StateCacheBytes = 0
	db, err := Open(cfg, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	c := newTestChain(b, db, nil)
	const blocks, perBlock = 100, 1000
	for n := 0; n < blocks; n++ {
		d := NewStateDiff()
		for i := 0; i < perBlock; i++ {
			k := n*perBlock + i
			a := addr(k % 10)
			if d.Storage[a] == nil {
				d.Storage[a] = map[common.Hash]common.Hash{}
			}
			d.Storage[a][slot(k)] = val(k + 1)
		}
		c.add(d)
	}
	flush(b, db)
	read := func(b *testing.B, s StateReader, i int) {
		k := (i * 7919) % (blocks * perBlock)
		got, err := s.Storage(addr(k%10), slot(k))
		if err != nil || got != val(k+1) {
			b.Fatalf("slot %d = %x, %v", k, got, err)
		}
	}
	b.Run("serial", func(b *testing.B) {
		withView(b, db, func(v View) {
			s := stateAt(b, v, blocks)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				read(b, s, i)
				i++
			}
		})
	})
	b.Run("parallel", func(b *testing.B) {
		withView(b, db, func(v View) {
			s := stateAt(b, v, blocks)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := rand.IntN(blocks * perBlock)
				for pb.Next() {
					read(b, s, i)
					i++
				}
			})
		})
	})
}
