package store

import (
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/rs/zerolog"
)

// TestViewIterPool reads slots at the latest and at past heights from one
// view with the caches off (every read takes a pooled iterator or makes
// one; see testViewIterPool), from more goroutines than the pool has slots, and checks every
// answer; then that the view's Close closed what the pool kept (the DB's
// Close refuses leaked iterators) and that the closed view answers nothing.
func TestViewIterPool(t *testing.T) {
	for _, noCache := range []bool{true, false} {
		t.Run(map[bool]string{true: "noCache", false: "cache"}[noCache], func(t *testing.T) { testViewIterPool(t, noCache) })
	}
}

// testViewIterPool: with the caches on, past reads walk versions with
// the pooled iterators (readPast's walk) instead of seeking.
func testViewIterPool(t *testing.T, noCache bool) {
	cfg := DefaultConfig(t.TempDir())
	cfg.SyncWrites = false
	cfg.CacheBytes = 32 << 20
	cfg.MemtableBytes = 8 << 20
	if noCache {
		cfg.StateCacheBytes = 0
	}
	db, err := Open(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	c := newTestChain(t, db, nil)
	const blocks, slots = 20, 50
	a := addr(1)
	for n := 1; n <= blocks; n++ {
		d := NewStateDiff()
		d.Storage[a] = map[common.Hash]common.Hash{}
		for i := 0; i < slots; i++ {
			d.Storage[a][slot(i)] = val(n*1000 + i)
		}
		c.add(d)
	}
	if err := db.pdb.Flush(); err != nil {
		t.Fatal(err)
	}
	v, err := db.View()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 3*iterPoolSlots; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				h := uint64(1 + (g+i)%blocks)
				s, err := v.StateAt(h)
				if err != nil {
					t.Error(err)
					return
				}
				k := (g*7 + i) % slots
				got, err := s.Storage(a, slot(k))
				if want := val(int(h)*1000 + k); err != nil || got != want {
					t.Errorf("slot %d at %d: %x, %v; want %x", k, h, got, err, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	pooled := 0
	for i := range v.(*view).iters.slots {
		if v.(*view).iters.slots[i].it.Load() != nil {
			pooled++
		}
	}
	if pooled == 0 {
		t.Fatal("no iterator kept for the next read")
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range v.(*view).iters.slots {
		if v.(*view).iters.slots[i].it.Load() != nil {
			t.Fatalf("slot %d still holds an iterator after Close", i)
		}
	}
	if s, err := v.StateAt(blocks); err == nil {
		if _, err := s.Storage(a, slot(1)); err == nil {
			t.Fatal("a closed view answered a read")
		}
	}
	if err := db.Close(); err != nil {
		t.Fatalf("DB close (leaked iterators?): %v", err)
	}
}
