package chain_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/store"
)

// TestWriterHeadMatchesItsView: while the writer imports the conformance
// chain, unwinds and re-imports, concurrent readers always get a Head whose
// view holds exactly that chain: the view's latest tag and canonical hash at
// the head number are the Head's, and every window entry is canonical in
// the view. The window and the head events follow every write.
func TestWriterHeadMatchesItsView(t *testing.T) {
	_, _, w := chaintest.GenesisStore(t)
	blocks := chaintest.Blocks(t)
	var (
		events  []*chain.HeadEvent
		evMu    sync.Mutex
		stop    atomic.Bool
		reads   atomic.Int64
		wg      sync.WaitGroup
		readErr = make(chan error, 2)
	)
	defer w.SubscribeHeads(func(ev *chain.HeadEvent) {
		evMu.Lock()
		events = append(events, ev)
		evMu.Unlock()
	})()
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				h, view, err := w.OpenHead()
				if err != nil {
					readErr <- err
					return
				}
				if err := checkHeadView(h, view); err != nil {
					view.Close()
					readErr <- err
					return
				}
				view.Close()
				reads.Add(1)
			}
		}()
	}
	for _, b := range blocks {
		if err := w.ImportBlock(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.UnwindTo(30, nil); err != nil {
		t.Fatal(err)
	}
	if h := w.Head(); h.Number() != 30 || h.Hash() != blocks[29].Hash() {
		t.Fatalf("head after unwind: %d %s", h.Number(), h.Hash().Hex())
	}
	if _, _, ok := w.Head().Recent(31); ok {
		t.Fatal("block 31 still in the window after the unwind")
	}
	if err := w.Import(blocks[30:], chain.ImportOptions{Tags: []store.Tag{store.TagSafe}}); err != nil {
		t.Fatal(err)
	}
	stop.Store(true)
	wg.Wait()
	select {
	case err := <-readErr:
		t.Fatal(err)
	default:
	}
	h := w.Head()
	if h.Hash().Hex() != chaintest.HeadHash || h.Safe().Number.Uint64() != 54 || h.Finalized().Number.Uint64() != 0 {
		t.Fatalf("head %d %s safe %d finalized %d", h.Number(), h.Hash().Hex(), h.Safe().Number, h.Finalized().Number)
	}
	for n := uint64(0); n <= 54; n++ {
		hdr, hash, ok := h.Recent(n)
		if !ok || hash != blocks[max(n, 1)-1].Hash() && n > 0 || hdr.Number.Uint64() != n {
			t.Fatalf("window entry %d: ok=%v", n, ok)
		}
	}
	evMu.Lock()
	defer evMu.Unlock()
	// 54 imports, one unwind, 24 re-imports.
	if len(events) != 54+1+24 {
		t.Fatalf("%d head events", len(events))
	}
	unwind := events[54]
	if len(unwind.Added) != 0 || len(unwind.Removed) != 24 || unwind.Removed[0].Number.Uint64() != 54 || unwind.Removed[23].Number.Uint64() != 31 {
		t.Fatalf("unwind event: added %d removed %d", len(unwind.Added), len(unwind.Removed))
	}
	for i, ev := range events {
		if i != 54 && (len(ev.Added) != 1 || ev.Added[0].Hash() != ev.Head.Hash()) {
			t.Fatalf("event %d does not announce its head", i)
		}
	}
	t.Logf("%d concurrent consistent reads", reads.Load())
}

func checkHeadView(h *chain.Head, view store.View) error {
	latest, err := view.Tag(store.TagLatest)
	if err != nil {
		return err
	}
	if latest != h.Number() {
		return errors.New("view latest differs from the head")
	}
	for n := h.Number(); n+chain.HeadWindow > h.Number() && n <= h.Number(); n-- {
		_, hash, ok := h.Recent(n)
		if !ok {
			return errors.New("window entry missing")
		}
		canon, err := view.CanonicalHash(n)
		if err != nil {
			return err
		}
		if canon != hash {
			return errors.New("window entry not canonical in the head's view")
		}
		if n == 0 {
			break
		}
	}
	return nil
}

// TestWriterRefusesStaleSealAndStops: a locally built block whose parent is
// not the head is refused with ErrNotOnHead; after Stop every write fails
// with ErrWriterStopped and OpenHead too (the last view is closed).
func TestWriterRefusesStaleSealAndStops(t *testing.T) {
	_, _, w := chaintest.GenesisStore(t)
	blocks := chaintest.Blocks(t)
	if err := w.ImportBlock(blocks[0]); err != nil {
		t.Fatal(err)
	}
	stale := &store.BlockWrite{Block: blocks[0]} // parent is genesis, head is block 1
	if err := w.Seal(stale, nil, nil); !errors.Is(err, chain.ErrNotOnHead) {
		t.Fatalf("stale seal: %v", err)
	}
	if err := w.ImportBlock(blocks[2]); !errors.Is(err, chain.ErrInvalidBlock) {
		t.Fatalf("gap import: %v", err)
	}
	h, view, err := w.OpenHead()
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	// A reader that opened before Stop keeps its view until it closes it.
	if n, err := view.Tag(store.TagLatest); err != nil || n != h.Number() {
		t.Fatalf("reader's view after Stop: %d %v", n, err)
	}
	view.Close()
	if _, _, err := w.OpenHead(); !errors.Is(err, chain.ErrWriterStopped) {
		t.Fatalf("OpenHead after Stop: %v", err)
	}
	if err := w.ImportBlock(blocks[1]); !errors.Is(err, chain.ErrWriterStopped) {
		t.Fatalf("import after Stop: %v", err)
	}
}
