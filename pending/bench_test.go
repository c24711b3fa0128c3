package pending

import (
	"crypto/ecdsa"
	"io"
	"math/big"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/chain/devnet"
	"github.com/tipnode/tipnode/store"
)

// bigDiff touches n slots spread over n/100 contracts.
func bigDiff(n int) *store.StateDiff {
	d := store.NewStateDiff()
	for i := 0; i < n; i++ {
		a := common.Address{0xc0, byte(i / 100 >> 8), byte(i / 100)}
		if d.Storage[a] == nil {
			d.Storage[a] = make(map[common.Hash]common.Hash)
			d.Accounts[a] = &store.Account{Nonce: 1, Balance: uint256.NewInt(0), CodeHash: types.EmptyCodeHash}
		}
		d.Storage[a][common.BigToHash(big.NewInt(int64(i)))] = common.Hash{1}
	}
	return d
}

// txDiff is what 100 storage-writing transactions change: 100 senders, one
// slot each in one contract, the coinbase.
func txDiff(round int) (*store.StateDiff, map[common.Hash]int) {
	d := store.NewStateDiff()
	txs := make(map[common.Hash]int, 100)
	target := common.Address{0xee}
	d.Storage[target] = make(map[common.Hash]common.Hash, 100)
	for i := 0; i < 100; i++ {
		d.Accounts[common.Address{0xa0, byte(i)}] = &store.Account{Nonce: uint64(round), Balance: uint256.NewInt(1e18), CodeHash: types.EmptyCodeHash}
		d.Storage[target][common.BigToHash(big.NewInt(int64(round*100+i)))] = common.Hash{2}
		txs[common.Hash{byte(round), byte(i)}] = round*100 + i
	}
	d.Accounts[common.Address{}] = &store.Account{Balance: uint256.NewInt(uint64(round)), CodeHash: types.EmptyCodeHash}
	return d, txs
}

// BenchmarkSnapshotSwap100Txs: build a snapshot from the diff of 100 new
// transactions on a pending state already holding 10,000 touched slots, and
// swap it in. The pending block restarts every 10 pre-confirmations.
func BenchmarkSnapshotSwap100Txs(b *testing.B) {
	base := pushLayer(nil, bigDiff(10_000), nil)
	const perBlock = 10
	diffs := make([]*store.StateDiff, perBlock)
	txmaps := make([]map[common.Hash]int, perBlock)
	for i := range diffs {
		diffs[i], txmaps[i] = txDiff(i)
	}
	header := &types.Header{Number: big.NewInt(1)}
	var cur atomic.Pointer[Snapshot]
	prev := &Snapshot{layers: base, header: header}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := i % perBlock
		if k == 0 {
			prev = &Snapshot{layers: base, header: header}
		}
		s := &Snapshot{
			anchor: header, header: types.CopyHeader(header), index: prev.index + 1,
			layers: pushLayer(prev.layers, diffs[k], txmaps[k]), created: time.Time{},
		}
		cur.Store(s)
		prev = s
	}
}

// BenchmarkPendingStorageRead reads a slot through a snapshot of a block
// with ten pre-confirmations over 10,000 touched slots: a hit in the oldest
// (largest) layer, and a miss that falls through every layer to the base.
func BenchmarkPendingStorageRead(b *testing.B) {
	l := pushLayer(nil, bigDiff(10_000), nil)
	for i := 0; i < 10; i++ {
		d, txs := txDiff(i)
		l = pushLayer(l, d, txs)
	}
	o := (&Snapshot{layers: l}).State(nilStore{})
	hit := common.Address{0xc0, 0, 50}
	slot := common.BigToHash(big.NewInt(5050))
	b.Run("hit", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if v, _ := o.Storage(hit, slot); v != (common.Hash{1}) {
				b.Fatal("wrong value")
			}
		}
	})
	b.Run("miss", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			o.Storage(common.Address{0xdd}, slot)
		}
	})
	b.ReportMetric(float64(l.depth), "layers")
}

type nilStore struct{}

func (nilStore) Account(common.Address) (*store.Account, error)           { return nil, nil }
func (nilStore) Storage(common.Address, common.Hash) (common.Hash, error) { return common.Hash{}, nil }
func (nilStore) Code(common.Hash) ([]byte, error)                         { return nil, nil }

// BenchmarkPreconfirm100Txs runs one full pre-confirmation interval of the
// sequencer: take 100 pooled transactions (100 senders, each a transfer),
// execute them with the block processor, take the diff, build and publish
// the snapshot, update the pool, on a pending block already holding 10,000
// touched slots.
func BenchmarkPreconfirm100Txs(b *testing.B) {
	keys := make([]*ecdsa.PrivateKey, 100)
	addrs := make([]common.Address, 100)
	for i := range keys {
		keys[i], _ = crypto.GenerateKey()
		addrs[i] = crypto.PubkeyToAddress(keys[i].PublicKey)
	}
	rig := newSeqRig(b, addrs, nil)
	g, seq, pool, mgr := rig.g, rig.seq, rig.pool, rig.mgr
	touch := func() {
		contract := common.Address{0xc0}
		bl := seq.b
		for i := 0; i < 10_000; i++ {
			bl.state.SetState(contract, common.BigToHash(big.NewInt(int64(i))), common.Hash{1})
		}
		bl.state.Finalise(g.Config.Rules(bl.base.Number, true, bl.base.Time))
		bl.snap = &Snapshot{head: bl.snap.head, anchor: bl.snap.anchor, anchorHash: bl.snap.anchorHash, header: bl.pendingHeader(), layers: pushLayer(bl.snap.layers, bl.state.TakeDiff(), nil)}
	}
	touch()
	signer := types.LatestSigner(g.Config)
	nonce := uint64(0)
	to := common.Address{0xbb}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		// Seal every 10 intervals: 10 x 100 transfers is 21M gas, under
		// the 30M target, so the base fee falls and the fixed fee cap
		// stays valid however long the benchmark runs.
		if i > 0 && i%10 == 0 {
			if err := seq.seal(true); err != nil {
				b.Fatal(err)
			}
			touch()
		}
		for k, key := range keys {
			tx, _ := types.SignNewTx(key, signer, &types.DynamicFeeTx{ChainID: g.Config.ChainID, Nonce: nonce, GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(10 * params.GWei), Gas: 21000, To: &to, Value: big.NewInt(int64(k + 1))})
			if err := pool.Add(tx); err != nil {
				b.Fatal(err)
			}
		}
		nonce++
		b.StartTimer()
		if err := seq.preconfirm(); err != nil {
			b.Fatal(err)
		}
		if n := len(mgr.Current().NewTransactions()); n != 100 {
			b.Fatalf("pre-confirmed %d of 100", n)
		}
	}
}

// seqRig is a sequencer on a dev genesis funding accounts, with its block
// opened (not started: tests drive preconfirm and seal).
type seqRig struct {
	g     *chain.Genesis
	w     *chain.Writer
	mgr   *Manager
	pool  *Pool
	seq   *Sequencer
	clock *ManualClock
}

// newSeqRig builds a seqRig; the sequencer writes through wrap(w) when
// wrap is not nil.
func newSeqRig(tb testing.TB, accounts []common.Address, wrap func(*chain.Writer) Writer) *seqRig {
	tb.Helper()
	return newSeqRigCfg(tb, DefaultConfig(), accounts, wrap, true)
}

// newSeqRigCfg is newSeqRig with the sequencer's configuration, opening
// its block only if open (else Start opens it).
func newSeqRigCfg(tb testing.TB, cfg Config, accounts []common.Address, wrap func(*chain.Writer) Writer, open bool) *seqRig {
	tb.Helper()
	spec, err := devnet.Genesis(devnet.GenesisConfig{ChainID: 1337, Accounts: accounts, Timestamp: 1_700_000_000, GasLimit: 60_000_000})
	if err != nil {
		tb.Fatal(err)
	}
	g, err := chain.ParseGenesis(spec)
	if err != nil {
		tb.Fatal(err)
	}
	db := chaintest.OpenStore(tb)
	if err := chain.InitGenesis(db, g); err != nil {
		tb.Fatal(err)
	}
	log := zerolog.New(io.Discard)
	w := chaintest.StartWriter(tb, db, g)
	var sw Writer = w
	if wrap != nil {
		sw = wrap(w)
	}
	clock := NewManualClock(time.Unix(1_700_000_010, 0))
	mgr := NewManager(w, g.Config, HeaderParams{}, clock, nil)
	pool, _ := NewPool(DefaultPoolConfig(), g.Config, mgr, clock, nil, log)
	seq, err := New(cfg, sw, chain.NewExecutor(g.Config), pool, mgr, clock, nil, log)
	if err != nil {
		tb.Fatal(err)
	}
	if open {
		if err := seq.openBlock(w.Head()); err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { seq.b.Close() })
	}
	return &seqRig{g: g, w: w, mgr: mgr, pool: pool, seq: seq, clock: clock}
}
