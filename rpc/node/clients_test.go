package node_test

// What real clients (viem, ethers, web3.js) rely on, checked at the node
// level with the sequencer on a ManualClock: several sends in a row from
// one account, pooled transactions visible by hash at once, pre-confirmed
// receipts with every field of a sealed one, and the pending block shaped
// like a sealed block of its fork.

import (
	"encoding/json"
	"fmt"

	"math/big"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/pending/pendingtest"
	"github.com/tipnode/tipnode/rpc/rpctest"
)

// call posts one JSON-RPC request and returns its result (failing the test
// on an error response).
func (e *env) call(method string, params ...any) json.RawMessage {
	e.t.Helper()
	res, rerr := e.callErr(method, params...)
	if rerr != nil {
		e.t.Fatalf("%s: error %d %q", method, rerr.Code, rerr.Message)
	}
	return res
}

type rpcErr struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data"`
}

// callErr posts one JSON-RPC request and returns its result or error.
func (e *env) callErr(method string, params ...any) (json.RawMessage, *rpcErr) {
	e.t.Helper()
	if params == nil {
		params = []any{}
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		e.t.Fatal(err)
	}
	status, out := rpctest.Post(e.t, e.url, string(body))
	if status != 200 {
		e.t.Fatalf("%s: HTTP %d %s", method, status, out)
	}
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcErr         `json:"error"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		e.t.Fatalf("%s: %v: %s", method, err, out)
	}
	return resp.Result, resp.Error
}

func (e *env) pendingNonce(addr common.Address) uint64 {
	e.t.Helper()
	var n hexutil.Uint64
	if err := json.Unmarshal(e.call("eth_getTransactionCount", addr, "pending"), &n); err != nil {
		e.t.Fatal(err)
	}
	return uint64(n)
}

func (e *env) sendRaw(tx *types.Transaction) {
	e.t.Helper()
	raw, err := tx.MarshalBinary()
	if err != nil {
		e.t.Fatal(err)
	}
	var h common.Hash
	if err := json.Unmarshal(e.call("eth_sendRawTransaction", hexutil.Bytes(raw)), &h); err != nil || h != tx.Hash() {
		e.t.Fatalf("eth_sendRawTransaction: %s, %v", h, err)
	}
}

// A client sending several transactions in a row asks for the pending nonce
// before each and awaits only the hash: every answer must count what the
// pool already holds, and every hash must be found at once (blockNumber
// null while pooled; the pending block's number once pre-confirmed).
func TestSendsInARowFromOneAccount(t *testing.T) {
	e := newEnv(t)
	acc := e.Accs[4]
	to := common.Address{0x70}
	var hashes []common.Hash
	for i := range 3 {
		n := e.pendingNonce(acc.Address)
		if n != uint64(i) {
			t.Fatalf("send %d: pending nonce %d, want %d (the pool holds %d of this sender)", i, n, i, i)
		}
		tx := pendingtest.SignTx(t, e.Signer, acc.Key, &types.DynamicFeeTx{ChainID: e.Genesis.Config.ChainID, Nonce: n,
			GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(10 * params.GWei), Gas: 21_000, To: &to, Value: big.NewInt(int64(i + 1))})
		e.sendRaw(tx)
		var got struct {
			Hash        common.Hash     `json:"hash"`
			BlockNumber *hexutil.Big    `json:"blockNumber"`
			BlockHash   *common.Hash    `json:"blockHash"`
			Nonce       hexutil.Uint64  `json:"nonce"`
			From        common.Address  `json:"from"`
			TxIndex     *hexutil.Uint64 `json:"transactionIndex"`
		}
		if err := json.Unmarshal(e.call("eth_getTransactionByHash", tx.Hash()), &got); err != nil {
			t.Fatal(err)
		}
		if got.Hash != tx.Hash() || got.BlockNumber != nil || got.BlockHash != nil || got.TxIndex != nil || uint64(got.Nonce) != n || got.From != acc.Address {
			t.Fatalf("pooled transaction by hash: %+v", got)
		}
		hashes = append(hashes, tx.Hash())
	}
	// The latest nonce does not count the pool; pending does.
	var latest hexutil.Uint64
	json.Unmarshal(e.call("eth_getTransactionCount", acc.Address, "latest"), &latest)
	if latest != 0 || e.pendingNonce(acc.Address) != 3 {
		t.Fatalf("latest nonce %d, pending %d; want 0 and 3", latest, e.pendingNonce(acc.Address))
	}
	// A gap does not count: nonce 4 pooled, 3 missing.
	gap := pendingtest.SignTx(t, e.Signer, acc.Key, &types.DynamicFeeTx{ChainID: e.Genesis.Config.ChainID, Nonce: 4,
		GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(10 * params.GWei), Gas: 21_000, To: &to})
	e.sendRaw(gap)
	if n := e.pendingNonce(acc.Address); n != 3 {
		t.Fatalf("pending nonce with a gap at 3: %d", n)
	}
	e.Tick(1)
	if n := e.pendingNonce(acc.Address); n != 3 {
		t.Fatalf("pending nonce after the pre-confirmation: %d", n)
	}
	for _, h := range hashes {
		var got struct {
			BlockNumber *hexutil.Big `json:"blockNumber"`
		}
		// Pre-confirmed: in the pending block (number 1, zero hash), as
		// its receipt says.
		if err := json.Unmarshal(e.call("eth_getTransactionByHash", h), &got); err != nil || got.BlockNumber == nil || got.BlockNumber.ToInt().Uint64() != 1 {
			t.Fatalf("pre-confirmed %s: %+v %v", h, got, err)
		}
		if r := e.call("eth_getTransactionReceipt", h); string(r) == "null" {
			t.Fatalf("no receipt for pre-confirmed %s", h)
		}
	}
	e.Seal()
	for _, h := range hashes {
		var got struct {
			BlockNumber *hexutil.Big `json:"blockNumber"`
		}
		if err := json.Unmarshal(e.call("eth_getTransactionByHash", h), &got); err != nil || got.BlockNumber == nil || got.BlockNumber.ToInt().Uint64() != 1 {
			t.Fatalf("sealed %s: %+v %v", h, got, err)
		}
	}
}

// The receipt of a pre-confirmed transaction has every field the sealed
// receipt has, with the same values, except the block hash (zero until the
// seal, in the receipt and its logs): effectiveGasPrice included.
func TestPreconfirmedReceiptIsTheSealedOne(t *testing.T) {
	e := newEnv(t)
	contract := crypto.CreateAddress(e.Accs[0].Address, 0)
	deploy := e.Tx(0, nil, nil, 200_000, pendingtest.InitCode(pairRuntime))
	e.sendRaw(deploy)
	e.Tick(1)
	v := common.HexToHash("0xabcd")
	write := e.Tx(0, &contract, nil, 100_000, v[:]) // a log
	transfer := e.Tx(1, &common.Address{0xb0}, big.NewInt(5), 21_000, nil)
	legacy := pendingtest.SignTx(t, e.Signer, e.Accs[2].Key, &types.LegacyTx{Nonce: 0, GasPrice: big.NewInt(3 * params.GWei), Gas: 21_000, To: &common.Address{0xb1}, Value: big.NewInt(1)})
	for _, tx := range []*types.Transaction{write, transfer, legacy} {
		e.sendRaw(tx)
	}
	e.Tick(1)
	txs := []*types.Transaction{deploy, write, transfer, legacy}
	pre := make([]map[string]any, len(txs))
	for i, tx := range txs {
		pre[i] = decodeObject(t, e.call("eth_getTransactionReceipt", tx.Hash()))
		if pre[i]["effectiveGasPrice"] == nil {
			t.Fatalf("pre-confirmed receipt %d without effectiveGasPrice: %v", i, pre[i])
		}
		if pre[i]["blockHash"] != (common.Hash{}).Hex() {
			t.Fatalf("pre-confirmed receipt %d: blockHash %v, want the zero hash", i, pre[i]["blockHash"])
		}
	}
	e.Seal()
	var blk struct {
		Hash common.Hash `json:"hash"`
	}
	json.Unmarshal(e.call("eth_getBlockByNumber", "0x1", false), &blk)
	for i, tx := range txs {
		sealed := decodeObject(t, e.call("eth_getTransactionReceipt", tx.Hash()))
		if sealed["blockHash"] != blk.Hash.Hex() {
			t.Fatalf("sealed receipt %d: blockHash %v, block 1 is %s", i, sealed["blockHash"], blk.Hash)
		}
		// The pre-confirmed receipt with the block hash stamped in must be
		// the sealed receipt, field for field.
		zero := fmt.Sprintf(`"blockHash":%q`, common.Hash{})
		want := strings.ReplaceAll(mustJSON(t, pre[i]), zero, fmt.Sprintf(`"blockHash":%q`, blk.Hash))
		if got := mustJSON(t, sealed); got != want {
			t.Fatalf("receipt %d differs:\n pre-confirmed (hash stamped) %s\n sealed                        %s", i, want, got)
		}
	}
	// Price checks on the sealed values: a dynamic-fee transaction pays
	// base fee + tip (under its cap), a legacy one its gas price.
	var header struct {
		BaseFee *hexutil.Big `json:"baseFeePerGas"`
	}
	json.Unmarshal(e.call("eth_getBlockByNumber", "0x1", false), &header)
	wantPrice := new(big.Int).Add(header.BaseFee.ToInt(), big.NewInt(params.GWei))
	if got := pre[2]["effectiveGasPrice"]; got != hexutil.EncodeBig(wantPrice) {
		t.Fatalf("dynamic-fee effectiveGasPrice %v, want %s", got, hexutil.EncodeBig(wantPrice))
	}
	if got := pre[3]["effectiveGasPrice"]; got != hexutil.EncodeBig(big.NewInt(3*params.GWei)) {
		t.Fatalf("legacy effectiveGasPrice %v", got)
	}
}

// eth_getBlockByNumber("pending") has the fields of a sealed block of the
// same fork (withdrawals included); only hash, nonce and miner are null.
func TestPendingBlockHasTheSealedFields(t *testing.T) {
	e := newEnv(t)
	e.sendRaw(e.Tx(0, &common.Address{0xb0}, big.NewInt(5), 21_000, nil))
	e.Tick(1)
	for _, full := range []bool{false, true} {
		pend := decodeObject(t, e.call("eth_getBlockByNumber", "pending", full))
		e.Seal()
		sealed := decodeObject(t, e.call("eth_getBlockByNumber", "latest", full))
		if pk, sk := keys(pend), keys(sealed); !reflect.DeepEqual(pk, sk) {
			t.Fatalf("pending block keys %v\nsealed block keys  %v", pk, sk)
		}
		if w, ok := pend["withdrawals"].([]any); !ok || len(w) != 0 {
			t.Fatalf("pending withdrawals %v, want []", pend["withdrawals"])
		}
		for _, k := range []string{"hash", "nonce", "miner"} {
			if pend[k] != nil {
				t.Fatalf("pending %s = %v, want null", k, pend[k])
			}
		}
		e.sendRaw(e.Tx(0, &common.Address{0xb0}, big.NewInt(5), 21_000, nil))
		e.Tick(1)
	}
}

func decodeObject(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		t.Fatalf("not an object: %s (%v)", raw, err)
	}
	return m
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v) // map keys sorted
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// eth_estimateGas and eth_createAccessList without a block estimate at
// "pending": a write to a contract whose deployment is only pre-confirmed
// is estimated on that contract (at "latest" it has no code yet, and a
// transaction sent with that estimate would run out of gas).
func TestEstimateDefaultsToPending(t *testing.T) {
	e := newEnv(t)
	from := e.Accs[0].Address
	contract := crypto.CreateAddress(from, 0)
	e.sendRaw(e.Tx(0, nil, nil, 200_000, pendingtest.InitCode(pairRuntime)))
	e.Tick(1)
	v := common.HexToHash("0x01")
	call := map[string]any{"from": from, "to": contract, "data": hexutil.Bytes(v[:])}
	gas := func(params ...any) uint64 {
		var g hexutil.Uint64
		if err := json.Unmarshal(e.call("eth_estimateGas", params...), &g); err != nil {
			t.Fatal(err)
		}
		return uint64(g)
	}
	def, pend, latest := gas(call), gas(call, "pending"), gas(call, "latest")
	if def != pend || latest >= pend || pend < 40_000 {
		t.Fatalf("estimate without block %d, at pending %d, at latest %d: want the default to be pending's (two SSTOREs)", def, pend, latest)
	}
	var al struct {
		AccessList types.AccessList `json:"accessList"`
	}
	if err := json.Unmarshal(e.call("eth_createAccessList", call), &al); err != nil || len(al.AccessList) != 1 || len(al.AccessList[0].StorageKeys) != 2 {
		t.Fatalf("eth_createAccessList without block: %+v %v (want the contract's two slots, as at pending)", al, err)
	}
}
