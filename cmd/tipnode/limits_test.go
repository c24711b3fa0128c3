package main

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/devnet"
	"github.com/tipnode/tipnode/rpc"
	"github.com/tipnode/tipnode/rpc/eth"
	"github.com/tipnode/tipnode/rpc/rpctest"
	"github.com/tipnode/tipnode/store"
)

// Every limit flag reaches its config field, and every default is the
// package's documented default.
func TestLimitFlags(t *testing.T) {
	var nf NodeFlags
	fs := newFlagSet()
	nf.register(fs, false)
	cfg, err := nf.nodeConfig()
	if err != nil {
		t.Fatal(err)
	}
	def, api := rpc.DefaultConfig(), eth.DefaultAPIConfig()
	srv := cfg.Server.WithDefaults()
	if srv.ReadHeaderTimeout != def.ReadHeaderTimeout || srv.ReadTimeout != def.ReadTimeout || srv.IdleTimeout != def.IdleTimeout ||
		srv.WSIdleTimeout != def.WSIdleTimeout || srv.WSMaxQueuedBytes != def.WSMaxQueuedBytes || srv.MaxQueuedOutput != def.MaxQueuedOutput ||
		srv.MaxConns != def.MaxConns || srv.MaxConnsPerIP != def.MaxConnsPerIP || srv.ConnReserve != def.ConnReserve || srv.ConnReservePerIP != def.ConnReservePerIP || srv.MaxCallsPerIP != def.MaxCallsPerIP {
		t.Errorf("flag defaults differ from rpc's:\n%+v\n%+v", srv, def)
	}
	if cfg.API.ExecutionQueue != api.ExecutionQueue || cfg.API.ExecutionWait != api.ExecutionWait {
		t.Errorf("flag defaults differ from eth's: %+v", cfg.API)
	}
	if cfg.Writer != chain.DefaultWriterConfig() {
		t.Errorf("flag defaults differ from chain's writer: %+v", cfg.Writer)
	}
	// Executions: every CPU on a node without a sequencer, eth's default
	// (half of them) with one.
	if cfg.API.MaxExecutions != runtime.NumCPU() {
		t.Errorf("a node without a sequencer runs %d executions at once, want every CPU (%d)", cfg.API.MaxExecutions, runtime.NumCPU())
	}
	nf.Sequencer = true
	if seq, err := nf.nodeConfig(); err != nil || seq.API.MaxExecutions != api.MaxExecutions || api.MaxExecutions != max(1, runtime.NumCPU()/2) {
		t.Errorf("with a sequencer: %d executions (%v), want eth's default %d", seq.API.MaxExecutions, err, api.MaxExecutions)
	}
	if cfg.API.JSTracers || cfg.API.TraceMaxOutput != api.TraceMaxOutput {
		t.Errorf("tracing defaults: JavaScript %v, output bound %d (want off, %d)", cfg.API.JSTracers, cfg.API.TraceMaxOutput, api.TraceMaxOutput)
	}

	fs = newFlagSet()
	nf = NodeFlags{}
	nf.register(fs, false)
	var sf StoreFlags
	sf.register(fs, datadirRequired)
	if sf.config().MinFreeBytes != store.DefaultMinFreeBytes {
		t.Errorf("--datadir.minfreedisk default %d", sf.MinFreeMiB)
	}
	err = fs.Parse([]string{"--http.readheadertimeout", "3s", "--http.readtimeout", "7s", "--http.idletimeout", "11s",
		"--ws.idletimeout", "13s", "--ws.maxqueue", "40", "--rpc.maxoutput", "300", "--rpc.maxconns", "500",
		"--rpc.maxconnsperip", "20", "--rpc.connreserve", "30", "--rpc.connreserve.perip", "2", "--rpc.maxcallsperip", "5",
		"--rpc.evmconcurrency", "3", "--rpc.evmqueue", "9", "--rpc.evmwait", "1500ms", "--datadir.minfreedisk", "2048",
		"--rpc.jstracers", "--writer.nice", "7"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err = nf.nodeConfig(); err != nil {
		t.Fatal(err)
	}
	s := cfg.Server
	if s.ReadHeaderTimeout != 3*time.Second || s.ReadTimeout != 7*time.Second || s.IdleTimeout != 11*time.Second ||
		s.WSIdleTimeout != 13*time.Second || s.WSMaxQueuedBytes != 40<<20 || s.MaxQueuedOutput != 300<<20 ||
		s.MaxConns != 500 || s.MaxConnsPerIP != 20 || s.ConnReserve != 30 || s.ConnReservePerIP != 2 || s.MaxCallsPerIP != 5 {
		t.Errorf("server config %+v", s)
	}
	if a := cfg.API; a.MaxExecutions != 3 || a.ExecutionQueue != 9 || a.ExecutionWait != 1500*time.Millisecond ||
		!a.JSTracers || a.TraceMaxOutput != 25<<20 {
		t.Errorf("API config %+v", a)
	}
	if sf.config().MinFreeBytes != 2048<<20 {
		t.Errorf("min free %d", sf.config().MinFreeBytes)
	}
	if cfg.Writer.SectionNice != 7 {
		t.Errorf("--writer.nice 7: section nice %d", cfg.Writer.SectionNice)
	}
	nf.WriterNice = 20 // beyond the kernel's range
	if _, err := nf.nodeConfig(); err == nil || !strings.Contains(err.Error(), "--writer.nice") {
		t.Errorf("--writer.nice 20: %v", err)
	}
	nf.WriterNice = 7
	// An inconsistent combination is refused before anything starts.
	nf.WSMaxQueueMiB = 1 // below the 25 MiB response limit
	if _, err := nf.nodeConfig(); err == nil || !strings.Contains(err.Error(), "WSMaxQueuedBytes") {
		t.Errorf("ws.maxqueue below the response limit: %v", err)
	}
}

// devDataDir makes a data directory holding a fresh dev chain.
func devDataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cfg := store.DefaultConfig(dir)
	cfg.CacheBytes, cfg.MemtableBytes = 32<<20, 8<<20
	log := zerolog.New(io.Discard)
	db, err := openStore(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	accs, err := devnet.Accounts(devnet.Mnemonic, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := devChain(db, devnet.DefaultChainID, accs, false, time.Unix(1_700_000_000, 0), log); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// snapshotDir lists every file of dir with its size, mode and modification
// time.
func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := make(map[string]string)
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		m[p] = info.ModTime().String() + " " + info.Mode().String() + " " + strconv.FormatInt(info.Size(), 10)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// `run --readonly` serves a store without writing to it: the data
// directory (made read-only) is unchanged afterwards, reads are served,
// transaction submission is refused; with --sequencer it is refused at
// once.
func TestRunReadOnly(t *testing.T) {
	dir := devDataDir(t)
	if err := runRun(context.Background(), []string{"--datadir", dir, "--readonly", "--sequencer"}, io.Discard, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "--readonly cannot be combined with --sequencer") {
		t.Fatalf("--readonly --sequencer: %v", err)
	}
	// Read-only permissions (not enforced for root; the snapshot below is
	// the real check).
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil {
			os.Chmod(p, info.Mode().Perm()&^0o222)
		}
		return nil
	})
	t.Cleanup(func() {
		filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
			if err == nil {
				os.Chmod(p, info.Mode().Perm()|0o200)
			}
			return nil
		})
	})
	before := snapshotDir(t, dir)
	time.Sleep(10 * time.Millisecond)
	addr := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runRun(ctx, []string{"--datadir", dir, "--readonly", "--http.addr", addr, "--log.level", "error", "--datadir.minfreedisk", "1000000000"}, io.Discard, io.Discard)
	}()
	url := "http://" + addr
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		select {
		case err := <-done:
			t.Fatalf("run --readonly ended: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("run --readonly did not start serving")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, b := rpctest.Post(t, url, `{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266","latest"]}`); !strings.Contains(string(b), `"result":"0x21e19e0c9bab2400000"`) {
		t.Errorf("balance: %s", b)
	}
	if _, b := rpctest.Post(t, url, `{"jsonrpc":"2.0","id":1,"method":"eth_sendRawTransaction","params":["0x02f87582053980843b9aca0085174876e8008252089470997970c51812dc3a010c7d01b50e0d17dc79c8880de0b6b3a764000080c001a076a3592707a4290223df673850227f1162c47fa840497914d31bc69937dc4e5da06d9e3bdd5c3bb65e0d97b967fe7a6b0db8ff23974637920a10cfd168d5f4d35d"]}`); !strings.Contains(string(b), "without a transaction pool") {
		t.Errorf("send: %s", b)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run --readonly: %v", err)
	}
	after := snapshotDir(t, dir)
	for p, v := range before {
		if after[p] != v {
			t.Errorf("%s changed: %s -> %s", p, v, after[p])
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s appeared", p)
		}
	}
}

// Startup on a disk with less free space than --datadir.minfreedisk fails
// at once with a clear error (no sequencer or writer ever starts).
func TestRunFailsFastOnFullDisk(t *testing.T) {
	dir := devDataDir(t)
	start := time.Now()
	err := runRun(context.Background(), []string{"--datadir", dir, "--sequencer", "--http.addr", freePort(t), "--datadir.minfreedisk", "1000000000"}, io.Discard, io.Discard)
	if !errors.Is(err, store.ErrDiskFull) || !strings.Contains(err.Error(), "below the minimum 1000000000 MiB") {
		t.Fatalf("run on a full disk: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
}
