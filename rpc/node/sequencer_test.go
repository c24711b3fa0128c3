package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/pending/pendingtest"
	"github.com/tipnode/tipnode/store/chaintypes"

	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/sequencer"
	"github.com/tipnode/tipnode/store"
)

// A transfer and a contract storage write sent between two swaps are
// readable on pending right after the next swap, and on latest only after
// the seal; NUMBER/TIMESTAMP on pending are the pending block's.
func TestPendingVisibleAfterSwapLatestAfterSeal(t *testing.T) {
	e := newEnv(t)
	ec := e.client()
	ctx := context.Background()
	deployer := e.Accs[0].Address
	contract := crypto.CreateAddress(deployer, 0)
	recipient := common.HexToAddress("0x00000000000000000000000000000000000b0b01")
	oneEth := big.NewInt(params.Ether)

	// Interval 1: deploy.
	if err := ec.SendTransaction(ctx, e.Tx(0, nil, nil, 200_000, pendingtest.InitCode(pairRuntime))); err != nil {
		t.Fatal(err)
	}
	if code, err := ec.PendingCodeAt(ctx, contract); err != nil || len(code) != 0 {
		t.Fatalf("pending code before the swap: %x, %v (want none, no error)", code, err)
	}
	e.Tick(1)
	if code, err := ec.PendingCodeAt(ctx, contract); err != nil || !bytes.Equal(code, pairRuntime) {
		t.Fatalf("pending code %x, %v", code, err)
	}
	if code, err := ec.CodeAt(ctx, contract, nil); err != nil || len(code) != 0 {
		t.Fatalf("latest code %x, %v", code, err)
	}

	// Between this swap and the next: a transfer and a storage write.
	val := common.HexToHash("0x1234")
	if err := ec.SendTransaction(ctx, e.Tx(1, &recipient, oneEth, 21_000, nil)); err != nil {
		t.Fatal(err)
	}
	if err := ec.SendTransaction(ctx, e.Tx(0, &contract, nil, 100_000, val[:])); err != nil {
		t.Fatal(err)
	}
	if bal, err := ec.PendingBalanceAt(ctx, recipient); err != nil || bal.Sign() != 0 {
		t.Fatalf("pending balance before the swap: %v, %v (want 0, no error)", bal, err)
	}
	e.Tick(1)
	snap := e.Mgr.Current()
	if snap.Index() != 2 || len(snap.Transactions()) != 3 {
		t.Fatalf("snapshot index %d with %d txs, want 2 / 3", snap.Index(), len(snap.Transactions()))
	}
	if bal, err := ec.PendingBalanceAt(ctx, recipient); err != nil || bal.Cmp(oneEth) != 0 {
		t.Fatalf("pending balance %v, %v", bal, err)
	}
	if n, err := ec.PendingNonceAt(ctx, e.Accs[1].Address); err != nil || n != 1 {
		t.Fatalf("pending nonce %d, %v", n, err)
	}
	if v, err := ec.PendingStorageAt(ctx, contract, common.Hash{}); err != nil || common.BytesToHash(v) != val {
		t.Fatalf("pending slot 0 %x, %v", v, err)
	}
	out, err := ec.PendingCallContract(ctx, ethereum.CallMsg{To: &contract})
	if err != nil || len(out) != 64 || common.BytesToHash(out[:32]) != val || common.BytesToHash(out[32:]) != val {
		t.Fatalf("pending eth_call %x, %v", out, err)
	}
	out, err = ec.PendingCallContract(ctx, ethereum.CallMsg{Data: numberTimeInit})
	if err != nil || len(out) != 64 {
		t.Fatalf("pending NUMBER/TIMESTAMP call: %x, %v", out, err)
	}
	if n, ts := new(big.Int).SetBytes(out[:32]), new(big.Int).SetBytes(out[32:]).Uint64(); n.Cmp(snap.Header().Number) != 0 || ts != snap.Header().Time {
		t.Fatalf("pending NUMBER %d TIMESTAMP %d, pending header %d / %d", n, ts, snap.Header().Number, snap.Header().Time)
	}
	// latest still sees none of it.
	if bal, err := ec.BalanceAt(ctx, recipient, nil); err != nil || bal.Sign() != 0 {
		t.Fatalf("latest balance before the seal: %v, %v (want 0, no error)", bal, err)
	}
	if v, err := ec.StorageAt(ctx, contract, common.Hash{}, nil); err != nil || len(v) != 32 || common.BytesToHash(v) != (common.Hash{}) {
		t.Fatalf("latest slot 0 before the seal: %x, %v (want a zero word, no error)", v, err)
	}
	if n, err := ec.BlockNumber(ctx); err != nil || n != 0 {
		t.Fatalf("latest %d before the seal, %v", n, err)
	}

	e.Seal()
	if n, err := ec.BlockNumber(ctx); err != nil || n != 1 {
		t.Fatalf("latest %d after the seal, %v", n, err)
	}
	if bal, err := ec.BalanceAt(ctx, recipient, nil); err != nil || bal.Cmp(oneEth) != 0 {
		t.Fatalf("latest balance %v after the seal, %v", bal, err)
	}
	if v, err := ec.StorageAt(ctx, contract, common.Hash{}, nil); err != nil || common.BytesToHash(v) != val {
		t.Fatalf("latest slot 0 %x after the seal, %v", v, err)
	}
	if code, err := ec.CodeAt(ctx, contract, nil); err != nil || !bytes.Equal(code, pairRuntime) {
		t.Fatalf("latest code after the seal: %x, %v", code, err)
	}
	blk, err := ec.BlockByNumber(ctx, big.NewInt(1))
	if err != nil {
		t.Fatal(err)
	}
	if blk.Time() != snap.Header().Time || blk.BaseFee().Cmp(snap.Header().BaseFee) != 0 || len(blk.Transactions()) != 3 {
		t.Fatalf("sealed block time %d basefee %v txs %d, pending showed %d / %v / 3", blk.Time(), blk.BaseFee(), len(blk.Transactions()), snap.Header().Time, snap.Header().BaseFee)
	}
	// The new pending block sits on block 1 and starts empty.
	if cur := e.Mgr.Current(); cur.Anchor().Hash() != blk.Hash() || cur.Index() != 0 || len(cur.Transactions()) != 0 {
		t.Fatalf("after seal: anchor %s index %d txs %d", cur.Anchor().Hash(), cur.Index(), len(cur.Transactions()))
	}
	// Empty blocks are sealed on time too.
	e.Seal()
	if n, err := ec.BlockNumber(ctx); err != nil || n != 2 {
		t.Fatalf("empty block not sealed: latest %d, %v", n, err)
	}
	// An interval without transactions publishes nothing.
	before := e.Mgr.Current()
	e.Tick(1)
	if e.Mgr.Current() != before {
		t.Fatal("an empty interval published a snapshot")
	}
}

// After every seal the store's block equals what pending showed: same
// transactions, receipts (consensus fields), header totals, and state read
// at that height over RPC.
func TestSealMatchesPending(t *testing.T) {
	e := newEnv(t)
	ec := e.client()
	ctx := context.Background()
	contract := crypto.CreateAddress(e.Accs[0].Address, 0)
	if err := e.Pool.Add(e.Tx(0, nil, nil, 200_000, pendingtest.InitCode(pairRuntime))); err != nil {
		t.Fatal(err)
	}
	e.Tick(1)
	watch := []common.Address{contract, e.Accs[0].Address, e.Accs[1].Address, e.Accs[2].Address, {0xb0}}
	for round := 0; round < 3; round++ {
		for j := 0; j < 3; j++ {
			v := common.BigToHash(big.NewInt(int64(round*10 + j + 1)))
			if err := e.Pool.Add(e.Tx(0, &contract, nil, 100_000, v[:])); err != nil {
				t.Fatal(err)
			}
			if err := e.Pool.Add(e.Tx(1+j%2, &common.Address{0xb0}, big.NewInt(int64(1000+j)), 21_000, nil)); err != nil {
				t.Fatal(err)
			}
			e.Tick(1)
		}
		snap := e.Mgr.Current()
		type acct struct {
			bal   *big.Int
			nonce uint64
			s0    []byte
		}
		seen := make(map[common.Address]acct)
		for _, a := range watch {
			bal, err1 := ec.PendingBalanceAt(ctx, a)
			nonce, err2 := ec.PendingNonceAt(ctx, a)
			s0, err3 := ec.PendingStorageAt(ctx, a, common.Hash{})
			if err := errors.Join(err1, err2, err3); err != nil {
				t.Fatal(err)
			}
			seen[a] = acct{bal, nonce, s0}
		}
		e.Seal()
		num := snap.Header().Number
		blk, err := ec.BlockByNumber(ctx, num)
		if err != nil {
			t.Fatal(err)
		}
		if blk.ParentHash() != snap.Anchor().Hash() || blk.GasUsed() != snap.Header().GasUsed || blk.Bloom() != snap.Header().Bloom || blk.Time() != snap.Header().Time {
			t.Fatalf("block %d header differs from the pending header", num)
		}
		if len(blk.Transactions()) != len(snap.Transactions()) {
			t.Fatalf("block %d: %d txs, pending showed %d", num, len(blk.Transactions()), len(snap.Transactions()))
		}
		view, err := e.DB.View()
		if err != nil {
			t.Fatal(err)
		}
		stored, err := view.Receipts(num.Uint64(), blk.Hash())
		view.Close()
		if err != nil {
			t.Fatal(err)
		}
		for i, tx := range blk.Transactions() {
			if tx.Hash() != snap.Transactions()[i].Hash() {
				t.Fatalf("block %d tx %d: %s, pending showed %s", num, i, tx.Hash(), snap.Transactions()[i].Hash())
			}
			pr, sr := snap.Receipts()[i], stored[i]
			if pr.Status != sr.Status || pr.CumulativeGasUsed != sr.CumulativeGasUsed || len(pr.Logs) != len(sr.Logs) || pr.Bloom != types.CreateBloom(&sr.Receipt) {
				t.Fatalf("block %d receipt %d differs from pending: %d/%d %d/%d %d/%d %v", num, i, pr.Status, sr.Status, pr.CumulativeGasUsed, sr.CumulativeGasUsed, len(pr.Logs), len(sr.Logs), pr.Bloom == types.CreateBloom(&sr.Receipt))
			}
			rc, err := ec.TransactionReceipt(ctx, tx.Hash())
			if err != nil || rc.BlockHash != blk.Hash() || rc.GasUsed != pr.GasUsed {
				t.Fatalf("receipt of %s: %+v, %v", tx.Hash(), rc, err)
			}
		}
		for _, a := range watch {
			bal, err1 := ec.BalanceAt(ctx, a, num)
			nonce, err2 := ec.NonceAt(ctx, a, num)
			s0, err3 := ec.StorageAt(ctx, a, common.Hash{}, num)
			if err := errors.Join(err1, err2, err3); err != nil {
				t.Fatal(err)
			}
			want := seen[a]
			if bal.Cmp(want.bal) != 0 || nonce != want.nonce || !bytes.Equal(s0, want.s0) {
				t.Fatalf("block %d, %s: balance/nonce/slot0 %v/%d/%x, pending showed %v/%d/%x", num, a, bal, nonce, s0, want.bal, want.nonce, want.s0)
			}
		}
	}
}

// Many concurrent readers of pending never see the two slots that every
// transaction writes together disagree, and never get an error, while the
// sequencer swaps every interval under a stream of transactions.
func TestPendingReadsConsistentUnderSwaps(t *testing.T) {
	e := newEnv(t)
	contract := crypto.CreateAddress(e.Accs[0].Address, 0)
	if err := e.Pool.Add(e.Tx(0, nil, nil, 200_000, pendingtest.InitCode(pairRuntime))); err != nil {
		t.Fatal(err)
	}
	e.Tick(1)
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":%q},"pending"]}`, contract.Hex())
	var (
		stop    atomic.Bool
		reads   atomic.Int64
		nonzero atomic.Int64
		wg      sync.WaitGroup
		errs    = make(chan error, 16)
	)
	client := &http.Client{}
	for r := 0; r < 8; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				resp, err := client.Post(e.url, "application/json", strings.NewReader(body))
				if err != nil {
					errs <- err
					return
				}
				var out struct {
					Result hexutil.Bytes   `json:"result"`
					Error  json.RawMessage `json:"error"`
				}
				err = json.NewDecoder(resp.Body).Decode(&out)
				resp.Body.Close()
				if err != nil || out.Error != nil || len(out.Result) != 64 {
					errs <- fmt.Errorf("read: %v %s %x", err, out.Error, out.Result)
					return
				}
				if !bytes.Equal(out.Result[:32], out.Result[32:]) {
					errs <- fmt.Errorf("torn read: slot0 %x slot1 %x", out.Result[:32], out.Result[32:])
					return
				}
				if out.Result[31] != 0 {
					nonzero.Add(1)
				}
				reads.Add(1)
			}
		}()
	}
	v := 0
	for interval := 0; interval < 45; interval++ {
		for k := 0; k < 4; k++ {
			v++
			w := common.BigToHash(big.NewInt(int64(v)))
			if err := e.Pool.Add(e.Tx(1+k, &contract, nil, 100_000, w[:])); err != nil {
				t.Fatal(err)
			}
		}
		e.Tick(1)
		// Let the readers overlap every snapshot (no wall-clock sleep: wait
		// for progress, bounded).
		target := reads.Load() + 8
		for spin := 0; reads.Load() < target && spin < 1_000_000 && len(errs) == 0; spin++ {
			runtime.Gosched()
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if reads.Load() == 0 || nonzero.Load() == 0 {
		t.Fatalf("readers made %d reads (%d non-zero): the test did not exercise anything", reads.Load(), nonzero.Load())
	}
	if n := e.Mgr.Current().Anchor().Number.Uint64(); n < 4 {
		t.Fatalf("only %d blocks sealed", n)
	}
	t.Logf("%d consistent reads over %d blocks", reads.Load(), e.Mgr.Current().Anchor().Number.Uint64())
}

// Pool admission errors wrap the documented sentinels.
func TestPoolRefusals(t *testing.T) {
	e := newEnv(t)
	to := common.Address{0xaa}
	key := e.Accs[3].Key
	base := func() *types.DynamicFeeTx {
		return &types.DynamicFeeTx{ChainID: e.Genesis.Config.ChainID, Nonce: 0, GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(10 * params.GWei), Gas: 21_000, To: &to, Value: big.NewInt(1)}
	}
	mod := func(f func(*types.DynamicFeeTx)) *types.Transaction {
		tx := base()
		f(tx)
		return pendingtest.SignTx(t, e.Signer, key, tx)
	}
	// seed nonce 0 and one pre-confirmed tx for the "nonce too low" case
	if err := e.Pool.Add(mod(func(*types.DynamicFeeTx) {})); err != nil {
		t.Fatal(err)
	}
	e.Tick(1)
	poor, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	other := types.LatestSignerForChainID(big.NewInt(5))
	for _, tc := range []struct {
		name string
		tx   *types.Transaction
		want error
	}{
		{"chain id", pendingtest.SignTx(t, other, key, &types.DynamicFeeTx{ChainID: big.NewInt(5), Nonce: 1, GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(10 * params.GWei), Gas: 21000, To: &to}), sequencer.ErrChainID},
		{"nonce too low", mod(func(tx *types.DynamicFeeTx) {}), sequencer.ErrNonceTooLow},
		{"nonce too high", mod(func(tx *types.DynamicFeeTx) { tx.Nonce = 1000 }), sequencer.ErrNonceTooHigh},
		{"insufficient funds", pendingtest.SignTx(t, e.Signer, poor, base()), sequencer.ErrInsufficientFunds},
		{"fee below base fee", mod(func(tx *types.DynamicFeeTx) { tx.Nonce = 1; tx.GasFeeCap = big.NewInt(1); tx.GasTipCap = big.NewInt(1) }), sequencer.ErrFeeCapTooLow},
		{"tip above fee cap", mod(func(tx *types.DynamicFeeTx) { tx.Nonce = 1; tx.GasTipCap = big.NewInt(20 * params.GWei) }), sequencer.ErrTipAboveFeeCap},
		{"intrinsic gas", mod(func(tx *types.DynamicFeeTx) { tx.Nonce = 1; tx.Gas = 20_999 }), sequencer.ErrIntrinsicGas},
		{"calldata floor", mod(func(tx *types.DynamicFeeTx) {
			tx.Nonce = 1
			tx.Gas = 21_000 + 16*100
			tx.Data = bytes.Repeat([]byte{1}, 100)
		}), sequencer.ErrIntrinsicGas},
		{"gas above block limit", mod(func(tx *types.DynamicFeeTx) { tx.Nonce = 1; tx.Gas = 100_000_000 }), sequencer.ErrGasLimit},
		{"gas above tx cap", mod(func(tx *types.DynamicFeeTx) { tx.Nonce = 1; tx.Gas = params.MaxTxGas + 1 }), sequencer.ErrGasLimit},
		{"oversized", mod(func(tx *types.DynamicFeeTx) { tx.Nonce = 1; tx.Gas = 10_000_000; tx.Data = make([]byte, 130<<10) }), sequencer.ErrOversized},
		{"blob without sidecar", pendingtest.SignTx(t, e.Signer, key, &types.BlobTx{ChainID: uint256FromBig(e.Genesis.Config.ChainID), Nonce: 1, GasTipCap: u256(1), GasFeeCap: u256(10 * params.GWei), Gas: 21000, To: to, BlobFeeCap: u256(1), BlobHashes: []common.Hash{{1}}}), sequencer.ErrBlobSidecar},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := e.Pool.Add(tc.tx)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	// Replacement: same nonce needs +10% fee cap and tip.
	first := mod(func(tx *types.DynamicFeeTx) { tx.Nonce = 1 })
	if err := e.Pool.Add(first); err != nil {
		t.Fatal(err)
	}
	if err := e.Pool.Add(first); !errors.Is(err, sequencer.ErrAlreadyKnown) {
		t.Fatalf("resubmission: %v", err)
	}
	cheap := mod(func(tx *types.DynamicFeeTx) {
		tx.Nonce = 1
		tx.Value = big.NewInt(2)
		tx.GasFeeCap = big.NewInt(105 * params.GWei / 10)
	})
	if err := e.Pool.Add(cheap); !errors.Is(err, sequencer.ErrReplaceUnderpriced) {
		t.Fatalf("underpriced replacement: %v", err)
	}
	better := mod(func(tx *types.DynamicFeeTx) {
		tx.Nonce = 1
		tx.Value = big.NewInt(3)
		tx.GasFeeCap = big.NewInt(11 * params.GWei)
		tx.GasTipCap = big.NewInt(11 * params.GWei / 10)
	})
	if err := e.Pool.Add(better); err != nil {
		t.Fatalf("replacement: %v", err)
	}
	if e.Pool.Get(first.Hash()) != nil || e.Pool.Get(better.Hash()) == nil {
		t.Fatal("replacement did not replace")
	}
	e.Tick(1)
	if _, _, _, ok := e.Mgr.Current().Transaction(better.Hash()); !ok {
		t.Fatal("replacement not pre-confirmed")
	}
	// Nonce gaps wait in the pool until filled.
	gap := mod(func(tx *types.DynamicFeeTx) { tx.Nonce = 3 })
	if err := e.Pool.Add(gap); err != nil {
		t.Fatal(err)
	}
	e.Tick(1)
	if _, _, _, ok := e.Mgr.Current().Transaction(gap.Hash()); ok || e.Pool.Get(gap.Hash()) == nil {
		t.Fatal("gapped transaction executed or lost")
	}
	fill := mod(func(tx *types.DynamicFeeTx) { tx.Nonce = 2 })
	if err := e.Pool.Add(fill); err != nil {
		t.Fatal(err)
	}
	e.Tick(1)
	snap := e.Mgr.Current()
	_, _, i2, ok2 := snap.Transaction(fill.Hash())
	_, _, i3, ok3 := snap.Transaction(gap.Hash())
	if !ok2 || !ok3 || i3 != i2+1 {
		t.Fatalf("gap not filled in nonce order: %v %v %d %d", ok2, ok3, i2, i3)
	}
}

// Subscribers are notified after the swap: a callback reading Current sees
// the snapshot it is told about.
func TestNotificationsAfterSwap(t *testing.T) {
	e := newEnv(t)
	var got []*pending.Snapshot
	var bad atomic.Bool
	unsub := e.Mgr.SubscribePreconfirmations(func(s *pending.Snapshot) {
		if e.Mgr.Current() != s {
			bad.Store(true)
		}
		got = append(got, s)
	})
	defer unsub()
	var sealed []*types.Header
	defer e.node.Writer.SubscribeHeads(func(ev *chain.HeadEvent) {
		view, err := e.DB.View()
		if err != nil {
			bad.Store(true)
			return
		}
		if n, err := view.Tag(store.TagLatest); err != nil || n != ev.Head.Number() || len(ev.Added) != 1 || ev.Added[0].Hash() != ev.Head.Hash() {
			bad.Store(true)
		}
		// The pending layer was rebased onto the new head before this event.
		if cur := e.Mgr.Current(); cur.AnchorHash() != ev.Head.Hash() || cur.Index() != 0 {
			bad.Store(true)
		}
		view.Close()
		sealed = append(sealed, ev.Added...)
	})()
	tx := e.Tx(0, &common.Address{1}, big.NewInt(1), 21000, nil)
	if err := e.Pool.Add(tx); err != nil {
		t.Fatal(err)
	}
	e.Seal()
	if bad.Load() {
		t.Fatal("a notification arrived before its snapshot/block was readable")
	}
	if len(got) != 2 || got[0].Index() != 1 || len(got[0].NewTransactions()) != 1 || got[0].NewTransactions()[0].Hash() != tx.Hash() || got[1].Index() != 0 {
		t.Fatalf("notifications: %d", len(got))
	}
	if len(sealed) != 1 {
		t.Fatalf("%d head events for one seal", len(sealed))
	}
	view, err := e.DB.View()
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	body, err := view.Body(sealed[0].Number.Uint64(), sealed[0].Hash())
	if err != nil || len(body.Transactions) != 1 || body.Transactions[0].Hash() != tx.Hash() {
		t.Fatalf("sealed block of the head event: %v", err)
	}
}

// `tipnode run --sequencer` on the imported conformance chain: the
// sequencer seals post-merge blocks on top of block 54 that the importer's
// rules accept (re-executing the sealed block verifies header and body).
func TestSequencerOnConformanceChain(t *testing.T) {
	db, g := chaintest.ImportedStore(t)
	clock := pending.NewManualClock(time.Unix(2_000_000_000, 0))
	n := startSequencerNode(t, db, g, clock, sequencer.PoolConfig{}, nil)
	mgr, seq := n.Pending, n.Sequencer
	if got := mgr.Current().Anchor().Hash().Hex(); got != chaintest.HeadHash {
		t.Fatalf("anchor %s, want the conformance head", got)
	}
	for range 10 {
		clock.Advance(200 * time.Millisecond)
	}
	seq.Sync()
	if err := seq.Err(); err != nil {
		t.Fatal(err)
	}
	if head := n.Writer.Head(); head.Number() != 55 {
		t.Fatalf("latest %d after one block time, want 55", head.Number())
	}
	sealed := chaintest.CanonicalBlock(t, db, 55)
	if h := sealed.Header(); h.ParentHash.Hex() != chaintest.HeadHash || h.BaseFee == nil || h.RequestsHash == nil || h.ParentBeaconRoot == nil {
		t.Fatalf("sealed header %+v", h)
	}
	// Oracle: the importer (header rules, body roots, gas, receipts root,
	// bloom, requests hash) accepts the sealed block on a fresh copy.
	chaintest.ReexecuteOnConformance(t, g, sealed)
}

// The pool is bounded in bytes too (not only in count: 10,000 transactions
// of 128 KiB would be 1.25 GiB), the bound covers replacements, and
// evicting included transactions frees their bytes.
func TestPoolByteCap(t *testing.T) {
	e := newEnvWith(t, envOptions{pool: sequencer.PoolConfig{MaxTxSize: 1024, MaxBytes: 1024}})
	var pooled []*types.Transaction
	var size uint64
	fill := func() {
		t.Helper()
		for i := 0; i < 20; i++ {
			tx := e.Tx(i%len(e.Accs), &common.Address{0xbe}, big.NewInt(1), 21_000, nil)
			err := e.Pool.Add(tx)
			if errors.Is(err, sequencer.ErrPoolFull) {
				e.SetNonce(i%len(e.Accs), e.Nonce(i%len(e.Accs))-1)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			pooled = append(pooled, tx)
			size += tx.Size()
		}
		t.Fatalf("%d transactions (%d bytes) pooled under a 1024-byte cap", e.Pool.Len(), size)
	}
	fill()
	if size > 1024 || e.Pool.Len() != len(pooled) || len(pooled) < 2 {
		t.Fatalf("%d transactions of %d bytes pooled", len(pooled), size)
	}
	// A replacement that would overflow the cap is refused too.
	last := pooled[len(pooled)-1]
	bigger := pendingtest.SignTx(t, e.Signer, e.Accs[(len(pooled)-1)%len(e.Accs)].Key, &types.DynamicFeeTx{
		ChainID: e.Genesis.Config.ChainID, Nonce: last.Nonce(), GasTipCap: big.NewInt(2 * params.GWei), GasFeeCap: big.NewInt(20 * params.GWei),
		Gas: 21_000 + 16*uint64(1024-size+8) + 1000, To: &common.Address{0xbe}, Value: big.NewInt(1), Data: bytes.Repeat([]byte{1}, int(1024-size+8)),
	})
	if err := e.Pool.Add(bigger); !errors.Is(err, sequencer.ErrPoolFull) {
		t.Fatalf("oversized replacement: %v", err)
	}
	// Pre-confirming evicts them and frees their bytes.
	e.Tick(1)
	if n := len(e.Mgr.Current().Transactions()); n != len(pooled) || e.Pool.Len() != 0 {
		t.Fatalf("%d pre-confirmed, %d still pooled", n, e.Pool.Len())
	}
	pooled, size = nil, 0
	fill()
	if len(pooled) < 2 || e.Pool.Len() != len(pooled) {
		t.Fatalf("after eviction only %d transactions could be pooled", len(pooled))
	}
}

// Stuck transactions (here: a nonce gap never filled) are evicted after the
// pool's Lifetime, so they cannot keep a full pool closed for good.
func TestPoolLifetimeEvictsStuckTransactions(t *testing.T) {
	e := newEnvWith(t, envOptions{pool: sequencer.PoolConfig{MaxTxs: 2, Lifetime: time.Minute}})
	to := common.Address{0xee}
	e.SetNonce(5, 3) // nonces 3 and 4: a gap above nonce 0
	for range 2 {
		if err := e.Pool.Add(e.Tx(5, &to, big.NewInt(1), 21_000, nil)); err != nil {
			t.Fatal(err)
		}
	}
	e.SetNonce(6, 0)
	fresh := e.Tx(6, &to, big.NewInt(1), 21_000, nil)
	if err := e.Pool.Add(fresh); !errors.Is(err, sequencer.ErrPoolFull) {
		t.Fatalf("full pool: %v, want ErrPoolFull", err)
	}
	e.Tick(1) // the gapped transactions cannot run: they stay
	if n := e.Pool.Len(); n != 2 {
		t.Fatalf("pool holds %d, want the 2 gapped transactions", n)
	}
	e.Clock.Advance(time.Minute + time.Second)
	if err := e.Pool.Add(fresh); err != nil {
		t.Fatalf("after the lifetime the stuck transactions must be evicted: %v", err)
	}
	// The advance also fired the node's sequencer timers: its loop may have
	// pre-confirmed the fresh transaction already.
	preconfirmed := slices.ContainsFunc(e.Mgr.Current().Transactions(), func(tx chaintypes.Tx) bool { return tx.Hash() == fresh.Hash() })
	want := 1 // the fresh transaction, pooled
	if preconfirmed {
		want = 0
	}
	if n := e.Pool.Len(); n != want || (want == 1 && e.Pool.Get(fresh.Hash()) == nil) {
		t.Fatalf("pool holds %d (fresh pre-confirmed: %v), want only the fresh transaction", n, preconfirmed)
	}
}
