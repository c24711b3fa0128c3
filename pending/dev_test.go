package pending

import (
	"context"
	"errors"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/pending/devnet"
	"github.com/tipnode/tipnode/store"
)

func devChain(t *testing.T) (*store.DB, *chain.Genesis, *chain.Writer, []devnet.Account) {
	t.Helper()
	accs, err := devnet.Accounts(devnet.Mnemonic, 1)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := devnet.Genesis(devnet.GenesisConfig{ChainID: 1337, Accounts: []common.Address{accs[0].Address}, Timestamp: 1_700_000_000})
	if err != nil {
		t.Fatal(err)
	}
	db, g, w := chaintest.InitStore(t, spec)
	return db, g, w, accs
}

func devConfig() Config { c := DefaultConfig(); c.Dev = true; return c }

// pendingBalance / pendingNonce / pendingSlot read the published pending
// state.
func pendingAccount(t *testing.T, m *Manager, addr common.Address) *store.Account {
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
	db, g, w1, accs := devChain(t)
	clock := NewManualClock(time.Unix(1_700_000_010, 0))
	n1 := startSeqNodeCfg(t, g, w1, clock, devConfig())
	whale := common.HexToAddress("0x00000000000000000000000000000000000000aa")
	if err := n1.seq.Override(store.PendingOverride{Kind: store.OverrideBalance, Address: whale, Balance: big.NewInt(params.Ether)}); err != nil {
		t.Fatal(err)
	}
	if a := pendingAccount(t, n1.mgr, whale); a == nil || a.Balance.ToBig().Cmp(big.NewInt(params.Ether)) != 0 {
		t.Fatalf("pending balance after setBalance: %+v", a)
	}
	signer := types.LatestSigner(g.Config)
	unsigned := types.NewTx(&types.DynamicFeeTx{ChainID: g.Config.ChainID, Nonce: 0, GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(10 * params.GWei),
		Gas: 21_000, To: &common.Address{0xbe}, Value: big.NewInt(7)})
	itx, err := Impersonate(signer, unsigned, whale)
	if err != nil {
		t.Fatal(err)
	}
	if from, err := types.Sender(DevSigner(signer), itx); err != nil || from != whale {
		t.Fatalf("DevSigner sender %s, %v", from, err)
	}
	if from, err := types.Sender(signer, itx); err == nil && from == whale {
		t.Fatal("the marker signature recovers the impersonated sender with the real signer")
	}
	r, err := n1.seq.SendImpersonated(itx)
	if err != nil || r.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("impersonated send: %+v, %v", r, err)
	}
	// Its nonce is used: the same again is refused, nothing changes.
	if _, err := n1.seq.SendImpersonated(itx); !errors.Is(err, ErrDev) {
		t.Fatalf("replayed impersonated tx: %v, want ErrDev", err)
	}
	ptx, err := types.SignNewTx(accs[0].Key, signer, &types.DynamicFeeTx{ChainID: g.Config.ChainID, Nonce: 0, GasTipCap: big.NewInt(params.GWei),
		GasFeeCap: big.NewInt(10 * params.GWei), Gas: 21_000, To: &common.Address{0xbe}, Value: big.NewInt(1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := n1.pool.Add(ptx); err != nil {
		t.Fatal(err)
	}
	n1.tick(t, 1)
	code := []byte{0x60, 0x2a, 0x60, 0x00, 0x52, 0x60, 0x20, 0x60, 0x00, 0xf3}
	slot, val := common.Hash{1}, common.Hash{2}
	for _, o := range []store.PendingOverride{
		{Kind: store.OverrideNonce, Address: accs[0].Address, Nonce: 5},
		{Kind: store.OverrideCode, Address: common.Address{0xc0}, Code: code},
		{Kind: store.OverrideStorage, Address: common.Address{0xc0}, Slot: slot, Value: val},
	} {
		if err := n1.seq.Override(o); err != nil {
			t.Fatal(err)
		}
	}
	if err := n1.seq.Override(store.PendingOverride{Kind: store.OverrideBalance, Address: whale, Balance: big.NewInt(-1)}); !errors.Is(err, ErrOverride) {
		t.Fatalf("negative balance: %v, want ErrOverride", err)
	}
	before := n1.mgr.Current()
	if len(before.Transactions()) != 2 || pendingAccount(t, n1.mgr, accs[0].Address).Nonce != 5 {
		t.Fatalf("pending block: %d txs, nonce %d", len(before.Transactions()), pendingAccount(t, n1.mgr, accs[0].Address).Nonce)
	}
	// Crash and restart on the same store.
	w1.Stop()
	t.Cleanup(func() { _ = n1.seq.Stop() })
	w2 := chaintest.StartWriter(t, db, g)
	n2 := startSeqNodeCfg(t, g, w2, NewManualClock(clock.Now().Add(time.Hour)), devConfig())
	t.Cleanup(func() { _ = n2.seq.Stop() })
	after := n2.mgr.Current()
	if after.Header().Hash() != before.Header().Hash() || len(after.Transactions()) != 2 ||
		after.Transactions()[0].Hash() != itx.Hash() || after.Receipts()[0].GasUsed != r.GasUsed {
		t.Fatalf("rebuilt pending block differs: %d txs", len(after.Transactions()))
	}
	if a := pendingAccount(t, n2.mgr, accs[0].Address); a.Nonce != 5 {
		t.Fatalf("nonce override lost in the crash: %d", a.Nonce)
	}
	// Sealed: latest has all of it.
	if n, err := n2.seq.Mine(context.Background(), 1, 0); err != nil || n != 1 {
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
	db, g, w, accs := devChain(t)
	clock := NewManualClock(time.Unix(1_700_000_010, 0))
	n := startSeqNodeCfg(t, g, w, clock, devConfig())
	t.Cleanup(func() { _ = n.seq.Stop() })
	ctx := context.Background()
	if err := n.seq.SetNextBlockTimestamp(1_600_000_000); !errors.Is(err, ErrDev) {
		t.Fatalf("timestamp before the latest block: %v", err)
	}
	if err := n.seq.SetNextBlockTimestamp(1_800_000_000); err != nil {
		t.Fatal(err)
	}
	if got := n.mgr.Current().Header().Time; got != 1_800_000_000 {
		t.Fatalf("pending timestamp %d", got)
	}
	id, err := n.seq.Snapshot()
	if err != nil || id != 1 {
		t.Fatalf("snapshot %d, %v", id, err)
	}
	if m, err := n.seq.Mine(ctx, 3, 100); err != nil || m != 3 {
		t.Fatalf("mine 3: %d, %v", m, err)
	}
	for i, want := range []uint64{1_800_000_000, 1_800_000_100, 1_800_000_200} {
		if got := chaintest.CanonicalBlock(t, db, uint64(i+1)).Time(); got != want {
			t.Fatalf("block %d timestamp %d, want %d", i+1, got, want)
		}
	}
	total, err := n.seq.IncreaseTime(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if ts := n.mgr.Current().Header().Time; ts != uint64(clock.Now().Add(total).Unix()) {
		t.Fatalf("pending timestamp %d after increaseTime (offset %s)", ts, total)
	}
	id2, _ := n.seq.Snapshot()
	tx, err := types.SignNewTx(accs[0].Key, types.LatestSigner(g.Config), &types.DynamicFeeTx{ChainID: g.Config.ChainID, Nonce: 0, GasTipCap: big.NewInt(params.GWei),
		GasFeeCap: big.NewInt(100 * params.GWei), Gas: 21_000, To: &common.Address{0xbe}, Value: big.NewInt(1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.pool.Add(tx); err != nil {
		t.Fatal(err)
	}
	if ok, err := n.seq.Revert(id); !ok || err != nil {
		t.Fatalf("revert: %v, %v", ok, err)
	}
	if h := w.Head(); h.Number() != 0 {
		t.Fatalf("head %d after revert", h.Number())
	}
	if cur := n.mgr.Current(); cur.Header().Time != 1_800_000_000 || cur.Header().Number.Uint64() != 1 || n.pool.Len() != 0 {
		t.Fatalf("after revert: pending block %d at %d, pool %d", cur.Header().Number, cur.Header().Time, n.pool.Len())
	}
	for _, id := range []uint64{id, id2, 99} {
		if ok, err := n.seq.Revert(id); ok || err != nil {
			t.Fatalf("revert to dropped/unknown snapshot %d: %v, %v", id, ok, err)
		}
	}
}
