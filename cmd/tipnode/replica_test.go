package main

import (
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/chain/devnet"
	"github.com/tipnode/tipnode/pending/stream/streamtest"
)

// storeCode is a contract's runtime: called without data it returns slot
// 0; with data it stores the first word in slot 0.
//
//	CALLDATASIZE PUSH1 0x0f JUMPI PUSH1 0 SLOAD PUSH1 0 MSTORE PUSH1 0x20
//	PUSH1 0 RETURN JUMPDEST PUSH1 0 CALLDATALOAD PUSH1 0 SSTORE STOP
var storeCode = common.FromHex("0x36600f5760005460005260206000f35b600035600055" + "00")

// storeInit deploys storeCode (CODECOPY it from after the 11-byte prefix).
var storeInit = append(common.FromHex("0x601780600b6000396000f3"), storeCode...)

// contextCode returns NUMBER, TIMESTAMP, BASEFEE, COINBASE, PREVRANDAO (one
// word each): installed by a state override, it shows which block context
// an eth_call at `pending` ran in.
var contextCode = common.FromHex("0x4360005242602052486040524160605244608052" + "60a06000f3")

// pendingBlock is the part of eth_getBlockByNumber("pending") the replica
// test reads.
type pendingBlock struct {
	Number       hexutil.Uint64 `json:"number"`
	Hash         *common.Hash   `json:"hash"`
	GasUsed      hexutil.Uint64 `json:"gasUsed"`
	Transactions []common.Hash  `json:"transactions"`
}

// TestReplicasE2E runs real processes: one `tipnode dev` (the sequencer,
// streaming) and two `tipnode run` read replicas set up with `init
// --genesis-from` and following it with --follow.rpc and --follow.preconf,
// the second through a fault-injection proxy. Transfers and a contract
// write sent to the replicas (forwarded to the sequencer) show on both
// replicas' `pending` (the latency from the sequencer's pending is logged);
// eth_call at `pending` answers the same on all three nodes, block context
// included; sealed blocks have the same hashes on all three. Faults: the
// proxy drops, duplicates, reorders and delays messages while every
// pending block the replica serves is checked to be a prefix of the
// sequencer's block (no hole, no divergent transaction or gas) and the
// replica recovers once the faults stop; a replica killed with SIGKILL
// mid-block restarts and catches up, canonical and pending; the sequencer
// killed and restarted: replicas fall back to the canonical head, then
// resume.
func TestReplicasE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the process test")
	}
	bin := filepath.Join(t.TempDir(), "tipnode")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	const interval = 100 * time.Millisecond
	seqDir := t.TempDir()
	seqAddr := freePort(t)
	seqURL, seqStream := "http://"+seqAddr, "ws://"+seqAddr+"/preconfirmations"
	startSeq := func() *process {
		p := startProcess(t, bin, "dev", "--datadir", seqDir, "--http.addr", seqAddr,
			"--preconf.interval", interval.String(), "--block.time", "1s", "--log.level", "warn", "--log.format", "json")
		waitRPC(t, seqURL, p)
		return p
	}
	seq := startSeq()
	proxy := streamtest.NewProxy(t, seqStream, 20261123)

	type replica struct {
		name, dir, addr, url, stream string
		p                            *process
	}
	replicas := []*replica{{name: "replica 1", stream: seqStream}, {name: "replica 2 (proxied)", stream: proxy.URL}}
	startReplica := func(r *replica) {
		r.p = startProcess(t, bin, "run", "--datadir", r.dir, "--http.addr", r.addr, "--metrics",
			"--follow.rpc", "ws://"+seqAddr, "--follow.preconf", r.stream, "--log.level", "info", "--log.format", "json")
		waitRPC(t, r.url, r.p)
	}
	for _, r := range replicas {
		r.dir, r.addr = t.TempDir(), freePort(t)
		r.url = "http://" + r.addr
		if out, err := exec.Command(bin, "init", "--datadir", r.dir, "--genesis-from", seqURL, "--log.level", "warn").CombinedOutput(); err != nil {
			t.Fatalf("init --genesis-from: %v\n%s", err, out)
		}
		startReplica(r)
	}
	r1, r2 := replicas[0], replicas[1]
	nodes := []string{seqURL, r1.url, r2.url}
	logs := func() string {
		return fmt.Sprintf("sequencer:\n%s\n%s:\n%s\n%s:\n%s", tail(seq.out.String(), 3000), r1.name, tail(r1.p.out.String(), 3000), r2.name, tail(r2.p.out.String(), 3000))
	}

	accs, err := devnet.Accounts(devnet.Mnemonic, 3)
	if err != nil {
		t.Fatal(err)
	}
	chainID := big.NewInt(int64(devnet.DefaultChainID))
	signer := types.LatestSignerForChainID(chainID)
	var nonceMu sync.Mutex
	nonces := make([]uint64, len(accs))
	recipient := 0
	// send signs a transaction from account a and sends it to url; to nil
	// with data deploys.
	send := func(url string, a int, to *common.Address, gas uint64, data []byte) (*types.Transaction, error) {
		nonceMu.Lock()
		n := nonces[a]
		nonceMu.Unlock()
		tx, err := types.SignNewTx(accs[a].Key, signer, &types.DynamicFeeTx{ChainID: chainID, Nonce: n,
			GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(100 * params.GWei), Gas: gas, To: to, Value: big.NewInt(1), Data: data})
		if err != nil {
			return nil, err
		}
		raw, _ := tx.MarshalBinary()
		var hash common.Hash
		if err := rpcCall(url, "eth_sendRawTransaction", &hash, hexutil.Bytes(raw)); err != nil {
			return nil, err
		}
		if hash != tx.Hash() {
			return nil, fmt.Errorf("sent %s, answered %s", tx.Hash(), hash)
		}
		nonceMu.Lock()
		nonces[a]++
		nonceMu.Unlock()
		return tx, nil
	}
	fresh := func() common.Address {
		nonceMu.Lock()
		defer nonceMu.Unlock()
		recipient++
		return common.Address{0xfe, byte(recipient >> 8), byte(recipient)}
	}
	transfer := func(url string, a int) common.Address {
		t.Helper()
		to := fresh()
		if _, err := send(url, a, &to, 21_000, nil); err != nil {
			t.Fatalf("transfer via %s: %v\n%s", url, err, logs())
		}
		return to
	}
	// until polls cond (another process: nothing to wait on but its
	// answers) and fails after a minute.
	until := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not reached within a minute\n%s", what, logs())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	balance := func(url string, a common.Address, tag string) *big.Int {
		var b hexutil.Big
		if err := rpcCall(url, "eth_getBalance", &b, a, tag); err != nil {
			return new(big.Int)
		}
		return b.ToInt()
	}
	getPending := func(url string) (pendingBlock, error) {
		var b pendingBlock
		err := rpcCall(url, "eth_getBlockByNumber", &b, "pending", false)
		return b, err
	}

	// 1. Transfers through the replicas (forwarded to the sequencer): the
	// time each takes to show on a replica's pending after it shows on
	// the sequencer's.
	// Warm-up: a replica that just started serves the canonical head
	// until the stream's next index 0 (it joined mid-block, possibly
	// before its follower had the parent); wait until both serve a
	// pre-confirmed block (no hash).
	for _, r := range replicas {
		until(r.name+" serving a pre-confirmed pending block", func() bool {
			b, err := getPending(r.url)
			return err == nil && b.Hash == nil
		})
	}
	var lat []time.Duration
	for i := range 12 {
		via := replicas[i%2]
		to := transfer(via.url, i%2)
		seen := make([]time.Time, len(nodes))
		var wg sync.WaitGroup
		for k, url := range nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				deadline := time.Now().Add(time.Minute)
				for balance(url, to, "pending").Sign() == 0 && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
				seen[k] = time.Now()
			}()
		}
		wg.Wait()
		for k, url := range nodes {
			if balance(url, to, "pending").Sign() == 0 {
				t.Fatalf("transfer %d (sent via %s) not on %s's pending\n%s", i, via.name, url, logs())
			}
			if k > 0 {
				lat = append(lat, max(0, seen[k].Sub(seen[0])))
			}
		}
	}
	t.Logf("latencies in sending order (replica 1, replica 2, ...): %v", lat)
	slices.Sort(lat)
	t.Logf("transfer visible on the sequencer's pending -> on a replica's pending (%d samples, polled every ms): p50 %s, max %s (pre-confirmation interval %s)",
		len(lat), lat[len(lat)/2], lat[len(lat)-1], interval)

	// 2. A contract deployed through replica 1, written through replica 2;
	// eth_call at pending answers the same on all three.
	nonceMu.Lock()
	contract := crypto.CreateAddress(accs[0].Address, nonces[0])
	nonceMu.Unlock()
	if _, err := send(r1.url, 0, nil, 200_000, storeInit); err != nil {
		t.Fatal(err)
	}
	until("the contract on replica 2's pending", func() bool {
		var code hexutil.Bytes
		return rpcCall(r2.url, "eth_getCode", &code, contract, "pending") == nil && len(code) > 0
	})
	word := common.BigToHash(big.NewInt(42))
	if _, err := send(r2.url, 1, &contract, 100_000, word[:]); err != nil {
		t.Fatal(err)
	}
	callAll := func(args map[string]any, extra ...any) ([]string, error) {
		out := make([]string, len(nodes))
		for k, url := range nodes {
			var res hexutil.Bytes
			if err := rpcCall(url, "eth_call", &res, append([]any{args, "pending"}, extra...)...); err != nil {
				return nil, fmt.Errorf("%s: %w", url, err)
			}
			out[k] = res.String()
		}
		return out, nil
	}
	for _, url := range nodes {
		until("the write on "+url+"'s pending", func() bool {
			var res hexutil.Bytes
			return rpcCall(url, "eth_call", &res, map[string]any{"to": contract}, "pending") == nil && common.BytesToHash(res) == word
		})
	}
	got, err := callAll(map[string]any{"to": contract})
	if err != nil || got[0] != got[1] || got[0] != got[2] {
		t.Fatalf("eth_call(pending) of the contract: %v %v", got, err)
	}
	// The block context at pending: equal on all three (retried across a
	// block boundary, when the nodes may be a message apart).
	probe := common.Address{0xc0, 0xde}
	override := map[string]any{probe.Hex(): map[string]any{"code": hexutil.Bytes(contextCode)}}
	until("the same pending block context on all three", func() bool {
		got, err := callAll(map[string]any{"to": probe}, override)
		return err == nil && got[0] == got[1] && got[0] == got[2]
	})

	// 3. Sealed blocks: the same hashes on all three.
	sameBlocks := func(what string) uint64 {
		t.Helper()
		until(what+": every transaction sealed", func() bool {
			for a := range accs {
				var n hexutil.Uint64
				nonceMu.Lock()
				want := nonces[a]
				nonceMu.Unlock()
				if rpcCall(seqURL, "eth_getTransactionCount", &n, accs[a].Address, "latest") != nil || uint64(n) != want {
					return false
				}
			}
			return true
		})
		target := blockNumber(t, seqURL)
		for _, r := range replicas {
			waitFollowed(t, r.url, target, blockHash(t, seqURL, target), r.p)
		}
		for n := uint64(0); n <= target; n++ {
			want := blockHash(t, seqURL, n)
			for _, r := range replicas {
				if got := blockHash(t, r.url, n); got != want {
					t.Fatalf("%s: block %d is %s on the sequencer, %s on %s", what, n, want.Hex(), got.Hex(), r.name)
				}
			}
		}
		return target
	}
	n1 := sameBlocks("after the transfers and the contract")

	// 4. Faults between the sequencer and replica 2: every pending block
	// replica 2 serves is a prefix of the sequencer's block of that number.
	proxy.SetFaults(streamtest.Faults{Drop: 0.2, Duplicate: 0.2, Reorder: 0.2, Delay: 30 * time.Millisecond})
	type observation struct {
		number uint64
		hashes string // joined, for deduplication
		txs    []common.Hash
		gas    uint64
	}
	seenStates := map[string]observation{}
	stopObserving := make(chan struct{})
	observed := make(chan error, 1)
	go func() {
		var err error
		for {
			select {
			case <-stopObserving:
				observed <- err
				return
			default:
			}
			b, e := getPending(r2.url)
			if e != nil {
				err = e
				continue
			}
			key := fmt.Sprint(uint64(b.Number), b.Transactions, uint64(b.GasUsed))
			if _, ok := seenStates[key]; !ok {
				seenStates[key] = observation{number: uint64(b.Number), hashes: key, txs: b.Transactions, gas: uint64(b.GasUsed)}
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	for range 60 {
		transfer(seqURL, 2)
		time.Sleep(interval / 3)
	}
	close(stopObserving)
	if err := <-observed; err != nil {
		t.Logf("an observation of replica 2's pending failed (ignored): %v", err)
	}
	st := proxy.Stats()
	if st.Dropped == 0 || st.Duplicated == 0 || st.Reordered == 0 {
		t.Fatalf("the proxy injected too little: %+v", st)
	}
	proxy.SetFaults(streamtest.Faults{})
	// Recovery: a transaction sent now shows on replica 2's pending.
	to := transfer(seqURL, 2)
	until("replica 2's pending after the faults stopped", func() bool { return balance(r2.url, to, "pending").Sign() > 0 })
	n2 := sameBlocks("after the faults")
	prefixes, fallbacks := 0, 0
	for _, o := range seenStates {
		var blk struct {
			Hash         common.Hash    `json:"hash"`
			GasUsed      hexutil.Uint64 `json:"gasUsed"`
			Transactions []common.Hash  `json:"transactions"`
		}
		if err := rpcCall(seqURL, "eth_getBlockByNumber", &blk, hexutil.Uint64(o.number), false); err != nil {
			t.Fatal(err)
		}
		if len(o.txs) > len(blk.Transactions) || !slices.Equal(o.txs, blk.Transactions[:len(o.txs)]) {
			t.Fatalf("replica 2 served pending block %d with transactions %v: not a prefix of the sequencer's %v (a hole or a divergence)", o.number, o.txs, blk.Transactions)
		}
		wantGas := uint64(0)
		if len(o.txs) > 0 {
			var rc struct {
				CumulativeGasUsed hexutil.Uint64 `json:"cumulativeGasUsed"`
			}
			if err := rpcCall(seqURL, "eth_getTransactionReceipt", &rc, o.txs[len(o.txs)-1]); err != nil {
				t.Fatal(err)
			}
			wantGas = uint64(rc.CumulativeGasUsed)
		}
		if o.gas != wantGas {
			t.Fatalf("replica 2 served pending block %d with %d transactions and gas used %d; the sequencer's block has %d after them", o.number, len(o.txs), o.gas, wantGas)
		}
		if len(o.txs) == len(blk.Transactions) {
			fallbacks++ // the whole block: its last pre-confirmation, or the canonical head
		} else {
			prefixes++
		}
	}
	resets := scrape(t, r2.url, `tipnode_replica_resets_total\{[^}]*\} ([0-9.e+]+)`)
	t.Logf("faults: proxy %+v; replica 2 served %d distinct pending states over blocks %d..%d (%d partial blocks, %d complete), each a prefix of the sequencer's; replica resets %v",
		st, len(seenStates), n1, n2, prefixes, fallbacks, resets)

	// 5. Replica 1 killed (SIGKILL) mid-block while transactions flow, then
	// restarted: it catches up, canonical and pending.
	for range 5 {
		transfer(seqURL, 2)
	}
	time.Sleep(interval * 3 / 2) // mid-block: a few pre-confirmations into it
	r1.p.kill()
	for range 10 {
		transfer(seqURL, 2)
	}
	startReplica(r1)
	to = transfer(r1.url, 0)
	until("replica 1's pending after its restart", func() bool { return balance(r1.url, to, "pending").Sign() > 0 })
	sameBlocks("after replica 1's restart")

	// 6. The sequencer killed: the replicas fall back to the canonical
	// head (pending is latest); restarted: they resume.
	seq.kill()
	for _, r := range replicas {
		until(r.name+" falling back to the canonical head", func() bool {
			b, err := getPending(r.url)
			if err != nil {
				return false
			}
			var head hexutil.Uint64
			return rpcCall(r.url, "eth_blockNumber", &head) == nil && b.Number == head && b.Hash != nil
		})
	}
	seq = startSeq()
	to = transfer(r2.url, 1)
	for _, r := range replicas {
		until(r.name+"'s pending after the sequencer's restart", func() bool { return balance(r.url, to, "pending").Sign() > 0 })
	}
	n3 := sameBlocks("after the sequencer's restart")
	for _, r := range replicas {
		out := r.p.out.String()
		if !regexp.MustCompile(`pre-confirmation stream lost`).MatchString(out) || !regexp.MustCompile(`pre-confirmation stream connected`).MatchString(out) {
			t.Fatalf("%s did not log the stream's loss and reconnection:\n%s", r.name, tail(out, 4000))
		}
	}
	t.Logf("the replicas hold the sequencer's blocks 0..%d", n3)
}

// scrape returns the values of a metric matched by re (one group) on
// url's /metrics.
func scrape(t *testing.T, url, re string) []float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out []float64
	for _, m := range regexp.MustCompile(re).FindAllStringSubmatch(string(body), -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		out = append(out, v)
	}
	sort.Float64s(out)
	return out
}
