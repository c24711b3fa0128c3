package statedump

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/store"
)

// writeBenchDump writes a dump of accounts EOAs and one contract holding
// slots slots (a token's balances: the shape of the 1M-slot bench chain) to
// a file, with a placeholder root line; it returns its path.
func writeBenchDump(b *testing.B, dir string, accounts, slots int) string {
	b.Helper()
	path := filepath.Join(dir, "dump.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fmt.Fprintf(w, "{\"root\":\"0x%064x\"}\n", 0)
	for i := range accounts {
		fmt.Fprintf(w, "{\"balance\":\"%d\",\"nonce\":%d,\"address\":\"%s\"}\n", 1_000_000+i, i%7, common.BigToAddress(big.NewInt(int64(i+1))).Hex())
	}
	w.WriteString(`{"balance":"0","nonce":1,"code":"0x6001600055","storage":{`)
	for i := range slots {
		if i > 0 {
			w.WriteByte(',')
		}
		fmt.Fprintf(w, "\"%s\":\"%x\"", common.BigToHash(big.NewInt(int64(i+1))).Hex(), i+1)
	}
	w.WriteString(`},"address":"0x00000000000000000000000000000000000c0de0"}` + "\n")
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	// The root: one load without an expected root says what it is.
	r, _ := os.Open(path)
	res, err := Load(context.Background(), r, newMemSink(), Config{TempDir: dir})
	r.Close()
	if err == nil || res.Root == (common.Hash{}) {
		b.Fatalf("root probe: %v", err)
	}
	f, _ = os.OpenFile(path, os.O_WRONLY, 0)
	fmt.Fprintf(f, "{\"root\":%q}\n", res.Root.Hex())
	f.Close()
	return path
}

// vmHWM is the process's peak resident memory in bytes (Linux), 0 when
// unknown.
func vmHWM() float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb * 1024
		}
	}
	return 0
}

// BenchmarkInitState: a dump of 10k accounts and one contract of 1M slots
// (BENCH_SLOTS overrides) verified and written into a fresh store as
// `tipnode init --state` does (root check, sort, sstables, ingestion).
// Reports entries/s and the process's peak RSS (which includes the
// dump's generation: streamed, small).
func BenchmarkInitState(b *testing.B) {
	slots := 1_000_000
	if s, err := strconv.Atoi(os.Getenv("BENCH_SLOTS")); err == nil {
		slots = s
	}
	const accounts = 10_000
	dir := b.TempDir()
	path := writeBenchDump(b, dir, accounts, slots)
	cpu0 := chaintest.ProcessCPU(b)
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		cfg := store.DefaultConfig(filepath.Join(dir, fmt.Sprintf("db%d", i)))
		cfg.SyncWrites = false
		db, err := store.Open(cfg, zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		tmp := filepath.Join(dir, "tmp")
		b.StartTimer()
		si, err := db.NewStateImport(tmp, 100, 128<<20)
		if err != nil {
			b.Fatal(err)
		}
		r, _ := os.Open(path)
		res, err := Load(context.Background(), r, si, Config{TempDir: tmp})
		r.Close()
		if err != nil {
			b.Fatal(err)
		}
		g := &types.Header{Number: big.NewInt(0), Difficulty: big.NewInt(0)}
		h := &types.Header{Number: big.NewInt(100), Difficulty: big.NewInt(0), Root: res.Root}
		config, _ := json.Marshal(map[string]any{"chainId": 1})
		if _, err := si.Commit(context.Background(), &store.AnchorWrite{Genesis: g, Headers: []*types.Header{h}, Spec: []byte(`{}`), Config: config}); err != nil {
			b.Fatal(err)
		}
		si.Close()
		b.StopTimer()
		db.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(accounts+slots+1)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
	b.ReportMetric(vmHWM()/(1<<20), "peakRSS-MiB")
	// CPU time (user+system) per iteration: on a busy shared machine the
	// wall time says little.
	b.ReportMetric((chaintest.ProcessCPU(b)-cpu0).Seconds()/float64(b.N), "cpu-s/op")
}
