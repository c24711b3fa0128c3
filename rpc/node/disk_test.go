package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/ethereum/go-ethereum/params"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/pending/pendingtest"
	"github.com/tipnode/tipnode/pending/sequencer"
	"github.com/tipnode/tipnode/rpc/node"
	"github.com/tipnode/tipnode/rpc/rpctest"
	"github.com/tipnode/tipnode/store"
)

// devStoreOn writes a dev genesis into a fresh store on fs.
func devStoreOn(t *testing.T, fs vfs.FS) (*store.DB, *chain.Genesis) {
	t.Helper()
	cfg := store.DefaultConfig("/db")
	cfg.FS, cfg.CacheBytes, cfg.MemtableBytes = fs, 32<<20, 8<<20
	db, err := store.Open(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, initDevGenesis(t, db)
}

// bigCodeAddr holds MaxCodeSize bytes of code in initDevGenesis's genesis.
const bigCodeAddr = "0x00000000000000000000000000000000000c0de0"

// initDevGenesis writes a dev genesis (the first two dev accounts funded,
// bigCodeAddr with the largest code) into db.
func initDevGenesis(tb testing.TB, db *store.DB) *chain.Genesis {
	tb.Helper()
	spec := pendingtest.Spec(tb, pendingtest.Accounts(tb, 2))
	// An account with the largest code allowed: eth_getCode answers 48 KiB.
	var doc map[string]any
	if err := json.Unmarshal(spec, &doc); err != nil {
		tb.Fatal(err)
	}
	doc["alloc"].(map[string]any)[bigCodeAddr] = map[string]any{"balance": "0x0", "code": "0x" + strings.Repeat("5b", params.MaxCodeSize)}
	spec, err := json.Marshal(doc)
	if err != nil {
		tb.Fatal(err)
	}
	g, err := chain.ParseGenesis(spec)
	if err != nil {
		tb.Fatal(err)
	}
	if err := chain.InitGenesis(db, g); err != nil {
		tb.Fatal(err)
	}
	return g
}

func rpcResult(t *testing.T, url, method, params string) string {
	t.Helper()
	_, b := rpctest.Post(t, url, `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`)
	return string(b)
}

// When the disk fills up, the free-space guard refuses the seal's write
// before it starts: the sequencer stops with the store's ErrDiskFull, the
// node keeps serving reads (Wait does not return), says why (WritesStopped,
// the metrics), and Stop reports the fault. Sealed blocks stay.
func TestDiskFullStopsWritesKeepsReads(t *testing.T) {
	mem := vfs.NewMem()
	mem.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 10 << 30, TotalBytes: 20 << 30})
	db, g := devStoreOn(t, mem)
	cfg := node.DefaultConfig()
	cfg.Server.Addr = "127.0.0.1:0"
	cfg.Metrics = true
	seqCfg := sequencer.DefaultConfig()
	cfg.Sequencer = &seqCfg
	clock := pendingtest.NewClock()
	n, err := node.New(cfg, db, g, clock, zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	url := "http://" + n.Server.Addr().String()
	perBlock := int(seqCfg.BlockTime / seqCfg.PreconfInterval)
	advance := func(k int) {
		for range k {
			clock.Advance(seqCfg.PreconfInterval)
			n.Sequencer.Sync()
		}
	}
	advance(perBlock) // block 1 sealed
	if err := n.Sequencer.Err(); err != nil {
		t.Fatal(err)
	}
	if got := rpcResult(t, url, "eth_blockNumber", "[]"); !strings.Contains(got, `"result":"0x1"`) {
		t.Fatalf("blockNumber before: %s", got)
	}

	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan error, 1)
	go func() { waited <- n.Wait(ctx) }()

	mem.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 64 << 20, TotalBytes: 20 << 30})
	advance(perBlock) // the seal of block 2 is refused
	select {
	case <-n.Sequencer.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the sequencer did not stop on a full disk")
	}
	if err := n.Sequencer.Err(); !errors.Is(err, sequencer.ErrSequencer) || !strings.Contains(err.Error(), "store: disk full: 64 MiB free") {
		t.Fatalf("sequencer fault: %v", err)
	}
	if err := n.WritesStopped(); !errors.Is(err, store.ErrDiskFull) {
		t.Fatalf("WritesStopped: %v", err)
	}
	select {
	case err := <-waited:
		t.Fatalf("Wait returned %v: the node must keep serving reads", err)
	case <-time.After(100 * time.Millisecond):
	}
	if got := rpcResult(t, url, "eth_blockNumber", "[]"); !strings.Contains(got, `"result":"0x1"`) {
		t.Errorf("blockNumber on a full disk: %s", got)
	}
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"tipnode_store_disk_full 1", "tipnode_store_writes_refused_total 1", "tipnode_store_free_bytes 6.7108864e+07",
		"tipnode_rpc_connections_open", "tipnode_rpc_exec_running{class=\"evm\"} 0"} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	cancel()
	if err := <-waited; err != nil {
		t.Errorf("Wait: %v", err)
	}
	if err := n.Stop(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Stop: %v", err)
	}
	if latest, err := db.Latest(); err != nil || latest != 1 {
		t.Errorf("latest after the stop: %d %v", latest, err)
	}
}

// A read-only node: no sequencer (refused by Validate), transaction
// submission refused, reads served.
func TestReadOnlyNode(t *testing.T) {
	cfg := node.DefaultConfig()
	cfg.ReadOnly = true
	seqCfg := sequencer.DefaultConfig()
	cfg.Sequencer = &seqCfg
	if err := cfg.Validate(); !errors.Is(err, node.ErrConfig) || !strings.Contains(err.Error(), "read-only node cannot run the sequencer") {
		t.Fatalf("read-only with a sequencer: %v", err)
	}
	cfg.Sequencer = nil
	cfg.Server.Addr = "127.0.0.1:0"
	db, g := devStoreOn(t, vfs.NewMem())
	n, err := node.New(cfg, db, g, nil, zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	url := "http://" + n.Server.Addr().String()
	if got := rpcResult(t, url, "eth_sendRawTransaction", `["0x02f87582053980843b9aca0085174876e8008252089470997970c51812dc3a010c7d01b50e0d17dc79c8880de0b6b3a764000080c001a076a3592707a4290223df673850227f1162c47fa840497914d31bc69937dc4e5da06d9e3bdd5c3bb65e0d97b967fe7a6b0db8ff23974637920a10cfd168d5f4d35d"]`); !strings.Contains(got, "without a transaction pool") {
		t.Errorf("send on a read-only node: %s", got)
	}
	if got := rpcResult(t, url, "eth_blockNumber", "[]"); !strings.Contains(got, `"result":"0x0"`) {
		t.Errorf("blockNumber: %s", got)
	}
}
