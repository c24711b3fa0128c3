package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/chain/devnet"
)

// crashIterations is how many kill -9 / restart rounds TestCrashKeepsPreconfirmations
// runs: TIPNODE_CRASH_ITERATIONS (make crash sets 60), else a short run for
// make test.
func crashIterations(t *testing.T) int {
	if s := os.Getenv("TIPNODE_CRASH_ITERATIONS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("TIPNODE_CRASH_ITERATIONS=%q: want a positive number", s)
		}
		return n
	}
	return 12
}

// devProcess is a `tipnode dev` process on a fixed data directory, to be
// killed with SIGKILL.
type devProcess struct {
	cmd *exec.Cmd
	url string
	out lockedWriter // the process writes it while the test reads it
}

func startCrashableDev(t *testing.T, bin, datadir string) *devProcess {
	t.Helper()
	addr := freePort(t)
	p := &devProcess{url: "http://" + addr}
	// A trie window of 4 blocks: every seal also prunes the trie.
	p.cmd = exec.Command(bin, "dev", "--datadir", datadir, "--http.addr", addr,
		"--preconf.interval", "50ms", "--block.time", "300ms", "--trie.window", "4", "--log.level", "warn", "--log.format", "json")
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		var id hexutil.Uint64
		if err := rpcCall(p.url, "eth_chainId", &id); err == nil {
			return p
		}
		if time.Now().After(deadline) {
			p.cmd.Process.Kill()
			p.cmd.Wait()
			t.Fatalf("tipnode dev did not come up: %s", p.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill sends SIGKILL and reaps the process.
func (p *devProcess) kill() {
	p.cmd.Process.Kill()
	p.cmd.Wait()
}

// verifyStore runs `tipnode verify` on a data directory no process holds:
// the state root recomputed from the flat state, the state trie walked node
// by node and the latest header's root must agree.
func verifyStore(t *testing.T, bin, datadir, when string) {
	t.Helper()
	out, err := exec.Command(bin, "verify", "--datadir", datadir, "--log.level", "warn").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "\nOK\n") {
		t.Fatalf("%s: tipnode verify failed (%v):\n%s", when, err, out)
	}
}

func rpcCall(url, method string, result any, params ...any) error {
	if params == nil {
		params = []any{}
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return err
	}
	if r.Error != nil {
		return fmt.Errorf("%s: %d %s", method, r.Error.Code, r.Error.Message)
	}
	return json.Unmarshal(r.Result, result)
}

// promise is what a client was told about a transaction: its receipt.
type promise struct {
	BlockHash         common.Hash    `json:"blockHash"`
	BlockNumber       hexutil.Uint64 `json:"blockNumber"`
	TransactionIndex  hexutil.Uint64 `json:"transactionIndex"`
	GasUsed           hexutil.Uint64 `json:"gasUsed"`
	CumulativeGasUsed hexutil.Uint64 `json:"cumulativeGasUsed"`
	Status            hexutil.Uint64 `json:"status"`
}

// TestCrashKeepsPreconfirmations kills a real `tipnode dev` with SIGKILL —
// at random moments, right after a client got a receipt, and right after a
// seal, in turn — while a client streams transactions and collects their
// (pre-confirmed or sealed) receipts, and restarts it on the same data
// directory. After every restart each receipt a client was given is there
// again with the same block number, index, gas and status (a sealed one with
// the same block hash), the sender's pending nonce never goes back
// below what a receipt promised, and `tipnode verify` passes on the data
// directory after every kill (every seal prunes: --trie.window 4).
func TestCrashKeepsPreconfirmations(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the process crash test")
	}
	bin := buildTipnode(t)
	datadir := t.TempDir()
	accs, err := devnet.Accounts(devnet.Mnemonic, 2)
	if err != nil {
		t.Fatal(err)
	}
	chainID := big.NewInt(int64(devnet.DefaultChainID))
	signer := types.LatestSignerForChainID(chainID)
	rng := rand.New(rand.NewPCG(7, 11))
	var (
		mu       sync.Mutex
		promised = map[common.Hash]promise{}
		maxNonce = map[common.Address]uint64{}
		checked  int
	)
	iterations := crashIterations(t)
	var modes [3]int
	for it := 0; it < iterations; it++ {
		p := startCrashableDev(t, bin, datadir)
		// Every promise made before must still hold.
		for hash, want := range promised {
			var got *promise
			if err := rpcCall(p.url, "eth_getTransactionReceipt", &got, hash); err != nil || got == nil {
				p.kill()
				t.Fatalf("iteration %d: receipt of %s lost after kill -9 (%v)\n%s", it, hash.Hex(), err, p.out.String())
			}
			if got.BlockNumber != want.BlockNumber || got.TransactionIndex != want.TransactionIndex || got.GasUsed != want.GasUsed ||
				got.CumulativeGasUsed != want.CumulativeGasUsed || got.Status != want.Status ||
				(want.BlockHash != (common.Hash{}) && got.BlockHash != want.BlockHash) {
				p.kill()
				t.Fatalf("iteration %d: receipt of %s changed after kill -9: had %+v, now %+v", it, hash.Hex(), want, *got)
			}
			checked++
		}
		for addr, n := range maxNonce {
			var pendingNonce hexutil.Uint64
			if err := rpcCall(p.url, "eth_getTransactionCount", &pendingNonce, addr, "pending"); err != nil || uint64(pendingNonce) <= n {
				p.kill()
				t.Fatalf("iteration %d: pending nonce of %s is %d (%v), a receipt promised nonce %d", it, addr.Hex(), pendingNonce, err, n)
			}
		}
		// Stream transactions from both accounts until the kill.
		ctx, cancel := context.WithCancel(context.Background())
		receipted := make(chan struct{}, 1)
		var wg sync.WaitGroup
		for _, acc := range accs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var next hexutil.Uint64
				if err := rpcCall(p.url, "eth_getTransactionCount", &next, acc.Address, "pending"); err != nil {
					return
				}
				for nonce := uint64(next); ctx.Err() == nil; nonce++ {
					tx, err := types.SignNewTx(acc.Key, signer, &types.DynamicFeeTx{ChainID: chainID, Nonce: nonce,
						GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(100 * params.GWei), Gas: 21_000,
						To: &common.Address{0xbe}, Value: big.NewInt(1)})
					if err != nil {
						return
					}
					raw, _ := tx.MarshalBinary()
					var hash common.Hash
					if rpcCall(p.url, "eth_sendRawTransaction", &hash, hexutil.Bytes(raw)) != nil {
						return
					}
					for ctx.Err() == nil {
						var r *promise
						if rpcCall(p.url, "eth_getTransactionReceipt", &r, hash) != nil {
							return
						}
						if r != nil {
							mu.Lock()
							promised[hash] = *r
							maxNonce[acc.Address] = max(maxNonce[acc.Address], nonce)
							mu.Unlock()
							select {
							case receipted <- struct{}{}:
							default:
							}
							break
						}
						time.Sleep(5 * time.Millisecond)
					}
				}
			}()
		}
		// Kill (SIGKILL: no shutdown path runs) at a random moment, right
		// after a client got a receipt (just after a pre-confirmation was
		// published), or right after a seal (the head moved: within about a
		// millisecond of the seal's write), in turn.
		mode := it % 3
		modes[mode]++
		time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond)
		switch mode {
		case 1:
			select {
			case <-receipted:
			case <-time.After(2 * time.Second):
			}
		case 2:
			var start hexutil.Uint64
			if rpcCall(p.url, "eth_blockNumber", &start) == nil {
				for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
					var n hexutil.Uint64
					if rpcCall(p.url, "eth_blockNumber", &n) == nil && n > start {
						break
					}
					time.Sleep(500 * time.Microsecond)
				}
			}
		}
		p.kill()
		cancel()
		wg.Wait()
		if strings.Contains(p.out.String(), "panic") {
			t.Fatalf("iteration %d: the node panicked:\n%s", it, p.out.String())
		}
		// Trie, state and headers are consistent after the kill, before
		// any restart repairs anything.
		verifyStore(t, bin, datadir, fmt.Sprintf("iteration %d (mode %d)", it, mode))
	}
	// A last restart checks the promises of the last round.
	p := startCrashableDev(t, bin, datadir)
	defer p.kill()
	for hash, want := range promised {
		var got *promise
		if err := rpcCall(p.url, "eth_getTransactionReceipt", &got, hash); err != nil || got == nil || got.BlockNumber != want.BlockNumber ||
			got.TransactionIndex != want.TransactionIndex || got.GasUsed != want.GasUsed {
			t.Fatalf("final restart: receipt of %s lost or changed (%v): had %+v, now %+v", hash.Hex(), err, want, got)
		}
		checked++
	}
	if len(promised) == 0 {
		t.Fatal("no transaction got a receipt: the test exercised nothing")
	}
	t.Logf("%d kill -9 rounds (%d at random moments, %d right after a receipt, %d right after a seal), %d receipts promised, %d promise checks after restarts, all kept",
		iterations, modes[0], modes[1], modes[2], len(promised), checked)
}
