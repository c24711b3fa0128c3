package chain_test

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// loggerInit deploys a contract that emits LOG1 with calldata[0:32] as the
// topic (runtime 6000356000 6000a1 00).
var loggerInit = common.FromHex("600980600b6000396000f3" + "600035600060" + "00a100")

// TestWriterReorgOneStep: go-ethereum's chain maker builds an ancestor and
// two branches; the writer imports A and then Writer.Reorg switches to C
// (longer) in one step. C's second block writes a slot of an account its
// third block destroys (pre-Cancun: the wipe must see a slot that only
// exists in the same batch) and its fourth re-creates it. Checked: state
// at every height equals go-ethereum's trie-backed state of C, A is gone,
// concurrent readers only ever see A's head or C's (never the ancestor or
// a mix), and exactly one HeadEvent announces the reorg with A's blocks
// removed, their logs marked removed, and C's blocks added.
func TestWriterReorgOneStep(t *testing.T) {
	for _, tc := range gethCases() {
		t.Run(tc.name, func(t *testing.T) { runReorgOneStep(t, tc.config, tc.engine) })
	}
}

func runReorgOneStep(t *testing.T, config *params.ChainConfig, engine consensus.Engine) {
	gg := newGethGenesis(config, engine)
	var (
		factory, child = factoryAddr, childAddr
		logger         = crypto.CreateAddress(gg.sender, 0)
		coinbaseA      = common.HexToAddress("0x000000000000000000000000000000000000aaaa")
		coinbaseC      = common.HexToAddress("0x000000000000000000000000000000000000cccc")
		send           = gg.send
		topic          = func(branch byte, i int) []byte { return common.Hash{0: branch, 31: byte(i)}.Bytes() }
	)
	const ancestor = 2
	gdb, prefix, _ := core.GenerateChainWithGenesis(gg.gspec, engine, ancestor, func(i int, b *core.BlockGen) {
		switch i {
		case 0:
			send(b, nil, 0, loggerInit)
			send(b, &factory, 0, childInit) // child: slot0 = 1
		case 1:
			send(b, &logger, 0, topic('P', 1))
		}
	})
	branchA, _ := core.GenerateChain(config, prefix[ancestor-1], engine, gdb, 4, func(i int, b *core.BlockGen) {
		b.SetCoinbase(coinbaseA)
		send(b, &logger, 0, topic('A', i))
		if i == 1 {
			send(b, &logger, 0, topic('A', 10+i))
		}
	})
	branchC, _ := core.GenerateChain(config, prefix[ancestor-1], engine, gdb, 6, func(i int, b *core.BlockGen) {
		b.SetCoinbase(coinbaseC)
		switch i {
		case 0:
			send(b, &logger, 0, topic('C', i))
		case 1: // child slot4 = 1
			send(b, &child, 0, nil)
		case 2: // child selfdestructs: pre-Cancun its slots 0 and 4 go
			send(b, &child, 0, []byte{1})
		case 3: // re-create child (pre-Cancun: fresh storage, slot0 = 6)
			send(b, &factory, 0, childInit)
		case 4:
			send(b, &logger, 0, topic('C', i))
		}
	})
	db, g, w := gg.initStore(t)
	chainA := append(append([]*types.Block{g.Block}, prefix...), branchA...)
	chainC := append(append([]*types.Block{g.Block}, prefix...), branchC...)
	for _, b := range chainA[1:] {
		if err := w.ImportBlock(chaintypes.FromEthBlock(b)); err != nil {
			t.Fatalf("import A block %d: %v", b.NumberU64(), err)
		}
	}
	headA := chainA[len(chainA)-1].Hash()
	headC := chainC[len(chainC)-1].Hash()
	cachedA := warmStateCache(t, openView(t, db)) // A's state in the state cache

	// A tampered branch (C's fourth block with a wrong receipts root) is
	// refused: nothing written, no event, still on A.
	var events []*chain.HeadEvent
	var evMu sync.Mutex
	defer w.SubscribeHeads(func(ev *chain.HeadEvent) {
		evMu.Lock()
		events = append(events, ev)
		evMu.Unlock()
	})()
	bad := types.CopyHeader(branchC[3].Header())
	bad.ReceiptHash = common.Hash{1}
	tampered := append(chaintypes.FromEthBlocks(branchC[:3]), chaintypes.FromEthBlock(types.NewBlockWithHeader(bad).WithBody(*branchC[3].Body())))
	if err := w.Reorg(ancestor, tampered, chain.ImportOptions{}); !errors.Is(err, chain.ErrInvalidBlock) {
		t.Fatalf("tampered branch: %v, want ErrInvalidBlock", err)
	}
	if h := w.Head(); h.Hash() != headA || len(events) != 0 {
		t.Fatalf("after the refused reorg: head %d, %d events", h.Number(), len(events))
	}
	checkCanonicalChain(t, openView(t, db), chainA)

	// Concurrent readers: every head they open is A's or C's, and its view
	// holds exactly that chain, linked by parent hashes.
	var (
		stop    atomic.Bool
		reads   atomic.Int64
		running atomic.Int64
		wg      sync.WaitGroup
		readErr = make(chan error, 2)
	)
	waitReads := func(n int64) { // n more reads, unless the readers failed
		for target := reads.Load() + n; reads.Load() < target && running.Load() == 2; {
			runtime.Gosched()
		}
	}
	for range 2 {
		wg.Add(1)
		running.Add(1)
		go func() {
			defer wg.Done()
			defer running.Add(-1)
			for !stop.Load() {
				h, view, err := w.OpenHead()
				if err != nil {
					readErr <- err
					return
				}
				err = checkLinked(h, view, headA, headC)
				view.Close()
				if err != nil {
					readErr <- err
					return
				}
				reads.Add(1)
			}
		}()
	}
	waitReads(50)
	if err := w.Reorg(ancestor, chaintypes.FromEthBlocks(branchC), chain.ImportOptions{Tags: []store.Tag{store.TagSafe}}); err != nil {
		t.Fatal(err)
	}
	waitReads(50)
	stop.Store(true)
	wg.Wait()
	select {
	case err := <-readErr:
		t.Fatal(err)
	default:
	}

	view := openView(t, db)
	checkCanonicalChain(t, view, chainC)
	checkGone(t, view, branchA, uint64(len(chainC)-1))
	checkStateAgainstGeth(t, view, gdb, chainC)
	checkPointReadsAgainstGeth(t, view, gdb, chainC[len(chainC)-1].Header(), cachedA)
	if h := w.Head(); h.Hash() != headC || h.Safe().Hash() != headC {
		t.Fatalf("head %d safe %d after the reorg", h.Number(), h.Safe().Number)
	}
	if !config.IsCancun(common.Big0, 0) {
		r := stateAt(t, view, ancestor+3)
		if acc, err := r.Account(child); err != nil || acc != nil {
			t.Fatalf("child after its selfdestruct: %+v, %v", acc, err)
		}
		r = stateAt(t, view, ancestor+4)
		for slot, want := range map[common.Hash]common.Hash{{}: {31: ancestor + 4}, {31: 4}: {}} {
			if v, err := r.Storage(child, slot); err != nil || v != want {
				t.Fatalf("re-created child slot %x = %x, %v; want %x", slot, v, err, want)
			}
		}
	}

	evMu.Lock()
	defer evMu.Unlock()
	if len(events) != 1 {
		t.Fatalf("%d head events for one reorg", len(events))
	}
	ev := events[0]
	if ev.Head.Hash() != headC || len(ev.Removed) != len(branchA) || len(ev.Added) != len(branchC) {
		t.Fatalf("reorg event: head %s, removed %d, added %d", ev.Head.Hash().Hex(), len(ev.Removed), len(ev.Added))
	}
	for i, h := range ev.Removed {
		if want := branchA[len(branchA)-1-i].Hash(); h.Hash() != want {
			t.Fatalf("removed[%d] = %s, want %s (newest first)", i, h.Hash().Hex(), want.Hex())
		}
	}
	for i, h := range ev.Added {
		if h.Hash() != branchC[i].Hash() {
			t.Fatalf("added[%d] is not C's block %d", i, branchC[i].NumberU64())
		}
	}
	// A's logs, oldest block first, marked removed, with A's block data.
	var want []string
	for i, b := range branchA {
		want = append(want, fmt.Sprintf("%s %d %x", b.Hash().Hex(), b.NumberU64(), topic('A', i)))
		if i == 1 {
			want = append(want, fmt.Sprintf("%s %d %x", b.Hash().Hex(), b.NumberU64(), topic('A', 10+i)))
		}
	}
	if len(ev.RemovedLogs) != len(want) {
		t.Fatalf("%d removed logs, want %d", len(ev.RemovedLogs), len(want))
	}
	for i, l := range ev.RemovedLogs {
		got := fmt.Sprintf("%s %d %x", l.BlockHash.Hex(), l.BlockNumber, l.Topics[0])
		if got != want[i] || !l.Removed || l.Address != logger || l.TxHash == (common.Hash{}) {
			t.Fatalf("removed log %d: %s removed=%v, want %s", i, got, l.Removed, want[i])
		}
	}
	t.Logf("%d concurrent reads, none saw the ancestor or a mixed chain", reads.Load())
}

// checkLinked: h is one of the allowed heads and the view's chain below it
// is linked by parent hashes, with the view's latest at h.
func checkLinked(h *chain.Head, view store.View, allowed ...common.Hash) error {
	ok := false
	for _, a := range allowed {
		ok = ok || h.Hash() == a
	}
	if !ok {
		return fmt.Errorf("a reader saw head %d %s, neither branch's head", h.Number(), h.Hash().Hex())
	}
	if latest, err := view.Tag(store.TagLatest); err != nil || latest != h.Number() {
		return fmt.Errorf("view latest %d (%v), head %d", latest, err, h.Number())
	}
	headers := chain.ViewHeaders{View: view}
	child, err := headers.HeaderByNumber(h.Number())
	if err != nil {
		return err
	}
	if child.Hash() != h.Hash() {
		return errors.New("the view's head block is not the Head's")
	}
	for n := h.Number(); n > 0; n-- {
		parent, err := headers.HeaderByNumber(n - 1)
		if err != nil {
			return err
		}
		if child.ParentHash != parent.Hash() {
			return fmt.Errorf("mixed chain: block %d's parent is not block %d", n, n-1)
		}
		child = parent
	}
	return nil
}

// TestWriterSetTagsAndUnwindLogs: SetTags moves safe and finalized to
// canonical blocks with one head event (none when nothing changes, an
// error for a block that is not canonical); an unwind's event carries the
// removed blocks' logs, oldest first, marked removed.
func TestWriterSetTagsAndUnwindLogs(t *testing.T) {
	config, engine := params.MergedTestChainConfig, gethCases()[1].engine
	gg := newGethGenesis(config, engine)
	logger := crypto.CreateAddress(gg.sender, 0)
	_, blocks, _ := core.GenerateChainWithGenesis(gg.gspec, engine, 4, func(i int, b *core.BlockGen) {
		if i == 0 {
			gg.send(b, nil, 0, loggerInit)
			return
		}
		gg.send(b, &logger, 0, common.Hash{31: byte(i)}.Bytes())
	})
	_, _, w := gg.initStore(t)
	for _, b := range blocks {
		if err := w.ImportBlock(chaintypes.FromEthBlock(b)); err != nil {
			t.Fatal(err)
		}
	}
	var events []*chain.HeadEvent
	defer w.SubscribeHeads(func(ev *chain.HeadEvent) { events = append(events, ev) })()
	tags := map[store.Tag]common.Hash{store.TagSafe: blocks[2].Hash(), store.TagFinalized: blocks[1].Hash()}
	if err := w.SetTags(tags); err != nil {
		t.Fatal(err)
	}
	if err := w.SetTags(tags); err != nil {
		t.Fatal(err)
	}
	if h := w.Head(); h.Safe().Hash() != blocks[2].Hash() || h.Finalized().Hash() != blocks[1].Hash() || len(events) != 1 {
		t.Fatalf("safe %d finalized %d after SetTags, %d events", h.Safe().Number, h.Finalized().Number, len(events))
	}
	if ev := events[0]; len(ev.Added)+len(ev.Removed) != 0 || ev.Head.Number() != 4 {
		t.Fatalf("tag event: added %d removed %d head %d", len(ev.Added), len(ev.Removed), ev.Head.Number())
	}
	if err := w.SetTags(map[store.Tag]common.Hash{store.TagSafe: {1}}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("SetTags to an unknown block: %v", err)
	}
	if err := w.SetTags(map[store.Tag]common.Hash{store.TagLatest: blocks[0].Hash()}); !errors.Is(err, store.ErrInvalidWrite) {
		t.Fatalf("SetTags latest: %v", err)
	}
	if err := w.UnwindTo(1, nil); err != nil {
		t.Fatal(err)
	}
	ev := events[len(events)-1]
	if len(ev.Removed) != 3 || len(ev.RemovedLogs) != 3 {
		t.Fatalf("unwind event: %d removed, %d removed logs", len(ev.Removed), len(ev.RemovedLogs))
	}
	for i, l := range ev.RemovedLogs {
		b := blocks[i+1]
		if !l.Removed || l.BlockHash != b.Hash() || l.BlockNumber != b.NumberU64() || l.Topics[0] != (common.Hash{31: byte(i + 1)}) ||
			l.TxHash != b.Transactions()[0].Hash() {
			t.Fatalf("removed log %d: %+v", i, l)
		}
	}
	if h := w.Head(); h.Safe().Number.Uint64() != 1 || h.Finalized().Number.Uint64() != 1 {
		t.Fatalf("tags after the unwind: safe %d finalized %d", h.Safe().Number, h.Finalized().Number)
	}
}
