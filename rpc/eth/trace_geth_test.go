package eth

// In-process differential test of the tracing methods against go-ethereum's
// own debug API (eth/tracers.API, the same code geth serves) running on
// go-ethereum's own blockchain and StateDB (a Merkle-trie archive of the
// conformance chain in memory): every block of the conformance chain traced
// with every tracer configuration (so every transaction with every tracer),
// every transaction traced alone with five of them, and debug_traceCall at
// four heights with state and block overrides with every tracer: tipnode's
// answers equal go-ethereum's after JSON normalisation (key order). Only
// the state under the tracers differs: our flat StateDB with its hooks
// against go-ethereum's hooked state. trace_bench_geth_test.go runs the
// same comparison (gethTracerOn, compareBlockTraces, compareTrace) on a
// small benchmark chain.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus"
	"github.com/ethereum/go-ethereum/consensus/beacon"
	"github.com/ethereum/go-ethereum/consensus/ethash"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/eth/tracers"
	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/params"
	gethrpc "github.com/ethereum/go-ethereum/rpc"

	"github.com/tipnode/tipnode/chain/chaintest"
)

// gethTraceBackend is go-ethereum's tracers.Backend over an in-memory
// archive BlockChain, with the parent-state replay go-ethereum's node does
// (eth/state_accessor.go: system calls, then the earlier transactions).
type gethTraceBackend struct {
	bc     *core.BlockChain
	db     ethdb.Database
	config *params.ChainConfig
	engine consensus.Engine
	gasCap uint64
}

func (b *gethTraceBackend) HeaderByHash(_ context.Context, h common.Hash) (*types.Header, error) {
	return b.bc.GetHeaderByHash(h), nil
}

func (b *gethTraceBackend) HeaderByNumber(_ context.Context, n gethrpc.BlockNumber) (*types.Header, error) {
	if n < 0 {
		return b.bc.CurrentHeader(), nil
	}
	return b.bc.GetHeaderByNumber(uint64(n)), nil
}

func (b *gethTraceBackend) CurrentHeader() *types.Header { return b.bc.CurrentHeader() }

func (b *gethTraceBackend) BlockByHash(_ context.Context, h common.Hash) (*types.Block, error) {
	return b.bc.GetBlockByHash(h), nil
}

func (b *gethTraceBackend) BlockByNumber(_ context.Context, n gethrpc.BlockNumber) (*types.Block, error) {
	if n < 0 {
		return b.bc.GetBlockByNumber(b.bc.CurrentBlock().Number.Uint64()), nil
	}
	return b.bc.GetBlockByNumber(uint64(n)), nil
}

func (b *gethTraceBackend) GetCanonicalTransaction(h common.Hash) (bool, *types.Transaction, common.Hash, uint64, uint64) {
	tx, bh, n, i := rawdb.ReadCanonicalTransaction(b.db, h)
	return tx != nil, tx, bh, n, i
}

func (b *gethTraceBackend) TxIndexDone() bool                { return true }
func (b *gethTraceBackend) RPCGasCap() uint64                { return b.gasCap }
func (b *gethTraceBackend) ChainConfig() *params.ChainConfig { return b.config }
func (b *gethTraceBackend) Engine() consensus.Engine         { return b.engine }
func (b *gethTraceBackend) ChainDb() ethdb.Database          { return b.db }

func (b *gethTraceBackend) StateAtBlock(_ context.Context, block *types.Block, _ *state.StateDB, _, _ bool) (*state.StateDB, tracers.StateReleaseFunc, error) {
	st, err := b.bc.StateAt(block.Root(), block.Number(), block.Time())
	if err != nil {
		return nil, nil, err
	}
	return st, func() {}, nil
}

func (b *gethTraceBackend) StateAtTransaction(ctx context.Context, block *types.Block, txIndex int) (*types.Transaction, vm.BlockContext, *state.StateDB, tracers.StateReleaseFunc, error) {
	parent := b.bc.GetBlock(block.ParentHash(), block.NumberU64()-1)
	if parent == nil {
		return nil, vm.BlockContext{}, nil, nil, errors.New("parent not found")
	}
	st, release, err := b.StateAtBlock(ctx, parent, nil, true, false)
	if err != nil {
		return nil, vm.BlockContext{}, nil, nil, err
	}
	bctx := core.NewEVMBlockContext(block.Header(), b.bc, nil)
	evm := vm.NewEVM(bctx, st, b.config, vm.Config{})
	core.PreExecution(ctx, block.BeaconRoot(), parent.Header(), b.config, evm, block.Number(), block.Time())
	signer := types.MakeSigner(b.config, block.Number(), block.Time())
	for i, tx := range block.Transactions() {
		if i == txIndex {
			return tx, bctx, st, release, nil
		}
		msg, _ := core.TransactionToMessage(tx, signer, block.BaseFee())
		st.SetTxContext(tx.Hash(), i, uint32(i+1))
		if _, err := core.ApplyMessage(evm, msg, nil); err != nil {
			return nil, vm.BlockContext{}, nil, nil, fmt.Errorf("tx %s: %v", tx.Hash(), err)
		}
		st.Finalise(evm.GetRules())
	}
	if txIndex == len(block.Transactions()) {
		return nil, bctx, st, release, nil
	}
	return nil, vm.BlockContext{}, nil, nil, fmt.Errorf("tx index %d out of range", txIndex)
}

// gethTracer is go-ethereum's debug API on the conformance chain, called
// in process through go-ethereum's own JSON-RPC server.
func gethTracer(t *testing.T, gasCap uint64) (*gethrpc.Client, []*types.Block) {
	t.Helper()
	spec, err := os.ReadFile(filepath.Join(chaintest.Dir(t), "chain", "genesis.json"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []*types.Block
	for _, b := range chaintest.Blocks(t) {
		eb, ok := b.Eth()
		if !ok {
			t.Fatalf("conformance block %d holds a deposit", b.NumberU64())
		}
		blocks = append(blocks, eb)
	}
	return gethTracerOn(t, spec, blocks, gasCap), blocks
}

// gethTracerOn is go-ethereum's debug API on an archive BlockChain
// initialised from spec (a genesis JSON) with blocks inserted, called in
// process through go-ethereum's own JSON-RPC server.
func gethTracerOn(t *testing.T, spec []byte, blocks []*types.Block, gasCap uint64) *gethrpc.Client {
	t.Helper()
	var gspec core.Genesis
	if err := json.Unmarshal(spec, &gspec); err != nil {
		t.Fatal(err)
	}
	db := rawdb.NewMemoryDatabase()
	engine := beacon.New(ethash.NewFaker())
	cfg := core.DefaultConfig().WithArchive(true)
	cfg.TxLookupLimit = 0 // index every transaction
	bc, err := core.NewBlockChain(db, &gspec, engine, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bc.Stop)
	if n, err := bc.InsertChain(blocks); err != nil {
		t.Fatalf("go-ethereum import of block %d: %v", n, err)
	}
	srv := gethrpc.NewServer()
	if err := srv.RegisterName("debug", tracers.NewAPI(&gethTraceBackend{bc: bc, db: db, config: gspec.Config, engine: engine, gasCap: gasCap})); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	c := gethrpc.DialInProc(srv)
	t.Cleanup(c.Close)
	return c
}

// traceCase is one tracer configuration of the differential test.
type traceCase struct {
	name string
	cfg  map[string]any // nil: no config argument (the struct logger's defaults)
	// byHash: debug_traceBlockByHash is compared too (the block paths by
	// number and by hash differ only in the lookup: a few tracers suffice).
	byHash bool
	// perTx: debug_traceTransaction of every transaction is compared too.
	// Every tracer traces every transaction in the block traces; the
	// per-transaction path (the replay of the transactions before it) is
	// compared with a few tracers, to keep the test's time reasonable
	// under the race detector.
	perTx bool
}

// stateEventsTracer is a test tracer that records every state hook call
// (balance, nonce, code, storage, log) and each transaction's end, so that
// our StateDB's hooks are compared with go-ethereum's hooked state event
// for event. None of go-ethereum's bundled tracers uses the balance, nonce
// and code hooks.
const stateEventsTracer = "tipnodeStateEvents"

var registerStateEvents sync.Once

func newStateEventsTracer(*tracers.Context, json.RawMessage, *params.ChainConfig) (*tracers.Tracer, error) {
	ev := []string{}
	add := func(format string, args ...any) { ev = append(ev, fmt.Sprintf(format, args...)) }
	return &tracers.Tracer{
		Hooks: &tracing.Hooks{
			OnBalanceChange: func(a common.Address, prev, cur *big.Int, r tracing.BalanceChangeReason) {
				add("balance %s %v -> %v (%d)", a, prev, cur, r)
			},
			OnNonceChangeV2: func(a common.Address, prev, cur uint64, r tracing.NonceChangeReason) {
				add("nonce %s %d -> %d (%d)", a, prev, cur, r)
			},
			OnCodeChangeV2: func(a common.Address, prevHash common.Hash, prev []byte, hash common.Hash, code []byte, r tracing.CodeChangeReason) {
				add("code %s %s (%d bytes) -> %s (%d bytes) (%d)", a, prevHash, len(prev), hash, len(code), r)
			},
			OnStorageChange: func(a common.Address, slot, prev, cur common.Hash) {
				add("storage %s %s %s -> %s", a, slot, prev, cur)
			},
			OnLog: func(l *types.Log) {
				add("log %s %v %x index %d tx %d", l.Address, l.Topics, l.Data, l.Index, l.TxIndex)
			},
			OnTxEnd: func(r *types.Receipt, err error) {
				if r != nil {
					add("end status %d gas %d logs %d", r.Status, r.GasUsed, len(r.Logs))
				} else {
					add("end error %v", err)
				}
			},
		},
		GetResult: func() (json.RawMessage, error) { return json.Marshal(ev) },
		Stop:      func(error) {},
	}, nil
}

// jsSstores is a JavaScript tracer: the slot and value of every SSTORE.
const jsSstores = `{data: [], fault: function(log, db) {}, step: function(log, db) { if (log.op.toString() == "SSTORE") { this.data.push(log.stack.peek(0).toString(16) + "=" + log.stack.peek(1).toString(16)); } }, result: function(ctx, db) { return {stores: this.data, gasUsed: ctx.gasUsed, type: ctx.type}; }}`

func traceCases() []traceCase {
	return []traceCase{
		{"structLogger", nil, true, false},
		{"structLogger+memory+returnData", map[string]any{"enableMemory": true, "enableReturnData": true}, false, false},
		{"structLogger-stack-storage", map[string]any{"disableStack": true, "disableStorage": true}, false, false},
		{"structLogger limit", map[string]any{"limit": 5}, false, true},
		{"callTracer", map[string]any{"tracer": "callTracer"}, false, false},
		{"callTracer withLog", map[string]any{"tracer": "callTracer", "tracerConfig": map[string]any{"withLog": true}}, false, true},
		{"callTracer onlyTopCall", map[string]any{"tracer": "callTracer", "tracerConfig": map[string]any{"onlyTopCall": true}}, false, false},
		{"flatCallTracer", map[string]any{"tracer": "flatCallTracer"}, false, true},
		{"prestateTracer", map[string]any{"tracer": "prestateTracer"}, false, false},
		{"prestateTracer diffMode", map[string]any{"tracer": "prestateTracer", "tracerConfig": map[string]any{"diffMode": true}}, false, true},
		{"4byteTracer", map[string]any{"tracer": "4byteTracer"}, false, false},
		{"state hooks", map[string]any{"tracer": stateEventsTracer}, false, true},
		{"JavaScript unigramTracer", map[string]any{"tracer": "unigramTracer"}, false, false},
		{"JavaScript code", map[string]any{"tracer": jsSstores}, false, false},
	}
}

// gethCall calls method on go-ethereum; the result as JSON, or its error
// message.
func gethCall(c *gethrpc.Client, method string, params ...any) (json.RawMessage, error) {
	var res json.RawMessage
	err := c.Call(&res, method, params...)
	return res, err
}

// sameJSON reports the first difference between two JSON texts ("" when
// equal after normalisation).
func sameJSON(want, got []byte) string {
	w, err := decodeJSON(want)
	if err != nil {
		return "go-ethereum's answer is not JSON: " + err.Error()
	}
	g, err := decodeJSON(got)
	if err != nil {
		return "our answer is not JSON: " + err.Error()
	}
	return diffJSON("$", w, g, nil)
}

// withParams appends the config argument when there is one.
func withParams(cfg map[string]any, params ...any) []any {
	if cfg != nil {
		params = append(params, cfg)
	}
	return params
}

// compareBlockTraces traces every block of blocks with every case, by
// number (and by hash for the cases with byHash), and every transaction
// alone with the cases with perTx (with every case when allPerTx), on
// go-ethereum (geth) and on our node (url), failing the test on any
// difference. It returns the number of transactions and of traces compared.
func compareBlockTraces(t *testing.T, geth *gethrpc.Client, url string, blocks []*types.Block, cases []traceCase, allPerTx bool) (txs, compared int) {
	t.Helper()
	for _, b := range blocks {
		for _, tc := range cases {
			// Whole blocks, by number and by hash.
			for _, m := range []struct {
				method string
				arg    any
			}{{"debug_traceBlockByNumber", fmt.Sprintf("0x%x", b.NumberU64())}, {"debug_traceBlockByHash", b.Hash()}} {
				if m.method == "debug_traceBlockByHash" && !tc.byHash {
					continue
				}
				compareTrace(t, geth, url, fmt.Sprintf("%s %d %s", m.method, b.NumberU64(), tc.name), m.method, withParams(tc.cfg, m.arg)...)
				compared++
			}
			if !tc.perTx && !allPerTx {
				continue
			}
			for _, tx := range b.Transactions() {
				compareTrace(t, geth, url, fmt.Sprintf("debug_traceTransaction %s (block %d) %s", tx.Hash(), b.NumberU64(), tc.name), "debug_traceTransaction", withParams(tc.cfg, tx.Hash())...)
				compared++
			}
		}
		txs += len(b.Transactions())
	}
	return txs, compared
}

// compareTrace calls method with params on go-ethereum (geth) and on our
// node (url): both must answer, and the answers must be equal after JSON
// normalisation. label names the call in failures.
func compareTrace(t *testing.T, geth *gethrpc.Client, url, label, method string, params ...any) {
	t.Helper()
	want, err := gethCall(geth, method, params...)
	if err != nil {
		t.Fatalf("go-ethereum %s: %v", label, err)
	}
	r := callRPC(t, url, method, params...)
	if r.Error != nil {
		t.Fatalf("%s: error %d %s", label, r.Error.Code, r.Error.Message)
	}
	if d := sameJSON(want, r.Result); d != "" {
		t.Errorf("%s: %s", label, d)
	}
}

func TestTraceDifferentialGeth(t *testing.T) {
	registerStateEvents.Do(func() { tracers.DefaultDirectory.Register(stateEventsTracer, newStateEventsTracer, false) })
	db, g := chaintest.ImportedStore(t)
	cfg := DefaultAPIConfig()
	cfg.JSTracers = true
	// Answers, not speed: the race detector makes the struct logger with
	// memory capture of a busy block slower than the default 5 s.
	cfg.EVMTimeout = 2 * time.Minute
	_, url := startNodeCfg(t, cfg, db, g, nil)
	geth, blocks := gethTracer(t, cfg.GasCap)

	txs, compared := compareBlockTraces(t, geth, url, blocks, traceCases(), false)
	// debug_traceCall: a call to the conformance chain's CALLENV contract
	// (it returns its block and transaction context) at a few heights, plain,
	// with a state override of the caller's balance and the contract's
	// code, and with block overrides.
	callenv := common.HexToAddress("0x9344b07175800259691961298ca11c824e65032d")
	from := common.HexToAddress("0x7435ed30a8b4aeb0877cef0c6e8cffe834eb865f")
	for _, n := range []uint64{1, 20, 36, uint64(len(blocks))} {
		for _, tc := range traceCases() {
			for _, opts := range []map[string]any{
				{},
				{"stateOverrides": map[string]any{from.Hex(): map[string]any{"balance": "0xde0b6b3a7640000"}}},
				{"blockOverrides": map[string]any{"number": fmt.Sprintf("0x%x", n+1), "time": "0x7fffffff", "feeRecipient": from.Hex()}},
				{"stateOverrides": map[string]any{callenv.Hex(): map[string]any{"code": "0x4360005260206000f3"}}, "blockOverrides": map[string]any{"number": "0x1234"}},
			} {
				cfg := map[string]any{}
				for k, v := range tc.cfg {
					cfg[k] = v
				}
				for k, v := range opts {
					cfg[k] = v
				}
				call := map[string]any{"from": from, "to": callenv, "input": "0x"}
				block := fmt.Sprintf("0x%x", n)
				compareTrace(t, geth, url, fmt.Sprintf("debug_traceCall at %d %s %v", n, tc.name, opts), "debug_traceCall", call, block, cfg)
				compared++
			}
		}
	}
	t.Logf("%d blocks, %d transactions x %d tracers, and calls: %d traces equal to go-ethereum's", len(blocks), txs, len(traceCases()), compared)
	if txs == 0 {
		t.Fatal("no transactions traced")
	}
}
