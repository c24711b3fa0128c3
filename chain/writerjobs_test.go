package chain_test

import (
	"math/big"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/store"
)

// procsStore records GOMAXPROCS while the writer runs a journal write (a
// small job) and a journal drop (an ordinary one).
type procsStore struct {
	chain.Store
	journal, clear atomic.Int32
}

func (s *procsStore) AppendPendingEntries(a store.PendingAppend) error {
	s.journal.Store(int32(runtime.GOMAXPROCS(0)))
	return s.Store.AppendPendingEntries(a)
}

func (s *procsStore) ClearPending() error {
	s.clear.Store(int32(runtime.GOMAXPROCS(0)))
	return s.Store.ClearPending()
}

// TestWriterSmallJobs: on one P, a pre-confirmation's journal write takes a
// spare P only while the node says it needs one (SetSpareWhen); the
// writer's other jobs always do.
func TestWriterSmallJobs(t *testing.T) {
	g := chaintest.Genesis(t)
	db := chaintest.OpenStore(t)
	if err := chain.InitGenesis(db, g); err != nil {
		t.Fatal(err)
	}
	ps := &procsStore{Store: db}
	w, err := chain.NewWriter(ps, g.Executor(), chain.DefaultWriterConfig(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	var busy atomic.Bool
	w.SetSpareWhen(busy.Load)
	w.Start()
	defer w.Stop()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	head := w.Head()
	header := &types.Header{ParentHash: head.Hash(), Number: new(big.Int).SetUint64(head.Number() + 1), Difficulty: new(big.Int)}
	for _, c := range []struct {
		busy           bool
		journal, clear int32
	}{{false, 1, 2}, {true, 2, 2}} {
		busy.Store(c.busy)
		if err := w.JournalPendingEntries(store.PendingAppend{Header: header, Fresh: true}); err != nil {
			t.Fatal(err)
		}
		if err := w.DropPendingJournal(); err != nil {
			t.Fatal(err)
		}
		if j, cl := ps.journal.Load(), ps.clear.Load(); j != c.journal || cl != c.clear {
			t.Errorf("busy %v: GOMAXPROCS %d in the journal write, %d in the drop; want %d, %d", c.busy, j, cl, c.journal, c.clear)
		}
	}
}
