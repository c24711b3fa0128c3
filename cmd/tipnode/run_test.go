package main

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"flag"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/params"
	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/chain/devnet"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/rpc/node"
	"github.com/tipnode/tipnode/store"
)

// newFlagSet is a flag set that prints nothing (tests register NodeFlags on
// it to get the flags' defaults).
func newFlagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("tipnode", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// devOptions says how openDev sets up a dev node.
type devOptions struct {
	dir      string
	log      zerolog.Logger
	accounts int                 // dev accounts funded at genesis
	keys     bool                // the node holds their keys (eth_sendTransaction)
	store    func(*store.Config) // adjusts the store's configuration (nil: none)
}

// devNode is an in-process `tipnode dev` node with its store, chain, clock
// and accounts.
type devNode struct {
	n       *node.Node
	db      *store.DB
	g       *chain.Genesis
	clock   *pending.ManualClock
	accs    []devnet.Account
	stopped bool
}

// openDev starts an in-process `tipnode dev` node on 127.0.0.1:0 with a
// fresh store in o.dir (synchronous writes off) and a manual clock. The
// caller stops it (stop, or n.Stop and db.Close).
func openDev(t *testing.T, o devOptions) *devNode {
	t.Helper()
	cfg := store.DefaultConfig(o.dir)
	cfg.SyncWrites = false
	if o.store != nil {
		o.store(&cfg)
	}
	db, err := openStore(cfg, o.log)
	if err != nil {
		t.Fatal(err)
	}
	d := &devNode{db: db}
	if err := d.start(o); err != nil {
		db.Close()
		t.Fatal(err)
	}
	return d
}

// start writes the dev chain into d.db and starts the node on it.
func (d *devNode) start(o devOptions) error {
	accs, err := devnet.Accounts(devnet.Mnemonic, o.accounts)
	if err != nil {
		return err
	}
	now := time.Unix(1_700_000_000, 0)
	g, err := devChain(d.db, devnet.DefaultChainID, accs, false, now, o.log)
	if err != nil {
		return err
	}
	var nf NodeFlags
	nf.register(newFlagSet(), true)
	nf.HTTPAddr, nf.Sequencer = "127.0.0.1:0", true
	clock := pending.NewManualClock(now.Add(time.Second))
	var keys []*ecdsa.PrivateKey
	if o.keys {
		keys = make([]*ecdsa.PrivateKey, len(accs))
		for i, a := range accs {
			keys[i] = a.Key
		}
	}
	n, err := startNode(nf, keys, d.db, g, clock, o.log)
	if err != nil {
		return err
	}
	d.n, d.g, d.clock, d.accs = n, g, clock, accs
	return nil
}

// stop stops the node and closes its store, once; a failure to stop is
// an error of t.
func (d *devNode) stop(t *testing.T) {
	if d.stopped {
		return
	}
	d.stopped = true
	if err := d.n.Stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	d.db.Close()
}

// startDev starts an in-process `tipnode dev` node on 127.0.0.1:0 with a
// fresh store in t.TempDir() and a manual clock.
func startDev(t *testing.T) (*node.Node, *pending.ManualClock, []devnet.Account) {
	t.Helper()
	d := openDev(t, devOptions{dir: t.TempDir(), log: zerolog.New(io.Discard), accounts: 10, keys: true})
	t.Cleanup(func() { d.stop(t) })
	return d.n, d.clock, d.accs
}

func tick(t *testing.T, n *node.Node, c *pending.ManualClock, k int) {
	t.Helper()
	for range k {
		c.Advance(200 * time.Millisecond)
	}
	n.Sequencer.Sync()
	if err := n.Sequencer.Err(); err != nil {
		t.Fatal(err)
	}
}

// A go-ethereum ethclient against the dev node: a signed transaction is on
// pending within one interval and has its receipt after the seal; websocket
// subscriptions receive newPreconfirmations and newHeads.
func TestDevNodeEthclient(t *testing.T) {
	n, clock, accs := startDev(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rc, err := gethrpc.DialContext(ctx, "ws://"+n.Server.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	ec := ethclient.NewClient(rc)
	if id, err := ec.ChainID(ctx); err != nil || id.Uint64() != 1337 {
		t.Fatalf("chain id %v, %v", id, err)
	}
	if bal, err := ec.BalanceAt(ctx, accs[0].Address, nil); err != nil || bal.Cmp(new(big.Int).Mul(big.NewInt(10_000), big.NewInt(params.Ether))) != 0 {
		t.Fatalf("dev account 0 balance %v, %v", bal, err)
	}
	heads := make(chan *types.Header, 8)
	hs, err := ec.SubscribeNewHead(ctx, heads)
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Unsubscribe()
	type preconf struct {
		BlockNumber  string        `json:"blockNumber"`
		Index        string        `json:"index"`
		Transactions []common.Hash `json:"transactions"`
	}
	preconfs := make(chan preconf, 16)
	ps, err := rc.EthSubscribe(ctx, preconfs, "newPreconfirmations")
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Unsubscribe()
	pendingTxs := make(chan common.Hash, 8)
	pts, err := rc.EthSubscribe(ctx, pendingTxs, "newPendingTransactions")
	if err != nil {
		t.Fatal(err)
	}
	defer pts.Unsubscribe()

	to := common.HexToAddress("0x000000000000000000000000000000000000dEaD")
	tip, err := ec.SuggestGasTipCap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	head, err := ec.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	feeCap := new(big.Int).Add(tip, new(big.Int).Mul(head.BaseFee, big.NewInt(2)))
	tx, err := types.SignNewTx(accs[0].Key, types.LatestSignerForChainID(big.NewInt(1337)), &types.DynamicFeeTx{
		ChainID: big.NewInt(1337), Nonce: 0, GasTipCap: tip, GasFeeCap: feeCap, Gas: 21_000, To: &to, Value: big.NewInt(params.GWei),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := ec.SendTransaction(ctx, tx); err != nil {
		t.Fatal(err)
	}
	select {
	case h := <-pendingTxs:
		if h != tx.Hash() {
			t.Fatalf("newPendingTransactions sent %s", h)
		}
	case <-ctx.Done():
		t.Fatal("no newPendingTransactions notification")
	}
	tick(t, n, clock, 1) // one interval
	if bal, err := ec.PendingBalanceAt(ctx, to); err != nil || bal.Int64() != params.GWei {
		t.Fatalf("pending balance after one interval %v, %v", bal, err)
	}
	if _, err := ec.TransactionReceipt(ctx, tx.Hash()); err == nil {
		// A pre-confirmed receipt is acceptable only if it is not claimed sealed.
		if b, _ := ec.BlockNumber(ctx); b != 0 {
			t.Fatal("block sealed early")
		}
	}
	select {
	case p := <-preconfs:
		if p.BlockNumber != "0x1" || p.Index != "0x1" || len(p.Transactions) != 1 || p.Transactions[0] != tx.Hash() {
			t.Fatalf("newPreconfirmations %+v", p)
		}
	case <-ctx.Done():
		t.Fatal("no newPreconfirmations notification")
	}
	tick(t, n, clock, 9) // the seal
	select {
	case h := <-heads:
		if h.Number.Uint64() != 1 {
			t.Fatalf("newHeads sent block %d", h.Number)
		}
	case <-ctx.Done():
		t.Fatal("no newHeads notification")
	}
	r, err := ec.TransactionReceipt(ctx, tx.Hash())
	if err != nil || r.Status != types.ReceiptStatusSuccessful || r.BlockNumber.Uint64() != 1 {
		t.Fatalf("receipt %+v, %v", r, err)
	}
	blk, err := ec.BlockByNumber(ctx, big.NewInt(1))
	if err != nil || blk.Hash() != r.BlockHash {
		t.Fatalf("block 1 %v, %v", blk, err)
	}
	// The rebase after the seal is announced too (index 0, next block).
	select {
	case p := <-preconfs:
		if p.BlockNumber != "0x2" || p.Index != "0x0" || len(p.Transactions) != 0 {
			t.Fatalf("rebase notification %+v", p)
		}
	case <-ctx.Done():
		t.Fatal("no rebase notification")
	}

	// Metrics are served in the Prometheus text format.
	resp, err := http.Get("http://" + n.Server.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{"tipnode_pending_snapshot_build_seconds_count 1", "tipnode_pending_tx_arrival_to_readable_seconds_count 1", "tipnode_pending_blocks_sealed_total 1", "tipnode_pending_snapshot_age_seconds", "tipnode_txpool_added_total 1"} {
		if !strings.Contains(string(body), m) {
			t.Errorf("metrics lack %q", m)
		}
	}
}

// Stopping the node seals a pending block that holds pre-confirmed
// transactions (one atomic write) and discards an empty one.
func TestDevNodeStopSealsPreconfirmed(t *testing.T) {
	log := zerolog.New(io.Discard)
	dir := t.TempDir()
	cfg := store.DefaultConfig(dir)
	db, err := openStore(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	accs, _ := devnet.Accounts(devnet.Mnemonic, 2)
	now := time.Unix(1_700_000_000, 0)
	g, err := devChain(db, 1337, accs, false, now, log)
	if err != nil {
		t.Fatal(err)
	}
	var nf NodeFlags
	nf.register(newFlagSet(), true)
	nf.HTTPAddr, nf.Sequencer = "127.0.0.1:0", true
	clock := pending.NewManualClock(now.Add(time.Second))
	n, err := startNode(nf, nil, db, g, clock, log)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}`
	resp, err := http.Post("http://"+n.Server.Addr().String(), "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ Result string }
	json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if out.Result != "0x539" {
		t.Fatalf("eth_chainId %q", out.Result)
	}
	to := common.Address{1}
	tx, _ := types.SignNewTx(accs[1].Key, types.LatestSignerForChainID(big.NewInt(1337)), &types.DynamicFeeTx{
		ChainID: big.NewInt(1337), GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(10 * params.GWei), Gas: 21_000, To: &to, Value: big.NewInt(1),
	})
	if err := n.Pool.Add(tx); err != nil {
		t.Fatal(err)
	}
	tick(t, n, clock, 1)
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	view, err := db.View()
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	if l, err := view.TxLookup(tx.Hash()); err != nil || l.BlockNumber != 1 {
		t.Fatalf("pre-confirmed tx not sealed at stop: %+v, %v", l, err)
	}
	// Reopening the same datadir continues the chain.
	if _, err := devChain(db, 1337, accs, false, now, log); err != nil {
		t.Fatal(err)
	}
	if _, err := devChain(db, 5, accs, false, now, log); err == nil {
		t.Fatal("a different --chainid on an existing datadir was accepted")
	}
}

// `tipnode run --sequencer` on the imported conformance store: the flags
// parsed as `run` parses them, a transfer from a funded conformance account
// sent through ethclient is pre-confirmed and then sealed as block 55. The
// oracle is an independent re-execution: the importer, on a fresh copy of
// the chain, accepts the sealed block under the chain's header and body rules
// (timestamp, gas limit, base fee, blob gas, roots, bloom, requests hash),
// and every account and slot its execution wrote reads the same in the
// sequencer's store at 55.
func TestRunSequencerOnConformanceStore(t *testing.T) {
	db, _ := chaintest.ImportedStore(t)
	g, err := loadChain(db, "")
	if err != nil {
		t.Fatal(err)
	}
	log := zerolog.New(io.Discard)
	var nf NodeFlags
	fs := newFlagSet()
	nf.register(fs, false)
	if err := fs.Parse([]string{"--sequencer", "--http.addr", "127.0.0.1:0", "--coinbase", "0x00000000000000000000000000000000c0ffee00"}); err != nil {
		t.Fatal(err)
	}
	clock := pending.NewManualClock(time.Unix(2_000_000_000, 0))
	n, err := startNode(nf, nil, db, g, clock, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})

	raw, err := os.ReadFile(filepath.Join(chaintest.Dir(t), "chain", "accounts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]struct {
		Key string `json:"key"`
	}
	if err := json.Unmarshal(raw, &keys); err != nil {
		t.Fatal(err)
	}
	addrs := make([]string, 0, len(keys))
	for a := range keys {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	key, err := crypto.HexToECDSA(strings.TrimPrefix(keys[addrs[0]].Key, "0x"))
	if err != nil {
		t.Fatal(err)
	}
	from := crypto.PubkeyToAddress(key.PublicKey)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ec, err := ethclient.DialContext(ctx, "http://"+n.Server.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	head, err := ec.HeaderByNumber(ctx, nil)
	if err != nil || head.Number.Uint64() != 54 {
		t.Fatalf("head %v, %v", head, err)
	}
	nonce, err := ec.PendingNonceAt(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	to := common.HexToAddress("0x000000000000000000000000000000000000bEEF")
	before, err := ec.BalanceAt(ctx, to, nil)
	if err != nil {
		t.Fatal(err)
	}
	tip := big.NewInt(params.GWei)
	tx, err := types.SignNewTx(key, types.LatestSigner(g.Config), &types.DynamicFeeTx{
		ChainID: g.Config.ChainID, Nonce: nonce, GasTipCap: tip, GasFeeCap: new(big.Int).Add(tip, new(big.Int).Mul(head.BaseFee, big.NewInt(2))),
		Gas: 21_000, To: &to, Value: big.NewInt(params.GWei),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := ec.SendTransaction(ctx, tx); err != nil {
		t.Fatal(err)
	}
	tick(t, n, clock, 1)
	want := new(big.Int).Add(before, big.NewInt(params.GWei))
	if bal, err := ec.PendingBalanceAt(ctx, to); err != nil || bal.Cmp(want) != 0 {
		t.Fatalf("pending balance %v, %v; want %v", bal, err, want)
	}
	if got, err := ec.PendingNonceAt(ctx, from); err != nil || got != nonce+1 {
		t.Fatalf("pending nonce %d, %v", got, err)
	}
	tick(t, n, clock, 9) // the seal
	r, err := ec.TransactionReceipt(ctx, tx.Hash())
	if err != nil || r.Status != types.ReceiptStatusSuccessful || r.BlockNumber.Uint64() != 55 {
		t.Fatalf("receipt %+v, %v", r, err)
	}
	if bal, err := ec.BalanceAt(ctx, to, big.NewInt(55)); err != nil || bal.Cmp(want) != 0 {
		t.Fatalf("balance at 55 %v, %v; want %v", bal, err, want)
	}

	sealed := chaintest.CanonicalBlock(t, db, 55)
	if h := sealed.Header(); h.ParentHash != head.Hash() || h.Coinbase != common.HexToAddress("0x00000000000000000000000000000000c0ffee00") {
		t.Fatalf("sealed header %+v", h)
	}
	if txs := sealed.Transactions(); len(txs) != 1 || txs[0].Hash() != tx.Hash() {
		t.Fatalf("sealed body holds %d transactions", len(txs))
	}
	res := chaintest.ReexecuteOnConformance(t, g, sealed)
	view, err := db.View()
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	st, err := view.StateAt(55)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Diff.Accounts) < 3 {
		t.Fatalf("re-execution wrote only %d accounts", len(res.Diff.Accounts))
	}
	for a, acc := range res.Diff.Accounts {
		got, err := st.Account(a)
		if err != nil {
			t.Fatal(err)
		}
		if (acc == nil) != (got == nil) || (acc != nil && (got.Nonce != acc.Nonce || !got.Balance.Eq(acc.Balance) || got.CodeHash != acc.CodeHash)) {
			t.Fatalf("account %s at 55: sealed %+v, re-executed %+v", a, got, acc)
		}
	}
	for a, slots := range res.Diff.Storage {
		for k, v := range slots {
			if got, err := st.Storage(a, k); err != nil || got != v {
				t.Fatalf("slot %s/%s at 55: sealed %s, re-executed %s (%v)", a, k, got, v, err)
			}
		}
	}
}
