package pending

import (
	"math/big"
	"sync/atomic"
	"testing"

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
	seals, sealsOutside         atomic.Int32
	journaled, journaledOutside atomic.Int32
}

func (w *spareWriter) WithSpareP(fn func()) {
	w.depth.Add(1)
	defer w.depth.Add(-1)
	w.Writer.WithSpareP(fn)
}

func (w *spareWriter) Seal(bw *store.BlockWrite, rebase chain.Rebase) error {
	w.seals.Add(1)
	if w.depth.Load() == 0 {
		w.sealsOutside.Add(1)
	}
	return w.Writer.Seal(bw, rebase)
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
