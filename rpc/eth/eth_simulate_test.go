package eth

import (
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/rpc"
)

// The conformance fixtures (TestConformance, eth_simulateV1 directory) are
// the main oracle for eth_simulateV1. These tests cover what they do not:
// pending and historical bases, overrides of one account across blocks,
// 256-block simulations, limits and the time limit.

// simBlockOut is the part of a simulated block the tests look at.
type simBlockOut struct {
	Number       hexutil.Uint64    `json:"number"`
	Hash         common.Hash       `json:"hash"`
	ParentHash   common.Hash       `json:"parentHash"`
	Timestamp    hexutil.Uint64    `json:"timestamp"`
	StateRoot    common.Hash       `json:"stateRoot"`
	GasUsed      hexutil.Uint64    `json:"gasUsed"`
	Miner        common.Address    `json:"miner"`
	Difficulty   *hexutil.Big      `json:"difficulty"`
	Withdrawals  *json.RawMessage  `json:"withdrawals"`
	Transactions []json.RawMessage `json:"transactions"`
	Calls        []struct {
		ReturnData hexutil.Bytes  `json:"returnData"`
		Status     hexutil.Uint64 `json:"status"`
		GasUsed    hexutil.Uint64 `json:"gasUsed"`
		Logs       []*types.Log   `json:"logs"`
		Error      *rpc.Error     `json:"error"`
	} `json:"calls"`
}

// simulate runs eth_simulateV1 and decodes the blocks; it fails the test on
// an error response.
func simulate(t testing.TB, url string, payload any, block any) []simBlockOut {
	t.Helper()
	r := callRPC(t, url, "eth_simulateV1", payload, block)
	if r.Error != nil {
		t.Fatalf("eth_simulateV1 error %d: %s", r.Error.Code, r.Error.Message)
	}
	var out []simBlockOut
	if err := json.Unmarshal(r.Result, &out); err != nil {
		t.Fatalf("decode %s: %v", clip(string(r.Result)), err)
	}
	return out
}

// simulateErr runs eth_simulateV1 expecting an error and returns it.
func simulateErr(t testing.TB, url string, payload any, block any) *rpc.Error {
	t.Helper()
	r := callRPC(t, url, "eth_simulateV1", payload, block)
	if r.Error == nil {
		t.Fatalf("expected an error, got result %s", clip(string(r.Result)))
	}
	if len(r.Result) != 0 && string(r.Result) != "null" {
		t.Fatalf("error response carries a result: %s", clip(string(r.Result)))
	}
	return r.Error
}

// balanceOfCode returns runtime code that returns BALANCE(addr) as a word.
func balanceOfCode(addr common.Address) string {
	return "0x73" + simHex(addr.Bytes()) + "31" + "60005260206000f3"
}

// readerCode returns (SLOAD 0, SLOAD 1, SELFBALANCE).
const readerCode = "0x" + "600054600052" + "600154602052" + "47604052" + "60606000f3"

// loopCode never stops (JUMPDEST PUSH1 0 JUMP).
const loopCode = "0x5b600056"

func simHex(b []byte) string { return strings.TrimPrefix(hexutil.Encode(b), "0x") }

func simWord(v int64) string { return common.BigToHash(big.NewInt(v)).Hex() }

func simWords(vs ...int64) []byte {
	var out []byte
	for _, v := range vs {
		out = append(out, common.BigToHash(big.NewInt(v)).Bytes()...)
	}
	return out
}

// conformanceNode starts a node on the imported conformance chain.
func conformanceNode(t testing.TB, cfg APIConfig) (*API, string) {
	t.Helper()
	db, g := chaintest.ImportedStore(t)
	return startNodeCfg(t, cfg, db, g, nil)
}

var (
	simC0 = common.HexToAddress("0xc000000000000000000000000000000000000000")
	simC1 = common.HexToAddress("0xc100000000000000000000000000000000000000")
	simC2 = common.HexToAddress("0xc200000000000000000000000000000000000000")
)

// A simulation on a historical block starts from that block's state and
// context: the first simulated block is its successor, pre-Shanghai blocks
// have no withdrawals, pre-merge blocks keep a difficulty.
func TestSimulateHistoricalBlock(t *testing.T) {
	_, url := conformanceNode(t, DefaultAPIConfig())
	// A funded account whose balance changed since block 0x20.
	data, err := os.ReadFile(filepath.Join(chaintest.Dir(t), "chain", "accounts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var accounts map[common.Address]json.RawMessage
	if err := json.Unmarshal(data, &accounts); err != nil {
		t.Fatal(err)
	}
	var (
		acct           common.Address
		oldBal, nowBal hexutil.Big
	)
	for a := range accounts {
		old := callRPC(t, url, "eth_getBalance", a, "0x20")
		now := callRPC(t, url, "eth_getBalance", a, "latest")
		if old.Error != nil || now.Error != nil {
			t.Fatalf("eth_getBalance: %v %v", old.Error, now.Error)
		}
		json.Unmarshal(old.Result, &oldBal)
		json.Unmarshal(now.Result, &nowBal)
		if oldBal.ToInt().Cmp(nowBal.ToInt()) != 0 {
			acct = a
			break
		}
	}
	if acct == (common.Address{}) {
		t.Fatal("no account changed balance since block 0x20")
	}
	hdr := callRPC(t, url, "eth_getBlockByNumber", "0x20", false)
	var base struct {
		Hash      common.Hash    `json:"hash"`
		Timestamp hexutil.Uint64 `json:"timestamp"`
	}
	if err := json.Unmarshal(hdr.Result, &base); err != nil {
		t.Fatal(err)
	}
	payload := map[string]any{"blockStateCalls": []any{map[string]any{
		"stateOverrides": map[string]any{simC2.Hex(): map[string]any{"code": balanceOfCode(acct)}},
		"calls":          []any{map[string]any{"to": simC2}},
	}}}
	for _, tc := range []struct {
		name string
		sel  any
		want *big.Int
	}{
		{"number", "0x20", oldBal.ToInt()},
		{"hash", base.Hash, oldBal.ToInt()},
		{"latest", "latest", nowBal.ToInt()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := simulate(t, url, payload, tc.sel)
			if len(out) != 1 || len(out[0].Calls) != 1 {
				t.Fatalf("got %d blocks", len(out))
			}
			b := out[0]
			if got := new(big.Int).SetBytes(b.Calls[0].ReturnData); got.Cmp(tc.want) != 0 {
				t.Fatalf("BALANCE = %v, want %v", got, tc.want)
			}
			if b.StateRoot != (common.Hash{}) {
				t.Fatalf("stateRoot %s, want zero", b.StateRoot)
			}
			if tc.name == "latest" {
				return
			}
			if b.Number != 0x21 || b.ParentHash != base.Hash || b.Timestamp != base.Timestamp+12 {
				t.Fatalf("block %d parent %s time %d; want 0x21 on %s at %d", b.Number, b.ParentHash, b.Timestamp, base.Hash, base.Timestamp+12)
			}
			if b.Withdrawals != nil {
				t.Fatal("pre-Shanghai block has withdrawals")
			}
			if b.Difficulty == nil || b.Difficulty.ToInt().Sign() == 0 {
				t.Fatal("pre-merge simulated block has zero difficulty")
			}
		})
	}
	// A base the node does not have.
	if e := simulateErr(t, url, payload, "0x1000"); e.Code != rpc.CodeHeaderNotFound {
		t.Fatalf("unknown block: code %d", e.Code)
	}
	if e := simulateErr(t, url, payload, common.HexToHash("0x1234")); e.Code != rpc.CodeHeaderNotFound {
		t.Fatalf("unknown hash: code %d", e.Code)
	}
}

// Overrides of one account in consecutive blocks apply on top of what the
// previous blocks left: stateDiff patches, state replaces, balance and code
// persist until overridden again, value sent in an earlier block stays.
func TestSimulateOverrideSameAccountConsecutiveBlocks(t *testing.T) {
	_, url := conformanceNode(t, DefaultAPIConfig())
	call := map[string]any{"from": simC0, "to": simC1}
	payload := map[string]any{"blockStateCalls": []any{
		map[string]any{
			"stateOverrides": map[string]any{
				simC1.Hex(): map[string]any{"code": readerCode, "balance": "0x5", "state": map[string]any{simWord(0): simWord(1), simWord(1): simWord(2)}},
				simC0.Hex(): map[string]any{"balance": "0x100"},
			},
			"calls": []any{call, map[string]any{"from": simC0, "to": simC1, "value": "0x3"}},
		},
		map[string]any{
			"stateOverrides": map[string]any{simC1.Hex(): map[string]any{"stateDiff": map[string]any{simWord(1): simWord(7)}}},
			"calls":          []any{call},
		},
		map[string]any{
			"stateOverrides": map[string]any{simC1.Hex(): map[string]any{"state": map[string]any{simWord(0): simWord(9)}, "balance": "0x1"}},
			"calls":          []any{call},
		},
		map[string]any{"calls": []any{call}},
	}}
	out := simulate(t, url, payload, "latest")
	want := [][]byte{simWords(1, 2, 5), simWords(1, 7, 8), simWords(9, 0, 1), simWords(9, 0, 1)}
	got := [][]byte{out[0].Calls[0].ReturnData, out[1].Calls[0].ReturnData, out[2].Calls[0].ReturnData, out[3].Calls[0].ReturnData}
	for i := range want {
		if string(got[i]) != string(want[i]) {
			t.Errorf("block %d: got %x, want %x", i, got[i], want[i])
		}
	}
	for i := 1; i < len(out); i++ {
		if out[i].ParentHash != out[i-1].Hash || out[i].Number != out[i-1].Number+1 {
			t.Fatalf("block %d does not follow block %d", i, i-1)
		}
	}
}

// 256 blocks (the default limit), counted as the span beyond the base:
// a single entry numbered base+256 yields 256 blocks with the gap filled;
// base+257 is refused. BLOCKHASH in the last block sees the first one.
func TestSimulate256Blocks(t *testing.T) {
	_, url := conformanceNode(t, DefaultAPIConfig())
	const head = 54
	blockhashCode := "0x" + "600035" + "40" + "60005260206000f3" // BLOCKHASH(calldata[0:32])
	payload := map[string]any{"blockStateCalls": []any{
		map[string]any{},
		map[string]any{
			"blockOverrides": map[string]any{"number": hexutil.Uint64(head + 256)},
			"stateOverrides": map[string]any{simC2.Hex(): map[string]any{"code": blockhashCode}},
			"calls":          []any{map[string]any{"to": simC2, "input": simWord(head + 1)}, map[string]any{"to": simC2, "input": simWord(head + 200)}},
		},
	}}
	out := simulate(t, url, payload, "latest")
	if len(out) != 256 {
		t.Fatalf("%d blocks, want 256", len(out))
	}
	for i, b := range out {
		if uint64(b.Number) != head+1+uint64(i) {
			t.Fatalf("block %d has number %d", i, b.Number)
		}
		if i > 0 && (b.ParentHash != out[i-1].Hash || b.Timestamp != out[i-1].Timestamp+12) {
			t.Fatalf("block %d: parent %s / time %d do not follow", i, b.ParentHash, b.Timestamp)
		}
	}
	last := out[255]
	if common.BytesToHash(last.Calls[0].ReturnData) != out[0].Hash {
		t.Fatalf("BLOCKHASH(first) = %x, want %s", last.Calls[0].ReturnData, out[0].Hash)
	}
	if common.BytesToHash(last.Calls[1].ReturnData) != out[199-0].Hash {
		t.Fatalf("BLOCKHASH(%d) = %x, want %s", head+200, last.Calls[1].ReturnData, out[199].Hash)
	}
	// 256 entries are fine, 257 are not; nor is a span of 257.
	many := make([]any, 256)
	for i := range many {
		many[i] = map[string]any{}
	}
	if out := simulate(t, url, map[string]any{"blockStateCalls": many}, "latest"); len(out) != 256 {
		t.Fatalf("%d blocks", len(out))
	}
	if e := simulateErr(t, url, map[string]any{"blockStateCalls": append(many, map[string]any{})}, "latest"); e.Code != rpc.CodeClientLimitExceeded {
		t.Fatalf("257 entries: code %d", e.Code)
	}
	span := map[string]any{"blockStateCalls": []any{map[string]any{"blockOverrides": map[string]any{"number": hexutil.Uint64(head + 257)}}}}
	if e := simulateErr(t, url, span, "latest"); e.Code != rpc.CodeClientLimitExceeded {
		t.Fatalf("span 257: code %d", e.Code)
	}
}

// Request limits and sequence checks, each with its code.
func TestSimulateLimits(t *testing.T) {
	cfg := DefaultAPIConfig()
	cfg.SimulateMaxBlocks = 8
	cfg.SimulateMaxCallsPerBlock = 2
	cfg.SimulateMaxCalls = 3
	cfg.GasCap = 100_000
	_, url := conformanceNode(t, cfg)
	call := map[string]any{"from": simC0, "to": simC1}
	blocks := func(bs ...any) map[string]any { return map[string]any{"blockStateCalls": bs} }
	withCalls := func(n int) map[string]any {
		cs := make([]any, n)
		for i := range cs {
			cs[i] = call
		}
		return map[string]any{"calls": cs}
	}
	bo := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return map[string]any{"blockOverrides": m}
	}
	tests := []struct {
		name    string
		payload any
		code    int
		msg     string
	}{
		{"empty", blocks(), rpc.CodeInvalidParams, "empty"},
		{"too many entries", blocks(make([]any, 9)...), rpc.CodeClientLimitExceeded, "too many blocks: 9 (limit 8)"},
		{"span beyond limit", blocks(bo("number", "0x3f")), rpc.CodeClientLimitExceeded, "too many blocks: block 63 is 9 blocks after the base block 54, gaps included (limit 8)"},
		{"calls per block", blocks(withCalls(3)), rpc.CodeClientLimitExceeded, "too many calls in block 0: 3 (limit 2 per block)"},
		{"calls in total", blocks(withCalls(2), withCalls(2)), rpc.CodeClientLimitExceeded, "too many calls: 4 (limit 3 per request)"},
		{"number not increasing", blocks(bo("number", "0x38"), bo("number", "0x38")), rpc.CodeBlockNumberInvalid, "order"},
		{"number at base", blocks(bo("number", "0x36")), rpc.CodeBlockNumberInvalid, "order"},
		{"time not increasing", blocks(bo("time", "0x1000"), bo("time", "0x1000")), rpc.CodeBlockTimestampInvalid, "order"},
		{"block gas limit", blocks(map[string]any{"blockOverrides": map[string]any{"gasLimit": "0x7530"},
			"calls": []any{map[string]any{"from": simC0, "to": simC1, "gas": "0x5208"}, map[string]any{"from": simC0, "to": simC1, "gas": "0x5208"}}}),
			rpc.CodeBlockGasLimitReached, "block gas limit"},
		{"move non-precompile", blocks(map[string]any{"stateOverrides": map[string]any{simC1.Hex(): map[string]any{"movePrecompileToAddress": simC2}}}), rpc.CodeServerError, "not a precompile"},
		{"move precompile to itself", blocks(map[string]any{"stateOverrides": map[string]any{"0x0000000000000000000000000000000000000001": map[string]any{"movePrecompileToAddress": "0x0000000000000000000000000000000000000001"}}}), rpc.CodeMovePrecompileSelfReference, "itself"},
		{"move onto overridden", blocks(map[string]any{"stateOverrides": map[string]any{
			"0x0000000000000000000000000000000000000001": map[string]any{"movePrecompileToAddress": simC2},
			simC2.Hex(): map[string]any{"balance": "0x1"}}}), rpc.CodeMovePrecompileDuplicate, "overridden"},
		{"difficulty after merge", blocks(bo("difficulty", "0x1")), rpc.CodeInvalidParams, "difficulty"},
		{"nonce too low", map[string]any{"validation": true, "blockStateCalls": []any{map[string]any{
			"stateOverrides": map[string]any{simC0.Hex(): map[string]any{"nonce": "0x2", "balance": "0xffffffffffffffff"}},
			"calls":          []any{map[string]any{"from": simC0, "to": simC1, "nonce": "0x1", "maxFeePerGas": "0xffffffff"}}}}}, rpc.CodeNonceTooLow, "nonce too low"},
		{"nonce too high", map[string]any{"validation": true, "blockStateCalls": []any{map[string]any{
			"stateOverrides": map[string]any{simC0.Hex(): map[string]any{"balance": "0xffffffffffffffff"}},
			"calls":          []any{map[string]any{"from": simC0, "to": simC1, "nonce": "0x5", "maxFeePerGas": "0xffffffff"}}}}}, rpc.CodeNonceTooHigh, "nonce too high"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := simulateErr(t, url, tc.payload, "latest")
			if e.Code != tc.code || !strings.Contains(e.Message, tc.msg) {
				t.Fatalf("got %d %q, want %d containing %q", e.Code, e.Message, tc.code, tc.msg)
			}
		})
	}

	// The gas cap is one budget for the whole request: each call's gas is
	// clamped to what the previous calls left.
	payload := map[string]any{"returnFullTransactions": true, "blockStateCalls": []any{withCalls(2), withCalls(1)}}
	out := simulate(t, url, payload, "latest")
	var gas []uint64
	for _, b := range out {
		for _, raw := range b.Transactions {
			var tx struct {
				Gas  hexutil.Uint64 `json:"gas"`
				From common.Address `json:"from"`
			}
			if err := json.Unmarshal(raw, &tx); err != nil {
				t.Fatal(err)
			}
			if tx.From != simC0 {
				t.Fatalf("full transaction from %s, want %s", tx.From, simC0)
			}
			gas = append(gas, uint64(tx.Gas))
		}
	}
	if fmt.Sprint(gas) != fmt.Sprint([]uint64{100_000, 79_000, 58_000}) {
		t.Fatalf("call gas %v, want [100000 79000 58000]", gas)
	}
	// Exhausted: with a cap of 50,000 the third call gets 8,000 gas, below
	// the intrinsic cost.
	cfg2 := cfg
	cfg2.GasCap = 50_000
	cfg2.SimulateMaxCalls = 10
	_, url2 := conformanceNode(t, cfg2)
	if e := simulateErr(t, url2, blocks(withCalls(2), withCalls(1)), "latest"); e.Code != rpc.CodeIntrinsicGas {
		t.Fatalf("exhausted gas cap: %d %s", e.Code, e.Message)
	}
}

// One time limit covers the whole simulation; a simulation that exceeds it
// returns an error and no partial result.
func TestSimulateTimeout(t *testing.T) {
	cfg := DefaultAPIConfig()
	cfg.EVMTimeout = 100 * time.Millisecond
	cfg.GasCap = 1 << 50
	_, url := conformanceNode(t, cfg)
	loop := map[string]any{
		"blockOverrides": map[string]any{"gasLimit": hexutil.Uint64(1 << 50)},
		"stateOverrides": map[string]any{simC1.Hex(): map[string]any{"code": loopCode}},
		"calls":          []any{map[string]any{"to": simC1}},
	}
	start := time.Now()
	e := simulateErr(t, url, map[string]any{"blockStateCalls": []any{map[string]any{}, loop, map[string]any{}}}, "latest")
	if e.Code != rpc.CodeTimeout || !strings.Contains(e.Message, "timeout") {
		t.Fatalf("got %d %q", e.Code, e.Message)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("timed-out simulation took %v", d)
	}
}

// Transfer tracing: internal value transfers are logged in call order and
// dropped with a reverted frame; the synthetic logs stay out of the bloom.
func TestSimulateTraceTransfersInternal(t *testing.T) {
	_, url := conformanceNode(t, DefaultAPIConfig())
	// C1 forwards its call value to C2 with CALL, then returns.
	fwd := "0x" + "6000600060006000" + "34" + "73" + simHex(simC2.Bytes()) + "5a" + "f1" + "00"
	payload := map[string]any{"traceTransfers": true, "blockStateCalls": []any{map[string]any{
		"stateOverrides": map[string]any{simC0.Hex(): map[string]any{"balance": "0x1000"}, simC1.Hex(): map[string]any{"code": fwd}},
		"calls":          []any{map[string]any{"from": simC0, "to": simC1, "value": "0x10"}},
	}}}
	out := simulate(t, url, payload, "latest")
	logs := out[0].Calls[0].Logs
	if len(logs) != 2 {
		t.Fatalf("%d logs, want 2", len(logs))
	}
	for i, pair := range [][2]common.Address{{simC0, simC1}, {simC1, simC2}} {
		l := logs[i]
		if l.Address != simTransferAddress || l.Topics[0] != simTransferTopic ||
			common.BytesToAddress(l.Topics[1].Bytes()) != pair[0] || common.BytesToAddress(l.Topics[2].Bytes()) != pair[1] ||
			l.Index != uint(i) || l.BlockHash != out[0].Hash {
			t.Fatalf("log %d: %+v", i, l)
		}
	}
	var full struct {
		LogsBloom types.Bloom `json:"logsBloom"`
	}
	r := callRPC(t, url, "eth_simulateV1", payload, "latest")
	var blocks []json.RawMessage
	json.Unmarshal(r.Result, &blocks)
	json.Unmarshal(blocks[0], &full)
	if full.LogsBloom != (types.Bloom{}) {
		t.Fatal("transfer logs are in the block bloom")
	}
}

// On pending the simulation starts from the pre-confirmed state: the first
// simulated block follows the pending block.
func TestSimulatePending(t *testing.T) {
	d := newDevPendingNode(t, false)
	accs, g, pool, clock, seqCfg, seq, mgr, url := d.accs, d.g, d.pool, d.clock, d.seqCfg, d.seq, d.mgr, d.url

	// Before the pending layer exists, pending = latest.
	recipient := common.HexToAddress("0x00000000000000000000000000000000000b0b01")
	payload := map[string]any{"blockStateCalls": []any{map[string]any{
		"stateOverrides": map[string]any{simC2.Hex(): map[string]any{"code": balanceOfCode(recipient)}},
		"calls":          []any{map[string]any{"to": simC2}},
	}}}
	if out := simulate(t, url, payload, "pending"); out[0].Number != 1 {
		t.Fatalf("without a pending layer: block %d, want 1", out[0].Number)
	}
	d.start(t)
	tx, err := types.SignNewTx(accs[0].Key, types.LatestSigner(g.Config), &types.DynamicFeeTx{
		ChainID: g.Config.ChainID, Nonce: 0, GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(10 * params.GWei),
		Gas: 21_000, To: &recipient, Value: big.NewInt(params.Ether),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := pool.Add(tx); err != nil {
		t.Fatal(err)
	}
	clock.Advance(seqCfg.PreconfInterval)
	seq.Sync()
	snap := mgr.Current()
	if snap == nil || len(snap.Transactions()) != 1 {
		t.Fatal("transaction not pre-confirmed")
	}
	ph := snap.Header()

	out := simulate(t, url, payload, "pending")
	b := out[0]
	// The parent is the pending block by the hash it has once sealed with
	// exactly its transactions (checked against the seal below).
	if uint64(b.Number) != ph.Number.Uint64()+1 || b.ParentHash != snap.BlockHash() || uint64(b.Timestamp) != ph.Time+12 {
		t.Fatalf("block %d on %s at %d; want %d on %s at %d", b.Number, b.ParentHash, b.Timestamp, ph.Number.Uint64()+1, snap.BlockHash(), ph.Time+12)
	}
	defer func() {
		clock.Advance(seqCfg.BlockTime)
		seq.Sync()
		var sealed struct {
			Hash common.Hash `json:"hash"`
		}
		wantResult(t, callRPC(t, url, "eth_getBlockByNumber", hexutil.Uint64(ph.Number.Uint64()), false), &sealed)
		if sealed.Hash != b.ParentHash {
			t.Fatalf("the simulation on pending followed %s; the block sealed as %s", b.ParentHash, sealed.Hash)
		}
	}()
	if got := new(big.Int).SetBytes(b.Calls[0].ReturnData); got.Cmp(big.NewInt(params.Ether)) != 0 {
		t.Fatalf("pending balance seen by the simulation: %v", got)
	}
	// The sender's next nonce on pending is the default nonce of its call.
	nonceCall := map[string]any{"returnFullTransactions": true, "blockStateCalls": []any{map[string]any{
		"calls": []any{map[string]any{"from": accs[0].Address, "to": recipient}},
	}}}
	out = simulate(t, url, nonceCall, "pending")
	var ftx struct {
		Nonce hexutil.Uint64 `json:"nonce"`
	}
	json.Unmarshal(out[0].Transactions[0], &ftx)
	if ftx.Nonce != 1 {
		t.Fatalf("default nonce on pending %d, want 1", ftx.Nonce)
	}
	// Latest does not see the pre-confirmation.
	out = simulate(t, url, payload, "latest")
	if out[0].Number != 1 || new(big.Int).SetBytes(out[0].Calls[0].ReturnData).Sign() != 0 {
		t.Fatalf("latest: block %d, balance %x", out[0].Number, out[0].Calls[0].ReturnData)
	}
}

// The handler refuses malformed payloads with invalid params.
func TestSimulateBadParams(t *testing.T) {
	_, url := conformanceNode(t, DefaultAPIConfig())
	for _, p := range [][]any{
		{},
		{"x"},
		{map[string]any{"blockStateCalls": "x"}},
		{map[string]any{"blockStateCalls": []any{}}, "latest", 1},
		{map[string]any{"blockStateCalls": []any{map[string]any{}}}, "bogus"},
	} {
		r := callRPC(t, url, "eth_simulateV1", p...)
		if r.Error == nil || r.Error.Code != rpc.CodeInvalidParams {
			t.Errorf("params %v: %+v", p, r.Error)
		}
	}
}
