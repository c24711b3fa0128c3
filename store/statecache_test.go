package store

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ethereum/go-ethereum/common"
)

// TestStateCacheConcurrentWrites races readers against the writer: every
// block N sets slot 0 of one account to N and its balance to N, and
// unwinds go back a few blocks now and then. Readers open views in a loop
// and read both at the view's latest block (filling the cache) and one block
// below: each must read that height's number, never a value of another
// block or branch.
func TestStateCacheConcurrentWrites(t *testing.T) {
	db := openTest(t)
	a := addr(1)
	c := newTestChain(t, db, diffOf(map[common.Address]*Account{a: acct(0, 0)},
		map[common.Address]map[common.Hash]common.Hash{a: {slot(0): {}}}))
	var (
		stop  atomic.Bool
		reads atomic.Int64
		wg    sync.WaitGroup
		errs  = make(chan error, 4)
	)
	check := func(v View, h uint64) error {
		s, err := v.StateAt(h)
		if err != nil {
			return err
		}
		got, err := s.Storage(a, slot(0))
		if err != nil {
			return err
		}
		acc, err := s.Account(a)
		if err != nil {
			return err
		}
		if got != val(int(h)) || acc == nil || acc.Balance.Uint64() != h {
			return fmt.Errorf("at %d: slot %s, account %+v", h, got.Hex(), acc)
		}
		return nil
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				v, err := db.View()
				if err != nil {
					errs <- err
					return
				}
				n, _ := v.Tag(TagLatest)
				for _, h := range []uint64{n, n, max(n, 1) - 1} {
					if err = check(v, h); err != nil {
						break
					}
				}
				v.Close()
				if err != nil {
					errs <- err
					return
				}
				reads.Add(1)
			}
		}()
	}
	for i := 0; i < 300 && len(errs) == 0; i++ {
		if i%50 == 49 { // back 5 blocks, then on again with the same numbers
			to := c.head().NumberU64() - 5
			if err := db.UnwindTo(to); err != nil {
				t.Fatal(err)
			}
			c.blocks = c.blocks[:to+1]
		}
		n := int(c.head().NumberU64()) + 1
		c.add(diffOf(map[common.Address]*Account{a: acct(0, uint64(n))},
			map[common.Address]map[common.Hash]common.Hash{a: {slot(0): val(n)}}))
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if s := db.StateCacheStats(); s.Hits == 0 || reads.Load() == 0 {
		t.Fatalf("the cache was not exercised: %+v, %d reads", s, reads.Load())
	}
	t.Logf("%d reads, %+v", reads.Load(), db.StateCacheStats())
}
