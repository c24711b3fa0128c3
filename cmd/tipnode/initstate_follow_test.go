package main

import (
	"context"
	"encoding/json"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	gethrpc "github.com/ethereum/go-ethereum/rpc"

	"github.com/tipnode/tipnode/chain/follow/followtest"
)

// TestInitStateFromUpstreamAndFollow is the user's path: go-ethereum's
// dump at block 10 (with preimages), `tipnode init --state … --state.from
// <go-ethereum>`, then `tipnode run --follow.rpc` to go-ethereum's head.
// Block hashes, balances and nonces at every height from 10 up are
// go-ethereum's; below 10 the node answers 4444 for blocks and the
// missing-state error for state.
func TestInitStateFromUpstreamAndFollow(t *testing.T) {
	u := followtest.StartGeth(t, followtest.Options{Alloc: followtest.Fund(), Preimages: true})
	nonce := uint64(0)
	block := func(n int) {
		for range n {
			to := common.Address{19: byte(nonce), 0: 0xee}
			u.Send(t, followtest.Tx(t, 0, nonce, &to, big.NewInt(int64(nonce)+1), 21_000, nil))
			nonce++
		}
		if n == 0 {
			u.Send(t)
		}
	}
	for i := range 10 {
		block(i % 3)
	}
	const anchor = 10
	c, err := gethrpc.Dial(u.HTTP)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var dump json.RawMessage
	if err := c.Call(&dump, "debug_dumpBlock", hexutil.EncodeUint64(anchor)); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	for name, body := range map[string][]byte{"dump.json": dump, "genesis.json": u.Spec} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err, log := initState(t, "--datadir", data, "--genesis", filepath.Join(dir, "genesis.json"),
		"--state", filepath.Join(dir, "dump.json"), "--state.block", "10", "--state.from", u.HTTP); err != nil {
		t.Fatalf("init: %v\n%s", err, log)
	}
	for i := range 5 {
		block(i%3 + 1)
	}
	addr := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runRun(ctx, []string{"--datadir", data, "--follow.rpc", u.WS, "--follow.poll", "50ms", "--http.addr", addr, "--log.level", "error"}, io.Discard, io.Discard)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	url := "http://" + addr
	head, err := u.Client().HeaderByNumber(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var b *struct {
			Hash common.Hash `json:"hash"`
		}
		if rpcCall(url, "eth_getBlockByNumber", &b, hexutil.EncodeUint64(head.Number.Uint64()), false) == nil && b != nil && b.Hash == head.Hash() {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("run ended: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the node did not follow go-ethereum's head")
		}
		time.Sleep(20 * time.Millisecond)
	}
	client := u.Client()
	for n := uint64(anchor); n <= head.Number.Uint64(); n++ {
		at := hexutil.EncodeUint64(n)
		theirs, err := client.HeaderByNumber(context.Background(), new(big.Int).SetUint64(n))
		if err != nil {
			t.Fatal(err)
		}
		var ours struct {
			Hash common.Hash `json:"hash"`
		}
		if err := rpcCall(url, "eth_getBlockByNumber", &ours, at, false); err != nil || ours.Hash != theirs.Hash() {
			t.Fatalf("block %d: %s %v, go-ethereum's %s", n, ours.Hash.Hex(), err, theirs.Hash().Hex())
		}
		for _, a := range []common.Address{followtest.Address(0), {19: 3, 0: 0xee}, {19: 9, 0: 0xee}, head.Coinbase} {
			var bal hexutil.Big
			var nc hexutil.Uint64
			if err := rpcCall(url, "eth_getBalance", &bal, a, at); err != nil {
				t.Fatal(err)
			}
			if err := rpcCall(url, "eth_getTransactionCount", &nc, a, at); err != nil {
				t.Fatal(err)
			}
			wb, _ := client.BalanceAt(context.Background(), a, new(big.Int).SetUint64(n))
			wn, _ := client.NonceAt(context.Background(), a, new(big.Int).SetUint64(n))
			if bal.ToInt().Cmp(wb) != 0 || uint64(nc) != wn {
				t.Fatalf("block %d %s: %s/%d, go-ethereum's %s/%d", n, a.Hex(), bal.ToInt(), nc, wb, wn)
			}
		}
	}
	below := hexutil.EncodeUint64(anchor - 1)
	var v any
	if err := rpcCall(url, "eth_getBlockByNumber", &v, below, false); err == nil || !strings.Contains(err.Error(), "4444") && !strings.Contains(err.Error(), "pruned history") {
		t.Fatalf("block below the anchor: %v", err)
	}
	if err := rpcCall(url, "eth_getBalance", &v, followtest.Address(0), below); err == nil || !strings.Contains(err.Error(), "missing trie node") {
		t.Fatalf("state below the anchor: %v", err)
	}
}
