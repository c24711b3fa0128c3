package follow

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/chain/follow/followtest"
	"github.com/tipnode/tipnode/store"
)

// Addresses of the genesis contracts of the test chains.
var (
	loggerAddr = common.HexToAddress("0x00000000000000000000000000000000000010a1")
	storeAddr  = common.HexToAddress("0x0000000000000000000000000000000000005701")
	killerAddr = common.HexToAddress("0x000000000000000000000000000000000000dead")
)

func testAlloc() types.GenesisAlloc {
	a := followtest.Fund()
	a[loggerAddr] = types.Account{Code: followtest.LoggerCode, Balance: new(big.Int)}
	a[storeAddr] = types.Account{Code: followtest.StoreCode, Balance: new(big.Int)}
	a[killerAddr] = types.Account{Code: followtest.KillerCode, Balance: big.NewInt(5),
		Storage: map[common.Hash]common.Hash{{31: 7}: {31: 7}}}
	return a
}

// upstreamChain is a go-ethereum upstream with nonce counters. Each
// branch tag sends from its own account (a fork brings the dropped
// branch's transactions back to the upstream's pool, with their nonces).
type upstreamChain struct {
	*followtest.Geth
	t      testing.TB
	nonces map[int]uint64
}

func startUpstream(t testing.TB, opts followtest.Options) *upstreamChain {
	t.Helper()
	if opts.Alloc == nil {
		opts.Alloc = testAlloc()
	}
	return &upstreamChain{Geth: followtest.StartGeth(t, opts), t: t, nonces: make(map[int]uint64)}
}

// block commits a block with n transactions (transfers, logs and storage
// writes, sent by the account of tag so that branches differ) and returns
// its hash.
func (u *upstreamChain) block(n int, tag byte) common.Hash {
	u.t.Helper()
	acc := int(tag) % followtest.Accounts
	nonce, ok := u.nonces[acc]
	if !ok {
		var err error
		if nonce, err = u.Client().PendingNonceAt(context.Background(), followtest.Address(acc)); err != nil {
			u.t.Fatal(err)
		}
	}
	var txs []*types.Transaction
	for i := range n {
		var tx *types.Transaction
		topic := common.Hash{0: tag, 30: byte(nonce >> 8), 31: byte(nonce)}
		switch i % 3 {
		case 0:
			to := common.Address{19: byte(nonce), 0: tag}
			tx = followtest.Tx(u.t, acc, nonce, &to, big.NewInt(int64(nonce)+1), 21_000, nil)
		case 1:
			tx = followtest.Tx(u.t, acc, nonce, &loggerAddr, nil, 50_000, topic[:])
		case 2:
			tx = followtest.Tx(u.t, acc, nonce, &storeAddr, nil, 200_000, append(topic[:], common.Hash{31: byte(nonce % 5)}.Bytes()...))
		}
		nonce++
		txs = append(txs, tx)
	}
	u.nonces[acc] = nonce
	return u.Send(u.t, txs...)
}

// logCount is the number of logs the upstream holds in the given blocks.
func (u *upstreamChain) logCount(blocks map[common.Hash]bool) int {
	u.t.Helper()
	n := 0
	for h := range blocks {
		logs, err := u.Client().FilterLogs(context.Background(), ethereum.FilterQuery{BlockHash: &h})
		if err != nil {
			u.t.Fatal(err)
		}
		n += len(logs)
	}
	return n
}

// fork rewinds the upstream to block n (its next blocks build on it).
func (u *upstreamChain) fork(n uint64) {
	u.t.Helper()
	h, err := u.Client().HeaderByNumber(context.Background(), new(big.Int).SetUint64(n))
	if err != nil {
		u.t.Fatal(err)
	}
	if err := u.Fork(h.Hash()); err != nil {
		u.t.Fatal(err)
	}
}

// head is the upstream's latest block.
func (u *upstreamChain) head() *types.Header {
	u.t.Helper()
	h, err := u.Client().HeaderByNumber(context.Background(), nil)
	if err != nil {
		u.t.Fatal(err)
	}
	return h
}

func (u *upstreamChain) hashAt(n uint64) common.Hash {
	u.t.Helper()
	h, err := u.Client().HeaderByNumber(context.Background(), new(big.Int).SetUint64(n))
	if err != nil {
		u.t.Fatalf("upstream header %d: %v", n, err)
	}
	return h.Hash()
}

// follower is a tipnode store + writer + follower on an upstream.
type follower struct {
	*Follower
	t     testing.TB
	db    *store.DB
	w     *chain.Writer
	g     *chain.Genesis
	clock *chain.ManualClock
}

func newFollower(t testing.TB, spec []byte, cfg Config) *follower {
	t.Helper()
	db, g, w := chaintest.InitStore(t, spec)
	return startFollower(t, db, g, w, cfg)
}

func startFollower(t testing.TB, db *store.DB, g *chain.Genesis, w *chain.Writer, cfg Config) *follower {
	t.Helper()
	clock := chain.NewManualClock(time.Unix(1_700_000_000, 0))
	f, err := New(cfg, w, g, clock, NewMetrics(nil), zerolog.New(zerolog.NewTestWriter(t)))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	return &follower{Follower: f, t: t, db: db, w: w, g: g, clock: clock}
}

// waitHead waits until our head is want, advancing the manual clock by
// step whenever the follower waits on a timer (the poll, or a backoff).
func (f *follower) waitHead(want common.Hash, step time.Duration) {
	f.t.Helper()
	f.waitUntil("head "+want.Hex(), step, func(h *chain.Head) bool { return h.Hash() == want })
}

// waitUntil waits until cond holds for our head (checked at every head
// event), advancing the manual clock by step whenever the follower waits
// on a timer.
func (f *follower) waitUntil(what string, step time.Duration, cond func(*chain.Head) bool) {
	f.t.Helper()
	wake := make(chan struct{}, 1)
	defer f.w.SubscribeHeads(func(*chain.HeadEvent) {
		select {
		case wake <- struct{}{}:
		default:
		}
	})()
	timeout := time.After(2 * time.Minute)
	for !cond(f.w.Head()) {
		changed := f.clock.Changed()
		if step > 0 && f.clock.Timers() > 0 {
			f.clock.Advance(step)
			continue
		}
		select {
		case <-wake:
		case <-changed:
		case <-f.Done():
			f.t.Fatalf("following stopped waiting for %s: %v", what, f.Err())
		case <-timeout:
			f.t.Fatalf("timed out waiting for %s (head %d %s)", what, f.w.Head().Number(), f.w.Head().Hash().Hex())
		}
	}
}

// waitDone waits until following stopped.
func (f *follower) waitDone(step time.Duration) {
	f.t.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		changed := f.clock.Changed()
		if step > 0 && f.clock.Timers() > 0 {
			f.clock.Advance(step)
			continue
		}
		select {
		case <-f.Done():
			return
		case <-changed:
		case <-timeout:
			f.t.Fatal("following did not stop")
		}
	}
}

// checkSameChain: our canonical chain up to our head is the upstream's.
func (f *follower) checkSameChain(u *upstreamChain) {
	f.t.Helper()
	view, err := f.db.View()
	if err != nil {
		f.t.Fatal(err)
	}
	defer view.Close()
	head := f.w.Head().Number()
	for n := uint64(0); n <= head; n++ {
		ours, err := view.CanonicalHash(n)
		if err != nil {
			f.t.Fatal(err)
		}
		if theirs := u.hashAt(n); ours != theirs {
			f.t.Fatalf("block %d: ours %s, upstream %s", n, ours.Hex(), theirs.Hex())
		}
	}
}

func testConfig(url string) Config {
	c := DefaultConfig()
	c.URL = url
	c.FetchBatch, c.FetchParallel = 4, 3
	return c
}

// TestFollowCatchUpAndLive: the upstream has 40 blocks before the follower
// starts (catch-up in parallel batches of 4), then makes 5 more (live).
// Over http the follower polls (JSON blocks: no debug namespace); over ws
// it is notified (raw blocks). Our chain is the upstream's, block by block,
// and the upstream's safe and finalized tags are ours.
func TestFollowCatchUpAndLive(t *testing.T) {
	for _, tc := range []struct {
		name string
		ws   bool
	}{{"http-json", false}, {"ws-raw", true}} {
		t.Run(tc.name, func(t *testing.T) {
			u := startUpstream(t, followtest.Options{NoDebug: !tc.ws})
			for i := range 40 {
				u.block(i%7, 'a')
			}
			url := u.HTTP
			if tc.ws {
				url = u.WS
			}
			cfg := testConfig(url)
			f := newFollower(t, u.Spec, cfg)
			top := u.head()
			f.waitHead(top.Hash(), cfg.PollInterval)
			if s := f.Status(); s.Syncing || s.CurrentBlock != top.Number.Uint64() || s.HighestBlock != s.CurrentBlock {
				t.Fatalf("status after catch-up: %+v", s)
			}
			var last common.Hash
			for i := range 5 {
				last = u.block(i+1, 'b')
				f.waitHead(last, cfg.PollInterval)
			}
			f.checkSameChain(u)
			raw, json := testutil.ToFloat64(f.metrics.fetched.WithLabelValues("raw")), testutil.ToFloat64(f.metrics.fetched.WithLabelValues("json"))
			if tc.ws && (raw < 45 || json != 0) || !tc.ws && (json < 45 || raw != 0) {
				t.Fatalf("blocks fetched raw %v, json %v", raw, json)
			}
			f.waitUntil("tags", cfg.PollInterval, func(h *chain.Head) bool { return h.Safe().Hash() == last })
			h := f.w.Head()
			if h.Safe().Hash() != last || h.Finalized().Hash() != u.hashAt(32) {
				t.Fatalf("safe %d finalized %d, want the head and 32", h.Safe().Number, h.Finalized().Number)
			}
		})
	}
}

// TestFollowReorgs: reorgs of depth 1 and 10 made with the upstream's
// Fork. Our chain ends as the upstream's new chain; each reorg was one
// head event removing exactly depth blocks, with their logs marked
// removed; no reader ever saw a chain that does not link.
func TestFollowReorgs(t *testing.T) {
	u := startUpstream(t, followtest.Options{})
	for range 12 {
		u.block(3, 'a')
	}
	cfg := testConfig(u.WS)
	f := newFollower(t, u.Spec, cfg)
	f.waitHead(u.head().Hash(), 0)

	watch := watchChain(t, f.w)

	for _, depth := range []uint64{1, 10} {
		head := f.w.Head().Number()
		removed := make(map[common.Hash]bool)
		for n := head - depth + 1; n <= head; n++ {
			removed[u.hashAt(n)] = true
		}
		wantLogs := u.logCount(removed) // before the fork: what readers saw
		if depth > 1 && wantLogs == 0 {
			t.Fatalf("the %d dropped blocks have no logs: the test checks nothing", depth)
		}
		u.fork(head - depth)
		var last common.Hash
		for range depth + 2 {
			last = u.block(2, byte('c'+depth))
		}
		f.waitHead(last, 0)
		f.checkSameChain(u)
		var reorgs []*chain.HeadEvent
		for _, ev := range watch.take() {
			if len(ev.Removed) > 0 {
				reorgs = append(reorgs, ev)
			}
		}
		if len(reorgs) != 1 || uint64(len(reorgs[0].Removed)) != depth {
			for _, ev := range reorgs {
				t.Logf("reorg event: head %d, removed %d (from %d), added %d", ev.Head.Number(), len(ev.Removed), ev.Removed[0].Number, len(ev.Added))
			}
			t.Fatalf("depth %d: %d reorg events, want one removing %d blocks", depth, len(reorgs), depth)
		}
		checkRemoved(t, reorgs[0], removed, wantLogs)
	}
	if err := watch.close(); err != nil {
		t.Fatal(err)
	}
}

// chainWatch records the writer's head events while a concurrent reader
// (readLinked) checks that no read sees a mixed chain.
type chainWatch struct {
	mu        sync.Mutex
	events    []*chain.HeadEvent
	stop      chan struct{}
	readerErr chan error
}

func watchChain(t *testing.T, w *chain.Writer) *chainWatch {
	c := &chainWatch{stop: make(chan struct{}), readerErr: make(chan error, 1)}
	t.Cleanup(w.SubscribeHeads(func(ev *chain.HeadEvent) {
		c.mu.Lock()
		c.events = append(c.events, ev)
		c.mu.Unlock()
	}))
	go func() { c.readerErr <- readLinked(w, c.stop) }()
	t.Cleanup(func() { c.close() })
	return c
}

// take returns the events recorded since the last take.
func (c *chainWatch) take() []*chain.HeadEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	evs := c.events
	c.events = nil
	return evs
}

// close stops the reader and returns what it found (the first time; then
// nil).
func (c *chainWatch) close() error {
	select {
	case <-c.stop:
		return nil
	default:
	}
	close(c.stop)
	return <-c.readerErr
}

// checkRemoved: the reorg event ev removed only blocks of removed and sent
// their logs, marked removed.
func checkRemoved(t *testing.T, ev *chain.HeadEvent, removed map[common.Hash]bool, wantLogs int) {
	t.Helper()
	if len(ev.RemovedLogs) != wantLogs {
		t.Fatalf("%d removed logs, want the %d logs the dropped blocks had on the upstream", len(ev.RemovedLogs), wantLogs)
	}
	for _, l := range ev.RemovedLogs {
		if !l.Removed || !removed[l.BlockHash] {
			t.Fatalf("removed log of block %d %s", l.BlockNumber, l.BlockHash.Hex())
		}
	}
	for _, h := range ev.Removed {
		if !removed[h.Hash()] {
			t.Fatalf("removed block %d is not one the upstream dropped", h.Number)
		}
	}
}

// readLinked reads the head and its chain until stop, checking that every
// read holds a linked chain (each block's parent hash is the hash of the
// block before) over the last 24 blocks.
func readLinked(w *chain.Writer, stop <-chan struct{}) error {
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		h, view, err := w.OpenHead()
		if err != nil {
			return err
		}
		headers := chain.ViewHeaders{View: view}
		child, err := headers.HeaderByNumber(h.Number())
		for n := h.Number(); err == nil && n > 0 && n+24 > h.Number(); n-- {
			var parent *types.Header
			if parent, err = headers.HeaderByNumber(n - 1); err == nil && child.ParentHash != parent.Hash() {
				err = errors.New("a reader saw a mixed chain")
			}
			child = parent
		}
		view.Close()
		if err != nil {
			return err
		}
	}
}

// TestFollowStopsOnDeepOrFinalizedReorg: a reorg deeper than MaxReorg, or
// one below our finalized block, stops following with an error naming both
// heads; the store keeps our chain and reads keep working.
func TestFollowStopsOnDeepOrFinalizedReorg(t *testing.T) {
	for _, tc := range []struct {
		name     string
		blocks   int
		fork     uint64
		maxReorg uint64
		want     error
	}{
		{"deeper than max", 12, 5, 4, ErrReorgTooDeep},
		{"below finalized", 36, 30, 64, ErrReorgBelowFinalized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := startUpstream(t, followtest.Options{})
			for range tc.blocks {
				u.block(1, 'a')
			}
			cfg := testConfig(u.WS)
			cfg.MaxReorg = tc.maxReorg
			f := newFollower(t, u.Spec, cfg)
			ourHead := u.head().Hash()
			f.waitHead(ourHead, 0)
			u.fork(tc.fork)
			var theirs []common.Hash // the upstream's new branch
			for range uint64(tc.blocks) - tc.fork + 1 {
				u.block(1, 'z')
			}
			for n := tc.fork + 1; n <= u.head().Number.Uint64(); n++ {
				theirs = append(theirs, u.hashAt(n))
			}
			f.waitDone(0)
			err := f.Err()
			namesTheirs := false
			for _, h := range theirs {
				namesTheirs = namesTheirs || strings.Contains(fmt.Sprint(err), h.Hex())
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), ourHead.Hex()) || !namesTheirs {
				t.Fatalf("error %v: want %v naming our head %s and the upstream's new branch", err, tc.want, ourHead.Hex())
			}
			t.Logf("following stopped: %v", err)
			if h := f.w.Head(); h.Hash() != ourHead {
				t.Fatalf("head moved to %d after the refused reorg", h.Number())
			}
			if _, view, err := f.w.OpenHead(); err != nil {
				t.Fatalf("reads after following stopped: %v", err)
			} else {
				view.Close()
			}
		})
	}
}

// TestFollowRefusesOtherGenesis: a store of another chain is refused at
// Start, naming both genesis hashes.
func TestFollowRefusesOtherGenesis(t *testing.T) {
	u := startUpstream(t, followtest.Options{})
	other := followtest.Genesis(t, u.Spec)
	other.ExtraData = []byte("another chain")
	spec, err := other.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	db, g, w := chaintest.InitStore(t, spec)
	_ = db
	f, err := New(testConfig(u.HTTP), w, g, chain.NewManualClock(time.Now()), nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	if err := f.Start(); !errors.Is(err, ErrGenesisMismatch) || !strings.Contains(err.Error(), g.Block.Hash().Hex()) {
		t.Fatalf("Start: %v, want ErrGenesisMismatch naming our genesis", err)
	}
}

// TestFollowUpstreamRewind: the upstream's head goes back to one of our
// blocks (go-ethereum's Fork without new blocks: its canonical chain is
// now shorter than ours). That is a reorg to a shorter chain: we unwind to
// its head in one step (one head event with the removed blocks and their
// logs, removed: true; a concurrent reader never sees a mixed chain), then
// follow its new blocks. A rewind deeper than MaxReorg stops following
// and keeps our chain.
func TestFollowUpstreamRewind(t *testing.T) {
	for _, tc := range []struct {
		name     string
		back     uint64
		maxReorg uint64
		want     error
	}{
		{"within max", 3, 64, nil},
		{"deeper than max", 5, 4, ErrReorgTooDeep},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := startUpstream(t, followtest.Options{})
			for range 12 {
				u.block(3, 'a')
			}
			cfg := testConfig(u.HTTP)
			cfg.MaxReorg = tc.maxReorg
			f := newFollower(t, u.Spec, cfg)
			ourHead := u.head()
			f.waitHead(ourHead.Hash(), cfg.PollInterval)

			watch := watchChain(t, f.w)

			top := ourHead.Number.Uint64()
			removed := make(map[common.Hash]bool)
			for n := top - tc.back + 1; n <= top; n++ {
				removed[u.hashAt(n)] = true
			}
			wantLogs := u.logCount(removed) // before the fork: what readers saw
			u.fork(top - tc.back)
			back := u.hashAt(top - tc.back)
			if h := u.head(); h.Hash() != back {
				t.Fatalf("the upstream's head after Fork is %d, want %d", h.Number, top-tc.back)
			}
			if tc.want != nil {
				f.waitDone(cfg.PollInterval)
				if err := f.Err(); !errors.Is(err, tc.want) || !strings.Contains(err.Error(), ourHead.Hash().Hex()) || !strings.Contains(err.Error(), back.Hex()) {
					t.Fatalf("error %v: want %v naming both heads", err, tc.want)
				}
				if h := f.w.Head(); h.Hash() != ourHead.Hash() {
					t.Fatalf("head moved to %d after the refused rewind", h.Number())
				}
				if err := watch.close(); err != nil {
					t.Fatal(err)
				}
				return
			}
			f.waitHead(back, cfg.PollInterval)
			var evs []*chain.HeadEvent // events that change the chain (not tag moves)
			for _, ev := range watch.take() {
				if len(ev.Removed) > 0 || len(ev.Added) > 0 {
					evs = append(evs, ev)
				}
			}
			if len(evs) != 1 || uint64(len(evs[0].Removed)) != tc.back || len(evs[0].Added) != 0 {
				t.Fatalf("%d head events changing the chain, want one removing %d blocks and adding none", len(evs), tc.back)
			}
			checkRemoved(t, evs[0], removed, wantLogs)
			// The upstream builds again: we follow its new branch.
			var last common.Hash
			for range 2 {
				last = u.block(2, 'r')
			}
			f.waitHead(last, cfg.PollInterval)
			f.checkSameChain(u)
			if err := watch.close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
