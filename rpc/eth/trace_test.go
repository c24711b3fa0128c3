package eth

import (
	"encoding/json"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/rpc"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// counterInit deploys counterRuntime: each call increments slot 0 and logs
// the new value (LOG0 of one word).
var (
	counterRuntime = common.FromHex("600054600101806000556000526020" + "6000a000")
	counterInit    = append(common.FromHex("6013600c60003960136000f3"), counterRuntime...)
)

// pendingTraceTxs pre-confirms, on a fresh dev chain, a transfer, the
// deployment of the counter and a call to it (one pre-confirmation), and
// returns the node, the transactions and the counter's address.
func pendingTraceTxs(t *testing.T) (*devPendingNode, []*types.Transaction, common.Address) {
	t.Helper()
	d := newDevPendingNode(t, true)
	signer := types.LatestSigner(d.g.Config)
	from := d.accs[0]
	counter := crypto.CreateAddress(from.Address, 1)
	bob := common.HexToAddress("0x00000000000000000000000000000000000b0b05")
	var txs []*types.Transaction
	for nonce, inner := range []*types.DynamicFeeTx{
		{To: &bob, Value: big.NewInt(params.Ether), Gas: 21_000},
		{To: nil, Data: counterInit, Gas: 200_000},
		{To: &counter, Gas: 100_000},
	} {
		inner.ChainID, inner.Nonce = d.g.Config.ChainID, uint64(nonce)
		inner.GasTipCap, inner.GasFeeCap = big.NewInt(params.GWei), big.NewInt(10*params.GWei)
		tx, err := types.SignNewTx(from.Key, signer, inner)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.pool.Add(tx); err != nil {
			t.Fatal(err)
		}
		txs = append(txs, tx)
	}
	d.clock.Advance(d.seqCfg.PreconfInterval)
	d.seq.Sync()
	if snap := d.mgr.Current(); snap == nil || len(snap.Transactions()) != len(txs) {
		t.Fatal("transactions not pre-confirmed")
	}
	return d, txs, counter
}

// traceOK calls a tracing method and returns its result.
func traceOK(t *testing.T, url, method string, params ...any) json.RawMessage {
	t.Helper()
	r := callRPC(t, url, method, params...)
	if r.Error != nil {
		t.Fatalf("%s %v: error %d %s", method, params, r.Error.Code, r.Error.Message)
	}
	return r.Result
}

// Pre-confirmed transactions are traced on the pending block: their traces,
// the pending block's and a call on pending state equal what the same
// requests answer once the block is sealed (the canonical path, checked
// against go-ethereum by TestTraceDifferentialGeth).
func TestTracePending(t *testing.T) {
	d, txs, counter := pendingTraceTxs(t)
	configs := []map[string]any{
		nil,
		{"tracer": "callTracer", "tracerConfig": map[string]any{"withLog": true}},
		{"tracer": "prestateTracer", "tracerConfig": map[string]any{"diffMode": true}},
		{"tracer": "prestateTracer"},
		{"tracer": "4byteTracer"},
	}
	call := map[string]any{"from": d.accs[1].Address, "to": counter, "gas": "0x30000"}
	before := map[string]json.RawMessage{}
	for i, cfg := range configs {
		for _, tx := range txs {
			before[tx.Hash().Hex()+mustJSON(cfg)] = traceOK(t, d.url, "debug_traceTransaction", withParams(cfg, tx.Hash())...)
		}
		before["block"+mustJSON(cfg)] = traceOK(t, d.url, "debug_traceBlockByNumber", withParams(cfg, "pending")...)
		before["call"+mustJSON(cfg)] = traceOK(t, d.url, "debug_traceCall", withParams(cfg, call, "pending")...)
		if i == 1 {
			// The counter exists on pending only: on latest the call
			// reaches an empty account.
			type frame struct {
				Logs []any `json:"logs"`
			}
			var onPending, onLatest frame
			if err := json.Unmarshal(before["call"+mustJSON(cfg)], &onPending); err != nil || len(onPending.Logs) != 1 {
				t.Fatalf("callTracer on pending: %s (want the counter's log)", before["call"+mustJSON(cfg)])
			}
			latest := traceOK(t, d.url, "debug_traceCall", withParams(cfg, call, "latest")...)
			if err := json.Unmarshal(latest, &onLatest); err != nil || len(onLatest.Logs) != 0 {
				t.Fatalf("callTracer on latest: %s (the counter does not exist there)", latest)
			}
		}
	}
	var pendingNumber hexU64
	wantResult(t, callRPC(t, d.url, "eth_blockNumber"), &pendingNumber)
	pendingNumber++

	// Seal the block: the same transactions are now canonical.
	d.clock.Advance(d.seqCfg.BlockTime)
	d.seq.Sync()
	var head hexU64
	wantResult(t, callRPC(t, d.url, "eth_blockNumber"), &head)
	if head != pendingNumber {
		t.Fatalf("head %d after the seal, want %d", head, pendingNumber)
	}
	for _, cfg := range configs {
		for _, tx := range txs {
			got := traceOK(t, d.url, "debug_traceTransaction", withParams(cfg, tx.Hash())...)
			if diff := sameJSON(before[tx.Hash().Hex()+mustJSON(cfg)], got); diff != "" {
				t.Errorf("trace of %s %s: pending and sealed differ: %s", tx.Hash(), mustJSON(cfg), diff)
			}
		}
		got := traceOK(t, d.url, "debug_traceBlockByNumber", withParams(cfg, head)...)
		if diff := sameJSON(before["block"+mustJSON(cfg)], got); diff != "" {
			t.Errorf("block trace %s: pending and sealed differ: %s", mustJSON(cfg), diff)
		}
		got = traceOK(t, d.url, "debug_traceCall", withParams(cfg, call, head)...)
		if diff := sameJSON(before["call"+mustJSON(cfg)], got); diff != "" {
			t.Errorf("call trace %s: pending and sealed differ: %s", mustJSON(cfg), diff)
		}
	}
}

// debug_traceCall: state and block overrides, txIndex, and go-ethereum's
// next-block rule for BLOCKHASH.
func TestTraceCallOptions(t *testing.T) {
	d, txs, counter := pendingTraceTxs(t)
	d.clock.Advance(d.seqCfg.BlockTime)
	d.seq.Sync()
	var head hexU64
	wantResult(t, callRPC(t, d.url, "eth_blockNumber"), &head)

	type frame struct {
		Output hexutil.Bytes `json:"output"`
		Error  string        `json:"error"`
		Logs   []struct {
			Data hexutil.Bytes `json:"data"`
		} `json:"logs"`
	}
	trace := func(call map[string]any, block any, cfg map[string]any) frame {
		t.Helper()
		cfg["tracer"] = "callTracer"
		cfg["tracerConfig"] = map[string]any{"withLog": true}
		var f frame
		if err := json.Unmarshal(traceOK(t, d.url, "debug_traceCall", call, block, cfg), &f); err != nil {
			t.Fatal(err)
		}
		return f
	}
	counterValue := func(f frame) uint64 {
		t.Helper()
		if len(f.Logs) != 1 || len(f.Logs[0].Data) != 32 {
			t.Fatalf("want one 32-byte log, got %+v (error %q)", f.Logs, f.Error)
		}
		return new(big.Int).SetBytes(f.Logs[0].Data).Uint64()
	}
	call := map[string]any{"from": d.accs[1].Address, "to": counter, "gas": "0x30000"}

	// The counter was called once: the traced call makes it 2.
	if v := counterValue(trace(call, head, map[string]any{})); v != 2 {
		t.Fatalf("counter after the call = %d, want 2", v)
	}
	// txIndex: inside the block, after its first 2 transactions (the
	// counter deployed, not called yet): 1.
	if v := counterValue(trace(call, head, map[string]any{"txIndex": "0x2"})); v != 1 {
		t.Fatalf("counter at txIndex 2 = %d, want 1", v)
	}
	// A state override of slot 0.
	ov := map[string]any{counter.Hex(): map[string]any{"stateDiff": map[string]any{"0x0": "0x0000000000000000000000000000000000000000000000000000000000000029"}}}
	if v := counterValue(trace(call, head, map[string]any{"stateOverrides": ov})); v != 42 {
		t.Fatalf("counter with slot 0 = 41 = %d, want 42", v)
	}
	// A code override: NUMBER, returned (block overrides change it).
	numberCode := "0x4360005260206000f3"
	ovCode := map[string]any{counter.Hex(): map[string]any{"code": numberCode}}
	f := trace(call, head, map[string]any{"stateOverrides": ovCode, "blockOverrides": map[string]any{"number": "0x1234"}})
	if new(big.Int).SetBytes(f.Output).Uint64() != 0x1234 {
		t.Fatalf("NUMBER with a block override = %x, want 0x1234", f.Output)
	}
	// BLOCKHASH(head) from a call overridden to head+1 is head's hash, as
	// go-ethereum answers (not 0).
	var blk struct {
		Hash common.Hash `json:"hash"`
	}
	wantResult(t, callRPC(t, d.url, "eth_getBlockByNumber", head, false), &blk)
	hashCode := "0x" + "60" + "01" + "43" + "03" + "40" + "60005260206000f3" // BLOCKHASH(NUMBER-1)
	f = trace(call, head, map[string]any{"stateOverrides": map[string]any{counter.Hex(): map[string]any{"code": hashCode}}, "blockOverrides": map[string]any{"number": hexU64(head + 1)}})
	if common.BytesToHash(f.Output) != blk.Hash {
		t.Fatalf("BLOCKHASH(%d) at an overridden %d = %x, want %s", head, head+1, f.Output, blk.Hash)
	}
	// Errors: txIndex beyond the block, an unknown tracer, a bad timeout.
	r := callRPC(t, d.url, "debug_traceCall", call, head, map[string]any{"txIndex": "0x9"})
	wantCode(t, r, rpc.CodeInvalidParams)
	r = callRPC(t, d.url, "debug_traceCall", call, head, map[string]any{"tracer": "noSuchTracer"})
	wantCode(t, r, rpc.CodeInvalidParams)
	if !strings.Contains(r.Error.Message, "--rpc.jstracers") {
		t.Fatalf("unknown tracer: %q does not say JavaScript is disabled", r.Error.Message)
	}
	wantCode(t, callRPC(t, d.url, "debug_traceTransaction", txs[0].Hash(), map[string]any{"timeout": "soon"}), rpc.CodeInvalidParams)
	wantCode(t, callRPC(t, d.url, "debug_traceTransaction", common.Hash{1}), rpc.CodeServerError)
}

// The output bound: a trace over TraceMaxOutput is refused with -32005
// (the struct logger stops recording at it, call tracers are metered), and
// one under it is answered.
func TestTraceOutputLimit(t *testing.T) {
	db, g := chaintest.ImportedStore(t)
	cfg := DefaultAPIConfig()
	cfg.TraceMaxOutput = 512
	_, url := startNodeCfg(t, cfg, db, g, nil)
	var create chaintypes.Tx
	var busiest *chaintypes.Block
	for _, b := range chaintest.Blocks(t) {
		for _, tx := range b.Transactions() {
			if tx.To() == nil && create == nil {
				create = tx
			}
		}
		if busiest == nil || len(b.Transactions()) > len(busiest.Transactions()) {
			busiest = b
		}
	}
	if create == nil || len(busiest.Transactions()) < 10 {
		t.Fatal("the conformance chain has no contract creation or no block of 10 transactions")
	}
	for _, c := range []struct {
		method string
		arg    any
		cfg    map[string]any
	}{
		{"debug_traceTransaction", create.Hash(), nil},
		{"debug_traceTransaction", create.Hash(), map[string]any{"enableMemory": true, "limit": 100000}},
		{"debug_traceBlockByNumber", hexU64(busiest.NumberU64()), nil},
		{"debug_traceBlockByNumber", hexU64(busiest.NumberU64()), map[string]any{"tracer": "callTracer"}},
		{"debug_traceBlockByHash", busiest.Hash(), map[string]any{"tracer": "prestateTracer"}},
	} {
		r := callRPC(t, url, c.method, withParams(c.cfg, c.arg)...)
		wantCode(t, r, rpc.CodeLimitExceeded)
		if !strings.Contains(r.Error.Message, "512") {
			t.Errorf("%s %v: message %q does not name the limit", c.method, c.cfg, r.Error.Message)
		}
	}
	// Under the bound: answered. The struct logger's own limit truncates
	// (go-ethereum's option) instead of failing.
	traceOK(t, url, "debug_traceTransaction", create.Hash(), map[string]any{"tracer": "4byteTracer"})
	traceOK(t, url, "debug_traceTransaction", create.Hash(), map[string]any{"limit": 1})
}

// The meter cancels the execution once a call tracer's output passes the
// budget.
func TestOutputMeter(t *testing.T) {
	entered := 0
	m := &outputMeter{budget: 1000, spec: meterSpec{frames: true, logs: true}}
	cancelled := false
	m.cancel = func() { cancelled = true }
	h := m.wrap(&tracing.Hooks{OnEnter: func(int, byte, common.Address, common.Address, []byte, uint64, *big.Int) { entered++ }})
	h.OnEnter(0, 0, common.Address{}, common.Address{}, make([]byte, 400), 0, nil)
	if cancelled || m.over() {
		t.Fatal("cancelled under the budget")
	}
	h.OnLog(&types.Log{Data: make([]byte, 100)})
	h.OnExit(0, make([]byte, 100), 0, nil, false)
	if !cancelled || !m.over() || entered != 1 {
		t.Fatalf("over the budget: cancelled %v over %v entered %d", cancelled, m.over(), entered)
	}
}

// JavaScript tracers: refused by default; with JSTracers, a tracer stuck in
// its own code is stopped at the EVM timeout; every trace holds an
// execution slot.
func TestTraceJavaScriptAndLimits(t *testing.T) {
	db, g := chaintest.ImportedStore(t)
	blocks := chaintest.Blocks(t)
	var tx chaintypes.Tx
	for _, b := range blocks {
		if len(b.Transactions()) > 0 {
			tx = b.Transactions()[0]
			break
		}
	}
	const stuck = `{step: function() { while (true) {} }, fault: function() {}, result: function() { return 1; }}`

	cfg := DefaultAPIConfig()
	cfg.JSTracers = true
	cfg.EVMTimeout = 2 * time.Second // margin for the probes on a busy machine
	cfg.MaxExecutions, cfg.ExecutionQueue = 1, 0
	api, url := startNodeCfg(t, cfg, db, g, nil)

	// The stuck tracer holds the one slot until the timeout; a second trace
	// meanwhile is refused.
	var wg sync.WaitGroup
	wg.Add(1)
	var first rpcResp
	start := time.Now()
	go func() {
		defer wg.Done()
		first = callRPC(t, url, "debug_traceTransaction", tx.Hash(), map[string]any{"tracer": stuck})
	}()
	for api.Executions().Stats().Running == 0 && time.Since(start) < 5*time.Second {
		time.Sleep(time.Millisecond) // until the stuck trace holds the slot
	}
	deadline := time.Now().Add(5 * time.Second)
	refused := false
	for time.Now().Before(deadline) && !refused {
		r := callRPC(t, url, "debug_traceTransaction", tx.Hash(), map[string]any{"tracer": "callTracer"})
		if r.Error != nil && r.Error.Code == rpc.CodeLimitExceeded {
			refused = true
		}
	}
	wg.Wait()
	if !refused {
		t.Error("a trace was not refused while another held the only execution slot")
	}
	if first.Error == nil || first.Error.Code != rpc.CodeTimeout {
		t.Fatalf("stuck JavaScript tracer: %+v %s, want a timeout error", first.Error, first.Result)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("stuck JavaScript tracer took %v to stop", d)
	}
	// Once free, JavaScript runs.
	traceOK(t, url, "debug_traceTransaction", tx.Hash(), map[string]any{"tracer": `{data: 0, step: function() { this.data++ }, fault: function() {}, result: function() { return this.data; }}`})
}

// Without JSTracers, JavaScript is refused (-32602 naming the flag).
func TestTraceJavaScriptOff(t *testing.T) {
	db, g := chaintest.ImportedStore(t)
	_, url := startNode(t, db, g, nil)
	var tx chaintypes.Tx
	for _, b := range chaintest.Blocks(t) {
		if len(b.Transactions()) > 0 {
			tx = b.Transactions()[0]
			break
		}
	}
	for _, cfg := range []map[string]any{
		{"tracer": "unigramTracer"},
		{"tracer": `{step: function() {}, fault: function() {}, result: function() { return 1; }}`},
		// go-ethereum's muxTracer builds the tracers its config names.
		{"tracer": "muxTracer", "tracerConfig": map[string]any{"callTracer": map[string]any{}, "unigramTracer": map[string]any{}}},
		{"tracer": "muxTracer", "tracerConfig": map[string]any{"muxTracer": map[string]any{"bigramTracer": nil}}},
	} {
		name := cfg["tracer"]
		r := callRPC(t, url, "debug_traceTransaction", tx.Hash(), cfg)
		wantCode(t, r, rpc.CodeInvalidParams)
		if !strings.Contains(r.Error.Message, "--rpc.jstracers") {
			t.Errorf("%v: message %q does not name the flag", name, r.Error.Message)
		}
	}
	// A muxTracer of native tracers is served.
	traceOK(t, url, "debug_traceTransaction", tx.Hash(), map[string]any{"tracer": "muxTracer", "tracerConfig": map[string]any{"callTracer": map[string]any{}, "4byteTracer": map[string]any{}}})
}

// debug_getRaw*: a pre-confirmed and a pooled transaction by hash, null for
// an unknown one, the pending block refused; after the seal the raw
// receipts decode to the block's receipts and the raw header hashes to the
// block hash.
func TestRawMethodsPending(t *testing.T) {
	d, txs, _ := pendingTraceTxs(t)
	for _, tx := range txs {
		var raw hexutil.Bytes
		wantResult(t, callRPC(t, d.url, "debug_getRawTransaction", tx.Hash()), &raw)
		want, _ := tx.MarshalBinary()
		if string(raw) != string(want) {
			t.Fatalf("raw pre-confirmed tx %s: %x, want %x", tx.Hash(), raw, want)
		}
	}
	if r := callRPC(t, d.url, "debug_getRawTransaction", common.Hash{7}); r.Error != nil || string(r.Result) != "null" {
		t.Fatalf("unknown tx: %+v %s, want null", r.Error, r.Result)
	}
	for _, m := range []string{"debug_getRawBlock", "debug_getRawHeader", "debug_getRawReceipts"} {
		wantCode(t, callRPC(t, d.url, m, "pending"), rpc.CodeInvalidParams)
		if r := callRPC(t, d.url, m, "0x99"); r.Error != nil || string(r.Result) != "null" {
			t.Fatalf("%s of a block the node does not have: %+v %s, want null", m, r.Error, r.Result)
		}
	}
	d.clock.Advance(d.seqCfg.BlockTime)
	d.seq.Sync()
	var blk struct {
		Hash common.Hash `json:"hash"`
	}
	wantResult(t, callRPC(t, d.url, "eth_getBlockByNumber", "latest", false), &blk)
	var rawHeader hexutil.Bytes
	wantResult(t, callRPC(t, d.url, "debug_getRawHeader", "latest"), &rawHeader)
	if crypto.Keccak256Hash(rawHeader) != blk.Hash {
		t.Fatalf("raw header hashes to %s, block hash %s", crypto.Keccak256Hash(rawHeader), blk.Hash)
	}
	var raws []hexutil.Bytes
	wantResult(t, callRPC(t, d.url, "debug_getRawReceipts", blk.Hash), &raws)
	if len(raws) != len(txs) {
		t.Fatalf("%d raw receipts, want %d", len(raws), len(txs))
	}
	for i, raw := range raws {
		var r types.Receipt
		if err := r.UnmarshalBinary(raw); err != nil {
			t.Fatalf("receipt %d: %v", i, err)
		}
		var rpcR struct {
			CumulativeGasUsed hexU64 `json:"cumulativeGasUsed"`
			Status            hexU64 `json:"status"`
		}
		wantResult(t, callRPC(t, d.url, "eth_getTransactionReceipt", txs[i].Hash()), &rpcR)
		if r.CumulativeGasUsed != uint64(rpcR.CumulativeGasUsed) || r.Status != uint64(rpcR.Status) || r.Type != txs[i].Type() {
			t.Fatalf("raw receipt %d: %+v, eth_getTransactionReceipt %+v", i, r, rpcR)
		}
	}
}
