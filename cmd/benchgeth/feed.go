package main

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/params"
	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/cmd/benchgeth/chaingen"
	"github.com/tipnode/tipnode/cmd/benchgeth/load"
)

// The feeder makes tipnode's `pending` realistic while the fed workloads
// (the *-pending ones and their latest counterparts) run against it: it
// sends ERC-20 transfers (every tenth an ether transfer) signed by the
// chain's funded senders at a steady rate, to genesis holders drawn from a
// seeded generator (the slots the read workloads read), so that the
// sequencer pre-confirms a snapshot about every 200 ms and seals blocks of
// rate x block time transactions. A swap watcher records when each
// snapshot was published (a newPreconfirmations subscription; the
// notification follows the swap) so latencies can be split by their
// distance to a swap. geth is not fed (go-ethereum v1.17.8 here does not
// mine; its pending is its latest): the fed comparison is tipnode pending
// vs tipnode latest, both under the same feed.
type feeder struct {
	log    zerolog.Logger
	ec     *ethclient.Client
	wsURL  string
	chain  chaingen.Config
	rate   float64
	signer types.Signer
	keys   []*ecdsa.PrivateKey
	nonces []uint64
	// unsure marks senders whose last send's outcome is unknown (stopped
	// mid-request: it may have been admitted); start reads their nonce again.
	unsure map[int]bool
	rng    *rand.Rand
	next   int

	sent, refused int64
	firstErr      error

	cancel context.CancelFunc
	done   sync.WaitGroup
	swaps  []swapEvent // appended by the watcher; read after stop
	mu     sync.Mutex
}

// swapEvent is one newPreconfirmations notification as the client saw it.
type swapEvent struct {
	At    time.Time
	Block uint64
	Index uint64
	Txs   int
}

// newFeeder connects to tipnode and reads every sender's pending nonce.
func newFeeder(ctx context.Context, httpURL, wsURL string, c chaingen.Config, rate float64, log zerolog.Logger) (*feeder, error) {
	rc, err := gethrpc.DialContext(ctx, httpURL)
	if err != nil {
		return nil, err
	}
	f := &feeder{
		log: log, ec: ethclient.NewClient(rc), wsURL: wsURL, chain: c, rate: rate,
		signer: types.LatestSignerForChainID(big.NewInt(chaingen.ChainID)),
		rng:    rand.New(rand.NewPCG(c.Seed, 0xfeed)), unsure: map[int]bool{},
	}
	for i := 0; i < c.Senders; i++ {
		k := chaingen.SenderKey(i)
		n, err := f.ec.PendingNonceAt(ctx, crypto.PubkeyToAddress(k.PublicKey))
		if err != nil {
			return nil, fmt.Errorf("feeder: nonce of sender %d: %w", i, err)
		}
		f.keys, f.nonces = append(f.keys, k), append(f.nonces, n)
	}
	return f, nil
}

// feedLead is how long the feeder runs before a measurement starts, so the
// pending block already holds pre-confirmations.
const feedLead = 500 * time.Millisecond

// start starts feeding and watching swaps (until stop).
func (f *feeder) start(ctx context.Context) error {
	for s := range f.unsure {
		n, err := f.ec.PendingNonceAt(ctx, crypto.PubkeyToAddress(f.keys[s].PublicKey))
		if err != nil {
			return fmt.Errorf("feeder: nonce of sender %d: %w", s, err)
		}
		f.nonces[s] = n
		delete(f.unsure, s)
	}
	ctx, f.cancel = context.WithCancel(ctx)
	ws, err := gethrpc.DialWebsocket(ctx, f.wsURL, "")
	if err != nil {
		f.cancel()
		return fmt.Errorf("feeder: websocket: %w", err)
	}
	ch := make(chan preconfNote, 256)
	sub, err := ws.EthSubscribe(ctx, ch, "newPreconfirmations")
	if err != nil {
		ws.Close()
		f.cancel()
		return fmt.Errorf("feeder: newPreconfirmations: %w", err)
	}
	f.done.Add(2)
	go func() { // watcher
		defer f.done.Done()
		defer ws.Close()
		defer sub.Unsubscribe()
		for {
			select {
			case n := <-ch:
				f.mu.Lock()
				f.swaps = append(f.swaps, swapEvent{At: time.Now(), Block: uint64(n.BlockNumber), Index: uint64(n.Index), Txs: len(n.Transactions)})
				f.mu.Unlock()
			case err := <-sub.Err():
				if err != nil && ctx.Err() == nil {
					f.log.Warn().Err(err).Msg("feeder: subscription ended")
				}
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { // sender
		defer f.done.Done()
		t := time.NewTicker(time.Duration(float64(time.Second) / f.rate))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				f.send(ctx)
			}
		}
	}()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(feedLead):
	}
	return nil
}

// stop stops feeding and watching.
func (f *feeder) stop() {
	if f.cancel != nil {
		f.cancel()
		f.done.Wait()
		f.cancel = nil
	}
}

// preconfNote is the part of a newPreconfirmations notification used here.
type preconfNote struct {
	BlockNumber  hexutil.Uint64 `json:"blockNumber"`
	Index        hexutil.Uint64 `json:"index"`
	Transactions []common.Hash  `json:"transactions"`
}

var (
	feedTip = big.NewInt(params.GWei)
	feedCap = big.NewInt(100 * params.GWei)
)

// send signs and sends the next transfer. A refused one re-reads its
// sender's pending nonce.
func (f *feeder) send(ctx context.Context) {
	k := f.next
	f.next++
	s := k % len(f.keys)
	token := f.rng.IntN(f.chain.Tokens)
	holder := chaingen.Holder(f.rng.IntN(f.chain.HoldersPerToken()))
	tx := &types.DynamicFeeTx{ChainID: big.NewInt(chaingen.ChainID), Nonce: f.nonces[s], GasTipCap: feedTip, GasFeeCap: feedCap}
	if k%10 == 9 {
		tx.To, tx.Gas, tx.Value = &holder, 21_000, big.NewInt(1)
	} else {
		to := chaingen.TokenAddress(token)
		tx.To, tx.Gas, tx.Value, tx.Data = &to, 100_000, new(big.Int), chaingen.TransferData(holder, big.NewInt(1))
	}
	signed, err := types.SignNewTx(f.keys[s], f.signer, tx)
	if err == nil {
		err = f.ec.SendTransaction(ctx, signed)
	}
	if err == nil {
		f.nonces[s]++
		f.sent++
		return
	}
	if ctx.Err() != nil {
		f.unsure[s] = true
		return
	}
	f.refused++
	if f.firstErr == nil {
		f.firstErr = err
		f.log.Warn().Err(err).Msg("feeder: transaction refused (counted; the sender's nonce is read again)")
	}
	if n, err := f.ec.PendingNonceAt(ctx, crypto.PubkeyToAddress(f.keys[s].PublicKey)); err == nil {
		f.nonces[s] = n
	}
}

// events returns the swaps seen so far, in time order.
func (f *feeder) events() []swapEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.swaps)
}

// feedSummary is what the feeder did during a workload's tipnode runs and
// how tipnode's open-loop latencies fall around its swaps.
type feedSummary struct {
	TxRate  float64 `json:"txRate"`
	Sent    int64   `json:"sent"`
	Refused int64   `json:"refused"`
	// Swaps and Seals seen during the open-loop runs (a seal publishes the
	// next block's first snapshot, index 0).
	Swaps int `json:"swaps"`
	Seals int `json:"seals"`
	// SwapGap is the median time between swaps; TxsPerBlock the mean
	// transactions of the blocks fully seen.
	SwapGap     time.Duration `json:"swapGapMedian"`
	TxsPerBlock float64       `json:"txsPerBlock"`
	// Window is the split's width: AfterSwap holds requests due within
	// Window after a swap, BeforeSwap within Window before one, AfterSeal
	// within Window after a seal, BeforeSeal within Window before one
	// (the seal's block write falls there), Rest neither after nor before
	// a swap. Mid, a part of Rest, holds requests due within Window before
	// the midpoint between two swaps, where nothing happens: a placebo as
	// large as BeforeSwap, whose p99 over Rest's shows how far that ratio
	// moves by chance alone.
	Window     time.Duration `json:"window"`
	P99        time.Duration `json:"p99"`
	AfterSwap  split         `json:"afterSwap"`
	BeforeSwap split         `json:"beforeSwap"`
	AfterSeal  split         `json:"afterSeal"`
	BeforeSeal split         `json:"beforeSeal"`
	Rest       split         `json:"rest"`
	Mid        split         `json:"mid"`
	// CPURatio is this workload's saturation CPU per request over its latest
	// counterpart's (pending workloads only).
	CPURatio float64 `json:"cpuRatioVsLatest,omitempty"`
	// LatestCPUInTurn is the latest counterpart's saturation CPU per request
	// measured right after each of this workload's saturation rounds (same
	// feed, same minute), and CPURatioInTurn this workload's over it: the
	// steadier pending / latest figure on a shared machine.
	LatestCPUInTurn time.Duration `json:"latestCPUPerRequestInTurn,omitempty"`
	CPURatioInTurn  float64       `json:"cpuRatioVsLatestInTurn,omitempty"`
}

// split is the latency of one group of requests.
type split struct {
	N   int           `json:"n"`
	P50 time.Duration `json:"p50"`
	P99 time.Duration `json:"p99"`
}

// splitBySwaps splits samples by their intended send time's distance to the
// swaps (events in time order).
func splitBySwaps(samples []load.Sample, events []swapEvent, window time.Duration) swapSplits {
	var a, af, bf, as, bs, re, mid []time.Duration
	for _, s := range samples {
		a = append(a, s.Latency)
		i := sort.Search(len(events), func(i int) bool { return events[i].At.After(s.Due) }) // first swap after Due
		isAfter, isBefore := false, false
		if i > 0 && s.Due.Sub(events[i-1].At) < window {
			isAfter = true
			af = append(af, s.Latency)
			if events[i-1].Index == 0 {
				as = append(as, s.Latency)
			}
		}
		if i < len(events) && events[i].At.Sub(s.Due) < window {
			isBefore = true
			bf = append(bf, s.Latency)
			if events[i].Index == 0 {
				bs = append(bs, s.Latency)
			}
		}
		if !isAfter && !isBefore {
			re = append(re, s.Latency)
			if i > 0 && i < len(events) {
				m := events[i-1].At.Add(events[i].At.Sub(events[i-1].At) / 2)
				if d := m.Sub(s.Due); d >= 0 && d < window {
					mid = append(mid, s.Latency)
				}
			}
		}
	}
	return swapSplits{All: quantiles(a), AfterSwap: quantiles(af), BeforeSwap: quantiles(bf),
		AfterSeal: quantiles(as), BeforeSeal: quantiles(bs), Rest: quantiles(re), Mid: quantiles(mid)}
}

// swapSplits are the latencies of splitBySwaps: all of them, those due
// within the window after a swap, before one, after a seal (a swap that
// opened a block), before a seal, the rest (neither after nor before a
// swap) and, of the rest, those due within the window before the midpoint
// between two swaps (feedSummary.Mid).
type swapSplits struct {
	All, AfterSwap, BeforeSwap, AfterSeal, BeforeSeal, Rest, Mid split
}

func quantiles(d []time.Duration) split {
	if len(d) == 0 {
		return split{}
	}
	slices.Sort(d)
	q := func(p float64) time.Duration { return d[min(len(d)-1, int(p*float64(len(d))))] }
	return split{N: len(d), P50: q(0.50), P99: q(0.99)}
}

// summarizeFeed describes the swaps within the samples' time span and splits
// their latencies.
func summarizeFeed(f *feeder, samples []load.Sample, window time.Duration) *feedSummary {
	fs := &feedSummary{TxRate: f.rate, Sent: f.sent, Refused: f.refused, Window: window}
	events := f.events()
	if len(samples) == 0 {
		return fs
	}
	first, last := samples[0].Due, samples[0].Due
	for _, s := range samples {
		if s.Due.Before(first) {
			first = s.Due
		}
		if s.Due.After(last) {
			last = s.Due
		}
	}
	var gaps []time.Duration
	blockTxs := map[uint64]int{}
	blockFirst := map[uint64]bool{}
	for i, e := range events {
		blockTxs[e.Block] += e.Txs
		if e.Index == 0 {
			blockFirst[e.Block] = true
		}
		if e.At.Before(first) || e.At.After(last) {
			continue
		}
		fs.Swaps++
		if e.Index == 0 {
			fs.Seals++
		}
		if i > 0 && events[i-1].At.After(first) {
			gaps = append(gaps, e.At.Sub(events[i-1].At))
		}
	}
	if len(gaps) > 0 {
		slices.Sort(gaps)
		fs.SwapGap = gaps[len(gaps)/2]
	}
	// Blocks fully seen: their first snapshot was seen and a later block's too.
	var n, txs int
	for b, ok := range blockFirst {
		if ok && blockFirst[b+1] {
			n++
			txs += blockTxs[b]
		}
	}
	if n > 0 {
		fs.TxsPerBlock = float64(txs) / float64(n)
	}
	sp := splitBySwaps(samples, events, window)
	fs.P99, fs.AfterSwap, fs.BeforeSwap, fs.AfterSeal, fs.BeforeSeal, fs.Rest, fs.Mid = sp.All.P99, sp.AfterSwap, sp.BeforeSwap, sp.AfterSeal, sp.BeforeSeal, sp.Rest, sp.Mid
	return fs
}

var errNoFeed = errors.New("no transactions pre-confirmed while feeding: is tipnode running with --sequencer?")
