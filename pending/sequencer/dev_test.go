package sequencer_test

import (
	"context"
	"errors"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/pendingtest"
	"github.com/tipnode/tipnode/pending/sequencer"
	"github.com/tipnode/tipnode/store"
)

// devNode is a started dev-mode sequencer on a dev chain funding one key.
func devNode(t *testing.T) *pendingtest.Harness {
	t.Helper()
	cfg := sequencer.DefaultConfig()
	cfg.Dev = true
	return pendingtest.New(t, pendingtest.Options{Config: &cfg})
}

// pendingBalance / pendingNonce / pendingSlot read the published pending
// state.
func pendingAccount(t *testing.T, m *pending.Manager, addr common.Address) *store.Account {
	t.Helper()
	_, st, release, err := m.State()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	a, err := st.Account(addr)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestDevOverridesAndImpersonationSurviveCrash: overrides and an
// impersonated transaction, interleaved with a pooled one, are visible on
// pending at once, journaled in order, rebuilt identically after a crash,
// and sealed into the block's state.
func TestDevOverridesAndImpersonationSurviveCrash(t *testing.T) {
	n1 := devNode(t)
	g, accs := n1.Genesis, n1.Accs
	whale := common.HexToAddress("0x00000000000000000000000000000000000000aa")
	if err := n1.Seq.Override(store.PendingOverride{Kind: store.OverrideBalance, Address: whale, Balance: big.NewInt(params.Ether)}); err != nil {
		t.Fatal(err)
	}
	if a := pendingAccount(t, n1.Mgr, whale); a == nil || a.Balance.ToBig().Cmp(big.NewInt(params.Ether)) != 0 {
		t.Fatalf("pending balance after setBalance: %+v", a)
	}
	signer := types.LatestSigner(g.Config)
	unsigned := types.NewTx(&types.DynamicFeeTx{ChainID: g.Config.ChainID, Nonce: 0, GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(10 * params.GWei),
		Gas: 21_000, To: &common.Address{0xbe}, Value: big.NewInt(7)})
	itx, err := pending.Impersonate(signer, unsigned, whale)
	if err != nil {
		t.Fatal(err)
	}
	if from, err := types.Sender(pending.DevSigner(signer), itx); err != nil || from != whale {
		t.Fatalf("DevSigner sender %s, %v", from, err)
	}
	if from, err := types.Sender(signer, itx); err == nil && from == whale {
		t.Fatal("the marker signature recovers the impersonated sender with the real signer")
	}
	r, err := n1.Seq.SendImpersonated(itx)
	if err != nil || r.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("impersonated send: %+v, %v", r, err)
	}
	// Its nonce is used: the same again is refused, nothing changes.
	if _, err := n1.Seq.SendImpersonated(itx); !errors.Is(err, sequencer.ErrDev) {
		t.Fatalf("replayed impersonated tx: %v, want ErrDev", err)
	}
	n1.Send(0, &common.Address{0xbe}, big.NewInt(1), 21_000, nil)
	n1.Tick(1)
	code := []byte{0x60, 0x2a, 0x60, 0x00, 0x52, 0x60, 0x20, 0x60, 0x00, 0xf3}
	slot, val := common.Hash{1}, common.Hash{2}
	for _, o := range []store.PendingOverride{
		{Kind: store.OverrideNonce, Address: accs[0].Address, Nonce: 5},
		{Kind: store.OverrideCode, Address: common.Address{0xc0}, Code: code},
		{Kind: store.OverrideStorage, Address: common.Address{0xc0}, Slot: slot, Value: val},
	} {
		if err := n1.Seq.Override(o); err != nil {
			t.Fatal(err)
		}
	}
	if err := n1.Seq.Override(store.PendingOverride{Kind: store.OverrideBalance, Address: whale, Balance: big.NewInt(-1)}); !errors.Is(err, pending.ErrOverride) {
		t.Fatalf("negative balance: %v, want ErrOverride", err)
	}
	before := n1.Mgr.Current()
	if len(before.Transactions()) != 2 || pendingAccount(t, n1.Mgr, accs[0].Address).Nonce != 5 {
		t.Fatalf("pending block: %d txs, nonce %d", len(before.Transactions()), pendingAccount(t, n1.Mgr, accs[0].Address).Nonce)
	}
	// Crash and restart on the same store.
	n1.Crash()
	n2 := n1.Restart(pending.NewManualClock(n1.Clock.Now().Add(time.Hour)), nil)
	w2 := n2.Writer
	after := n2.Mgr.Current()
	if after.Header().Hash() != before.Header().Hash() || len(after.Transactions()) != 2 ||
		after.Transactions()[0].Hash() != itx.Hash() || after.Receipts()[0].GasUsed != r.GasUsed {
		t.Fatalf("rebuilt pending block differs: %d txs", len(after.Transactions()))
	}
	if a := pendingAccount(t, n2.Mgr, accs[0].Address); a.Nonce != 5 {
		t.Fatalf("nonce override lost in the crash: %d", a.Nonce)
	}
	// Sealed: latest has all of it.
	if n, err := n2.Seq.Mine(context.Background(), 1, 0); err != nil || n != 1 {
		t.Fatalf("mine: %d, %v", n, err)
	}
	h, view, err := w2.OpenHead()
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	st, err := view.StateAt(h.Number())
	if err != nil {
		t.Fatal(err)
	}
	wa, _ := st.Account(whale)
	ca, _ := st.Account(common.Address{0xc0})
	sv, _ := st.Storage(common.Address{0xc0}, slot)
	aa, _ := st.Account(accs[0].Address)
	if h.Number() != 1 || wa == nil || wa.Nonce != 1 || ca == nil || sv != val || aa.Nonce != 5 {
		t.Fatalf("sealed block %d: whale %+v, contract %+v, slot %s, dev nonce %+v", h.Number(), wa, ca, sv, aa)
	}
	if c, _ := st.Code(ca.CodeHash); string(c) != string(code) {
		t.Fatalf("sealed code %x", c)
	}
}

// TestDevTimeMineSnapshotRevert: timestamps follow evm_setNextBlockTimestamp
// and evm_increaseTime; Mine seals N blocks interval seconds apart; Revert
// unwinds to the snapshot's block, restores its pending block, empties the
// pool and forgets later snapshots.
func TestDevTimeMineSnapshotRevert(t *testing.T) {
	n := devNode(t)
	db, g, w, accs, clock := n.DB, n.Genesis, n.Writer, n.Accs, n.Clock
	ctx := context.Background()
	if err := n.Seq.SetNextBlockTimestamp(1_600_000_000); !errors.Is(err, sequencer.ErrDev) {
		t.Fatalf("timestamp before the latest block: %v", err)
	}
	if err := n.Seq.SetNextBlockTimestamp(1_800_000_000); err != nil {
		t.Fatal(err)
	}
	if got := n.Mgr.Current().Header().Time; got != 1_800_000_000 {
		t.Fatalf("pending timestamp %d", got)
	}
	id, err := n.Seq.Snapshot()
	if err != nil || id != 1 {
		t.Fatalf("snapshot %d, %v", id, err)
	}
	if m, err := n.Seq.Mine(ctx, 3, 100); err != nil || m != 3 {
		t.Fatalf("mine 3: %d, %v", m, err)
	}
	for i, want := range []uint64{1_800_000_000, 1_800_000_100, 1_800_000_200} {
		if got := chaintest.CanonicalBlock(t, db, uint64(i+1)).Time(); got != want {
			t.Fatalf("block %d timestamp %d, want %d", i+1, got, want)
		}
	}
	total, err := n.Seq.IncreaseTime(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if ts := n.Mgr.Current().Header().Time; ts != uint64(clock.Now().Add(total).Unix()) {
		t.Fatalf("pending timestamp %d after increaseTime (offset %s)", ts, total)
	}
	id2, _ := n.Seq.Snapshot()
	tx := pendingtest.SignTx(t, n.Signer, accs[0].Key, &types.DynamicFeeTx{ChainID: g.Config.ChainID, Nonce: 0, GasTipCap: big.NewInt(params.GWei),
		GasFeeCap: big.NewInt(100 * params.GWei), Gas: 21_000, To: &common.Address{0xbe}, Value: big.NewInt(1)})
	if err := n.Pool.Add(tx); err != nil {
		t.Fatal(err)
	}
	if ok, err := n.Seq.Revert(id); !ok || err != nil {
		t.Fatalf("revert: %v, %v", ok, err)
	}
	if h := w.Head(); h.Number() != 0 {
		t.Fatalf("head %d after revert", h.Number())
	}
	if cur := n.Mgr.Current(); cur.Header().Time != 1_800_000_000 || cur.Header().Number.Uint64() != 1 || n.Pool.Len() != 0 {
		t.Fatalf("after revert: pending block %d at %d, pool %d", cur.Header().Number, cur.Header().Time, n.Pool.Len())
	}
	for _, id := range []uint64{id, id2, 99} {
		if ok, err := n.Seq.Revert(id); ok || err != nil {
			t.Fatalf("revert to dropped/unknown snapshot %d: %v, %v", id, ok, err)
		}
	}
}
