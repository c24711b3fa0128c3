package chain_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
)

// BenchmarkImportConformanceChain: genesis + all 54 blocks of the
// conformance chain (verify, execute, write) into a fresh store per op.
func BenchmarkImportConformanceChain(b *testing.B) {
	g := chaintest.Genesis(b)
	data, err := os.ReadFile(filepath.Join(chaintest.Dir(b), "chain", "chain.rlp"))
	if err != nil {
		b.Fatal(err)
	}
	var gas uint64
	for b.Loop() {
		b.StopTimer()
		db := chaintest.OpenStore(b)
		if err := chain.InitGenesis(db, g); err != nil {
			b.Fatal(err)
		}
		w, err := chain.NewWriter(db, chain.NewExecutor(g.Config), chain.DefaultWriterConfig(), zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		w.Start()
		b.StartTimer()
		stats, err := w.ImportRLP(bytes.NewReader(data), 0, nil)
		if err != nil || stats.Blocks != 54 {
			b.Fatalf("imported %d blocks: %v", stats.Blocks, err)
		}
		gas = stats.Gas
		b.StopTimer()
		w.Stop()
		db.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(gas)/1e6*float64(b.N)/b.Elapsed().Seconds(), "Mgas/s")
}
