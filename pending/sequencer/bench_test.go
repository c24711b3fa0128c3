package sequencer

import (
	"crypto/ecdsa"
	"io"
	"math/big"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/chain/devnet"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/store"
)

// BenchmarkPreconfirm100Txs runs one full pre-confirmation interval of the
// sequencer: take 100 pooled transactions (100 senders, each a transfer),
// execute them with the block processor, take the diff, build and publish
// the snapshot, update the pool, on a pending block already holding 10,000
// touched slots.
func BenchmarkPreconfirm100Txs(b *testing.B) { benchPreconfirm(b, DefaultConfig()) }

// BenchmarkPreconfirmRoots is BenchmarkPreconfirm100Txs with the
// pre-confirmations' state roots on (the default: each cut updates the
// pending block's live trie) and off (--stream.roots=off:
// Config.NoPendingRoots, no per-cut trie work), with the CPU time of the
// whole process per interval (cpu-ns/op: user + sys). The seals every 10
// intervals are outside the timer; seal-cpu-ns is their CPU each (with
// roots off the block's whole trie update runs there).
func BenchmarkPreconfirmRoots(b *testing.B) {
	for _, off := range []bool{false, true} {
		name := "on"
		if off {
			name = "off"
		}
		b.Run(name, func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.NoPendingRoots = off
			benchPreconfirm(b, cfg)
		})
	}
}

// processCPU is the process's CPU time so far (user + sys), in ns.
func processCPU(tb testing.TB) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func benchPreconfirm(b *testing.B, cfg Config) {
	keys := make([]*ecdsa.PrivateKey, 100)
	addrs := make([]common.Address, 100)
	for i := range keys {
		keys[i], _ = crypto.GenerateKey()
		addrs[i] = crypto.PubkeyToAddress(keys[i].PublicKey)
	}
	rig := newSeqRigCfg(b, cfg, addrs, nil, true)
	g, seq, pool, mgr := rig.g, rig.seq, rig.pool, rig.mgr
	// touch writes 10,000 slots into the open block through the Builder's
	// dev override (as a transaction would) and cuts them into a layer of
	// their own, unpublished.
	touch := func() {
		contract := common.Address{0xc0}
		for i := 0; i < 10_000; i++ {
			o := store.PendingOverride{Kind: store.OverrideStorage, Address: contract, Slot: common.BigToHash(big.NewInt(int64(i))), Value: common.Hash{1}}
			if err := seq.b.Override(o); err != nil {
				b.Fatal(err)
			}
		}
		if seq.b.Cut(rig.clock.Now()) == nil {
			b.Fatal("the touched slots made no cut")
		}
	}
	touch()
	signer := types.LatestSigner(g.Config)
	nonce := uint64(0)
	to := common.Address{0xbb}
	b.ReportAllocs()
	b.ResetTimer()
	var cpu int64 // the timed sections' CPU
	var sealCPU, seals int64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		// Seal every 10 intervals: 10 x 100 transfers is 21M gas, under
		// the 30M target, so the base fee falls and the fixed fee cap
		// stays valid however long the benchmark runs.
		if i > 0 && i%10 == 0 {
			cpu0 := processCPU(b)
			if err := seq.seal(true); err != nil {
				b.Fatal(err)
			}
			sealCPU += processCPU(b) - cpu0
			seals++
			touch()
		}
		for k, key := range keys {
			tx, _ := types.SignNewTx(key, signer, &types.DynamicFeeTx{ChainID: g.Config.ChainID, Nonce: nonce, GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(10 * params.GWei), Gas: 21000, To: &to, Value: big.NewInt(int64(k + 1))})
			if err := pool.Add(tx); err != nil {
				b.Fatal(err)
			}
		}
		nonce++
		cpu0 := processCPU(b)
		b.StartTimer()
		if err := seq.preconfirm(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cpu += processCPU(b) - cpu0
		if n := len(mgr.Current().NewTransactions()); n != 100 {
			b.Fatalf("pre-confirmed %d of 100", n)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
	if seals > 0 {
		// Untimed: the seal of 10 intervals' 1,000 transfers and the
		// 10,000 slots (with roots off its whole trie update runs here).
		b.ReportMetric(float64(sealCPU)/float64(seals), "seal-cpu-ns")
	}
	if _, ok := mgr.Current().StateRoot(); ok == cfg.NoPendingRoots {
		b.Fatalf("pending roots off %v, the last pre-confirmation has a root %v", cfg.NoPendingRoots, ok)
	}
}

// seqRig is a sequencer on a dev genesis funding accounts, with its block
// opened (not started: tests drive preconfirm and seal).
type seqRig struct {
	g     *chain.Genesis
	w     *chain.Writer
	mgr   *pending.Manager
	pool  *Pool
	seq   *Sequencer
	clock *pending.ManualClock
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
	clock := pending.NewManualClock(time.Unix(1_700_000_010, 0))
	mgr := pending.NewManager(w, g.Config, pending.HeaderParams{}, clock, nil)
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
