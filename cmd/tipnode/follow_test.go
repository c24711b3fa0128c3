package main

import (
	"crypto/ecdsa"
	"math/big"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/chain/devnet"
)

// process is a tipnode process.
type process struct {
	cmd *exec.Cmd
	out lockedWriter // the process writes it while the test reads it
}

func startProcess(t *testing.T, bin string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin, args...)}
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.kill)
	return p
}

func (p *process) kill() {
	if p.cmd.ProcessState == nil {
		p.cmd.Process.Kill()
		p.cmd.Wait()
	}
}

// waitRPC waits until url answers eth_chainId.
func waitRPC(t *testing.T, url string, p *process) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var id hexutil.Uint64
		if rpcCall(url, "eth_chainId", &id) == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not come up:\n%s", url, p.out.String())
		}
		time.Sleep(20 * time.Millisecond) // another process: nothing to wait on but its port
	}
}

func blockNumber(t *testing.T, url string) uint64 {
	t.Helper()
	var n hexutil.Uint64
	if err := rpcCall(url, "eth_blockNumber", &n); err != nil {
		t.Fatal(err)
	}
	return uint64(n)
}

// waitFollowed waits until the follower at url holds the upstream's block
// target (same hash).
func waitFollowed(t *testing.T, url string, target uint64, hash common.Hash, p *process) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var b *struct {
			Hash common.Hash `json:"hash"`
		}
		if rpcCall(url, "eth_getBlockByNumber", &b, hexutil.Uint64(target), false) == nil && b != nil && b.Hash == hash {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the follower did not reach block %d %s:\n%s", target, hash.Hex(), p.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func blockHash(t *testing.T, url string, n uint64) common.Hash {
	t.Helper()
	var b *struct {
		Hash common.Hash `json:"hash"`
	}
	if err := rpcCall(url, "eth_getBlockByNumber", &b, hexutil.Uint64(n), false); err != nil || b == nil {
		t.Fatalf("block %d at %s: %v", n, url, err)
	}
	return b.Hash
}

// devSender sends transfers from the first dev account to the node at
// url: from is the account, nonce the next nonce (the count sent).
type devSender struct {
	t       *testing.T
	url     string
	key     *ecdsa.PrivateKey
	chainID *big.Int
	from    common.Address
	nonce   uint64
}

func newDevSender(t *testing.T, url string) *devSender {
	t.Helper()
	accs, err := devnet.Accounts(devnet.Mnemonic, 1)
	if err != nil {
		t.Fatal(err)
	}
	return &devSender{t: t, url: url, key: accs[0].Key, chainID: big.NewInt(int64(devnet.DefaultChainID)), from: accs[0].Address}
}

// send signs n transfers (the next nonces) to {0xbe, nonce} of value
// nonce+1 for the dev chain and sends them.
func (s *devSender) send(n int) {
	s.t.Helper()
	signer := types.LatestSignerForChainID(s.chainID)
	for range n {
		tx, err := types.SignNewTx(s.key, signer, &types.DynamicFeeTx{ChainID: s.chainID, Nonce: s.nonce,
			GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(100 * params.GWei), Gas: 21_000,
			To: &common.Address{0xbe, byte(s.nonce)}, Value: big.NewInt(int64(s.nonce) + 1)})
		if err != nil {
			s.t.Fatal(err)
		}
		raw, _ := tx.MarshalBinary()
		var hash common.Hash
		if err := rpcCall(s.url, "eth_sendRawTransaction", &hash, hexutil.Bytes(raw)); err != nil {
			s.t.Fatal(err)
		}
		s.nonce++
	}
}

// TestFollowE2E runs real processes: `tipnode dev` as the upstream, a
// second data directory initialised from it (`init --genesis-from`) and
// `tipnode run --follow.rpc ws://…` on it. The follower's blocks have the
// upstream's hashes, while transactions flow and after the upstream is
// killed and restarted on its data directory.
func TestFollowE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the process test")
	}
	bin := filepath.Join(t.TempDir(), "tipnode")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	upDir, downDir := t.TempDir(), t.TempDir()
	upAddr, downAddr := freePort(t), freePort(t)
	upURL, downURL := "http://"+upAddr, "http://"+downAddr
	startUpstream := func() *process {
		p := startProcess(t, bin, "dev", "--datadir", upDir, "--http.addr", upAddr,
			"--preconf.interval", "50ms", "--block.time", "200ms", "--log.level", "warn", "--log.format", "json")
		waitRPC(t, upURL, p)
		return p
	}
	up := startUpstream()

	ds := newDevSender(t, upURL)
	send := ds.send
	// mined waits until the upstream sealed every transaction sent and is
	// at least at block min.
	mined := func(min uint64, p *process) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			var n hexutil.Uint64
			if rpcCall(upURL, "eth_getTransactionCount", &n, ds.from, "latest") == nil && uint64(n) == ds.nonce && blockNumber(t, upURL) >= min {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the upstream did not seal the transactions:\n%s", p.out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	send(20)
	mined(5, up)

	if out, err := exec.Command(bin, "init", "--datadir", downDir, "--genesis-from", upURL, "--log.level", "warn").CombinedOutput(); err != nil {
		t.Fatalf("init --genesis-from: %v\n%s", err, out)
	}
	down := startProcess(t, bin, "run", "--datadir", downDir, "--http.addr", downAddr,
		"--follow.rpc", "ws://"+upAddr, "--log.level", "info", "--log.format", "json")
	waitRPC(t, downURL, down)

	checkSame := func(what string) uint64 {
		t.Helper()
		target := blockNumber(t, upURL)
		waitFollowed(t, downURL, target, blockHash(t, upURL, target), down)
		for n := uint64(0); n <= target; n++ {
			if a, b := blockHash(t, upURL, n), blockHash(t, downURL, n); a != b {
				t.Fatalf("%s: block %d is %s upstream, %s on the follower", what, n, a.Hex(), b.Hex())
			}
		}
		return target
	}
	n1 := checkSame("catch-up")
	send(30)
	mined(n1+10, up)
	n2 := checkSame("live")

	// The upstream dies (kill -9) and comes back on its data directory:
	// the follower reconnects and goes on.
	up.kill()
	time.Sleep(300 * time.Millisecond) // the follower notices and backs off
	up = startUpstream()
	send(10)
	mined(n2+10, up)
	n3 := checkSame("after the upstream restarted")
	if !strings.Contains(down.out.String(), "reconnecting") {
		t.Fatalf("the follower did not log the upstream fault:\n%s", down.out.String())
	}
	var syncing any
	if err := rpcCall(downURL, "eth_syncing", &syncing); err != nil || syncing != false {
		t.Fatalf("eth_syncing once caught up: %v %v", syncing, err)
	}
	t.Logf("the follower holds the upstream's blocks 0..%d (caught up to %d, live to %d, after the upstream's restart to %d)", n3, n1, n2, n3)
}

// TestFollowFlags: the follow flags become the node's follow.Config; the
// sequencer and a follower exclude each other; a bad URL is refused.
func TestFollowFlags(t *testing.T) {
	parse := func(args ...string) (NodeFlags, error) {
		var nf NodeFlags
		fs := newFlagSet()
		nf.register(fs, false)
		return nf, fs.Parse(args)
	}
	nf, err := parse("--follow.rpc", "wss://node.example:8546", "--follow.maxreorg", "12", "--follow.poll", "250ms",
		"--follow.batch", "8", "--follow.parallel", "2")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := nf.nodeConfig()
	if err != nil {
		t.Fatal(err)
	}
	if f := cfg.Follow; f == nil || f.URL != "wss://node.example:8546" || f.MaxReorg != 12 || f.PollInterval != 250*time.Millisecond ||
		f.FetchBatch != 8 || f.FetchParallel != 2 || cfg.Sequencer != nil {
		t.Fatalf("follow config %+v", cfg.Follow)
	}
	for _, args := range [][]string{
		{"--follow.rpc", "http://127.0.0.1:8545", "--sequencer"},
		{"--follow.rpc", "ftp://127.0.0.1:8545"},
		{"--follow.rpc", "http://127.0.0.1:8545", "--follow.maxreorg", "0"},
	} {
		nf, err := parse(args...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nf.nodeConfig(); err == nil {
			t.Fatalf("%v accepted", args)
		}
	}
	if nf, _ := parse(); nf.FollowRPC != "" {
		t.Fatal("following by default")
	}
}

// TestFollowPreconfFlags: --follow.preconf and --follow.preconf.maxage
// become the node's Preconf config; the stream needs --follow.rpc and a
// ws(s) URL; the max age must be positive.
func TestFollowPreconfFlags(t *testing.T) {
	parse := func(args ...string) (NodeFlags, error) {
		var nf NodeFlags
		fs := newFlagSet()
		nf.register(fs, false)
		return nf, fs.Parse(args)
	}
	nf, err := parse("--follow.rpc", "http://seq:8545", "--follow.preconf", "ws://seq:8545/preconfirmations", "--follow.preconf.maxage", "3s")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := nf.nodeConfig()
	if err != nil {
		t.Fatal(err)
	}
	if p := cfg.Preconf; p == nil || p.Client.URL != "ws://seq:8545/preconfirmations" || p.Replica.MaxAge != 3*time.Second || p.Replica.Window != 5 {
		t.Fatalf("preconf config %+v", cfg.Preconf)
	}
	if nf, _ := parse("--follow.rpc", "http://seq:8545"); nf.FollowMaxAge != 2*time.Second {
		t.Fatalf("default max age %s, want 2s", nf.FollowMaxAge)
	}
	for _, args := range [][]string{
		{"--follow.preconf", "ws://seq:8545/preconfirmations"},
		{"--follow.rpc", "http://seq:8545", "--follow.preconf", "http://seq:8545/preconfirmations"},
		{"--follow.rpc", "http://seq:8545", "--follow.preconf", "ws://seq:8545/preconfirmations", "--follow.preconf.maxage", "0s"},
	} {
		nf, err := parse(args...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nf.nodeConfig(); err == nil {
			t.Fatalf("%v accepted", args)
		}
	}
}
