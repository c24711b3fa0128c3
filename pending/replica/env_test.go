package replica

import (
	"encoding/binary"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/beacon/engine"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/holiman/uint256"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/pendingtest"
	"github.com/tipnode/tipnode/pending/sequencer"
	"github.com/tipnode/tipnode/pending/stream"
	"github.com/tipnode/tipnode/store"
)

// contextCode stores the block context it runs in: slot 0 NUMBER, 1
// TIMESTAMP, 2 BASEFEE, 3 COINBASE, 4 PREVRANDAO, 5 BLOCKHASH(NUMBER-1),
// 7 BLOCKHASH(NUMBER-2), and counts its calls in slot 6.
var contextCode = common.FromHex("4360005542600155486002554160035544600455436001900340600555436002900340600755600654600101600655" + "00")

// burnerCode writes fresh storage slots (slot c = c, slot 0 = count) until
// less than 30,000 gas is left: a transaction uses about its gas limit.
var burnerCode = common.FromHex("5b5a6175301015601957600054808055600101600055600056" + "5b00")

// sent is one message the sequencer published, with its snapshot (the
// oracle for the replica's state after that message).
type sent struct {
	p    *stream.Payload
	snap *pending.Snapshot
}

// toPayload is a test-only conversion of a published snapshot into its
// stream message (the encoder of the publisher is written elsewhere).
func toPayload(s *pending.Snapshot) *stream.Payload {
	h := s.Header()
	var nb [8]byte
	binary.BigEndian.PutUint64(nb[:], h.Number.Uint64())
	var id engine.PayloadID
	copy(id[:], crypto.Keccak256(h.ParentHash[:], nb[:]))
	p := &stream.Payload{PayloadID: id, Index: s.Index(), Metadata: stream.Metadata{BlockNumber: h.Number.Uint64()}}
	if s.Index() == 0 {
		p.Base = &stream.Base{
			ParentBeaconBlockRoot: *h.ParentBeaconRoot, ParentHash: h.ParentHash, FeeRecipient: h.Coinbase, PrevRandao: h.MixDigest,
			BlockNumber: hexutil.Uint64(h.Number.Uint64()), GasLimit: hexutil.Uint64(h.GasLimit), Timestamp: hexutil.Uint64(h.Time),
			ExtraData: h.Extra, BaseFeePerGas: (*hexutil.Big)(h.BaseFee),
		}
	}
	p.Diff.Transactions = []hexutil.Bytes{}
	for _, tx := range s.NewTransactions() {
		b, err := tx.MarshalBinary()
		if err != nil {
			panic(err)
		}
		p.Diff.Transactions = append(p.Diff.Transactions, b)
	}
	p.Diff.GasUsed = hexutil.Uint64(h.GasUsed)
	p.Diff.ReceiptsRoot = types.DeriveSha(s.Receipts(), trie.NewStackTrie(nil))
	p.Diff.LogsBloom = h.Bloom
	p.Diff.Withdrawals = []*types.Withdrawal{}
	// What tipnode's stream announces (stream.Encode): the replica checks
	// them against its own.
	if root, ok := s.StateRoot(); ok {
		p.Diff.StateRoot, p.Diff.BlockHash = root, s.BlockHash()
	}
	return p
}

// seqSide is an in-process sequencer (pendingtest's, coinbase 0xc0ba…,
// tip 1 wei) whose every published snapshot is turned into a stream
// message by take.
type seqSide struct {
	*pendingtest.Harness
	rec pendingtest.Recorder
}

func newSeqSide(t testing.TB, keys int) *seqSide {
	t.Helper()
	s := &seqSide{}
	cfg := sequencer.DefaultConfig()
	cfg.Coinbase = common.Address{0xc0, 0xba}
	s.Harness = pendingtest.New(t, pendingtest.Options{Keys: keys, Config: &cfg, OnPublish: s.rec.Add,
		TipCap: big.NewInt(1), FeeCap: big.NewInt(100 * params.GWei)})
	return s
}

// take returns the messages published since the last take.
func (s *seqSide) take() []sent {
	snaps := s.rec.Take()
	out := make([]sent, len(snaps))
	for i, snap := range snaps {
		out[i] = sent{p: toPayload(snap), snap: snap}
	}
	return out
}

// repSide is a replica: its own store with the same genesis, writer,
// manager and the driver on a manual clock. Canonical blocks reach it by
// import (what the chain follower does), when the test decides.
type repSide struct {
	t       testing.TB
	g       *chain.Genesis
	db      *store.DB
	w       *chain.Writer
	mgr     *pending.Manager
	d       *Driver
	clock   *pending.ManualClock
	metrics *Metrics
}

func newRepSide(t testing.TB, spec []byte, cfg Config) *repSide {
	return newRepSideWith(t, spec, cfg, nil)
}

// newRepSideWith is newRepSide with the driver's Writer wrap(r.w) (the
// writer itself when wrap is nil).
func newRepSideWith(t testing.TB, spec []byte, cfg Config, wrap func(*chain.Writer) Writer) *repSide {
	t.Helper()
	r := &repSide{t: t, clock: pendingtest.NewClock(), metrics: NewMetrics(prometheus.NewRegistry())}
	var g *chain.Genesis
	r.db, g, r.w = chaintest.InitStore(t, spec)
	r.g = g
	r.mgr = pending.NewManager(r.w, g.Config, pending.HeaderParams{}, r.clock, nil)
	var dw Writer = r.w
	if wrap != nil {
		dw = wrap(r.w)
	}
	var err error
	if r.d, err = New(cfg, dw, g.Executor(), r.mgr, r.clock, r.metrics, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	r.d.Start()
	t.Cleanup(r.d.Stop)
	return r
}

// feed hands messages to the driver and waits until they are handled.
func (r *repSide) feed(msgs ...sent) {
	for _, m := range msgs {
		r.d.Payload(m.p, time.Now())
	}
	r.d.Sync()
}

// importFrom imports canonical block n of the sequencer's store.
func (r *repSide) importFrom(s *seqSide, n uint64) {
	r.t.Helper()
	if err := r.w.ImportBlock(chaintest.CanonicalBlock(r.t, s.DB, n)); err != nil {
		r.t.Fatal(err)
	}
	r.d.Sync()
}

func counter(t testing.TB, v *prometheus.CounterVec, label string) float64 {
	t.Helper()
	var m dto.Metric
	if err := v.WithLabelValues(label).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func gauge(t testing.TB, g prometheus.Gauge) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

// view is what `pending` shows on a node: the header and state reads.
type view struct {
	served bool
	header *types.Header
	state  chain.Backend
	close  func()
}

// pendingOf opens what a read of `pending` sees on mgr.
func pendingOf(t testing.TB, mgr *pending.Manager) view {
	t.Helper()
	r, err := mgr.Open()
	if err != nil {
		t.Fatal(err)
	}
	if r.Snapshot == nil {
		st, err := r.View.StateAt(r.Head.Number())
		if err != nil {
			t.Fatal(err)
		}
		return view{header: r.Head.Header(), state: st, close: r.Close}
	}
	st, err := r.PendingState()
	if err != nil {
		t.Fatal(err)
	}
	return view{served: true, header: r.Snapshot.Header(), state: st, close: r.Close}
}

// snapshotState opens the state of the sequencer's snapshot s.
func snapshotState(t testing.TB, w *chain.Writer, s *pending.Snapshot) (chain.Backend, func()) {
	t.Helper()
	_, v, err := w.OpenHead()
	if err != nil {
		t.Fatal(err)
	}
	base, err := v.StateAt(s.Anchor().Number.Uint64())
	if err != nil {
		t.Fatal(err)
	}
	return s.State(base), func() { v.Close() }
}

func balanceOf(t testing.TB, st chain.Backend, a common.Address) (*uint256.Int, uint64) {
	t.Helper()
	acc, err := st.Account(a)
	if err != nil {
		t.Fatal(err)
	}
	if acc == nil {
		return new(uint256.Int), 0
	}
	return acc.Balance, acc.Nonce
}
