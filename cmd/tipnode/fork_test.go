package main

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"io"
	"math/big"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"
	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain/devnet"
	"github.com/tipnode/tipnode/chain/follow/followtest"
	"github.com/tipnode/tipnode/chain/remotestate"
	"github.com/tipnode/tipnode/cmd/benchgeth/chaingen"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/rpc/node"
	"github.com/tipnode/tipnode/store"
)

// The upstream of the fork tests: a go-ethereum node with the funded test
// accounts, a BenchToken (an ERC-20: balances at keccak(holder, 0)) with
// three holders, and a few blocks above genesis.
var (
	forkToken   = chaingen.TokenAddress(0)
	forkHolders = []common.Address{followtest.Address(3), followtest.Address(4), common.HexToAddress("0x00000000000000000000000000000000000b0b05")}
)

func forkHolderBalance(i int) *big.Int { return big.NewInt(int64(1000+i) * 1e15) }

func startForkUpstream(t *testing.T) *followtest.Geth {
	t.Helper()
	alloc := followtest.Fund()
	storage := map[common.Hash]common.Hash{}
	total := new(big.Int)
	for i, h := range forkHolders {
		storage[chaingen.BalanceSlot(h)] = common.BigToHash(forkHolderBalance(i))
		total.Add(total, forkHolderBalance(i))
	}
	storage[chaingen.TotalSupplySlot] = common.BigToHash(total)
	alloc[forkToken] = types.Account{Code: chaingen.TokenCode, Storage: storage, Balance: new(big.Int)}
	g := followtest.StartGeth(t, followtest.Options{Alloc: alloc})
	to := common.HexToAddress("0x000000000000000000000000000000000000f00d")
	g.Send(t, followtest.Tx(t, 0, 0, &to, big.NewInt(12345), 21_000, nil))
	// A token transfer upstream (holder 0 to holder 2 and back): logs, and
	// holder balances as the genesis gave them.
	amount := big.NewInt(5)
	there, _ := chaingen.TokenABI.Pack("transfer", forkHolders[2], amount)
	g.Send(t, followtest.Tx(t, 3, 0, &forkToken, nil, 100_000, there))
	g.Commit()
	return g
}

// forkUpstreamBalance is holder i's token balance at the upstream's head
// (after its transfer of 5 units from holder 0 to holder 2).
func forkUpstreamBalance(i int) *big.Int {
	switch i {
	case 0:
		return new(big.Int).Sub(forkHolderBalance(0), big.NewInt(5))
	case 2:
		return new(big.Int).Add(forkHolderBalance(2), big.NewInt(5))
	}
	return forkHolderBalance(i)
}

// forkNode is an in-process `tipnode dev --fork` node.
type forkNode struct {
	n     *node.Node
	db    *store.DB
	src   *remotestate.Source
	clock *pending.ManualClock
	url   string
	accs  []devnet.Account
}

// startFork starts `tipnode dev --fork target` on dir (a new fork when
// dir is empty) with a manual clock.
func startFork(t *testing.T, dir, target string) *forkNode {
	t.Helper()
	log := zerolog.New(io.Discard)
	if testing.Verbose() {
		log = zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr}).Level(zerolog.WarnLevel)
	}
	cfg := store.DefaultConfig(dir)
	cfg.SyncWrites = false
	db, err := openStore(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	accs, err := devnet.Accounts(devnet.Mnemonic, 3)
	if err != nil {
		t.Fatal(err)
	}
	g, src, err := forkChain(context.Background(), db, forkOptions{Target: target}, accs, dir, log)
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	view, err := db.View()
	if err != nil {
		t.Fatal(err)
	}
	latest, _ := view.Tag(store.TagLatest)
	hash, _ := view.CanonicalHash(latest)
	head, err := view.Header(latest, hash)
	view.Close()
	if err != nil {
		t.Fatal(err)
	}
	var nf NodeFlags
	fs := newFlagSet()
	nf.register(fs, true)
	nf.HTTPAddr, nf.Sequencer, nf.Dev = "127.0.0.1:0", true, true
	clock := pending.NewManualClock(time.Unix(int64(head.Time)+1, 0))
	keys := make([]*ecdsa.PrivateKey, len(accs))
	for i, a := range accs {
		keys[i] = a.Key
	}
	n, err := startNode(nf, keys, db, g, clock, log)
	if err != nil {
		src.Close()
		db.Close()
		t.Fatal(err)
	}
	f := &forkNode{n: n, db: db, src: src, clock: clock, url: "http://" + n.Server.Addr().String(), accs: accs}
	t.Cleanup(func() { f.stop(t) })
	return f
}

func (f *forkNode) stop(t *testing.T) {
	if f.n == nil {
		return
	}
	if err := f.n.Stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	f.src.Close()
	if err := f.db.Close(); err != nil {
		t.Errorf("close store: %v", err)
	}
	f.n = nil
}

func balanceOfCall(t *testing.T, holder common.Address) []byte {
	t.Helper()
	data, err := chaingen.TokenABI.Pack("balanceOf", holder)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func tokenBalance(t *testing.T, ec *ethclient.Client, holder common.Address, block *big.Int) *big.Int {
	t.Helper()
	out, err := ec.CallContract(context.Background(), ethereum.CallMsg{To: &forkToken, Data: balanceOfCall(t, holder)}, block)
	if err != nil {
		t.Fatalf("balanceOf(%s): %v", holder, err)
	}
	return new(big.Int).SetBytes(out)
}

// A fork of a go-ethereum node sees the upstream's balances, code and
// storage; blocks continue from the fork block; the dev accounts are
// funded; a token transfer by an impersonated holder changes exactly the
// two balances; evm_snapshot / evm_revert work; what was fetched is kept
// in the data directory, so a restart without the upstream still reads it,
// and what was not fails with -32000 naming the upstream and the entity.
func TestForkGeth(t *testing.T) {
	up := startForkUpstream(t)
	ctx := context.Background()
	upc := up.Client()
	forkBlock, err := upc.BlockNumber(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f := startFork(t, dir, up.HTTP)
	rc, err := gethrpc.Dial(f.url)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	ec := ethclient.NewClient(rc)

	if n, err := ec.BlockNumber(ctx); err != nil || n != forkBlock {
		t.Fatalf("block number %d, %v; the fork block is %d", n, err, forkBlock)
	}
	upID, _ := upc.ChainID(ctx)
	if id, err := ec.ChainID(ctx); err != nil || id.Cmp(upID) != 0 {
		t.Fatalf("chain id %v, %v; upstream %v", id, err, upID)
	}
	upHead, _ := upc.HeaderByNumber(ctx, new(big.Int).SetUint64(forkBlock))
	if h, err := ec.HeaderByNumber(ctx, nil); err != nil || h.Hash() != upHead.Hash() {
		t.Fatalf("head %v, %v; upstream's block %d is %s", h, err, forkBlock, upHead.Hash())
	}
	// The upstream's state: balances, nonces, code, storage.
	for _, a := range []common.Address{followtest.Address(0), followtest.Address(1), common.HexToAddress("0x000000000000000000000000000000000000f00d"), forkToken} {
		want, _ := upc.BalanceAt(ctx, a, nil)
		if got, err := ec.BalanceAt(ctx, a, nil); err != nil || got.Cmp(want) != 0 {
			t.Fatalf("balance of %s: %v, %v; upstream %v", a, got, err, want)
		}
		wantN, _ := upc.NonceAt(ctx, a, nil)
		if got, err := ec.NonceAt(ctx, a, nil); err != nil || got != wantN {
			t.Fatalf("nonce of %s: %d, %v; upstream %d", a, got, err, wantN)
		}
	}
	if code, err := ec.CodeAt(ctx, forkToken, nil); err != nil || string(code) != string(chaingen.TokenCode) {
		t.Fatalf("token code %d bytes, %v", len(code), err)
	}
	for i, h := range forkHolders {
		v, err := ec.StorageAt(ctx, forkToken, chaingen.BalanceSlot(h), nil)
		if err != nil || new(big.Int).SetBytes(v).Cmp(forkUpstreamBalance(i)) != 0 {
			t.Fatalf("slot of holder %d: %x, %v", i, v, err)
		}
	}
	// Dev accounts: funded on top of their upstream state.
	for _, a := range f.accs {
		if bal, err := ec.BalanceAt(ctx, a.Address, nil); err != nil || bal.Cmp(devBalance.ToBig()) != 0 {
			t.Fatalf("dev account %s: %v, %v", a.Address, bal, err)
		}
	}
	// A warm read costs no upstream request; concurrent misses of one
	// entity share one.
	before, _ := f.src.Stats()
	if _, err := ec.BalanceAt(ctx, followtest.Address(1), nil); err != nil {
		t.Fatal(err)
	}
	fresh := followtest.Address(7)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := ec.BalanceAt(ctx, fresh, nil); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if after, _ := f.src.Stats(); after != before+1 {
		t.Fatalf("%d upstream requests for a warm read and 8 concurrent reads of one new account, want 1", after-before)
	}

	resp, err := http.Get(f.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "tipnode_fork_fetched_total ") || !strings.Contains(string(body), "tipnode_fork_unpersisted ") {
		t.Fatal("fork metrics missing")
	}

	// Chain data at or below the fork block comes from the upstream.
	upBlock1, err := upc.BlockByNumber(ctx, big.NewInt(1))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := ec.BlockByNumber(ctx, big.NewInt(1)); err != nil || b.Hash() != upBlock1.Hash() {
		t.Fatalf("block 1 on the fork: %v, %v", b, err)
	}
	if b, err := ec.BlockByHash(ctx, upBlock1.Hash()); err != nil || b.NumberU64() != 1 {
		t.Fatalf("block 1 by hash on the fork: %v, %v", b, err)
	}
	upTx := upBlock1.Transactions()[0]
	if tx, pending, err := ec.TransactionByHash(ctx, upTx.Hash()); err != nil || pending || tx.Hash() != upTx.Hash() {
		t.Fatalf("upstream transaction on the fork: %v, %v, %v", tx, pending, err)
	}
	if r, err := ec.TransactionReceipt(ctx, upTx.Hash()); err != nil || r.BlockNumber.Uint64() != 1 || r.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("upstream receipt on the fork: %+v, %v", r, err)
	}
	q := ethereum.FilterQuery{FromBlock: big.NewInt(0), ToBlock: new(big.Int).SetUint64(forkBlock), Addresses: []common.Address{forkToken}}
	upLogs, err := upc.FilterLogs(ctx, q)
	if err != nil || len(upLogs) != 1 {
		t.Fatalf("upstream logs %v, %v", upLogs, err)
	}
	if logs, err := ec.FilterLogs(ctx, q); err != nil || len(logs) != 1 || logs[0].TxHash != upLogs[0].TxHash || logs[0].BlockHash != upLogs[0].BlockHash {
		t.Fatalf("logs below the fork block on the fork: %v, %v", logs, err)
	}
	q.ToBlock = nil
	if _, err := ec.FilterLogs(ctx, q); err == nil || !strings.Contains(err.Error(), "fork block") {
		t.Fatalf("a logs range across the fork block: %v", err)
	}
	// State below the fork block is the upstream's at that height: block
	// 1 is before the upstream's token transfer.
	if got := tokenBalance(t, ec, forkHolders[0], big.NewInt(1)); got.Cmp(forkHolderBalance(0)) != 0 {
		t.Fatalf("holder 0 at block 1 on the fork: %v", got)
	}
	for _, a := range []common.Address{followtest.Address(0), followtest.Address(3)} {
		want, _ := upc.BalanceAt(ctx, a, big.NewInt(1))
		if got, err := ec.BalanceAt(ctx, a, big.NewInt(1)); err != nil || got.Cmp(want) != 0 {
			t.Fatalf("balance of %s at block 1: %v, %v; upstream %v", a, got, err, want)
		}
	}
	// A block the upstream made after the fork is not the fork's.
	up.Commit()
	upNext, _ := upc.HeaderByNumber(ctx, new(big.Int).SetUint64(forkBlock+1))
	if b, err := ec.HeaderByHash(ctx, upNext.Hash()); !errors.Is(err, ethereum.NotFound) {
		t.Fatalf("upstream block above the fork block on the fork: %v, %v", b, err)
	}

	// The impersonated holder moves tokens.
	snap := ""
	if err := rc.Call(&snap, "evm_snapshot"); err != nil {
		t.Fatal(err)
	}
	holder, to := forkHolders[0], forkHolders[1]
	if err := rc.Call(nil, "anvil_impersonateAccount", holder); err != nil {
		t.Fatal(err)
	}
	amount := big.NewInt(7e14)
	data, _ := chaingen.TokenABI.Pack("transfer", to, amount)
	var txHash common.Hash
	if err := rc.Call(&txHash, "eth_sendTransaction", map[string]any{"from": holder, "to": forkToken, "data": hexutil.Bytes(data), "gas": hexutil.Uint64(100_000)}); err != nil {
		t.Fatal(err)
	}
	tick(t, f.n, f.clock, 10)
	r, err := ec.TransactionReceipt(ctx, txHash)
	if err != nil || r.Status != types.ReceiptStatusSuccessful || r.BlockNumber.Uint64() != forkBlock+1 {
		t.Fatalf("receipt %+v, %v", r, err)
	}
	want := []*big.Int{new(big.Int).Sub(forkUpstreamBalance(0), amount), new(big.Int).Add(forkUpstreamBalance(1), amount), forkUpstreamBalance(2)}
	for i, h := range forkHolders {
		if got := tokenBalance(t, ec, h, nil); got.Cmp(want[i]) != 0 {
			t.Fatalf("holder %d after the transfer: %v, want %v", i, got, want[i])
		}
		// The fork block's state is the upstream's.
		if got := tokenBalance(t, ec, h, new(big.Int).SetUint64(forkBlock)); got.Cmp(forkUpstreamBalance(i)) != 0 {
			t.Fatalf("holder %d at the fork block: %v", i, got)
		}
	}
	var supply hexutil.Bytes
	supply, _ = ec.StorageAt(ctx, forkToken, chaingen.TotalSupplySlot, nil)
	if s := new(big.Int).SetBytes(supply); s.Cmp(new(big.Int).Add(new(big.Int).Add(forkHolderBalance(0), forkHolderBalance(1)), forkHolderBalance(2))) != 0 {
		t.Fatalf("total supply %v", s)
	}
	// The upstream is untouched.
	if v, _ := upc.StorageAt(ctx, forkToken, chaingen.BalanceSlot(holder), nil); new(big.Int).SetBytes(v).Cmp(forkUpstreamBalance(0)) != 0 {
		t.Fatalf("upstream holder balance changed: %x", v)
	}
	var reverted bool
	if err := rc.Call(&reverted, "evm_revert", snap); err != nil || !reverted {
		t.Fatalf("evm_revert %v, %v", reverted, err)
	}
	if got := tokenBalance(t, ec, holder, nil); got.Cmp(forkUpstreamBalance(0)) != 0 {
		t.Fatalf("holder after evm_revert: %v", got)
	}
	// anvil_reset goes back to the fork block.
	if err := rc.Call(&txHash, "eth_sendTransaction", map[string]any{"from": holder, "to": forkToken, "data": hexutil.Bytes(data), "gas": hexutil.Uint64(100_000)}); err != nil {
		t.Fatal(err)
	}
	tick(t, f.n, f.clock, 10)
	if n, _ := ec.BlockNumber(ctx); n != forkBlock+1 {
		t.Fatalf("block number %d before anvil_reset", n)
	}
	if err := rc.Call(nil, "anvil_reset"); err != nil {
		t.Fatal(err)
	}
	if n, err := ec.BlockNumber(ctx); err != nil || n != forkBlock {
		t.Fatalf("block number %d, %v after anvil_reset", n, err)
	}
	if got := tokenBalance(t, ec, holder, nil); got.Cmp(forkUpstreamBalance(0)) != 0 {
		t.Fatalf("holder after anvil_reset: %v", got)
	}
	// Seal a block so the fetched state is persisted with it, read one more
	// account (persisted at close), then restart without the upstream.
	dev := f.accs[0]
	if err := rc.Call(&txHash, "eth_sendTransaction", map[string]any{"from": dev.Address, "to": followtest.Address(8), "value": hexutil.Big(*big.NewInt(1))}); err != nil {
		t.Fatal(err)
	}
	tick(t, f.n, f.clock, 10)
	late := followtest.Address(9)
	lateBal, err := ec.BalanceAt(ctx, late, nil)
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	f.stop(t)

	// The restart reads what it has from the store: no upstream request
	// (opening the next block does fetch the new slots of the system
	// contracts it writes, hence the count from here).
	f = startFork(t, dir, "")
	rc2, err := gethrpc.Dial(f.url)
	if err != nil {
		t.Fatal(err)
	}
	defer rc2.Close()
	ec = ethclient.NewClient(rc2)
	before, _ = f.src.Stats()
	if got := tokenBalance(t, ec, holder, nil); got.Cmp(forkUpstreamBalance(0)) != 0 {
		t.Fatalf("holder after the restart: %v", got)
	}
	if got, err := ec.BalanceAt(ctx, late, nil); err != nil || got.Cmp(lateBal) != 0 {
		t.Fatalf("account read before the close: %v, %v", got, err)
	}
	if got, err := ec.BalanceAt(ctx, followtest.Address(8), nil); err != nil || got.Cmp(new(big.Int).Add(lateBal, big.NewInt(1))) != 0 {
		t.Fatalf("account credited on the fork: %v, %v", got, err)
	}
	if after, _ := f.src.Stats(); after != before {
		t.Fatalf("%d upstream requests after the restart for state already fetched", after-before)
	}
	up.Close()
	// State never fetched: the upstream is gone, the read fails naming it.
	unknown := common.HexToAddress("0x00000000000000000000000000000000000fe77e")
	_, err = ec.BalanceAt(ctx, unknown, nil)
	var rerr gethrpc.Error
	if !errors.As(err, &rerr) || rerr.ErrorCode() != -32000 || !strings.Contains(err.Error(), up.HTTP) || !strings.Contains(err.Error(), unknown.Hex()) {
		t.Fatalf("read with the upstream down: %v", err)
	}
	// So does chain data below the fork block.
	_, err = ec.BlockByNumber(ctx, big.NewInt(1))
	if !errors.As(err, &rerr) || rerr.ErrorCode() != -32000 || !strings.Contains(err.Error(), up.HTTP) {
		t.Fatalf("block below the fork with the upstream down: %v", err)
	}
	// So does an eth_call that touches it.
	_, err = ec.CallContract(ctx, ethereum.CallMsg{To: &unknown}, nil)
	if !errors.As(err, &rerr) || rerr.ErrorCode() != -32000 || !strings.Contains(err.Error(), unknown.Hex()) {
		t.Fatalf("eth_call with the upstream down: %v", err)
	}
}

// forkChain's choices: --chainid overrides the upstream's; an explicit
// block is the fork block; a restart naming another block, or --fork on a
// data directory holding a plain dev chain, is refused.
func TestForkChainArgs(t *testing.T) {
	up := startForkUpstream(t)
	log := zerolog.New(io.Discard)
	accs, err := devnet.Accounts(devnet.Mnemonic, 1)
	if err != nil {
		t.Fatal(err)
	}
	open := func(dir string) *store.DB {
		cfg := store.DefaultConfig(dir)
		cfg.SyncWrites = false
		db, err := openStore(cfg, log)
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	dir := t.TempDir()
	db := open(dir)
	g, src, err := forkChain(context.Background(), db, forkOptions{Target: up.HTTP + "@1", ChainID: big.NewInt(31337)}, accs, dir, log)
	if err != nil {
		t.Fatal(err)
	}
	src.Close()
	if g.Config.ChainID.Uint64() != 31337 {
		t.Fatalf("chain id %v", g.Config.ChainID)
	}
	if a := db.Anchor(); a.State != 1 || a.Fork != up.HTTP {
		t.Fatalf("anchor %+v", a)
	}
	// A fork serves no snapshots (it does not hold the upstream's state).
	var nf NodeFlags
	nf.register(newFlagSet(), true)
	nf.HTTPAddr, nf.Sequencer, nf.Dev, nf.SnapshotServe = "127.0.0.1:0", true, true, true
	if n, err := startNode(nf, nil, db, g, pending.NewManualClock(time.Now()), log); err == nil || !strings.Contains(err.Error(), "cannot serve snapshots") {
		if n != nil {
			n.Stop()
		}
		t.Fatalf("--snapshot.serve on a fork: %v", err)
	}
	if _, _, err := forkChain(context.Background(), db, forkOptions{Target: up.HTTP + "@2"}, accs, dir, log); !errors.Is(err, remotestate.ErrNotFork) {
		t.Fatalf("restart at another block: %v", err)
	}
	if _, _, err := forkChain(context.Background(), db, forkOptions{ChainID: big.NewInt(5)}, accs, dir, log); err == nil || !strings.Contains(err.Error(), "31337") {
		t.Fatalf("restart with another chain id: %v", err)
	}
	// An L1 fork is not an OP one: --op and --chain on the restart are
	// refused.
	if _, _, err := forkChain(context.Background(), db, forkOptions{OP: true}, accs, dir, log); err == nil || !strings.Contains(err.Error(), "--op") || !strings.Contains(err.Error(), "L1 rules") {
		t.Fatalf("restart of an L1 fork with --op: %v", err)
	}
	if _, _, err := forkChain(context.Background(), db, forkOptions{Chain: "op-mainnet"}, accs, dir, log); !errors.Is(err, remotestate.ErrChain) || !strings.Contains(err.Error(), "chain 10") {
		t.Fatalf("restart of a fork of chain 31337 with --chain op-mainnet: %v", err)
	}
	db.Close()

	plain := t.TempDir()
	db = open(plain)
	defer db.Close()
	if _, err := devChain(db, devnet.DefaultChainID, accs, false, time.Unix(1_700_000_000, 0), log); err != nil {
		t.Fatal(err)
	}
	if _, _, err := forkChain(context.Background(), db, forkOptions{Target: up.HTTP}, accs, plain, log); !errors.Is(err, remotestate.ErrNotFork) {
		t.Fatalf("--fork on a plain dev chain: %v", err)
	}
	// --op on a go-ethereum (L1) upstream: refused before anything is
	// written.
	l1 := t.TempDir()
	db2 := open(l1)
	defer db2.Close()
	if _, _, err := forkChain(context.Background(), db2, forkOptions{Target: up.HTTP, OP: true}, accs, l1, log); !errors.Is(err, remotestate.ErrChain) || !strings.Contains(err.Error(), "not an OP Stack chain") {
		t.Fatalf("--fork --op of an L1 upstream: %v", err)
	}
	if _, err := db2.Latest(); err == nil {
		t.Fatal("the refused fork wrote a chain")
	}
}
