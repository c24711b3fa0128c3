package sequencer

import (
	"fmt"
	"math/big"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/store"
)

// spareWriter counts the writes a Writer is asked for outside a spare-P
// section.
type spareWriter struct {
	Writer
	depth                       atomic.Int32
	sections                    atomic.Int32 // outermost WithSpareP calls
	seals, sealsOutside         atomic.Int32
	sealsYielding               atomic.Int32 // seals given a yield to the network
	journaled, journaledOutside atomic.Int32
}

func (w *spareWriter) WithSpareP(fn func()) {
	if w.depth.Add(1) == 1 {
		w.sections.Add(1)
	}
	defer w.depth.Add(-1)
	w.Writer.WithSpareP(fn)
}

func (w *spareWriter) Seal(bw *store.BlockWrite, rebase chain.Rebase, yield func()) error {
	w.seals.Add(1)
	if w.depth.Load() == 0 {
		w.sealsOutside.Add(1)
	}
	if yield != nil {
		w.sealsYielding.Add(1)
	}
	return w.Writer.Seal(bw, rebase, yield)
}

func (w *spareWriter) JournalPendingEntries(a store.PendingAppend) error {
	w.journaled.Add(1)
	if w.depth.Load() == 0 {
		w.journaledOutside.Add(1)
	}
	return w.Writer.JournalPendingEntries(a)
}

// TestTickWithSpareP: a pre-confirmation (its execution, snapshot and
// journal write) and a seal (building the block and writing it) run in a
// spare-P section, so that a node on one core keeps polling requests
// while the sequencer works (chain.Writer.WithSpareP).
func TestTickWithSpareP(t *testing.T) {
	key, _ := crypto.GenerateKey()
	var w *spareWriter
	rig := newSeqRig(t, []common.Address{crypto.PubkeyToAddress(key.PublicKey)}, func(cw *chain.Writer) Writer {
		w = &spareWriter{Writer: cw}
		return w
	})
	g, seq, pool := rig.g, rig.seq, rig.pool
	signer := types.LatestSigner(g.Config)
	for nonce := uint64(0); nonce < 3; nonce++ {
		tx, _ := types.SignNewTx(key, signer, &types.DynamicFeeTx{ChainID: g.Config.ChainID, Nonce: nonce, GasTipCap: big.NewInt(1),
			GasFeeCap: big.NewInt(10 * params.GWei), Gas: 21000, To: &common.Address{0xbb}, Value: big.NewInt(1)})
		if err := pool.Add(tx); err != nil {
			t.Fatal(err)
		}
		if err := seq.preconfirm(); err != nil {
			t.Fatal(err)
		}
	}
	if err := seq.seal(true); err != nil {
		t.Fatal(err)
	}
	if w.journaled.Load() == 0 || w.seals.Load() != 1 {
		t.Fatalf("%d journal writes and %d seals, want some and 1", w.journaled.Load(), w.seals.Load())
	}
	if n := w.journaledOutside.Load(); n != 0 {
		t.Errorf("%d of %d pre-confirmation journal writes outside a spare-P section", n, w.journaled.Load())
	}
	if n := w.sealsOutside.Load(); n != 0 {
		t.Errorf("the seal ran outside a spare-P section")
	}
}

// TestSectionsPerTick drives the loop on one P: a step runs outside any
// spare-P section. When the node needs a spare P (busy: an EVM execution
// runs), a pre-confirmation is one section, and so is a block's last
// pre-confirmation together with its seal (one raise of GOMAXPROCS, not
// two, just before the swap). When it does not, pre-confirmations and the
// seal run on the loop's goroutine, journal and block writes included,
// and the seal hands the writer its yield to the network.
func TestSectionsPerTick(t *testing.T) {
	for _, busy := range []bool{true, false} {
		t.Run(fmt.Sprintf("busy=%v", busy), func(t *testing.T) { sectionsPerTick(t, busy) })
	}
}

func sectionsPerTick(t *testing.T, busy bool) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	key, _ := crypto.GenerateKey()
	var w *spareWriter
	cfg := DefaultConfig()
	cfg.Steps, cfg.BlockTime = 4, 400*time.Millisecond // ticks every 50 ms, a seal every other interval
	rig := newSeqRigCfg(t, cfg, []common.Address{crypto.PubkeyToAddress(key.PublicKey)}, func(cw *chain.Writer) Writer {
		cw.SetSpareWhen(func() bool { return busy })
		w = &spareWriter{Writer: cw}
		return w
	}, false)
	if err := rig.seq.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rig.seq.Stop() })
	signer := types.LatestSigner(rig.g.Config)
	send := func(nonce uint64) {
		tx, _ := types.SignNewTx(key, signer, &types.DynamicFeeTx{ChainID: rig.g.Config.ChainID, Nonce: nonce, GasTipCap: big.NewInt(1),
			GasFeeCap: big.NewInt(10 * params.GWei), Gas: 21000, To: &common.Address{0xbb}, Value: big.NewInt(1)})
		if err := rig.pool.Add(tx); err != nil {
			t.Fatal(err)
		}
	}
	base := w.sections.Load() // Start's
	step := func(want int32, what string) {
		t.Helper()
		rig.clock.Advance(50 * time.Millisecond)
		rig.seq.Sync()
		if got := w.sections.Load() - base; got != want {
			t.Fatalf("%s: %d spare-P sections, want %d", what, got, want)
		}
	}
	preconf := int32(1) // sections a pre-confirmation takes (with its seal, when there is one); counts are cumulative
	if !busy {
		preconf = 0
	}
	send(0)
	step(0, "a step")
	step(0, "an idle step")
	step(0, "an idle step")
	step(preconf, "the first pre-confirmation")
	send(1)
	step(preconf, "a step")
	step(preconf, "an idle step")
	step(preconf, "an idle step")
	step(2*preconf, "the last pre-confirmation and the seal")
	outside, yielding := int32(0), int32(0)
	if !busy {
		outside, yielding = 1, 1
	}
	if w.seals.Load() != 1 || w.sealsOutside.Load() != outside || w.sealsYielding.Load() != yielding {
		t.Fatalf("%d seals (%d outside a section, %d given a yield); want 1, %d, %d", w.seals.Load(), w.sealsOutside.Load(), w.sealsYielding.Load(), outside, yielding)
	}
	if busy && w.journaledOutside.Load() != 0 {
		t.Fatalf("%d journal writes outside a section while busy", w.journaledOutside.Load())
	}
	if !busy && w.journaledOutside.Load() != w.journaled.Load() {
		t.Fatalf("%d of %d journal writes outside a section while idle", w.journaledOutside.Load(), w.journaled.Load())
	}
}
