package chain_test

import (
	"fmt"
	"math/big"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// procsStore records GOMAXPROCS while the writer runs a journal write or
// a block write (the sequencer's jobs) and a journal drop (an ordinary
// one), and the yields a block write was given.
type procsStore struct {
	chain.Store
	journal, clear, block atomic.Int32
	yields                []string // what the block write had done at each yield
}

func (s *procsStore) WriteBlockYielding(w *store.BlockWrite, yield func()) error {
	s.block.Store(int32(runtime.GOMAXPROCS(0)))
	var wrapped func()
	if yield != nil {
		wrapped = func() {
			v, err := s.Store.View()
			if err != nil {
				panic(err)
			}
			defer v.Close()
			latest, _ := v.Tag(store.TagLatest)
			s.yields = append(s.yields, fmt.Sprintf("latest %d", latest))
			yield()
		}
	}
	return s.Store.WriteBlockYielding(w, wrapped)
}

func (s *procsStore) AppendPendingEntries(a store.PendingAppend) error {
	s.journal.Store(int32(runtime.GOMAXPROCS(0)))
	return s.Store.AppendPendingEntries(a)
}

func (s *procsStore) ClearPending() error {
	s.clear.Store(int32(runtime.GOMAXPROCS(0)))
	return s.Store.ClearPending()
}

// TestWriterSequencerJobs: on one P, a pre-confirmation's journal write
// and a sealed block's write take a spare P only while the node says it
// needs one (SetSpareWhen); the writer's other jobs always do. A block
// write without one calls the sequencer's yield between its parts (staged,
// committed, then before the head's publication), and never within a
// section.
func TestWriterSequencerJobs(t *testing.T) {
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
	for _, c := range []struct {
		busy                  bool
		journal, clear, block int32
		yields                []string
	}{
		// data staged, state staged (not committed), committed (head not
		// published), before the publication, then published.
		{false, 1, 2, 1, []string{"latest 0", "head 0", "latest 0", "head 0", "latest 1", "head 0", "head 0", "published 1"}},
		{true, 2, 2, 2, []string{"published 2"}},
	} {
		busy.Store(c.busy)
		head := w.Head()
		header := &types.Header{ParentHash: head.Hash(), Number: new(big.Int).SetUint64(head.Number() + 1), Difficulty: new(big.Int)}
		if err := w.JournalPendingEntries(store.PendingAppend{Header: header, Fresh: true}); err != nil {
			t.Fatal(err)
		}
		if err := w.DropPendingJournal(); err != nil {
			t.Fatal(err)
		}
		head = w.Head()
		block := chaintypes.NewBlockWithHeader(&types.Header{ParentHash: head.Hash(), Number: new(big.Int).SetUint64(head.Number() + 1),
			Difficulty: new(big.Int), GasLimit: head.Header().GasLimit, Time: head.Header().Time + 1})
		ps.yields = nil
		yield := func() { ps.yields = append(ps.yields, fmt.Sprintf("head %d", w.Head().Number())) }
		if err := w.Seal(&store.BlockWrite{Block: block}, nil, yield); err != nil {
			t.Fatal(err)
		}
		ps.yields = append(ps.yields, fmt.Sprintf("published %d", w.Head().Number()))
		got := strings.Join(ps.yields, ", ")
		if j, cl, b := ps.journal.Load(), ps.clear.Load(), ps.block.Load(); j != c.journal || cl != c.clear || b != c.block || got != strings.Join(c.yields, ", ") {
			t.Errorf("busy %v: GOMAXPROCS %d in the journal write, %d in the drop, %d in the block write, yields [%s]; want %d, %d, %d, [%s]",
				c.busy, j, cl, b, got, c.journal, c.clear, c.block, strings.Join(c.yields, ", "))
		}
	}
}
