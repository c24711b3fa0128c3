package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/chain/follow"
	"github.com/tipnode/tipnode/chain/follow/followtest"
	"github.com/tipnode/tipnode/pending/pendingtest"
	"github.com/tipnode/tipnode/rpc/node"
)

// Follow mode against a real go-ethereum node (ethclient/simulated with its
// simulated beacon, HTTP and websocket on loopback): tipnode follows it and
// answers every request of the comparison exactly as go-ethereum does, at
// every height.

// followNode is a tipnode following an upstream.
type followNode struct {
	*node.Node
	t     testing.TB
	url   string
	clock *chain.ManualClock
	poll  time.Duration
}

func startFollowNode(t *testing.T, spec []byte, upstream string, tweak func(*follow.Config)) *followNode {
	t.Helper()
	db, g, w := chaintest.InitStore(t, spec)
	w.Stop() // the node runs its own writer
	cfg := node.DefaultConfig()
	cfg.Server.Addr = "127.0.0.1:0"
	cfg.Metrics = true
	fc := follow.DefaultConfig()
	fc.URL = upstream
	if tweak != nil {
		tweak(&fc)
	}
	cfg.Follow = &fc
	clock := chain.NewManualClock(time.Unix(1_700_000_000, 0))
	n := startNode(t, cfg, db, g, nil, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel), node.WithFollowClock(clock))
	return &followNode{Node: n, t: t, url: "http://" + n.Server.Addr().String(), clock: clock, poll: fc.WithDefaults().PollInterval}
}

// waitHead waits until the node's head is want, advancing the follower's
// clock by the poll interval whenever it waits on a timer.
func (f *followNode) waitHead(want common.Hash) {
	f.t.Helper()
	wake := make(chan struct{}, 1)
	defer f.Writer.SubscribeHeads(func(*chain.HeadEvent) {
		select {
		case wake <- struct{}{}:
		default:
		}
	})()
	timeout := time.After(2 * time.Minute)
	for f.Writer.Head().Hash() != want {
		changed := f.clock.Changed()
		if f.clock.Timers() > 0 {
			f.clock.Advance(f.poll)
			continue
		}
		select {
		case <-wake:
		case <-changed:
		case <-f.Follower.Done():
			f.t.Fatalf("following stopped: %v", f.Follower.Err())
		case <-timeout:
			f.t.Fatalf("timed out waiting for head %s (at %d)", want.Hex(), f.Writer.Head().Number())
		}
	}
}

// gethChain drives the go-ethereum upstream: senders' nonces, contracts.
type gethChain struct {
	*followtest.Geth
	t      *testing.T
	nonces map[int]uint64
}

func (g *gethChain) tx(from int, to *common.Address, value int64, gas uint64, data []byte) *types.Transaction {
	n := g.nonces[from]
	g.nonces[from] = n + 1
	return followtest.Tx(g.t, from, n, to, big.NewInt(value), gas, data)
}

func (g *gethChain) head() *types.Header {
	h, err := g.Client().HeaderByNumber(context.Background(), nil)
	if err != nil {
		g.t.Fatal(err)
	}
	return h
}

// oracleChain makes a chain with transfers (also to new accounts), contract
// deployments, storage writes (set, overwrite, clear), logs, a
// self-destruct of an old contract (EIP-6780: only its balance moves), a
// contract created and destroyed in one transaction (gone), and an
// EIP-7702 delegation. It returns the addresses and storage slots worth
// comparing.
func oracleChain(t *testing.T, g *gethChain, blocks int) (addrs []common.Address, slots map[common.Address][]common.Hash) {
	t.Helper()
	deployer := followtest.Address(0)
	logger := crypto.CreateAddress(deployer, 0)
	store := crypto.CreateAddress(deployer, 1)
	killer := crypto.CreateAddress(deployer, 2)
	g.Send(t,
		g.tx(0, nil, 0, 200_000, pendingtest.InitCode(followtest.LoggerCode)),
		g.tx(0, nil, 0, 200_000, pendingtest.InitCode(followtest.StoreCode)),
		g.tx(0, nil, 1_000_000, 200_000, pendingtest.InitCode(followtest.KillerCode)),
	)
	// An EIP-7702 delegation of account 5 to the store contract.
	auth, err := types.SignSetCode(followtest.Key(5), types.SetCodeAuthorization{
		ChainID: *uint256.MustFromBig(params.AllDevChainProtocolChanges.ChainID), Address: store, Nonce: 0,
	})
	if err != nil {
		t.Fatal(err)
	}
	n := g.nonces[1]
	g.nonces[1]++
	delegate, err := types.SignNewTx(followtest.Key(1), types.LatestSigner(params.AllDevChainProtocolChanges), &types.SetCodeTx{
		ChainID: uint256.MustFromBig(params.AllDevChainProtocolChanges.ChainID), Nonce: n,
		GasTipCap: uint256.NewInt(2 * params.GWei), GasFeeCap: uint256.NewInt(100 * params.GWei), Gas: 200_000,
		To: followtest.Address(5), AuthList: []types.SetCodeAuthorization{auth},
		Data: append(common.Hash{31: 0x77}.Bytes(), common.Hash{31: 3}.Bytes()...),
	})
	if err != nil {
		t.Fatal(err)
	}
	ephemeral := crypto.CreateAddress(followtest.Address(2), g.nonces[2])
	g.Send(t, delegate, g.tx(2, nil, 5_000, 100_000, common.FromHex("33ff"))) // created and destroyed at once
	addrs = []common.Address{logger, store, killer, ephemeral, followtest.Address(5), {}}
	for i := range 6 {
		addrs = append(addrs, followtest.Address(i))
	}
	slots = map[common.Address][]common.Hash{killer: {{31: 1}}, followtest.Address(5): {{31: 3}}}
	for i := range 5 {
		slots[store] = append(slots[store], common.Hash{31: byte(i)})
	}
	for b := 0; b < blocks; b++ {
		var txs []*types.Transaction
		fresh := common.Address{19: byte(b), 0: 0xf0}
		addrs = append(addrs, fresh)
		txs = append(txs, g.tx(b%4, &fresh, int64(b+1)*1e9, 21_000, nil))
		txs = append(txs, g.tx(3, &logger, 0, 50_000, common.Hash{31: byte(b)}.Bytes()))
		val := common.Hash{31: byte(b)}
		if b%5 == 4 {
			val = common.Hash{} // clear the slot
		}
		txs = append(txs, g.tx(4, &store, 0, 200_000, append(val.Bytes(), common.Hash{31: byte(b % 5)}.Bytes()...)))
		switch b {
		case 3:
			txs = append(txs, g.tx(1, &killer, 0, 200_000, nil)) // slot 1 = 1
		case 6:
			txs = append(txs, g.tx(1, &killer, 0, 200_000, []byte{1})) // selfdestruct (EIP-6780: balance only)
		}
		g.Send(t, txs...)
	}
	return addrs, slots
}

// rpcBatch posts one JSON-RPC batch and returns the results in order
// (errors as {"error": …}).
func rpcBatch(t *testing.T, url string, calls [][]any) []json.RawMessage {
	t.Helper()
	var reqs []map[string]any
	for i, c := range calls {
		reqs = append(reqs, map[string]any{"jsonrpc": "2.0", "id": i, "method": c[0], "params": c[1:]})
	}
	body, _ := json.Marshal(reqs)
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("batch answer from %s: %v", url, err)
	}
	res := make([]json.RawMessage, len(calls))
	for _, o := range out {
		res[o.ID] = o.Result
		if o.Error != nil {
			res[o.ID] = json.RawMessage(`{"error":` + string(o.Error) + `}`)
		}
	}
	return res
}

// compareAtEveryHeight asks tipnode and go-ethereum the same questions at
// every height (block with transactions, receipts, logs, balances, nonces,
// code, storage) and fails at the first difference. It returns how many
// answers were compared.
func compareAtEveryHeight(t *testing.T, ours, geth string, head uint64, addrs []common.Address, slots map[common.Address][]common.Hash) int {
	t.Helper()
	compared := 0
	for n := uint64(0); n <= head; n++ {
		num := hexutil.Uint64(n)
		calls := [][]any{
			{"eth_getBlockByNumber", num, true},
			{"eth_getBlockReceipts", num},
			{"eth_getLogs", map[string]any{"fromBlock": num, "toBlock": num}},
		}
		for _, a := range addrs {
			calls = append(calls, []any{"eth_getBalance", a, num}, []any{"eth_getTransactionCount", a, num}, []any{"eth_getCode", a, num})
			for _, s := range slots[a] {
				calls = append(calls, []any{"eth_getStorageAt", a, s, num})
			}
		}
		got, want := rpcBatch(t, ours, calls), rpcBatch(t, geth, calls)
		for i := range calls {
			if !jsonSame(got[i], want[i]) {
				t.Fatalf("height %d, %v:\ntipnode:  %s\ngo-ethereum: %s", n, calls[i], got[i], want[i])
			}
			compared++
		}
	}
	return compared
}

func jsonSame(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// TestFollowGethOracle: tipnode follows a go-ethereum node over HTTP
// (polling, JSON blocks) through catch-up and then live blocks; at every
// height its answers equal go-ethereum's.
func TestFollowGethOracle(t *testing.T) {
	geth := followtest.StartGeth(t, followtest.Options{Alloc: followtest.Fund(), NoDebug: true})
	g := &gethChain{Geth: geth, t: t, nonces: make(map[int]uint64)}
	addrs, slots := oracleChain(t, g, 12) // before the follower starts: catch-up
	f := startFollowNode(t, geth.Spec, geth.HTTP, func(c *follow.Config) { c.FetchBatch, c.FetchParallel = 3, 2 })
	f.waitHead(g.head().Hash())
	var syncing any
	if err := rpcCall(f.url, "eth_syncing", &syncing); err != nil || syncing != false {
		t.Fatalf("eth_syncing after the catch-up: %v, %v", syncing, err)
	}
	more, moreSlots := oracleChain(t, g, 6) // live
	f.waitHead(g.head().Hash())
	addrs = append(addrs, more...)
	for a, s := range moreSlots {
		slots[a] = append(slots[a], s...)
	}
	n := compareAtEveryHeight(t, f.url, geth.HTTP, f.Writer.Head().Number(), addrs, slots)
	t.Logf("%d heights, %d answers equal to go-ethereum's", f.Writer.Head().Number()+1, n)
	checkScenario(t, f.url, addrs, f.Writer.Head().Number())
}

// checkScenario: the chain really holds what oracleChain says (so that the
// comparison covers it): code, a delegation, a destroyed contract, a
// cleared and a written slot, logs.
func checkScenario(t *testing.T, url string, addrs []common.Address, head uint64) {
	t.Helper()
	for n := uint64(1); n <= head; n++ {
		var receipts []struct {
			Status hexutil.Uint64 `json:"status"`
		}
		if err := json.Unmarshal(rpcBatch(t, url, [][]any{{"eth_getBlockReceipts", hexutil.Uint64(n)}})[0], &receipts); err != nil {
			t.Fatal(err)
		}
		for i, r := range receipts {
			if r.Status != 1 {
				t.Fatalf("transaction %d of block %d failed: the scenario is not what it says", i, n)
			}
		}
	}
	logger, store, killer, ephemeral, delegated := addrs[0], addrs[1], addrs[2], addrs[3], addrs[4]
	res := rpcBatch(t, url, [][]any{
		{"eth_getCode", logger, "latest"},
		{"eth_getCode", delegated, "latest"},
		{"eth_getBalance", killer, "latest"},
		{"eth_getStorageAt", killer, common.Hash{31: 1}, "latest"},
		{"eth_getCode", ephemeral, "latest"},
		{"eth_getStorageAt", delegated, common.Hash{31: 3}, "latest"},
		{"eth_getLogs", map[string]any{"fromBlock": "0x0", "toBlock": "latest", "address": logger}},
		{"eth_getCode", store, "latest"},
	})
	var code, delegation, killerBal, killerSlot, ephemeralCode, delegatedSlot, storeCode string
	var logs []any
	for i, dst := range []any{&code, &delegation, &killerBal, &killerSlot, &ephemeralCode, &delegatedSlot, &logs, &storeCode} {
		if err := json.Unmarshal(res[i], dst); err != nil {
			t.Fatalf("answer %d %s: %v", i, res[i], err)
		}
	}
	switch {
	case code != hexutil.Encode(followtest.LoggerCode) || storeCode != hexutil.Encode(followtest.StoreCode):
		t.Fatalf("contract code %s / %s", code, storeCode)
	case delegation != hexutil.Encode(types.AddressToDelegation(store)):
		t.Fatalf("delegation code %s", delegation)
	case killerBal != "0x0" || killerSlot != common.Hash{31: 1}.Hex():
		t.Fatalf("self-destructed killer: balance %s slot %s (EIP-6780: balance moved, storage kept)", killerBal, killerSlot)
	case ephemeralCode != "0x":
		t.Fatalf("contract created and destroyed in one transaction has code %s", ephemeralCode)
	case delegatedSlot != common.Hash{31: 0x77}.Hex():
		t.Fatalf("storage written through the delegation: %s", delegatedSlot)
	case len(logs) < 18:
		t.Fatalf("%d logs", len(logs))
	}
}

// logSeq renders logs for comparison: block, transaction, index, removed.
func logSeq(logs []types.Log) []string {
	out := make([]string, len(logs))
	for i, l := range logs {
		out[i] = fmt.Sprintf("%d %s %s %d removed=%v", l.BlockNumber, l.BlockHash.Hex(), l.TxHash.Hex(), l.Index, l.Removed)
	}
	return out
}

// collectLogs gathers a logs subscription's notifications.
type collectLogs struct {
	mu   sync.Mutex
	logs []types.Log
}

func subscribeLogs(t *testing.T, url string) *collectLogs {
	t.Helper()
	c, err := ethclient.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ch := make(chan types.Log, 1024)
	sub, err := c.SubscribeFilterLogs(context.Background(), ethereum.FilterQuery{}, ch)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Unsubscribe)
	cl := &collectLogs{}
	go func() {
		for {
			select {
			case l := <-ch:
				cl.mu.Lock()
				cl.logs = append(cl.logs, l)
				cl.mu.Unlock()
			case <-sub.Err():
				return
			}
		}
	}()
	return cl
}

// take waits until n logs arrived (or a minute) and returns and forgets
// them.
func (c *collectLogs) take(t *testing.T, n int) []types.Log {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		c.mu.Lock()
		if len(c.logs) >= n || time.Now().After(deadline) {
			out := c.logs
			c.logs = nil
			c.mu.Unlock()
			return out
		}
		c.mu.Unlock()
		time.Sleep(5 * time.Millisecond) // notifications come from other processes' goroutines
	}
}

// readPairs reads (n-1, n, n-1) in one batch from url until stop and
// checks, whenever both reads of n-1 agree, that block n's parent hash is
// block n-1's hash: no reader sees a chain that does not link. It returns
// the number of pairs checked.
func readPairs(url string, stop <-chan struct{}) (int, error) {
	checked := 0
	for i := uint64(1); ; i++ {
		select {
		case <-stop:
			return checked, nil
		default:
		}
		var head hexutil.Uint64
		if err := rpcCall(url, "eth_blockNumber", &head); err != nil {
			return checked, err
		}
		n := 1 + i%uint64(max(head, 1))
		body, _ := json.Marshal([]map[string]any{
			{"jsonrpc": "2.0", "id": 0, "method": "eth_getBlockByNumber", "params": []any{hexutil.Uint64(n - 1), false}},
			{"jsonrpc": "2.0", "id": 1, "method": "eth_getBlockByNumber", "params": []any{hexutil.Uint64(n), false}},
			{"jsonrpc": "2.0", "id": 2, "method": "eth_getBlockByNumber", "params": []any{hexutil.Uint64(n - 1), false}},
		})
		resp, err := http.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			return checked, err
		}
		var out []struct {
			ID     int `json:"id"`
			Result *struct {
				Hash       common.Hash `json:"hash"`
				ParentHash common.Hash `json:"parentHash"`
			} `json:"result"`
		}
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil || len(out) != 3 {
			return checked, fmt.Errorf("batch answer: %v", err)
		}
		var blocks [3]*struct {
			Hash       common.Hash `json:"hash"`
			ParentHash common.Hash `json:"parentHash"`
		}
		for _, o := range out {
			blocks[o.ID] = o.Result
		}
		if blocks[0] == nil || blocks[1] == nil || blocks[2] == nil || blocks[0].Hash != blocks[2].Hash {
			continue // the chain moved during the batch
		}
		if blocks[1].ParentHash != blocks[0].Hash {
			return checked, fmt.Errorf("block %d's parent hash %s is not block %d's hash %s", n, blocks[1].ParentHash.Hex(), n-1, blocks[0].Hash.Hex())
		}
		checked++
	}
}

// TestFollowGethReorgs: reorgs of depth 1 and 10 made with go-ethereum's
// Fork, followed over a websocket (raw blocks). After each, tipnode's
// answers equal go-ethereum's at every height; its logs subscription sent
// the dropped blocks' logs with removed=true, oldest first, then the new
// blocks' logs — the same sequence go-ethereum's own subscription sent; a
// concurrent reader never saw a block whose parent is not the block before;
// pending reads the new head; the reorg metrics count them.
func TestFollowGethReorgs(t *testing.T) {
	geth := followtest.StartGeth(t, followtest.Options{Alloc: followtest.Fund()})
	g := &gethChain{Geth: geth, t: t, nonces: make(map[int]uint64)}
	addrs, slots := oracleChain(t, g, 12)
	f := startFollowNode(t, geth.Spec, geth.WS, nil)
	f.waitHead(g.head().Hash())
	ours := subscribeLogs(t, "ws"+strings.TrimPrefix(f.url, "http"))
	theirs := subscribeLogs(t, geth.WS)
	stop := make(chan struct{})
	type result struct {
		n   int
		err error
	}
	reader := make(chan result, 1)
	go func() {
		n, err := readPairs(f.url, stop)
		reader <- result{n, err}
	}()
	ctx := context.Background()
	for i, depth := range []uint64{1, 10} {
		head := g.head().Number.Uint64()
		removed, err := g.Client().FilterLogs(ctx, ethereum.FilterQuery{FromBlock: new(big.Int).SetUint64(head - depth + 1), ToBlock: new(big.Int).SetUint64(head)})
		if err != nil {
			t.Fatal(err)
		}
		fork, err := g.Client().HeaderByNumber(ctx, new(big.Int).SetUint64(head-depth))
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Fork(fork.Hash()); err != nil {
			t.Fatal(err)
		}
		logger := addrs[0]
		for b := range depth + 2 {
			g.Send(t, g.tx(6+i, &logger, 0, 100_000, common.Hash{0: 0xee, 30: byte(i), 31: byte(b)}.Bytes()))
		}
		newHead := g.head()
		f.waitHead(newHead.Hash())
		added, err := g.Client().FilterLogs(ctx, ethereum.FilterQuery{FromBlock: new(big.Int).SetUint64(head - depth + 1), ToBlock: newHead.Number})
		if err != nil {
			t.Fatal(err)
		}
		var want []types.Log
		for _, l := range removed {
			l.Removed = true
			want = append(want, l)
		}
		want = append(want, added...)
		gotOurs := logSeq(ours.take(t, len(want)))
		// go-ethereum's Fork makes the ancestor its head first
		// (SetCanonical), which re-announces the ancestor's own logs: not
		// part of the reorg, left out of the comparison.
		var theirLogs []types.Log
		for _, l := range theirs.take(t, len(want)) {
			if l.Removed || l.BlockNumber > fork.Number.Uint64() {
				theirLogs = append(theirLogs, l)
			}
		}
		gotTheirs := logSeq(theirLogs)
		if w := logSeq(want); !reflect.DeepEqual(gotOurs, w) {
			t.Fatalf("depth %d: tipnode's logs subscription sent\n%s\nwant\n%s", depth, strings.Join(gotOurs, "\n"), strings.Join(w, "\n"))
		}
		if !reflect.DeepEqual(gotOurs, gotTheirs) {
			t.Fatalf("depth %d: go-ethereum's logs subscription sent\n%s\ntipnode's\n%s", depth, strings.Join(gotTheirs, "\n"), strings.Join(gotOurs, "\n"))
		}
		n := compareAtEveryHeight(t, f.url, geth.HTTP, newHead.Number.Uint64(), addrs, slots)
		t.Logf("reorg of depth %d: %d removed logs then %d new ones, as go-ethereum; %d answers equal at %d heights",
			depth, len(removed), len(added), n, newHead.Number.Uint64()+1)
		// No driver: pending is the new head.
		res := rpcBatch(t, f.url, [][]any{{"eth_getBlockByNumber", "pending", false}, {"eth_getBalance", addrs[5], "pending"}, {"eth_getBalance", addrs[5], "latest"}})
		var pend struct {
			Hash common.Hash `json:"hash"`
		}
		if json.Unmarshal(res[0], &pend) != nil || pend.Hash != newHead.Hash() || !jsonSame(res[1], res[2]) {
			t.Fatalf("pending after the reorg: %s / %s vs %s", res[0], res[1], res[2])
		}
	}
	close(stop)
	r := <-reader
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Logf("a concurrent reader checked %d (n-1, n) pairs: every parent hash linked", r.n)
	metrics := scrape(t, f.url)
	for _, want := range []string{"tipnode_follow_reorgs_total 2", "tipnode_follow_reorg_depth_blocks_sum 11", "tipnode_follow_stopped 0"} {
		if !strings.Contains(metrics, want+"\n") {
			t.Fatalf("metrics lack %q", want)
		}
	}
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFollowGethDeepReorgStops: a reorg deeper than --follow.maxreorg
// stops following with the error; the node keeps serving the chain it has.
func TestFollowGethDeepReorgStops(t *testing.T) {
	geth := followtest.StartGeth(t, followtest.Options{Alloc: followtest.Fund()})
	g := &gethChain{Geth: geth, t: t, nonces: make(map[int]uint64)}
	oracleChain(t, g, 8)
	f := startFollowNode(t, geth.Spec, geth.WS, func(c *follow.Config) { c.MaxReorg = 4 })
	ourHead := g.head()
	f.waitHead(ourHead.Hash())
	fork, err := g.Client().HeaderByNumber(context.Background(), new(big.Int).Sub(ourHead.Number, big.NewInt(6)))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Fork(fork.Hash()); err != nil {
		t.Fatal(err)
	}
	for range 8 {
		g.Send(t, g.tx(7, &common.Address{7}, 1, 21_000, nil))
	}
	select {
	case <-f.Follower.Done():
	case <-time.After(2 * time.Minute):
		t.Fatal("following did not stop")
	}
	if err := f.Follower.Err(); !errors.Is(err, follow.ErrReorgTooDeep) || !strings.Contains(err.Error(), ourHead.Hash().Hex()) {
		t.Fatalf("follower error %v", err)
	}
	var n hexutil.Uint64
	if err := rpcCall(f.url, "eth_blockNumber", &n); err != nil || uint64(n) != ourHead.Number.Uint64() {
		t.Fatalf("eth_blockNumber after following stopped: %d, %v", n, err)
	}
	res := rpcBatch(t, f.url, [][]any{{"eth_getBlockByNumber", "latest", false}})
	var latest struct {
		Hash common.Hash `json:"hash"`
	}
	if json.Unmarshal(res[0], &latest) != nil || latest.Hash != ourHead.Hash() {
		t.Fatalf("latest block after following stopped: %s", res[0])
	}
	if m := scrape(t, f.url); !strings.Contains(m, "tipnode_follow_stopped 1\n") {
		t.Fatal("tipnode_follow_stopped is not 1")
	}
}

// rpcCall posts one request and decodes its result.
func rpcCall(url, method string, result any, params ...any) error {
	if params == nil {
		params = []any{}
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return err
	}
	if r.Error != nil {
		return fmt.Errorf("%s: %s", method, r.Error)
	}
	return json.Unmarshal(r.Result, result)
}

// TestFollowEthSyncing: while the follower catches up, eth_syncing reports
// the starting, current and highest blocks; once caught up, false. (A
// proxy holds the upstream's block bodies back until released.)
func TestFollowEthSyncing(t *testing.T) {
	geth := followtest.StartGeth(t, followtest.Options{Alloc: followtest.Fund(), NoDebug: true})
	g := &gethChain{Geth: geth, t: t, nonces: make(map[int]uint64)}
	oracleChain(t, g, 4)
	release := make(chan struct{})
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`,true]`)) { // a block with its transactions
			<-release
		}
		resp, err := http.Post(geth.HTTP, "application/json", bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "application/json")
		io.Copy(w, resp.Body)
	}))
	defer proxy.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	head := g.head()
	f := startFollowNode(t, geth.Spec, proxy.URL, nil)
	want := fmt.Sprintf(`{"startingBlock":"0x0","currentBlock":"0x0","highestBlock":"%s"}`, hexutil.Uint64(head.Number.Uint64()))
	deadline := time.Now().Add(time.Minute)
	for {
		res := rpcBatch(t, f.url, [][]any{{"eth_syncing"}})
		if jsonSame(res[0], json.RawMessage(want)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("eth_syncing during the catch-up: %s, want %s", res[0], want)
		}
		time.Sleep(5 * time.Millisecond) // the follower's goroutine reaches the catch-up on its own
	}
	close(release)
	f.waitHead(head.Hash())
	var syncing any
	if err := rpcCall(f.url, "eth_syncing", &syncing); err != nil || syncing != false {
		t.Fatalf("eth_syncing once caught up: %v, %v", syncing, err)
	}
}
