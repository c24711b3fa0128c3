package eth

// The trace differential of trace_geth_test.go on the benchmark chain (a
// small chain from cmd/benchgeth/chaingen, the generator of make
// bench-geth): BenchToken ERC-20 transfers to new and existing holders and
// ether transfers to new accounts, plus calls to the multicall contract and
// to the tokens' heavy and reverting methods. Every transaction is traced
// with every tracer configuration, in its block and alone, and the answers
// equal go-ethereum's after JSON normalisation.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/eth/tracers"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/cmd/benchgeth/chaingen"
)

// benchTraceConfig is the benchmark chain of the differential: every
// transaction kind of the generator (every tenth an ether transfer, the
// others token transfers to new and to genesis holders) over two tokens,
// small enough for make test.
func benchTraceConfig() chaingen.Config {
	return chaingen.Config{Slots: 200, Tokens: 2, Blocks: 2, TxsPerBlock: 10, Senders: 3, Requests: 10, Seed: 1}
}

func TestTraceDifferentialGethBench(t *testing.T) {
	registerStateEvents.Do(func() { tracers.DefaultDirectory.Register(stateEventsTracer, newStateEventsTracer, false) })
	start := time.Now()
	c := benchTraceConfig()
	dir := t.TempDir()
	if _, err := chaingen.Generate(c, dir, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	spec, err := os.ReadFile(filepath.Join(dir, chaingen.GenesisFile))
	if err != nil {
		t.Fatal(err)
	}
	chainFile := filepath.Join(dir, chaingen.ChainFile)

	// Our node: the chain imported by our writer.
	db, g, w := chaintest.InitStore(t, spec)
	f, err := os.Open(chainFile)
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.ImportRLP(f, 0, nil)
	f.Close()
	w.Stop() // startNodeCfg starts its own writer
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultAPIConfig()
	cfg.JSTracers = true
	cfg.EVMTimeout = 2 * time.Minute // answers, not speed (see TestTraceDifferentialGeth)
	_, url := startNodeCfg(t, cfg, db, g, nil)

	// go-ethereum: the same blocks in its archive BlockChain.
	f, err = os.Open(chainFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []*types.Block
	s := rlp.NewStream(bufio.NewReader(f), 0)
	for {
		b := new(types.Block)
		if err := s.Decode(b); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, b)
	}
	geth := gethTracerOn(t, spec, blocks, cfg.GasCap)

	setup := time.Since(start)
	// Every transaction with every tracer, in its block and alone.
	txs, compared := compareBlockTraces(t, geth, url, blocks, traceCases(), true)
	if want := c.Blocks * c.TxsPerBlock; len(blocks) != c.Blocks || txs != want {
		t.Fatalf("%d blocks, %d transactions traced, want %d and %d", len(blocks), txs, c.Blocks, want)
	}

	traced := time.Since(start)
	// debug_traceCall of the calls the benchmark's request files make (a
	// multicall of balanceOf over both tokens, the heavy arithmetic) and of
	// a reverting one and a token transfer, at the head (their code paths do
	// not depend on the height; the head keeps the test's time down under
	// the race detector).
	holders := []common.Address{chaingen.Holder(0), chaingen.Holder(1), chaingen.NewHolder(1, 0), chaingen.NewAccount(1, 9)}
	var mc []chaingen.MulticallCall
	for tok := 0; tok < c.Tokens; tok++ {
		for _, h := range holders {
			mc = append(mc, chaingen.MulticallCall{Target: chaingen.TokenAddress(tok), Data: chaingen.BalanceOfData(h)})
		}
	}
	calls := []struct {
		name string
		to   common.Address
		data []byte
	}{
		{"multicall aggregate", chaingen.MulticallAddress, chaingen.AggregateData(mc)},
		{"heavy", chaingen.TokenAddress(1), chaingen.HeavyData(holders)},
		{"fail", chaingen.TokenAddress(0), chaingen.FailData(7)},
		{"transfer", chaingen.TokenAddress(0), chaingen.TransferData(chaingen.NewHolder(9, 9), common.Big1)},
	}
	for _, n := range []uint64{uint64(c.Blocks)} {
		for _, call := range calls {
			for _, tc := range traceCases() {
				arg := map[string]any{"from": chaingen.Holder(0), "to": call.to, "input": hexutil.Bytes(call.data)}
				compareTrace(t, geth, url, fmt.Sprintf("debug_traceCall %s at %d %s", call.name, n, tc.name), "debug_traceCall", withParams(tc.cfg, arg, hexutil.Uint64(n))...)
				compared++
			}
		}
	}
	t.Logf("%d blocks, %d transactions x %d tracers (in their blocks and alone), and calls: %d traces compared with go-ethereum's (setup %v, transactions %v, calls %v)",
		len(blocks), txs, len(traceCases()), compared, setup.Round(time.Millisecond), (traced - setup).Round(time.Millisecond), (time.Since(start) - traced).Round(time.Millisecond))
}
