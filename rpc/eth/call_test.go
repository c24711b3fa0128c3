package eth

import (
	"bytes"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/sequencer"
	"github.com/tipnode/tipnode/rpc"
	"github.com/tipnode/tipnode/store"
)

// Tests of eth_call, eth_estimateGas, eth_createAccessList, eth_getStorageAt
// and eth_getStorageValues through the HTTP server on the imported
// conformance chain (head = safe = finalized = block 54; the selector tests
// use newTagsNode, where finalized = 40 < safe = 47 < latest = 54 < pending).
// Contracts are installed with code overrides; their behaviour is observed
// through what they return.

// Accounts of the conformance chain used below.
const (
	// acctA: nonce 1, balance 1 wei, no code, slots 1, 2, 3 = 1, 2, 3.
	acctA = "0x8bebc8ba651aee624937e7d897853ac30c95a067"
	// acctCounter: a contract with slot 0 = 0x38 at block 54 (mixed case on purpose).
	acctCounter = "0x7Dcd17433742F4c0Ca53122aB541D0Ba67fC27Df"
	// acctRich: a funded EOA (about 1e36 wei), nonce 0.
	acctRich = "0x0c2c51a0990aee1d73c1228de158688341557508"
	// Fresh addresses (no account at block 54) where test code is installed.
	addrCode  = "0x000000000000000000000000000000000000c0d1"
	addrCode2 = "0x000000000000000000000000000000000000c0d2"
	addrEmpty = "0x000000000000000000000000000000000000beef"
)

// EVM programs (hand-assembled; no PUSH0 so they run under every fork).
const (
	// codeReader returns SLOAD(calldata[0:32]) ++ SELFBALANCE.
	codeReader = "0x600035546000524760205260406000f3"
	// codeNumber returns NUMBER.
	codeNumber = "0x4360005260206000f3"
	// codeEnv returns NUMBER, TIMESTAMP, PREVRANDAO, BASEFEE, COINBASE,
	// GASLIMIT, GASPRICE (seven words).
	codeEnv = "0x" + "43600052" + "42602052" + "44604052" + "48606052" + "41608052" + "4560a052" + "3a60c052" + "60e06000f3"
	// initReturnAddress is init code returning its own ADDRESS.
	initReturnAddress = "0x3060005260206000f3"
	// codeLoop runs until out of gas.
	codeLoop = "0x5b600056"
	// codeInvalid executes the INVALID opcode.
	codeInvalid = "0xfe"
	// codeRevertEmpty reverts with no data.
	codeRevertEmpty = "0x60006000fd"
	// codeSstore stores 1 in slot 1 (cold zero → non-zero: ~43k gas in all).
	codeSstore = "0x600160015500"
	// codeAccess reads slot 7, BALANCE(addrEmpty), STATICCALLs precompile 4
	// and EXTCODESIZE(acctRich).
	codeAccess = "0x600754" + "50" + "73" + "000000000000000000000000000000000000beef" + "3150" +
		"600060006000600060045afa50" + "73" + "0c2c51a0990aee1d73c1228de158688341557508" + "3b50" + "00"
)

// codeCallAllGas CALLs target with all gas and reverts when that call fails.
func codeCallAllGas(target string) string {
	return "0x6000600060006000600073" + strings.TrimPrefix(target, "0x") + "5af115602657005b600080fd"
}

// codeRevertWith reverts with data (at most 255 bytes), copied from the
// code's own tail.
func codeRevertWith(data []byte) string {
	n := byte(len(data))
	prefix := []byte{0x60, n, 0x60, 0x0c, 0x60, 0x00, 0x39, 0x60, n, 0x60, 0x00, 0xfd}
	return hexutil.Encode(append(prefix, data...))
}

func u256Word(v uint64) []byte { return common.BigToHash(new(big.Int).SetUint64(v)).Bytes() }

// errorStringData is the ABI encoding of Error(reason).
func errorStringData(reason string) []byte {
	out := hexutil.MustDecode("0x08c379a0")
	out = append(out, u256Word(32)...)
	out = append(out, u256Word(uint64(len(reason)))...)
	padded := make([]byte, (len(reason)+31)/32*32)
	copy(padded, reason)
	return append(out, padded...)
}

// panicData is the ABI encoding of Panic(code).
func panicData(code uint64) []byte {
	return append(hexutil.MustDecode("0x4e487b71"), u256Word(code)...)
}

func hexWord(v uint64) string { return hexutil.Encode(u256Word(v)) }

// callNode is a server on a fresh conformance store.
type callNode struct {
	t      *testing.T
	url    string
	client *http.Client
}

func newCallNode(t *testing.T) *callNode {
	t.Helper()
	db, g := chaintest.ImportedStore(t)
	_, url := startNode(t, db, g, nil)
	return &callNode{t: t, url: url, client: &http.Client{Timeout: 30 * time.Second}}
}

// Conformance accounts whose state differs between blocks 40, 47 and 54
// (history.json); newTagsNode's pending block changes them again.
const (
	// acctEmitter sends the chain's calls to acctCounter (tx-emit-* in
	// txinfo.json); nonce 0xc3, 0xe0, 0xf9 at blocks 40, 47, 54.
	acctEmitter = "0x7435ed30a8b4aeb0877cef0c6e8cffe834eb865f"
	// acctCallEnv (the callenv contract) returns NUMBER, CHAINID, COINBASE,
	// BASEFEE, PREVRANDAO, ORIGIN, CALLVALUE.
	acctCallEnv = "0x9344b07175800259691961298ca11c824e65032d"
	// addrTagsRecipient (no account at block 54) receives the pending transfer.
	addrTagsRecipient = "0x000000000000000000000000000000000000b0b0"
)

// Heights of the tags in newTagsNode's store; pending is block tagsLatest+1.
const (
	tagsFinalized = 40
	tagsSafe      = 47
	tagsLatest    = 54
)

// accountKey returns the private key of a funded conformance account
// (chain/accounts.json).
func accountKey(t testing.TB, addr string) *ecdsa.PrivateKey {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chaintest.Dir(t), "chain", "accounts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var accs map[common.Address]struct {
		Key string `json:"key"`
	}
	if err := json.Unmarshal(data, &accs); err != nil {
		t.Fatal(err)
	}
	acc, ok := accs[common.HexToAddress(addr)]
	if !ok {
		t.Fatalf("accounts.json has no key for %s", addr)
	}
	key, err := crypto.HexToECDSA(strings.TrimPrefix(acc.Key, "0x"))
	if err != nil {
		t.Fatal(err)
	}
	if crypto.PubkeyToAddress(key.PublicKey) != common.HexToAddress(addr) {
		t.Fatalf("accounts.json: the key of %s is another account's", addr)
	}
	return key
}

// tagsNode is a server on a conformance store where each block tag reads a
// different state: finalized = 40, safe = 47, latest = 54, and pending =
// block 55 of a running sequencer holding two pre-confirmed transactions:
// acctEmitter calls acctCounter with counterValue wei (the contract
// increments its slot 0 on every call) and acctRich sends transferValue wei
// to addrTagsRecipient at gas price transferPrice (fee cap = tip, so the
// price paid is exactly that whatever the base fee).
type tagsNode struct {
	*callNode
	hist          chaintest.History
	counterValue  *big.Int
	transferValue *big.Int
	transferPrice *big.Int
}

func newTagsNode(t *testing.T) *tagsNode {
	t.Helper()
	_, g, w := chaintest.GenesisStore(t)
	blocks := chaintest.Blocks(t)
	if len(blocks) != tagsLatest {
		t.Fatalf("chain.rlp has %d blocks, want %d", len(blocks), tagsLatest)
	}
	// Import moves the given tags (and latest) to the last block of each call.
	if err := w.Import(blocks[:tagsFinalized], chain.ImportOptions{Tags: []store.Tag{store.TagSafe, store.TagFinalized}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Import(blocks[tagsFinalized:tagsSafe], chain.ImportOptions{Tags: []store.Tag{store.TagSafe}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Import(blocks[tagsSafe:], chain.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	if h := w.Head(); h.Number() != tagsLatest || h.Safe().Number.Uint64() != tagsSafe || h.Finalized().Number.Uint64() != tagsFinalized {
		t.Fatalf("head %d safe %d finalized %d, want %d %d %d", h.Number(), h.Safe().Number, h.Finalized().Number, tagsLatest, tagsSafe, tagsFinalized)
	}

	log := zerolog.Nop()
	seqCfg := sequencer.DefaultConfig()
	clock := pending.NewManualClock(time.Unix(int64(blocks[tagsLatest-1].Time())+12, 0))
	mgr := pending.NewManager(w, g.Config, seqCfg.HeaderParams(), clock, nil)
	pool, err := sequencer.NewPool(sequencer.DefaultPoolConfig(), g.Config, mgr, clock, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	api, url := startAPI(t, DefaultAPIConfig(), g, mgr, w, pool)
	seq, err := sequencer.New(seqCfg, w, api.Executor(), pool, mgr, clock, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := seq.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := seq.Stop(); err != nil {
			t.Errorf("sequencer: %v", err)
		}
	})

	n := &tagsNode{
		callNode:      &callNode{t: t, url: url, client: &http.Client{Timeout: 30 * time.Second}},
		hist:          chaintest.LoadHistory(t),
		counterValue:  big.NewInt(0x1000),
		transferValue: big.NewInt(0x2000),
		transferPrice: big.NewInt(10 * params.GWei),
	}
	signer := types.LatestSigner(g.Config)
	counter, recipient := common.HexToAddress(acctCounter), common.HexToAddress(addrTagsRecipient)
	txs := []struct {
		from string
		tx   *types.DynamicFeeTx
	}{
		{acctEmitter, &types.DynamicFeeTx{Nonce: uint64(n.at(tagsLatest, acctEmitter).Nonce), Gas: 200_000, To: &counter,
			Value: n.counterValue, Data: []byte("tipnode tags")}},
		{acctRich, &types.DynamicFeeTx{Nonce: uint64(n.at(tagsLatest, acctRich).Nonce), Gas: params.TxGas, To: &recipient,
			Value: n.transferValue}},
	}
	for _, s := range txs {
		s.tx.ChainID, s.tx.GasTipCap, s.tx.GasFeeCap = g.Config.ChainID, n.transferPrice, n.transferPrice
		tx, err := types.SignNewTx(accountKey(t, s.from), signer, s.tx)
		if err != nil {
			t.Fatal(err)
		}
		if err := pool.Add(tx); err != nil {
			t.Fatalf("pool refuses the transaction of %s: %v", s.from, err)
		}
	}
	clock.Advance(seqCfg.PreconfInterval)
	seq.Sync()
	if err := seq.Err(); err != nil {
		t.Fatal(err)
	}
	snap := mgr.Current()
	if snap == nil {
		t.Fatal("no pending snapshot")
	}
	if snap.Anchor().Number.Uint64() != tagsLatest || len(snap.Transactions()) != len(txs) {
		t.Fatalf("pending layer: %d transactions on block %d, want %d on %d", len(snap.Transactions()), snap.Anchor().Number, len(txs), tagsLatest)
	}
	for i, r := range snap.Receipts() {
		if r.Status != types.ReceiptStatusSuccessful {
			t.Fatalf("pending transaction %d failed", i)
		}
	}
	return n
}

// at returns addr's state at block number (history.json; an account absent
// there is empty).
func (n *tagsNode) at(number uint64, addr string) chaintest.HistoryAccount {
	n.t.Helper()
	accs, ok := n.hist[number]
	if !ok {
		n.t.Fatalf("history.json has no block %d", number)
	}
	acc := accs[common.HexToAddress(addr)]
	if acc.Balance == nil {
		acc.Balance = new(hexutil.Big)
	}
	return acc
}

// rpc sends method with params (a JSON array text) and returns the response.
func (n *callNode) rpc(method, params string) rpcResp {
	n.t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params)
	b, err := postRaw(n.client, n.url, body)
	if err != nil {
		n.t.Fatal(err)
	}
	return parseResp(n.t, b)
}

// result sends the request and returns the result decoded into a string,
// failing the test on an error response.
func (n *callNode) result(method, params string) string {
	n.t.Helper()
	r := n.rpc(method, params)
	if r.Error != nil {
		n.t.Fatalf("%s %s: error %d %s", method, params, r.Error.Code, r.Error.Message)
	}
	var s string
	if err := json.Unmarshal(r.Result, &s); err != nil {
		n.t.Fatalf("%s: result %s is not a string", method, r.Result)
	}
	return s
}

// rpcCase is one request and what must come back: either Result (JSON,
// compared structurally) or an error with Code, a message containing Msg and,
// when Data is set, that data ("-" = no data member).
type rpcCase struct {
	name   string
	method string
	params string
	result string
	code   int
	msg    string // contained in the error message (the whole message when exact)
	exact  bool
	data   string
}

func (n *callNode) run(cases []rpcCase) {
	n.t.Helper()
	for _, c := range cases {
		n.t.Run(c.name, func(t *testing.T) {
			sub := *n
			sub.t = t
			r := sub.rpc(c.method, c.params)
			if c.result != "" {
				if r.Error != nil {
					t.Fatalf("want result %s, got error %d %q", c.result, r.Error.Code, r.Error.Message)
				}
				if !jsonEqual(t, r.Result, c.result) {
					t.Fatalf("result\n got  %s\n want %s", r.Result, c.result)
				}
				return
			}
			if r.Error == nil {
				t.Fatalf("want error %d %q, got result %s", c.code, c.msg, r.Result)
			}
			if r.Error.Code != c.code || !strings.Contains(r.Error.Message, c.msg) || (c.exact && r.Error.Message != c.msg) {
				t.Fatalf("error %d %q, want %d containing %q (exact: %v)", r.Error.Code, r.Error.Message, c.code, c.msg, c.exact)
			}
			switch c.data {
			case "":
			case "-":
				if r.Error.Data != nil {
					t.Fatalf("unexpected error data %v", r.Error.Data)
				}
			default:
				if r.Error.Data != c.data {
					t.Fatalf("error data %v, want %s", r.Error.Data, c.data)
				}
			}
		})
	}
}

// words splits a hex result into 32-byte words.
func resultWords(t *testing.T, res string) []*big.Int {
	t.Helper()
	b, err := hexutil.Decode(res)
	if err != nil || len(b)%32 != 0 {
		t.Fatalf("result %s is not a list of words", res)
	}
	var out []*big.Int
	for i := 0; i < len(b); i += 32 {
		out = append(out, new(big.Int).SetBytes(b[i:i+32]))
	}
	return out
}

func quoted(s string) string { return `"` + s + `"` }

func TestEthCallStateOverrides(t *testing.T) {
	n := newCallNode(t)
	reader := func(slot uint64, override string) string {
		return fmt.Sprintf(`[{"to":%q,"input":%q},"latest",{%q:%s}]`, acctA, hexWord(slot), acctA, override)
	}
	readerOut := func(slot, bal uint64) string { return quoted(hexutil.Encode(append(u256Word(slot), u256Word(bal)...))) }
	created := func(nonce uint64) string {
		return quoted(hexutil.Encode(common.LeftPadBytes(crypto.CreateAddress(common.HexToAddress(acctA), nonce).Bytes(), 32)))
	}
	n.run([]rpcCase{
		// Overriding balance (and code) keeps storage; the balance is the override.
		{name: "balance keeps storage", method: "eth_call",
			params: reader(2, `{"balance":"0x64","code":"`+codeReader+`"}`), result: readerOut(2, 100)},
		{name: "code only keeps balance", method: "eth_call",
			params: reader(3, `{"code":"`+codeReader+`"}`), result: readerOut(3, 1)},
		// The created contract's address comes from the sender's nonce: 1 is kept.
		{name: "balance keeps nonce", method: "eth_call",
			params: fmt.Sprintf(`[{"from":%q,"input":%q},"latest",{%q:{"balance":"0xde0b6b3a7640000"}}]`, acctA, initReturnAddress, acctA),
			result: created(1)},
		{name: "nonce override", method: "eth_call",
			params: fmt.Sprintf(`[{"from":%q,"input":%q},"latest",{%q:{"nonce":"0x5"}}]`, acctA, initReturnAddress, acctA),
			result: created(5)},
		{name: "stateDiff patches one slot", method: "eth_call",
			params: reader(1, `{"code":"`+codeReader+`","stateDiff":{"0x1":"0x5"}}`), result: readerOut(5, 1)},
		{name: "stateDiff keeps the others", method: "eth_call",
			params: reader(2, `{"code":"`+codeReader+`","stateDiff":{"0x1":"0x5"}}`), result: readerOut(2, 1)},
		{name: "state replaces all: set slot", method: "eth_call",
			params: reader(1, `{"code":"`+codeReader+`","state":{"0x01":"0x5"}}`), result: readerOut(5, 1)},
		{name: "state replaces all: other slot cleared", method: "eth_call",
			params: reader(2, `{"code":"`+codeReader+`","state":{"0x01":"0x5"}}`), result: readerOut(0, 1)},
		{name: "full-width slot key and value", method: "eth_call",
			params: reader(9, `{"code":"`+codeReader+`","stateDiff":{"`+hexWord(9)+`":"`+hexWord(0x99)+`"}}`), result: readerOut(0x99, 1)},
		{name: "empty override object", method: "eth_call",
			params: fmt.Sprintf(`[{"to":%q},"latest",{}]`, acctA), result: `"0x"`},
		{name: "empty account override", method: "eth_call",
			params: fmt.Sprintf(`[{"to":%q},"latest",{%q:{}}]`, acctA, acctA), result: `"0x"`},
		{name: "state and stateDiff", method: "eth_call",
			params: reader(1, `{"state":{"0x1":"0x1"},"stateDiff":{"0x2":"0x2"}}`), code: rpc.CodeInvalidParams, msg: "stateDiff"},
		{name: "slot key too long", method: "eth_call",
			params: reader(1, `{"stateDiff":{"0x`+strings.Repeat("1", 65)+`":"0x2"}}`), code: rpc.CodeInvalidParams, msg: "too long"},
		{name: "bad override value", method: "eth_call",
			params: reader(1, `{"balance":"xyz"}`), code: rpc.CodeInvalidParams, msg: "state overrides"},
	})
}

func TestEthCallBlockOverridesAndFees(t *testing.T) {
	n := newCallNode(t)
	head := n.rpc("eth_getBlockByNumber", `["latest",false]`)
	var hdr struct {
		Number   hexutil.Uint64 `json:"number"`
		Time     hexutil.Uint64 `json:"timestamp"`
		Mix      common.Hash    `json:"mixHash"`
		BaseFee  *hexutil.Big   `json:"baseFeePerGas"`
		Miner    common.Address `json:"miner"`
		GasLimit hexutil.Uint64 `json:"gasLimit"`
	}
	if err := json.Unmarshal(head.Result, &hdr); err != nil || hdr.BaseFee == nil {
		t.Fatalf("head block: %v %s", err, head.Result)
	}
	env := func(call, blockOv string) []*big.Int {
		t.Helper()
		ov := fmt.Sprintf(`{%q:{"code":%q}}`, addrCode, codeEnv)
		params := fmt.Sprintf(`[%s,"latest",%s]`, call, ov)
		if blockOv != "" {
			params = fmt.Sprintf(`[%s,"latest",%s,%s]`, call, ov, blockOv)
		}
		w := resultWords(t, n.result("eth_call", params))
		if len(w) != 7 {
			t.Fatalf("want 7 words, got %d", len(w))
		}
		return w
	}
	plain := fmt.Sprintf(`{"to":%q}`, addrCode)
	check := func(name string, got *big.Int, want *big.Int) {
		t.Helper()
		if got.Cmp(want) != 0 {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
	}
	big64 := func(v uint64) *big.Int { return new(big.Int).SetUint64(v) }

	// No overrides: the head block's values; no fee fields: BASEFEE and GASPRICE read 0.
	w := env(plain, "")
	check("number", w[0], big64(uint64(hdr.Number)))
	check("time", w[1], big64(uint64(hdr.Time)))
	check("prevRandao", w[2], hdr.Mix.Big())
	check("basefee without fee fields", w[3], new(big.Int))
	check("coinbase", w[4], new(big.Int).SetBytes(hdr.Miner.Bytes()))
	check("gaslimit", w[5], big64(uint64(hdr.GasLimit)))
	check("gasprice without fee fields", w[6], new(big.Int))

	// Short hex block overrides are left-padded.
	w = env(plain, `{"number":"0x100","time":"0x5","prevRandao":"0x1","feeRecipient":"0x00000000000000000000000000000000000000fe","gasLimit":"0x1c9c380"}`)
	check("number override", w[0], big64(0x100))
	check("time override", w[1], big64(5))
	check("prevRandao override", w[2], big64(1))
	check("feeRecipient override", w[4], big64(0xfe))
	check("gasLimit override", w[5], big64(0x1c9c380))

	// With fee fields the base fee is enforced and visible.
	feeCall := fmt.Sprintf(`{"from":%q,"to":%q,"gas":"0x30000","maxFeePerGas":"0x3b9aca00","maxPriorityFeePerGas":"0x1"}`, acctRich, addrCode)
	w = env(feeCall, "")
	check("basefee with fee fields", w[3], hdr.BaseFee.ToInt())
	check("gasprice with fee fields", w[6], new(big.Int).Add(hdr.BaseFee.ToInt(), big.NewInt(1)))
	w = env(feeCall, `{"baseFeePerGas":"0x7"}`)
	check("basefee override", w[3], big64(7))
	check("gasprice on overridden basefee", w[6], big64(8))
	legacy := fmt.Sprintf(`{"from":%q,"to":%q,"gas":"0x30000","gasPrice":"0x9"}`, acctRich, addrCode)
	w = env(legacy, `{"baseFeePerGas":"0x7"}`)
	check("legacy gasPrice", w[6], big64(9))
	// Without fee fields an overridden base fee still reads 0.
	w = env(plain, `{"baseFeePerGas":"0x7"}`)
	check("basefee override without fee fields", w[3], new(big.Int))

	ov := fmt.Sprintf(`{%q:{"code":%q}}`, addrCode, codeEnv)
	n.run([]rpcCase{
		{name: "fee below base fee", method: "eth_call",
			params: fmt.Sprintf(`[{"from":%q,"to":%q,"gasPrice":"0x1"},"latest",%s,{"baseFeePerGas":"0x7"}]`, acctRich, addrCode, ov),
			code:   rpc.CodeServerError, msg: "max fee per gas less than block base fee"},
		{name: "insufficient funds for fee", method: "eth_call",
			params: fmt.Sprintf(`[{"from":%q,"to":%q,"gasPrice":"0x3b9aca00"},"latest",%s]`, addrEmpty, addrCode, ov),
			code:   rpc.CodeServerError, msg: "insufficient funds"},
		{name: "gasPrice with maxFeePerGas", method: "eth_call",
			params: fmt.Sprintf(`[{"to":%q,"gasPrice":"0x1","maxFeePerGas":"0x1"}]`, addrCode),
			code:   rpc.CodeServerError, msg: "both gasPrice"},
		{name: "beaconRoot block override refused", method: "eth_call",
			params: fmt.Sprintf(`[{"to":%q},"latest",null,{"beaconRoot":"%s"}]`, addrCode, hexWord(1)),
			code:   rpc.CodeInvalidParams, msg: "beaconRoot"},
		{name: "prevRandao too long", method: "eth_call",
			params: fmt.Sprintf(`[{"to":%q},"latest",null,{"prevRandao":"0x%s"}]`, addrCode, strings.Repeat("1", 65)),
			code:   rpc.CodeInvalidParams, msg: "block overrides"},
	})
}

func TestEthCallFailures(t *testing.T) {
	n := newCallNode(t)
	at := func(code, extra string) string {
		return fmt.Sprintf(`[{"to":%q%s},"latest",{%q:{"code":%q}}]`, addrCode, extra, addrCode, code)
	}
	boom := errorStringData("boom")
	n.run([]rpcCase{
		{name: "Error(string)", method: "eth_call", params: at(codeRevertWith(boom), ""),
			code: rpc.CodeCallReverted, msg: "execution reverted", exact: true, data: hexutil.Encode(boom)},
		{name: "Panic(uint256)", method: "eth_call", params: at(codeRevertWith(panicData(0x11)), ""),
			code: rpc.CodeCallReverted, msg: "execution reverted", exact: true, data: hexutil.Encode(panicData(0x11))},
		{name: "custom error data", method: "eth_call", params: at(codeRevertWith([]byte{0xde, 0xad, 0xbe, 0xef}), ""),
			code: rpc.CodeCallReverted, msg: "execution reverted", exact: true, data: "0xdeadbeef"},
		{name: "empty revert", method: "eth_call", params: at(codeRevertEmpty, ""),
			code: rpc.CodeCallReverted, msg: "execution reverted", exact: true, data: "0x"},
		{name: "out of gas", method: "eth_call", params: at(codeLoop, `,"gas":"0x10000"`),
			code: rpc.CodeServerError, msg: "out of gas", data: "-"},
		{name: "invalid opcode", method: "eth_call", params: at(codeInvalid, ""),
			code: rpc.CodeServerError, msg: "invalid opcode", data: "-"},
		{name: "data and input differ", method: "eth_call",
			params: fmt.Sprintf(`[{"to":%q,"data":"0x01","input":"0x02"}]`, addrCode), code: rpc.CodeInvalidParams, msg: "input"},
		{name: "data and input equal", method: "eth_call",
			params: fmt.Sprintf(`[{"to":%q,"data":"0x01","input":"0x01"}]`, addrCode), result: `"0x"`},
		{name: "data alone", method: "eth_call",
			params: fmt.Sprintf(`[{"to":%q,"data":"%s"},"latest",{%q:{"code":%q}}]`, acctA, hexWord(2), acctA, codeReader),
			result: quoted(hexutil.Encode(append(u256Word(2), u256Word(1)...)))},
		{name: "contract creation returns init output", method: "eth_call",
			params: `[{"input":"0x60ab60005360016000f3"}]`, result: `"0xab"`},
		{name: "creation reverting", method: "eth_call",
			params: fmt.Sprintf(`[{"input":%q}]`, codeRevertWith(boom)), code: rpc.CodeCallReverted, msg: "execution reverted", exact: true, data: hexutil.Encode(boom)},
		{name: "missing call object", method: "eth_call", params: `[]`, code: rpc.CodeInvalidParams, msg: "call object"},
		{name: "too many params", method: "eth_call", params: `[{},"latest",{},{},1]`, code: rpc.CodeInvalidParams, msg: "too many"},
		{name: "value transfer from empty account", method: "eth_call",
			params: fmt.Sprintf(`[{"from":%q,"to":%q,"value":"0x1"}]`, addrEmpty, addrCode), code: rpc.CodeServerError, msg: "insufficient funds"},
	})
}

// TestEthCallSelectors: every selector form of eth_call, on a store where
// finalized, safe, latest and pending are four different blocks.
func TestEthCallSelectors(t *testing.T) {
	n := newTagsNode(t).callNode
	var blk16 struct {
		Hash common.Hash `json:"hash"`
	}
	if err := json.Unmarshal(n.rpc("eth_getBlockByNumber", `["0x10",false]`).Result, &blk16); err != nil || blk16.Hash == (common.Hash{}) {
		t.Fatalf("block 16: %v", err)
	}
	at := func(sel string) string {
		return fmt.Sprintf(`[{"to":%q},%s,{%q:{"code":%q}}]`, addrCode, sel, addrCode, codeNumber)
	}
	num := func(v uint64) string { return quoted(hexWord(v)) }
	// The omitted selector cannot carry a code override: it is checked on
	// the callenv contract, whose answer (NUMBER first) must be latest's.
	latestEnv := n.result("eth_call", fmt.Sprintf(`[{"to":%q},"latest"]`, acctCallEnv))
	if w := resultWords(t, latestEnv); len(w) != 7 || !w[0].IsUint64() || w[0].Uint64() != tagsLatest {
		t.Fatalf("callenv on latest: %s, want NUMBER %d first", latestEnv, tagsLatest)
	}
	n.run([]rpcCase{
		{name: "omitted", method: "eth_call", params: fmt.Sprintf(`[{"to":%q}]`, addrCode), result: `"0x"`},
		{name: "omitted reads latest", method: "eth_call", params: fmt.Sprintf(`[{"to":%q}]`, acctCallEnv), result: quoted(latestEnv)},
		{name: "null", method: "eth_call", params: at("null"), result: num(tagsLatest)},
		{name: "latest", method: "eth_call", params: at(`"latest"`), result: num(tagsLatest)},
		{name: "pending", method: "eth_call", params: at(`"pending"`), result: num(tagsLatest + 1)},
		{name: "safe", method: "eth_call", params: at(`"safe"`), result: num(tagsSafe)},
		{name: "finalized", method: "eth_call", params: at(`"finalized"`), result: num(tagsFinalized)},
		{name: "blockNumber pending", method: "eth_call", params: at(`{"blockNumber":"pending"}`), result: num(tagsLatest + 1)},
		{name: "blockNumber safe", method: "eth_call", params: at(`{"blockNumber":"safe"}`), result: num(tagsSafe)},
		{name: "blockNumber finalized", method: "eth_call", params: at(`{"blockNumber":"finalized"}`), result: num(tagsFinalized)},
		{name: "earliest", method: "eth_call", params: at(`"earliest"`), result: num(0)},
		{name: "hex number", method: "eth_call", params: at(`"0x10"`), result: num(16)},
		{name: "zero", method: "eth_call", params: at(`"0x0"`), result: num(0)},
		{name: "blockNumber object", method: "eth_call", params: at(`{"blockNumber":"0x5"}`), result: num(5)},
		{name: "blockHash canonical", method: "eth_call",
			params: at(fmt.Sprintf(`{"blockHash":%q,"requireCanonical":true}`, blk16.Hash.Hex())), result: num(16)},
		{name: "blockHash not requiring canonical", method: "eth_call",
			params: at(fmt.Sprintf(`{"blockHash":%q,"requireCanonical":false}`, blk16.Hash.Hex())), result: num(16)},
		{name: "blockHash head", method: "eth_call",
			params: at(fmt.Sprintf(`{"blockHash":%q}`, chaintest.HeadHash)), result: num(54)},
		{name: "unknown number", method: "eth_call", params: at(`"0x37"`), code: rpc.CodeHeaderNotFound, msg: "header not found"},
		{name: "far number", method: "eth_call", params: at(`"0xffffff"`), code: rpc.CodeHeaderNotFound, msg: "header not found"},
		{name: "unknown hash", method: "eth_call",
			params: at(fmt.Sprintf(`{"blockHash":"%s","requireCanonical":true}`, hexWord(0xabc))), code: rpc.CodeHeaderNotFound, msg: "header not found"},
		{name: "unknown hash not canonical", method: "eth_call",
			params: at(fmt.Sprintf(`{"blockHash":"%s"}`, hexWord(0xabc))), code: rpc.CodeHeaderNotFound, msg: "header not found"},
		{name: "bad tag", method: "eth_call", params: at(`"head"`), code: rpc.CodeInvalidParams, msg: "block"},
		{name: "both hash and number", method: "eth_call",
			params: at(fmt.Sprintf(`{"blockHash":"%s","blockNumber":"0x1"}`, hexWord(1))), code: rpc.CodeInvalidParams, msg: "block"},
	})
}

// tagState is what the tag tests expect one block's state to read.
type tagState struct {
	counterBalance, counterSlot0, emitterNonce *big.Int
	richBalance, richNonce, recipientBalance   *big.Int
	number                                     *big.Int // NUMBER seen by eth_call
}

// expect returns the state of block number: history.json up to tagsLatest;
// for the pending block tagsLatest+1, the latest state plus the effects of
// the two pre-confirmed transactions, computed from what was sent.
func (n *tagsNode) expect(number uint64) tagState {
	n.t.Helper()
	if number > tagsLatest {
		w := n.expect(tagsLatest)
		fee := new(big.Int).Mul(n.transferPrice, new(big.Int).SetUint64(params.TxGas))
		return tagState{
			counterBalance:   new(big.Int).Add(w.counterBalance, n.counterValue),
			counterSlot0:     new(big.Int).Add(w.counterSlot0, big.NewInt(1)), // the contract counts its calls
			emitterNonce:     new(big.Int).Add(w.emitterNonce, big.NewInt(1)),
			richBalance:      new(big.Int).Sub(w.richBalance, new(big.Int).Add(n.transferValue, fee)),
			richNonce:        new(big.Int).Add(w.richNonce, big.NewInt(1)),
			recipientBalance: new(big.Int).Add(w.recipientBalance, n.transferValue),
			number:           new(big.Int).SetUint64(number),
		}
	}
	counter, rich := n.at(number, acctCounter), n.at(number, acctRich)
	return tagState{
		counterBalance:   counter.Balance.ToInt(),
		counterSlot0:     counter.Storage[common.Hash{}].Big(),
		emitterNonce:     new(big.Int).SetUint64(uint64(n.at(number, acctEmitter).Nonce)),
		richBalance:      rich.Balance.ToInt(),
		richNonce:        new(big.Int).SetUint64(uint64(rich.Nonce)),
		recipientBalance: n.at(number, addrTagsRecipient).Balance.ToInt(),
		number:           new(big.Int).SetUint64(number),
	}
}

// TestStateReadsByTag: the state getters and eth_call read the block each
// tag names (finalized 40, safe 47, latest 54, pending 55: see
// tagsNode.expect), and an omitted block parameter reads latest.
func TestStateReadsByTag(t *testing.T) {
	n := newTagsNode(t)
	tags := []struct {
		name  string
		sel   string // JSON selector; "" = parameter omitted
		block uint64 // the block whose state it must read
	}{
		{"finalized", `"finalized"`, tagsFinalized},
		{"safe", `"safe"`, tagsSafe},
		{"latest", `"latest"`, tagsLatest},
		{"pending", `"pending"`, tagsLatest + 1},
		{"omitted", "", tagsLatest},
	}
	// The fixture must keep telling the four tags apart, or this test
	// proves nothing.
	for _, field := range []struct {
		name string
		get  func(tagState) *big.Int
	}{
		{"acctCounter balance", func(s tagState) *big.Int { return s.counterBalance }},
		{"acctCounter slot 0", func(s tagState) *big.Int { return s.counterSlot0 }},
		{"acctEmitter nonce", func(s tagState) *big.Int { return s.emitterNonce }},
	} {
		seen := map[string]bool{}
		for _, tc := range tags[:4] {
			v := field.get(n.expect(tc.block)).String()
			if seen[v] {
				t.Fatalf("%s is %s at two of finalized/safe/latest/pending: the fixture does not distinguish the tags", field.name, v)
			}
			seen[v] = true
		}
	}

	withSel := func(args, sel string) string {
		if sel == "" {
			return "[" + args + "]"
		}
		return "[" + args + "," + sel + "]"
	}
	for _, tc := range tags {
		w := n.expect(tc.block)
		n.run([]rpcCase{
			{name: tc.name + "/counter balance", method: "eth_getBalance",
				params: withSel(quoted(acctCounter), tc.sel), result: quoted(hexutil.EncodeBig(w.counterBalance))},
			{name: tc.name + "/counter slot 0", method: "eth_getStorageAt",
				params: withSel(quoted(acctCounter)+`,"0x0"`, tc.sel), result: quoted(common.BigToHash(w.counterSlot0).Hex())},
			{name: tc.name + "/emitter nonce", method: "eth_getTransactionCount",
				params: withSel(quoted(acctEmitter), tc.sel), result: quoted(hexutil.EncodeBig(w.emitterNonce))},
			{name: tc.name + "/rich balance", method: "eth_getBalance",
				params: withSel(quoted(acctRich), tc.sel), result: quoted(hexutil.EncodeBig(w.richBalance))},
			{name: tc.name + "/rich nonce", method: "eth_getTransactionCount",
				params: withSel(quoted(acctRich), tc.sel), result: quoted(hexutil.EncodeBig(w.richNonce))},
			{name: tc.name + "/recipient balance", method: "eth_getBalance",
				params: withSel(quoted(addrTagsRecipient), tc.sel), result: quoted(hexutil.EncodeBig(w.recipientBalance))},
		})
		t.Run(tc.name+"/eth_call NUMBER", func(t *testing.T) {
			sub := *n.callNode
			sub.t = t
			words := resultWords(t, sub.result("eth_call", withSel(fmt.Sprintf(`{"to":%q}`, acctCallEnv), tc.sel)))
			if len(words) != 7 || words[0].Cmp(w.number) != 0 {
				t.Fatalf("callenv returned %v, want NUMBER %v first", words, w.number)
			}
		})
	}
}

func TestGetStorageAt(t *testing.T) {
	n := newCallNode(t)
	long := "0x" + strings.Repeat("0", 64) + "1"
	n.run([]rpcCase{
		{name: "0x0", method: "eth_getStorageAt", params: fmt.Sprintf(`[%q,"0x0","latest"]`, acctA), result: quoted(hexWord(0))},
		{name: "short key", method: "eth_getStorageAt", params: fmt.Sprintf(`[%q,"0x1","latest"]`, acctA), result: quoted(hexWord(1))},
		{name: "even short key", method: "eth_getStorageAt", params: fmt.Sprintf(`[%q,"0x02"]`, acctA), result: quoted(hexWord(2))},
		{name: "full key", method: "eth_getStorageAt", params: fmt.Sprintf(`[%q,%q,"latest"]`, acctA, hexWord(3)), result: quoted(hexWord(3))},
		{name: "padded lower-case word", method: "eth_getStorageAt",
			params: fmt.Sprintf(`[%q,"0x0","latest"]`, acctCounter), result: quoted(hexWord(0x38))},
		{name: "unknown account", method: "eth_getStorageAt", params: fmt.Sprintf(`[%q,"0x1","latest"]`, addrEmpty), result: quoted(hexWord(0))},
		{name: "by hash", method: "eth_getStorageAt",
			params: fmt.Sprintf(`[%q,"0x1",{"blockHash":%q}]`, acctA, chaintest.HeadHash), result: quoted(hexWord(1))},
		{name: "65 digits", method: "eth_getStorageAt", params: fmt.Sprintf(`[%q,%q,"latest"]`, acctA, long), code: rpc.CodeInvalidParams, msg: long},
		{name: "bad hex", method: "eth_getStorageAt", params: fmt.Sprintf(`[%q,"0xzz","latest"]`, acctA), code: rpc.CodeInvalidParams, msg: `"0xzz"`},
		{name: "empty hex", method: "eth_getStorageAt", params: fmt.Sprintf(`[%q,"0x","latest"]`, acctA), code: rpc.CodeInvalidParams, msg: "storage key"},
		{name: "number key", method: "eth_getStorageAt", params: fmt.Sprintf(`[%q,1,"latest"]`, acctA), code: rpc.CodeInvalidParams, msg: "storage key"},
		{name: "bad address", method: "eth_getStorageAt", params: `["0x12","0x1","latest"]`, code: rpc.CodeInvalidParams, msg: "address"},
		{name: "unknown block", method: "eth_getStorageAt", params: fmt.Sprintf(`[%q,"0x1","0x100"]`, acctA), code: rpc.CodeHeaderNotFound, msg: "header not found"},
		{name: "too many params", method: "eth_getStorageAt", params: fmt.Sprintf(`[%q,"0x1","latest",1]`, acctA), code: rpc.CodeInvalidParams, msg: "too many"},
	})
}

func TestGetStorageValues(t *testing.T) {
	n := newCallNode(t)
	many := make([]string, 0, maxStorageValuesSlots+1)
	for i := 0; i <= maxStorageValuesSlots; i++ {
		many = append(many, fmt.Sprintf("0x%x", i))
	}
	manyJSON, _ := json.Marshal(many)
	n.run([]rpcCase{
		{name: "many slots of many accounts", method: "eth_getStorageValues",
			params: fmt.Sprintf(`[{%q:["0x1","0x2","0x03",%q,"0x9"],%q:["0x0"],%q:["0x1"]},"latest"]`, acctA, hexWord(3), acctCounter, addrEmpty),
			result: fmt.Sprintf(`{%q:[%q,%q,%q,%q,%q],%q:[%q],%q:[%q]}`,
				acctA, hexWord(1), hexWord(2), hexWord(3), hexWord(3), hexWord(0),
				strings.ToLower(acctCounter), hexWord(0x38), addrEmpty, hexWord(0))},
		{name: "no block", method: "eth_getStorageValues",
			params: fmt.Sprintf(`[{%q:["0x1"]}]`, acctA), result: fmt.Sprintf(`{%q:[%q]}`, acctA, hexWord(1))},
		{name: "account without slots", method: "eth_getStorageValues",
			params: fmt.Sprintf(`[{%q:[]},"latest"]`, acctA), result: fmt.Sprintf(`{%q:[]}`, acctA)},
		{name: "empty request", method: "eth_getStorageValues", params: `[{},"latest"]`, code: rpc.CodeInvalidParams, msg: "empty"},
		{name: "too many slots", method: "eth_getStorageValues",
			params: fmt.Sprintf(`[{%q:%s},"latest"]`, acctA, manyJSON), code: rpc.CodeInvalidParams, msg: "too many"},
		{name: "bad slot", method: "eth_getStorageValues",
			params: fmt.Sprintf(`[{%q:["0x1","0xqq"]},"latest"]`, acctA), code: rpc.CodeInvalidParams, msg: "0xqq"},
		{name: "unknown block", method: "eth_getStorageValues",
			params: fmt.Sprintf(`[{%q:["0x1"]},"0x100"]`, acctA), code: rpc.CodeHeaderNotFound, msg: "header not found"},
	})
}

func TestEstimateGas(t *testing.T) {
	n := newCallNode(t)
	boom := errorStringData("boom")
	at := func(code, extra, more string) string {
		return fmt.Sprintf(`[{"from":%q,"to":%q%s},"latest",{%q:{"code":%q}}%s]`, acctRich, addrCode, extra, addrCode, code, more)
	}
	n.run([]rpcCase{
		{name: "plain transfer", method: "eth_estimateGas",
			params: fmt.Sprintf(`[{"from":%q,"to":%q,"value":"0x1"}]`, acctRich, addrEmpty), result: `"0x5208"`},
		{name: "revert like eth_call", method: "eth_estimateGas", params: at(codeRevertWith(boom), "", ""),
			code: rpc.CodeCallReverted, msg: "execution reverted", exact: true, data: hexutil.Encode(boom)},
		{name: "empty revert", method: "eth_estimateGas", params: at(codeRevertEmpty, "", ""),
			code: rpc.CodeCallReverted, msg: "execution reverted", exact: true, data: "0x"},
		{name: "invalid opcode", method: "eth_estimateGas", params: at(codeInvalid, "", ""),
			code: rpc.CodeServerError, msg: "invalid opcode"},
		{name: "never enough gas", method: "eth_estimateGas", params: at(codeLoop, "", ""),
			code: rpc.CodeServerError, msg: "gas required exceeds allowance (16777216)"}, // EIP-7825 cap (Osaka)
		{name: "requested gas is the cap", method: "eth_estimateGas", params: at(codeSstore, `,"gas":"0x7530"`, ""),
			code: rpc.CodeServerError, msg: "gas required exceeds allowance (30000)"},
		{name: "block gas limit override is the cap", method: "eth_estimateGas", params: at(codeSstore, "", `,{"gasLimit":"0x7530"}`),
			code: rpc.CodeServerError, msg: "gas required exceeds allowance (30000)"},
		{name: "balance caps the gas", method: "eth_estimateGas",
			params: fmt.Sprintf(`[{"from":%q,"to":%q,"gasPrice":"0xa"},"latest",{%q:{"code":%q},%q:{"balance":"0x33450"}},{"baseFeePerGas":"0x1"}]`,
				addrCode2, addrCode, addrCode, codeSstore, addrCode2),
			code: rpc.CodeServerError, msg: "gas required exceeds allowance (21000)"},
		{name: "value above balance", method: "eth_estimateGas",
			params: fmt.Sprintf(`[{"from":%q,"to":%q,"gasPrice":"0xa","value":"0x10"},"latest",{%q:{"balance":"0x10"}},{"baseFeePerGas":"0x1"}]`,
				addrCode2, addrEmpty, addrCode2),
			code: rpc.CodeServerError, msg: "insufficient funds for transfer"},
		{name: "maxFeePerBlobGas without blobs", method: "eth_estimateGas",
			params: fmt.Sprintf(`[{"to":%q,"maxFeePerBlobGas":"0x1"}]`, addrEmpty), code: rpc.CodeServerError, msg: "blobVersionedHashes"},
		{name: "unknown block", method: "eth_estimateGas",
			params: fmt.Sprintf(`[{"to":%q},"0x100"]`, addrEmpty), code: rpc.CodeHeaderNotFound, msg: "header not found"},
		{name: "data and input differ", method: "eth_estimateGas",
			params: fmt.Sprintf(`[{"to":%q,"data":"0x01","input":"0x02"}]`, addrEmpty), code: rpc.CodeInvalidParams, msg: "input"},
	})

	// The estimate is enough, and at most 1.5% above what is needed: 2% less
	// fails. The outer contract forwards all gas to an SSTORE (63/64 rule).
	outer := codeCallAllGas(addrCode2)
	ov := fmt.Sprintf(`{%q:{"code":%q},%q:{"code":%q}}`, addrCode, outer, addrCode2, codeSstore)
	est := n.result("eth_estimateGas", fmt.Sprintf(`[{"from":%q,"to":%q},"latest",%s]`, acctRich, addrCode, ov))
	gas, err := hexutil.DecodeUint64(est)
	if err != nil || gas < 43000 || gas > 100000 {
		t.Fatalf("estimate %s out of the plausible range", est)
	}
	callWith := func(g uint64) rpcResp {
		return n.rpc("eth_call", fmt.Sprintf(`[{"from":%q,"to":%q,"gas":"%#x"},"latest",%s]`, acctRich, addrCode, g, ov))
	}
	if r := callWith(gas); r.Error != nil {
		t.Fatalf("call with the estimate %d fails: %s", gas, r.Error.Message)
	}
	if r := callWith(gas * 98 / 100); r.Error == nil {
		t.Fatalf("call with 98%% of the estimate %d succeeds: the estimate is too loose", gas)
	}
	// Block overrides change the state the estimate runs on: the code
	// override at another height is the same, the cap is the gas limit.
	if _, err := hexutil.DecodeUint64(n.result("eth_estimateGas",
		fmt.Sprintf(`[{"from":%q,"to":%q},"0x30",%s,{"number":"0x40"}]`, acctRich, addrCode, ov))); err != nil {
		t.Fatal(err)
	}
}

func TestCreateAccessList(t *testing.T) {
	n := newCallNode(t)
	ov := fmt.Sprintf(`{%q:{"code":%q}}`, addrCode2, codeAccess)
	type alResult struct {
		AccessList []struct {
			Address     common.Address `json:"address"`
			StorageKeys []common.Hash  `json:"storageKeys"`
		} `json:"accessList"`
		GasUsed hexutil.Uint64 `json:"gasUsed"`
		Error   *string        `json:"error"`
	}
	get := func(params string) alResult {
		t.Helper()
		r := n.rpc("eth_createAccessList", params)
		if r.Error != nil {
			t.Fatalf("error %d %s", r.Error.Code, r.Error.Message)
		}
		var out alResult
		if err := json.Unmarshal(r.Result, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	// Sender (acctRich, read by EXTCODESIZE) and the precompile are left out;
	// the recipient is listed with its slot; BALANCE's target is listed.
	res := get(fmt.Sprintf(`[{"from":%q,"to":%q},"latest",%s]`, acctRich, addrCode2, ov))
	want := `[{"address":"0x000000000000000000000000000000000000beef","storageKeys":[]},` +
		`{"address":"0x000000000000000000000000000000000000c0d2","storageKeys":["` + hexWord(7) + `"]}]`
	got, _ := json.Marshal(res.AccessList)
	if !jsonEqual(t, got, want) {
		t.Fatalf("access list %s, want %s", got, want)
	}
	if res.Error != nil || res.GasUsed <= 21000 {
		t.Fatalf("gasUsed %d error %v", res.GasUsed, res.Error)
	}
	// Supplying the list (and the sender, which is dropped) gives the same
	// list and the same gas.
	again := get(fmt.Sprintf(`[{"from":%q,"to":%q,"accessList":[{"address":%q,"storageKeys":[]},{"address":%q,"storageKeys":[]},{"address":%q,"storageKeys":[%q]}]},"latest",%s]`,
		acctRich, addrCode2, acctRich, addrEmpty, addrCode2, hexWord(7), ov))
	got2, _ := json.Marshal(again.AccessList)
	if !jsonEqual(t, got2, want) || again.GasUsed != res.GasUsed {
		t.Fatalf("with the list supplied: %s gas %d, want %s gas %d", got2, again.GasUsed, want, res.GasUsed)
	}
	// A revert is reported in "error" with the list so far.
	rev := get(fmt.Sprintf(`[{"to":%q},"latest",{%q:{"code":%q}}]`, addrCode, addrCode, codeRevertEmpty))
	if rev.Error == nil || *rev.Error != "execution reverted" || len(rev.AccessList) != 0 {
		t.Fatalf("revert: error %v list %v", rev.Error, rev.AccessList)
	}
	// An empty list is [] (never null), as is an account without slots.
	r := n.rpc("eth_createAccessList", fmt.Sprintf(`[{"from":%q,"to":%q,"value":"0x1"}]`, acctRich, addrEmpty))
	if r.Error != nil || !jsonEqual(t, r.Result, `{"accessList":[],"gasUsed":"0x5208"}`) {
		t.Fatalf("transfer: %s %v", r.Result, r.Error)
	}
	n.run([]rpcCase{
		{name: "block overrides not accepted", method: "eth_createAccessList",
			params: fmt.Sprintf(`[{"to":%q},"latest",{},{}]`, addrEmpty), code: rpc.CodeInvalidParams, msg: "too many"},
		{name: "insufficient funds", method: "eth_createAccessList",
			params: fmt.Sprintf(`[{"from":%q,"to":%q,"gasPrice":"0x3b9aca00"}]`, addrEmpty, addrEmpty), code: rpc.CodeServerError, msg: "insufficient funds"},
		{name: "unknown block", method: "eth_createAccessList",
			params: fmt.Sprintf(`[{"to":%q},"0x100"]`, addrEmpty), code: rpc.CodeHeaderNotFound, msg: "header not found"},
	})
}

// FuzzCallRequest: decodeCallRequest never panics on arbitrary params, and
// every refusal is an invalid-params error.
func FuzzCallRequest(f *testing.F) {
	for _, s := range []string{
		`[]`, `[null]`, `[{}]`, `[{},"latest"]`, `[{"to":"0x00000000000000000000000000000000000000aa","input":"0x01"},"0x10",{},{}]`,
		`[{"data":"0x01","input":"0x02"}]`, `[{},{"blockHash":"0x` + strings.Repeat("11", 32) + `","requireCanonical":true}]`,
		`[{},"latest",{"0x00000000000000000000000000000000000000aa":{"state":{"0x1":"0x2"},"stateDiff":{"0x1":"0x2"}}}]`,
		`[{},"latest",null,{"prevRandao":"0x1","number":"0x1","time":"0x2","baseFeePerGas":"0x3"}]`,
		`[{"gas":"0x1","value":"0x10000000000000000000000000000000000000000000000000000000000000000"},{"blockNumber":"pending"}]`,
		`[1,2,3,4,5]`, `["x"]`, `[{},"latest",[],[]]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var raw []json.RawMessage
		if err := json.Unmarshal(data, &raw); err != nil {
			return
		}
		req, err := decodeCallRequest(rpc.NewParams(raw...), TagLatest)
		if err != nil {
			var e *rpc.Error
			if !errors.As(err, &e) || e.Code != rpc.CodeInvalidParams {
				t.Fatalf("refusal is not invalid params: %v", err)
			}
			return
		}
		if req == nil {
			t.Fatal("nil request without error")
		}
		a := req.args
		if a.Input != nil && a.DataField != nil && !bytes.Equal(*a.Input, *a.DataField) {
			t.Fatal("differing data and input accepted")
		}
		for addr, acc := range req.state {
			if acc.State != nil && acc.StateDiff != nil {
				t.Fatalf("%s: state and stateDiff accepted", addr)
			}
		}
		if _, err := chainOverrides(req.state); err != nil {
			var e *rpc.Error
			if !errors.As(err, &e) || e.Code != rpc.CodeInvalidParams {
				t.Fatalf("override conversion refusal is not invalid params: %v", err)
			}
		}
	})
}

// TestEstimateTimeout: eth_estimateGas and eth_createAccessList stop at
// APIConfig.EVMTimeout with -32002 instead of running every attempt.
func TestEstimateTimeout(t *testing.T) {
	db, g := chaintest.ImportedStore(t)
	cfg := DefaultAPIConfig()
	cfg.EVMTimeout = time.Millisecond
	cfg.GasCap = 1 << 40 // eth_createAccessList loops for 2^40 gas; eth_estimateGas for 2^24 (EIP-7825), still far beyond 1 ms
	_, url := startNodeCfg(t, cfg, db, g, nil)
	n := &callNode{t: t, url: url, client: &http.Client{Timeout: 30 * time.Second}}
	loop := fmt.Sprintf(`[{"to":%q,"gas":"0x10000000000"},"latest",{%q:{"code":%q}}]`, addrCode, addrCode, codeLoop)
	n.run([]rpcCase{
		{name: "estimate", method: "eth_estimateGas", params: loop, code: rpc.CodeTimeout, msg: "timeout"},
		{name: "access list", method: "eth_createAccessList", params: loop, code: rpc.CodeTimeout, msg: "timeout"},
	})
}
