package chain

import (
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/holiman/uint256"
)

// TestJournalPoolReuse runs executions one after another (and then in
// parallel) on StateDBs sharing a pool: each must start with an empty
// journal (Snapshot 0) and revert exactly its own changes, whatever the
// journal it was handed held before.
func TestJournalPoolReuse(t *testing.T) {
	p := NewJournalPool()
	run := func(t *testing.T, round int) {
		s := NewStateDB(&codeBackend{})
		s.SetJournalPool(p)
		defer s.Release()
		if id := s.Snapshot(); id != 0 {
			t.Fatalf("round %d: a fresh StateDB's snapshot is %d, want 0", round, id)
		}
		addr := common.Address{byte(round)}
		for i := 0; i < 20+round*7; i++ {
			s.AddBalance(addr, uint256.NewInt(1), tracing.BalanceChangeUnspecified)
			s.SetNonce(addr, uint64(i+1), tracing.NonceChangeUnspecified)
			s.SetState(addr, common.Hash{byte(i)}, common.Hash{byte(i + 1)})
			s.AddSlotToAccessList(addr, common.Hash{byte(i)})
		}
		mid := s.Snapshot()
		s.AddBalance(addr, uint256.NewInt(100), tracing.BalanceChangeUnspecified)
		s.SetState(addr, common.Hash{1}, common.Hash{0xff})
		s.RevertToSnapshot(mid)
		if got := s.GetBalance(addr).Uint64(); got != uint64(20+round*7) {
			t.Fatalf("round %d: balance after revert %d, want %d", round, got, 20+round*7)
		}
		if got := s.GetState(addr, common.Hash{1}); got != (common.Hash{2}) {
			t.Fatalf("round %d: slot 1 after revert %x, want 02", round, got)
		}
		s.RevertToSnapshot(0)
		if got := s.GetBalance(addr).Sign(); got != 0 || s.GetNonce(addr) != 0 || s.GetState(addr, common.Hash{1}) != (common.Hash{}) {
			t.Fatalf("round %d: state not back to empty after reverting everything", round)
		}
		if ok, _ := s.SlotInAccessList(addr, common.Hash{1}); ok {
			t.Fatalf("round %d: access list not reverted", round)
		}
	}
	for round := 0; round < 40; round++ {
		run(t, round)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < 20; round++ {
				run(t, round)
			}
		}()
	}
	wg.Wait()
}

// TestJournalPoolRelease checks what Release gives back: cleared entries
// (nothing of the execution kept alive), no journal past
// maxPooledJournal, and a StateDB without a pool releasing nothing.
func TestJournalPoolRelease(t *testing.T) {
	p := NewJournalPool()
	s := NewStateDB(&codeBackend{})
	s.SetJournalPool(p)
	for i := 0; i < 10; i++ {
		s.AddBalance(common.Address{1}, uint256.NewInt(1), tracing.BalanceChangeUnspecified)
	}
	s.Release()
	if s.journal != nil || s.journals != nil {
		t.Fatal("Release left the journal with the StateDB")
	}
	// sync.Pool may drop what it is given (it does so on purpose under the
	// race detector): the checks hold for whatever comes back.
	for i := 0; i < 4; i++ {
		h, ok := p.p.Get().(*[]journalEntry)
		if !ok {
			continue
		}
		j := *h
		if len(j) != 0 {
			t.Fatalf("pooled journal has length %d, want 0", len(j))
		}
		for k, e := range j[:cap(j)] {
			if e.prevBal != nil || e.prevCode != nil || e.prevRef != nil || e.addr != (common.Address{}) || e.kind != 0 {
				t.Fatalf("pooled journal entry %d not cleared: %+v", k, e)
			}
		}
	}

	big := NewStateDB(&codeBackend{})
	big.SetJournalPool(p)
	for i := 0; i <= maxPooledJournal; i++ {
		big.AddBalance(common.Address{2}, uint256.NewInt(1), tracing.BalanceChangeUnspecified)
	}
	big.Release()
	for i := 0; i < 4; i++ {
		if h, ok := p.p.Get().(*[]journalEntry); ok && cap(*h) > maxPooledJournal {
			t.Fatalf("a journal of capacity %d was pooled (limit %d)", cap(*h), maxPooledJournal)
		}
	}

	plain := NewStateDB(&codeBackend{})
	plain.AddBalance(common.Address{3}, uint256.NewInt(1), tracing.BalanceChangeUnspecified)
	plain.Release() // no pool: nothing to give back, no panic
	if _, ok := p.p.Get().(*[]journalEntry); ok {
		t.Fatal("a StateDB without a pool gave its journal to one")
	}
}
