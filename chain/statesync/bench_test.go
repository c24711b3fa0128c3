package statesync

import (
	"context"
	"fmt"
	"math/big"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/holiman/uint256"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/store"
)

// benchSource builds a store anchored at block 100 holding 10k accounts
// and one contract of slots slots, with a zero state root in its header
// (as tipnode's sequencer seals: the join checks the checksum only).
func benchSource(b *testing.B, dir string, slots int) *store.DB {
	b.Helper()
	cfg := store.DefaultConfig(filepath.Join(dir, "src"))
	cfg.SyncWrites = false
	db, err := store.Open(cfg, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	si, err := db.NewStateImport(filepath.Join(dir, "srctmp"), 100, 128<<20)
	if err != nil {
		b.Fatal(err)
	}
	defer si.Close()
	for i := range 10_000 {
		if err := si.Account(common.BigToAddress(big.NewInt(int64(i+1))), &store.Account{Nonce: uint64(i % 7), Balance: uint256.NewInt(uint64(1_000_000 + i)), CodeHash: types.EmptyCodeHash}); err != nil {
			b.Fatal(err)
		}
	}
	code := []byte{0x60, 0x01, 0x60, 0x00, 0x55}
	token := common.HexToAddress("0x00000000000000000000000000000000000c0de0")
	if err := si.Account(token, &store.Account{Nonce: 1, Balance: new(uint256.Int), CodeHash: crypto.Keccak256Hash(code)}); err != nil {
		b.Fatal(err)
	}
	if err := si.Code(crypto.Keccak256Hash(code), code); err != nil {
		b.Fatal(err)
	}
	for i := range slots {
		if err := si.Storage(token, common.BigToHash(big.NewInt(int64(i+1))), common.BigToHash(big.NewInt(int64(i+1)))); err != nil {
			b.Fatal(err)
		}
	}
	g := &types.Header{Number: big.NewInt(0), Difficulty: big.NewInt(0)}
	h := &types.Header{Number: big.NewInt(100), Difficulty: big.NewInt(0)}
	if _, err := si.Commit(context.Background(), &store.AnchorWrite{Genesis: g, Headers: []*types.Header{h}, Spec: []byte(`{}`), Config: []byte(`{"chainId":1}`)}); err != nil {
		b.Fatal(err)
	}
	return db
}

// BenchmarkJoin: a store of 10k accounts and a 1M-slot contract
// (BENCH_SLOTS overrides) served over loopback HTTP and joined into a new
// store. Reports entries/s, CPU seconds (server and client, one process)
// and peak RSS.
func BenchmarkJoin(b *testing.B) {
	slots := 1_000_000
	if s, err := strconv.Atoi(os.Getenv("BENCH_SLOTS")); err == nil {
		slots = s
	}
	dir := b.TempDir()
	src := benchSource(b, dir, slots)
	defer src.Close()
	h, err := NewHandler(DefaultConfig(), func() (store.View, uint64, error) {
		v, err := src.View()
		return v, 100, err
	}, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
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
		b.StartTimer()
		if _, err := JoinURL(context.Background(), srv.URL, db, filepath.Join(dir, "tmp")); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		db.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(10_000+1+slots)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
	b.ReportMetric((chaintest.ProcessCPU(b)-cpu0).Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(vmHWM()/(1<<20), "peakRSS-MiB")
}

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
