package main

import (
	"bytes"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	gethrpc "github.com/ethereum/go-ethereum/rpc"

	"github.com/tipnode/tipnode/chain/follow/followtest"
)

// anchoredNode is a `tipnode run` process following the node before it
// in a chain of anchored nodes.
type anchoredNode struct {
	name, dir, url, ws string
	p                  *process
}

// startAnchored runs `tipnode run` on dir following upstream, serving
// snapshots and metrics.
func startAnchored(t *testing.T, bin, name, dir, upstream string) *anchoredNode {
	t.Helper()
	addr := freePort(t)
	n := &anchoredNode{name: name, dir: dir, url: "http://" + addr, ws: "ws://" + addr}
	n.p = startProcess(t, bin, "run", "--datadir", dir, "--http.addr", addr, "--follow.rpc", upstream, "--follow.poll", "50ms",
		"--snapshot.serve", "--metrics", "--log.level", "info", "--log.format", "json")
	waitRPC(t, n.url, n.p)
	return n
}

// initProcess runs `tipnode init args…` as a process.
func initProcess(t *testing.T, bin string, args ...string) {
	t.Helper()
	out, err := exec.Command(bin, append(append([]string{"init"}, args...), "--log.level", "warn")...).CombinedOutput()
	if err != nil {
		t.Fatalf("init %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// tagNumber is the number of the block tag names on the node at url
// (history: "earliest", the oldest block whose history it holds).
func tagNumber(t *testing.T, url, tag string) uint64 {
	t.Helper()
	var b struct {
		Number hexutil.Uint64 `json:"number"`
	}
	if err := rpcCall(url, "eth_getBlockByNumber", &b, tag, false); err != nil {
		t.Fatalf("%s block at %s: %v", tag, url, err)
	}
	return uint64(b.Number)
}

// waitTag waits until the node's tag is block want.
func waitTag(t *testing.T, n *anchoredNode, tag string, want uint64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for tagNumber(t, n.url, tag) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s block %d, want %d:\n%s", n.name, tag, tagNumber(t, n.url, tag), want, n.p.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// readerCode returns its own slot 0, its balance and the block number
// (96 bytes): an eth_call whose answer follows the chain's state.
var readerCode = common.FromHex("600054600052" + "47602052" + "43604052" + "60606000f3")

// TestAnchoredChainE2E: nobody holds a real chain from genesis, so every
// node is anchored, and each follows the one before. go-ethereum's dump at
// block 20 → node A (`init --state`, following go-ethereum) → A's snapshot
// at its finalized block 32 → node B (`init --snapshot-from A`, following
// A) → B's snapshot at 64 → node C (following B). Each holds history from
// its own anchor (20, 32, 64), all reach go-ethereum's head and answer
// eth_getBlockByNumber, eth_getBalance and eth_call there as go-ethereum
// does (the blocks byte for byte equal on the three). Node D, joined from
// A's snapshot at 32 but following C (whose history starts at 64), stops
// following at once with an error naming C, the block and its
// pruned-history answer, logged once at error level and counted in
// tipnode_follow_stopped and tipnode_follow_upstream_errors_total{kind="pruned"}.
func TestAnchoredChainE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the process test")
	}
	bin := buildTipnode(t)
	reader := common.Address{0xae, 19: 1}
	alloc := followtest.Fund()
	alloc[reader] = types.Account{Code: readerCode, Storage: map[common.Hash]common.Hash{{}: {31: 7}}, Balance: big.NewInt(1)}
	u := followtest.StartGeth(t, followtest.Options{Alloc: alloc, Preimages: true})
	nonce := uint64(0)
	blocks := func(n int) {
		for range n {
			to := common.Address{0: 0xee, 19: byte(nonce)}
			if nonce%3 == 1 {
				to = reader // runs its code: the balance it returns grows
			}
			u.Send(t, followtest.Tx(t, 0, nonce, &to, big.NewInt(int64(nonce)+1), 50_000, nil))
			nonce++
		}
	}
	blocks(20)
	c, err := gethrpc.Dial(u.HTTP)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var dump json.RawMessage
	if err := c.Call(&dump, "debug_dumpBlock", hexutil.EncodeUint64(20)); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, body := range map[string][]byte{"dump.json": dump, "genesis.json": u.Spec} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	datadir := func(name string) string { return filepath.Join(dir, name) }
	initProcess(t, bin, "--datadir", datadir("a"), "--genesis", filepath.Join(dir, "genesis.json"),
		"--state", filepath.Join(dir, "dump.json"), "--state.block", "20", "--state.from", u.HTTP)
	blocks(20) // go-ethereum's simulated beacon finalizes every 32 blocks: 32

	a := startAnchored(t, bin, "A", datadir("a"), u.WS)
	waitTag(t, a, "finalized", 32)
	initProcess(t, bin, "--datadir", datadir("b"), "--snapshot-from", a.url)
	initProcess(t, bin, "--datadir", datadir("d"), "--snapshot-from", a.url)
	b := startAnchored(t, bin, "B", datadir("b"), a.ws)
	blocks(30) // finalized 64
	waitTag(t, b, "finalized", 64)
	initProcess(t, bin, "--datadir", datadir("c"), "--snapshot-from", b.url)
	cn := startAnchored(t, bin, "C", datadir("c"), b.ws)
	blocks(5)

	nodes := []*anchoredNode{a, b, cn}
	head, err := u.Client().HeaderByNumber(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	at := hexutil.EncodeUint64(head.Number.Uint64())
	for i, n := range nodes {
		waitFollowed(t, n.url, head.Number.Uint64(), head.Hash(), n.p)
		if got, want := tagNumber(t, n.url, "earliest"), []uint64{20, 32, 64}[i]; got != want {
			t.Fatalf("%s holds history from block %d, want its anchor %d", n.name, got, want)
		}
	}
	var want json.RawMessage
	if err := rpcCall(a.url, "eth_getBlockByNumber", &want, at, true); err != nil {
		t.Fatal(err)
	}
	var call hexutil.Bytes
	if err := c.Call(&call, "eth_call", map[string]any{"to": reader}, at); err != nil || len(call) != 96 {
		t.Fatalf("go-ethereum's eth_call: %x %v", call, err)
	}
	for _, n := range nodes {
		var got json.RawMessage
		if err := rpcCall(n.url, "eth_getBlockByNumber", &got, at, true); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s block %s: %v\n%s\nA's:\n%s", n.name, at, err, got, want)
		}
		for _, addr := range []common.Address{followtest.Address(0), reader, {0: 0xee, 19: 3}, head.Coinbase} {
			var bal hexutil.Big
			if err := rpcCall(n.url, "eth_getBalance", &bal, addr, at); err != nil {
				t.Fatalf("%s: %v", n.name, err)
			}
			wb, err := u.Client().BalanceAt(t.Context(), addr, head.Number)
			if err != nil || bal.ToInt().Cmp(wb) != 0 {
				t.Fatalf("%s balance of %s at %s: %s, go-ethereum's %s %v", n.name, addr.Hex(), at, bal.ToInt(), wb, err)
			}
		}
		var got96 hexutil.Bytes
		if err := rpcCall(n.url, "eth_call", &got96, map[string]any{"to": reader}, at); err != nil || !bytes.Equal(got96, call) {
			t.Fatalf("%s eth_call at %s: %x %v, go-ethereum's %x", n.name, at, []byte(got96), err, []byte(call))
		}
	}

	// D holds history from 32; C from 64: C cannot serve block 33.
	d := startAnchored(t, bin, "D", datadir("d"), cn.ws)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(d.p.out.String(), `"level":"error"`) {
		if time.Now().After(deadline) {
			t.Fatalf("D does not stop following C:\n%s", d.p.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond) // a retry would come after 500 ms
	var stops []string
	for _, line := range strings.Split(d.p.out.String(), "\n") {
		if strings.Contains(line, "pruned history unavailable") {
			stops = append(stops, line)
		}
	}
	if len(stops) != 1 || !strings.Contains(stops[0], `"level":"error"`) || !strings.Contains(stops[0], cn.ws) ||
		!strings.Contains(stops[0], "0x21") || !strings.Contains(stops[0], "--snapshot-from") {
		t.Fatalf("D: want one error naming C (%s), block 33 and what to do; got:\n%s", cn.ws, strings.Join(stops, "\n"))
	}
	if n := blockNumber(t, d.url); n != 32 {
		t.Fatalf("D's head %d, want its anchor 32", n)
	}
	resp, err := http.Get(d.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{"tipnode_follow_stopped 1", `tipnode_follow_upstream_errors_total{kind="pruned"} 1`} {
		if !bytes.Contains(metrics, []byte(m)) {
			t.Fatalf("D's metrics lack %q", m)
		}
	}
	t.Logf("D: %s", stops[0])
}

// TestAnchoredChainOPE2E: the same chain of anchored nodes on an OP chain
// (blocks with L1-info deposits, L1 fees to the fee vaults): `tipnode dev
// --op --snapshot.serve` → snapshot → A (following it) → A's snapshot → B
// (following A) → B's snapshot → C (following B), each anchored later
// than the one before. All reach the sequencer's head and answer its
// block byte for byte, its balances (sender, recipient, fee vaults) and
// its eth_call of the L1Block predeploy there.
func TestAnchoredChainOPE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the process test")
	}
	bin := buildTipnode(t)
	seqAddr := freePort(t)
	seq := &anchoredNode{name: "sequencer", dir: t.TempDir(), url: "http://" + seqAddr, ws: "ws://" + seqAddr}
	seq.p = startProcess(t, bin, "dev", "--op", "--datadir", seq.dir, "--http.addr", seqAddr, "--snapshot.serve",
		"--preconf.interval", "50ms", "--block.time", "200ms", "--log.level", "warn", "--log.format", "json")
	waitRPC(t, seq.url, seq.p)
	ds := newDevSender(t, seq.url)
	send := ds.send
	// join starts a node joined from a snapshot of up, following it, once
	// up's finalized block is above its own anchor.
	join := func(name string, up *anchoredNode) *anchoredNode {
		t.Helper()
		send(3)
		deadline := time.Now().Add(time.Minute)
		for tagNumber(t, up.url, "finalized") <= tagNumber(t, up.url, "earliest")+2 {
			if time.Now().After(deadline) {
				t.Fatalf("%s finalizes nothing above its anchor:\n%s", up.name, up.p.out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		dir := t.TempDir()
		initProcess(t, bin, "--datadir", dir, "--snapshot-from", up.url)
		return startAnchored(t, bin, name, dir, up.ws)
	}
	a := join("A", seq)
	b := join("B", a)
	c := join("C", b)
	send(3)
	head := blockNumber(t, seq.url) + 2
	for blockNumber(t, seq.url) < head {
		time.Sleep(20 * time.Millisecond)
	}
	hash := blockHash(t, seq.url, head)
	at := hexutil.EncodeUint64(head)
	nodes := []*anchoredNode{a, b, c}
	var prev uint64
	for _, n := range nodes {
		waitFollowed(t, n.url, head, hash, n.p)
		anchor := tagNumber(t, n.url, "earliest")
		if anchor <= prev {
			t.Fatalf("%s anchored at %d, not above the node before it (%d)", n.name, anchor, prev)
		}
		prev = anchor
	}
	var want json.RawMessage
	if err := rpcCall(seq.url, "eth_getBlockByNumber", &want, at, true); err != nil {
		t.Fatal(err)
	}
	l1Block := common.HexToAddress("0x4200000000000000000000000000000000000015")
	call := map[string]any{"to": l1Block, "data": "0x8381f58a"} // number()
	var wantCall hexutil.Bytes
	if err := rpcCall(seq.url, "eth_call", &wantCall, call, at); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		var got json.RawMessage
		if err := rpcCall(n.url, "eth_getBlockByNumber", &got, at, true); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s block %s: %v\n%s\nthe sequencer's:\n%s", n.name, at, err, got, want)
		}
		for _, addr := range []common.Address{ds.from, {0xbe, 1},
			common.HexToAddress("0x4200000000000000000000000000000000000011"),
			common.HexToAddress("0x4200000000000000000000000000000000000019"),
			common.HexToAddress("0x420000000000000000000000000000000000001a")} {
			var got, want hexutil.Big
			if err := rpcCall(n.url, "eth_getBalance", &got, addr, at); err != nil {
				t.Fatalf("%s: %v", n.name, err)
			}
			if err := rpcCall(seq.url, "eth_getBalance", &want, addr, at); err != nil {
				t.Fatal(err)
			}
			if got.ToInt().Cmp(want.ToInt()) != 0 {
				t.Fatalf("%s balance of %s at %s: %s, the sequencer's %s", n.name, addr.Hex(), at, got.ToInt(), want.ToInt())
			}
		}
		var gotCall hexutil.Bytes
		if err := rpcCall(n.url, "eth_call", &gotCall, call, at); err != nil || !bytes.Equal(gotCall, wantCall) {
			t.Fatalf("%s eth_call at %s: %x %v, the sequencer's %x", n.name, at, []byte(gotCall), err, []byte(wantCall))
		}
	}
	t.Logf("anchors: A %d, B %d, C %d; head %d", tagNumber(t, a.url, "earliest"), tagNumber(t, b.url, "earliest"), prev, head)
}
