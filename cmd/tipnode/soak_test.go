package main

import (
	"context"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/chain/devnet"
)

// TestSoak (make soak; not part of make test: it runs only with
// TIPNODE_SOAK set to its duration) runs a `tipnode dev` sequencer and two
// `tipnode run` read replicas following it (blocks and pre-confirmation
// stream) under load — senders streaming transfers through the sequencer
// and the replicas, readers comparing `pending` with `latest` on every
// node — and kills one process with SIGKILL in turn (sequencer, replica 1,
// replica 2, ...) every TIPNODE_SOAK_KILL (default: a seventh of the run),
// restarting it on its data directory. Checked: no node ever serves a
// `pending` block older than its `latest`; every receipt a client was
// given is on every node at the end with the same block, index, gas and
// status; the three nodes have the same block hash at every height; no
// process panicked. The resident memory of each process is sampled and its
// growth reported.
func TestSoak(t *testing.T) {
	s := os.Getenv("TIPNODE_SOAK")
	if s == "" {
		t.Skip("the soak test runs with TIPNODE_SOAK=DURATION (make soak)")
	}
	duration, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("TIPNODE_SOAK=%q: %v", s, err)
	}
	killEvery := duration / 7
	if k := os.Getenv("TIPNODE_SOAK_KILL"); k != "" {
		if killEvery, err = time.ParseDuration(k); err != nil {
			t.Fatalf("TIPNODE_SOAK_KILL=%q: %v", k, err)
		}
	}
	bin := buildTipnode(t)

	type node struct {
		name, dir, addr, url string
		args                 []string
		mu                   sync.Mutex
		p                    *process
		rss                  [][]int64 // KiB, sampled: one series per process run
	}
	seqAddr := freePort(t)
	seq := &node{name: "sequencer", dir: t.TempDir(), addr: seqAddr}
	seq.args = []string{"dev", "--datadir", seq.dir, "--http.addr", seqAddr, "--preconf.interval", "100ms", "--block.time", "1s",
		"--log.level", "warn", "--log.format", "json"}
	nodes := []*node{seq}
	start := func(n *node) {
		p := startProcess(t, bin, n.args...)
		waitRPC(t, n.url, p)
		n.mu.Lock()
		n.p = p
		n.rss = append(n.rss, nil)
		n.mu.Unlock()
	}
	seq.url = "http://" + seqAddr
	start(seq)
	for i := 1; i <= 2; i++ {
		r := &node{name: fmt.Sprintf("replica %d", i), dir: t.TempDir(), addr: freePort(t)}
		r.url = "http://" + r.addr
		if out, err := exec.Command(bin, "init", "--datadir", r.dir, "--genesis-from", seq.url, "--log.level", "warn").CombinedOutput(); err != nil {
			t.Fatalf("init --genesis-from: %v\n%s", err, out)
		}
		r.args = []string{"run", "--datadir", r.dir, "--http.addr", r.addr, "--follow.rpc", "ws://" + seqAddr,
			"--follow.preconf", "ws://" + seqAddr + "/preconfirmations", "--log.level", "warn", "--log.format", "json"}
		start(r)
		nodes = append(nodes, r)
	}
	panicked := func(n *node) bool {
		n.mu.Lock()
		defer n.mu.Unlock()
		return strings.Contains(n.p.out.String(), "panic")
	}

	accs, err := devnet.Accounts(devnet.Mnemonic, 4)
	if err != nil {
		t.Fatal(err)
	}
	chainID := big.NewInt(int64(devnet.DefaultChainID))
	signer := types.LatestSignerForChainID(chainID)
	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		promised = map[common.Hash]promise{}
		checks   atomic.Int64
		sent     atomic.Int64
		failMu   sync.Mutex
		failures []string
	)
	fail := func(format string, args ...any) {
		failMu.Lock()
		defer failMu.Unlock()
		if len(failures) < 10 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	// Senders: one account each, through the sequencer or a replica
	// (forwarded), each transaction until it has a receipt; errors while a
	// node is down are retried with the pending nonce.
	for a, acc := range accs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			via := nodes[a%len(nodes)]
			for ctx.Err() == nil {
				var next hexutil.Uint64
				if rpcCall(seq.url, "eth_getTransactionCount", &next, acc.Address, "pending") != nil {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				tx, err := types.SignNewTx(acc.Key, signer, &types.DynamicFeeTx{ChainID: chainID, Nonce: uint64(next),
					GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(100 * params.GWei), Gas: 21_000,
					To: &common.Address{0x50, byte(a)}, Value: big.NewInt(1)})
				if err != nil {
					fail("sign: %v", err)
					return
				}
				raw, _ := tx.MarshalBinary()
				var hash common.Hash
				if rpcCall(via.url, "eth_sendRawTransaction", &hash, hexutil.Bytes(raw)) != nil {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				sent.Add(1)
				for deadline := time.Now().Add(10 * time.Second); ctx.Err() == nil && time.Now().Before(deadline); {
					var r *promise
					if rpcCall(seq.url, "eth_getTransactionReceipt", &r, hash) == nil && r != nil {
						mu.Lock()
						promised[hash] = *r
						mu.Unlock()
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}
	// Readers: pending is never older than latest (latest read first).
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				var latest, pend pendingBlock
				if rpcCall(n.url, "eth_getBlockByNumber", &latest, "latest", false) != nil ||
					rpcCall(n.url, "eth_getBlockByNumber", &pend, "pending", false) != nil {
					time.Sleep(50 * time.Millisecond) // down, or restarting
					continue
				}
				checks.Add(1)
				if pend.Number < latest.Number {
					fail("%s: pending block %d older than latest %d", n.name, pend.Number, latest.Number)
				}
			}
		}()
	}
	// Resident memory, every second.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			for _, n := range nodes {
				n.mu.Lock()
				if kib, err := rssKiB(n.p.cmd.Process.Pid); err == nil {
					n.rss[len(n.rss)-1] = append(n.rss[len(n.rss)-1], kib)
				}
				n.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	// kill -9 in turn.
	kills := 0
	for ticker := time.NewTicker(killEvery); ; {
		select {
		case <-ticker.C:
			n := nodes[kills%len(nodes)]
			kills++
			n.mu.Lock()
			n.p.kill()
			n.mu.Unlock()
			if panicked(n) {
				fail("%s panicked:\n%s", n.name, tail(n.p.out.String(), 3000))
			}
			time.Sleep(500 * time.Millisecond)
			start(n)
			continue
		case <-ctx.Done():
			ticker.Stop()
		}
		break
	}
	wg.Wait()

	// The replicas catch up with the sequencer's head, then: every promise
	// on every node, and the same hash at every height.
	var head hexutil.Uint64
	if err := rpcCall(seq.url, "eth_blockNumber", &head); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes[1:] {
		deadline := time.Now().Add(time.Minute)
		for {
			var h hexutil.Uint64
			if rpcCall(n.url, "eth_blockNumber", &h) == nil && h >= head {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not reach the sequencer's block %d", n.name, head)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	lost := 0
	for hash, want := range promised {
		for _, n := range nodes {
			var got *promise
			if err := rpcCall(n.url, "eth_getTransactionReceipt", &got, hash); err != nil || got == nil || got.BlockNumber != want.BlockNumber ||
				got.TransactionIndex != want.TransactionIndex || got.GasUsed != want.GasUsed || got.Status != want.Status ||
				(want.BlockHash != (common.Hash{}) && got.BlockHash != want.BlockHash) {
				lost++
				fail("%s: receipt of %s lost or changed (%v): had %+v, now %+v", n.name, hash.Hex(), err, want, got)
			}
		}
	}
	for h := uint64(0); h <= uint64(head); h++ {
		var want common.Hash
		for i, n := range nodes {
			var b struct {
				Hash common.Hash `json:"hash"`
			}
			if err := rpcCall(n.url, "eth_getBlockByNumber", &b, hexutil.Uint64(h), false); err != nil {
				fail("%s: block %d: %v", n.name, h, err)
				break
			}
			if i == 0 {
				want = b.Hash
			} else if b.Hash != want {
				fail("%s: block %d is %s, the sequencer's %s", n.name, h, b.Hash.Hex(), want.Hex())
			}
		}
	}
	for _, n := range nodes {
		if panicked(n) {
			fail("%s panicked:\n%s", n.name, tail(n.p.out.String(), 3000))
		}
		// Each run of the process: resident memory after its first
		// second, at its last sample and at its peak.
		var runs []string
		for _, r := range n.rss {
			if len(r) == 0 {
				continue
			}
			peak := r[0]
			for _, v := range r {
				peak = max(peak, v)
			}
			runs = append(runs, fmt.Sprintf("%d->%d MiB (peak %d, %ds)", r[0]>>10, r[len(r)-1]>>10, peak>>10, len(r)))
		}
		t.Logf("%s resident memory per run: %s", n.name, strings.Join(runs, ", "))
	}
	t.Logf("%s: %d kill -9, %d transactions sent, %d receipts promised (%d lost or changed), %d heights compared on 3 nodes, %d pending-vs-latest checks",
		duration, kills, sent.Load(), len(promised), lost, head+1, checks.Load())
	for _, f := range failures {
		t.Error(f)
	}
	if len(promised) == 0 {
		t.Error("no transaction got a receipt: the soak exercised nothing")
	}
}

// rssKiB is the resident memory of a process (Linux /proc).
func rssKiB(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmRSS for %d", pid)
}
