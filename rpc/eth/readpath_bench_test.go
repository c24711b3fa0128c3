//go:build unix

package eth

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/holiman/uint256"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/chain/devnet"
	"github.com/tipnode/tipnode/rpc"
	"github.com/tipnode/tipnode/rpc/rpctest"
	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// The read-path benchmarks run the hot requests of the go-ethereum
// side-by-side benchmark (cmd/benchgeth) through the full HTTP stack on a
// small genesis holding the same contracts: the benchmark's ERC-20
// (BenchToken, balances at keccak(pad(holder) ++ pad(0))) with
// readHolders holders and its Multicall. The runtime bytecode is read from
// cmd/benchgeth/chaingen/contracts (checked in there with its source).

const readHolders = 1000

var (
	readToken     = common.HexToAddress("0x7e57000000000000000000000000000000000001")
	readMulticall = common.HexToAddress("0xca11000000000000000000000000000000000001")
)

// readHolder is the address of holder i of the benchmark token.
func readHolder(i int) common.Address {
	return common.BytesToAddress(crypto.Keccak256([]byte(fmt.Sprintf("holder-%d", i)))[12:])
}

// balanceSlot is the storage slot of holder's balance in BenchToken.
func balanceSlot(holder common.Address) common.Hash {
	return crypto.Keccak256Hash(common.LeftPadBytes(holder[:], 32), make([]byte, 32))
}

// benchContract reads a checked-in runtime bytecode and ABI.
func benchContract(b *testing.B, name string) ([]byte, abi.ABI) {
	b.Helper()
	dir := filepath.Join("..", "..", "cmd", "benchgeth", "chaingen", "contracts")
	code, err := os.ReadFile(filepath.Join(dir, name+".bin-runtime"))
	if err != nil {
		b.Fatal(err)
	}
	abiJSON, err := os.ReadFile(filepath.Join(dir, name+".abi.json"))
	if err != nil {
		b.Fatal(err)
	}
	a, err := abi.JSON(strings.NewReader(string(abiJSON)))
	if err != nil {
		b.Fatal(err)
	}
	return common.FromHex(strings.TrimSpace(string(code))), a
}

// readPathNode starts a node on a dev genesis holding the benchmark token
// and multicall; it returns a keep-alive client, the URL and the ABIs.
func readPathNode(b *testing.B) (*http.Client, string, abi.ABI, abi.ABI) {
	b.Helper()
	_, client, url, tokenABI, mcABI := readPathAPI(b)
	return client, url, tokenABI, mcABI
}

// tokenGenesis is the dev chain's genesis with the token at readToken,
// readHolders holders of balances and a total supply.
func tokenGenesis(b *testing.B, tokenCode []byte) *core.Genesis {
	b.Helper()
	spec, err := devnet.Genesis(devnet.GenesisConfig{ChainID: 1337})
	if err != nil {
		b.Fatal(err)
	}
	g := new(core.Genesis)
	if err := json.Unmarshal(spec, g); err != nil {
		b.Fatal(err)
	}
	storage := make(map[common.Hash]common.Hash, readHolders+1)
	for i := 0; i < readHolders; i++ {
		storage[balanceSlot(readHolder(i))] = common.BigToHash(big.NewInt(int64(1e6 + i)))
	}
	storage[common.Hash{31: 1}] = common.BigToHash(big.NewInt(1e12))
	g.Alloc[readToken] = types.Account{Code: tokenCode, Storage: storage, Balance: common.Big0, Nonce: 1}
	return g
}

// readPathAPI is readPathNode that also returns the node's API, for
// benchmarks that call a handler directly.
func readPathAPI(b *testing.B) (*API, *http.Client, string, abi.ABI, abi.ABI) {
	b.Helper()
	tokenCode, tokenABI := benchContract(b, "BenchToken")
	mcCode, mcABI := benchContract(b, "Multicall")
	g := tokenGenesis(b, tokenCode)
	g.Alloc[readMulticall] = types.Account{Code: mcCode, Balance: common.Big0, Nonce: 1}
	spec, err := json.Marshal(g)
	if err != nil {
		b.Fatal(err)
	}
	db, gen, w := chaintest.InitStore(b, spec)
	w.Stop() // startNode starts its own writer
	api, url := startNode(b, db, gen, nil)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	return api, client, url, tokenABI, mcABI
}

// runRequest is benchRequest on a given node.
func runRequest(b *testing.B, client *http.Client, url, body string) {
	b.Helper()
	first, err := postRaw(client, url, body)
	if err != nil {
		b.Fatal(err)
	}
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(first, &r); err != nil || r.Error != nil || len(r.Result) == 0 {
		b.Fatalf("bad response %s: %v", first, err)
	}
	b.ReportAllocs()
	cpu0 := rpctest.ProcessCPU(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := postRaw(client, url, body); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	// CPU time of the whole process (client and server) per request: on a
	// shared machine it is steadier than the wall time.
	b.ReportMetric(float64(rpctest.ProcessCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

func callBody(to common.Address, data []byte, block string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":"%s","input":"%s"},"%s"]}`,
		to.Hex(), hexutil.Encode(data), block)
}

func mustPack(b *testing.B, a abi.ABI, method string, args ...any) []byte {
	b.Helper()
	data, err := a.Pack(method, args...)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkHTTPChainID: the HTTP + JSON floor.
func BenchmarkHTTPChainID(b *testing.B) {
	client, url, _, _ := readPathNode(b)
	runRequest(b, client, url, `{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}`)
}

// BenchmarkHTTPGetStorageAtHot: one token balance slot at latest.
func BenchmarkHTTPGetStorageAtHot(b *testing.B) {
	client, url, _, _ := readPathNode(b)
	runRequest(b, client, url, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"eth_getStorageAt","params":["%s","%s","latest"]}`,
		readToken.Hex(), balanceSlot(readHolder(7)).Hex()))
}

// BenchmarkHTTPBalanceOfLatest / Pending: eth_call balanceOf.
func BenchmarkHTTPBalanceOfLatest(b *testing.B) {
	client, url, token, _ := readPathNode(b)
	runRequest(b, client, url, callBody(readToken, mustPack(b, token, "balanceOf", readHolder(7)), "latest"))
}

func BenchmarkHTTPBalanceOfPending(b *testing.B) {
	client, url, token, _ := readPathNode(b)
	runRequest(b, client, url, callBody(readToken, mustPack(b, token, "balanceOf", readHolder(7)), "pending"))
}

// BenchmarkHTTPMulticall50: Multicall.aggregate of 50 balanceOf calls (50
// STATICCALLs, 50 SLOADs of distinct slots).
func BenchmarkHTTPMulticall50(b *testing.B) {
	client, url, token, mc := readPathNode(b)
	type call struct {
		Target common.Address
		Data   []byte
	}
	calls := make([]call, 50)
	for i := range calls {
		calls[i] = call{Target: readToken, Data: mustPack(b, token, "balanceOf", readHolder(i*13))}
	}
	runRequest(b, client, url, callBody(readMulticall, mustPack(b, mc, "aggregate", calls), "latest"))
}

// BenchmarkHTTPHeavy: the EVM-heavy view (50 SLOADs, 150 mulDivs).
func BenchmarkHTTPHeavy(b *testing.B) {
	client, url, token, _ := readPathNode(b)
	holders := make([]common.Address, 50)
	for i := range holders {
		holders[i] = readHolder(i * 7)
	}
	runRequest(b, client, url, callBody(readToken, mustPack(b, token, "heavy", holders), "latest"))
}

// BenchmarkHTTPBatch100: one JSON-RPC batch of 100 eth_call balanceOf of
// distinct holders at latest (cmd/benchgeth's batch100; one op is one batch).
func BenchmarkHTTPBatch100(b *testing.B) {
	client, url, token, _ := readPathNode(b)
	var body strings.Builder
	body.WriteByte('[')
	for i := range 100 {
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, `{"jsonrpc":"2.0","id":%d,"method":"eth_call","params":[{"to":"%s","input":"%s"},"latest"]}`,
			i+1, readToken.Hex(), hexutil.Encode(mustPack(b, token, "balanceOf", readHolder(i*7))))
	}
	body.WriteByte(']')
	b.SetParallelism(4) // 4 batches per P in flight, as under the side-by-side bench's 16 connections
	runRequests(b, client, url, []string{body.String()})
}

// pastBlocks is the length of the chain of the past-read benchmarks,
// pastChanges how many holders' balances each of its blocks changes, and
// pastHot how many hot holders (the senders of the side-by-side benchmark's
// chain) it has.
const pastBlocks, pastChanges, pastHot = 300, 20, 8

// pastCoinbase is the fee recipient of every block of the past-read chain
// (as cmd/benchgeth/chaingen's Coinbase: its balance changes in every block).
var pastCoinbase = common.HexToAddress("0xc014ba5e00000000000000000000000000000001")

// pastHotHolder is hot holder i of the past-read chain.
func pastHotHolder(i int) common.Address {
	return common.BytesToAddress(crypto.Keccak256([]byte(fmt.Sprintf("sender-%d", i)))[12:])
}

// pastChainNode is readPathNode on a chain of pastBlocks blocks on top of
// the genesis, shaped like the side-by-side benchmark's chain: each block
// changes the token balances of pastChanges random holders (a holder's slot
// changes every readHolders/pastChanges blocks on average, so a read at a
// random past height usually predates its latest version), and, in every
// block, the balance of the fee recipient, the nonces and ether of the
// pastHot senders and their token balances: entities with a version in
// every block (far more than the past cache lists per entry). The blocks
// are written to the store directly (state diffs, no transactions) before
// the node starts.
func pastChainNode(b *testing.B) (*http.Client, string, abi.ABI) {
	b.Helper()
	_, client, url, token := pastChainAPI(b)
	return client, url, token
}

// pastChainAPI is pastChainNode that also returns the node's API.
func pastChainAPI(b *testing.B) (*API, *http.Client, string, abi.ABI) {
	b.Helper()
	tokenCode, tokenABI := benchContract(b, "BenchToken")
	spec, err := json.Marshal(tokenGenesis(b, tokenCode))
	if err != nil {
		b.Fatal(err)
	}
	gen, err := chain.ParseGenesis(spec)
	if err != nil {
		b.Fatal(err)
	}
	cfg := store.DefaultConfig(b.TempDir())
	cfg.SyncWrites = false
	db, err := store.Open(cfg, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	if err := chain.InitGenesis(db, gen); err != nil {
		b.Fatal(err)
	}
	parent := gen.Block.Header()
	rng := rand.New(rand.NewPCG(1, 2))
	for n := uint64(1); n <= pastBlocks; n++ {
		h := types.CopyHeader(parent)
		h.ParentHash, h.Number, h.Time, h.Coinbase = parent.Hash(), new(big.Int).SetUint64(n), parent.Time+12, pastCoinbase
		d := store.NewStateDiff()
		d.Storage[readToken] = make(map[common.Hash]common.Hash, pastChanges+pastHot)
		for j := 0; j < pastChanges; j++ {
			d.Storage[readToken][balanceSlot(readHolder(rng.IntN(readHolders)))] = common.BigToHash(big.NewInt(int64(n*1000 + uint64(j))))
		}
		d.Accounts[pastCoinbase] = &store.Account{Balance: uint256.NewInt(n * 1e15), CodeHash: types.EmptyCodeHash}
		for i := range pastHot {
			d.Accounts[pastHotHolder(i)] = &store.Account{Nonce: n, Balance: uint256.NewInt(1e18 - n*1e12), CodeHash: types.EmptyCodeHash}
			d.Storage[readToken][balanceSlot(pastHotHolder(i))] = common.BigToHash(big.NewInt(int64(1e9 - n)))
		}
		blk := chaintypes.NewBlockWithHeader(h).WithBody(chaintypes.Body{Withdrawals: types.Withdrawals{}})
		if err := db.WriteBlock(&store.BlockWrite{Block: blk, Diff: d}); err != nil {
			b.Fatal(err)
		}
		parent = h
	}
	// Reopen: the blocks move from the memtable into sstables (as on a
	// node that imported its chain earlier), and the state cache is empty.
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	if db, err = store.Open(cfg, zerolog.Nop()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	api, url := startNode(b, db, gen, nil)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	return api, client, url, tokenABI
}

// pastRequests is how many distinct requests a past-read benchmark cycles
// through (as many as cmd/benchgeth's quick run).
const pastRequests = 2000

// runRequests is runRequest cycling through bodies.
func runRequests(b *testing.B, client *http.Client, url string, bodies []string) {
	b.Helper()
	for _, body := range bodies[:min(10, len(bodies))] {
		if _, err := postRaw(client, url, body); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Uint64
	b.ReportAllocs()
	cpu0 := rpctest.ProcessCPU(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			body := bodies[next.Add(1)%uint64(len(bodies))]
			out, err := postRaw(client, url, body)
			if err != nil {
				b.Error(err)
				return
			}
			if !bytes.Contains(out, []byte(`"result"`)) {
				b.Errorf("bad response %s", out)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(rpctest.ProcessCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// pastBodies returns pastRequests request bodies made by body from a
// random holder (one time in ten a hot one) and a random block selector: a
// past block number in [0, pastBlocks], or "latest" when latest is set.
func pastBodies(latest bool, body func(holder common.Address, block string) string) []string {
	rng := rand.New(rand.NewPCG(3, 4))
	bodies := make([]string, pastRequests)
	for i := range bodies {
		block := "latest"
		if !latest {
			block = hexutil.EncodeUint64(rng.Uint64N(pastBlocks + 1))
		}
		holder := readHolder(rng.IntN(readHolders))
		if rng.IntN(10) == 0 {
			holder = pastHotHolder(rng.IntN(pastHot))
		}
		bodies[i] = body(holder, block)
	}
	return bodies
}

func storageBody(holder common.Address, block string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"eth_getStorageAt","params":["%s","%s","%s"]}`,
		readToken.Hex(), balanceSlot(holder).Hex(), block)
}

// BenchmarkHTTPGetStorageAtPast / Latest: random balance slots at random
// past heights of a 300-block chain whose slots change over time, and the
// same slots at latest.
func BenchmarkHTTPGetStorageAtPast(b *testing.B) {
	client, url, _ := pastChainNode(b)
	runRequests(b, client, url, pastBodies(false, storageBody))
}

func BenchmarkHTTPGetStorageAtLatest(b *testing.B) {
	client, url, _ := pastChainNode(b)
	runRequests(b, client, url, pastBodies(true, storageBody))
}

// BenchmarkHTTPBalanceOfPast / Random: eth_call balanceOf of random holders
// at random past heights, and at latest.
func BenchmarkHTTPBalanceOfPast(b *testing.B) {
	client, url, token := pastChainNode(b)
	runRequests(b, client, url, pastBodies(false, func(h common.Address, block string) string {
		return callBody(readToken, mustPack(b, token, "balanceOf", h), block)
	}))
}

func BenchmarkHTTPBalanceOfRandom(b *testing.B) {
	client, url, token := pastChainNode(b)
	runRequests(b, client, url, pastBodies(true, func(h common.Address, block string) string {
		return callBody(readToken, mustPack(b, token, "balanceOf", h), block)
	}))
}

// benchCallHandler runs eth_call with each of bodies' params in turn
// through the handler, b.N times: the server's own work for the request
// without the transport (HTTP, JSON-RPC envelope) and the client. One
// difference from the server: params made by rpc.NewParams are not marked
// validated, so the call object goes through encoding/json.Unmarshal
// (its validation pass and reflection) before its UnmarshalJSON, which the
// server calls directly.
func benchCallHandler(b *testing.B, api *API, bodies []string) {
	params := make([][]json.RawMessage, len(bodies))
	for i, body := range bodies {
		var req struct {
			Params []json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal([]byte(body), &req); err != nil {
			b.Fatal(err)
		}
		params[i] = req.Params
	}
	ctx := context.Background()
	call := func(i int) {
		if _, err := api.ethCall(ctx, rpc.NewParams(params[i%len(params)]...)); err != nil {
			b.Fatal(err)
		}
	}
	for i := range params {
		call(i)
	}
	b.ReportAllocs()
	cpu0 := rpctest.ProcessCPU(b)
	b.ResetTimer()
	for i := range b.N {
		call(i)
	}
	b.StopTimer()
	b.ReportMetric(float64(rpctest.ProcessCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkCallBalanceOfPast / Random: the requests of
// BenchmarkHTTPBalanceOfPast / Random through the handler.
func BenchmarkCallBalanceOfPast(b *testing.B) {
	api, _, _, token := pastChainAPI(b)
	benchCallHandler(b, api, pastBodies(false, func(h common.Address, block string) string {
		return callBody(readToken, mustPack(b, token, "balanceOf", h), block)
	}))
}

func BenchmarkCallBalanceOfRandom(b *testing.B) {
	api, _, _, token := pastChainAPI(b)
	benchCallHandler(b, api, pastBodies(true, func(h common.Address, block string) string {
		return callBody(readToken, mustPack(b, token, "balanceOf", h), block)
	}))
}

// simulateBody is the side-by-side benchmark's eth_simulateV1 request
// (cmd/benchgeth/chaingen requests.go, simulate): a token holder, its ether
// set by a state override in the first block, sends tokens to another
// holder and ether to a fresh address in each of blocks blocks; with 3 calls
// a block, the third reads the recipient's token balance. traceTransfers on.
// The token amount is smaller than the benchmark chain's (the holders here
// hold less); the paths taken are the same.
func simulateBody(b *testing.B, token abi.ABI, blocks, calls int) string {
	from := readHolder(3)
	amount := big.NewInt(1000)
	value := new(big.Int).Div(big.NewInt(1e18), big.NewInt(10))
	type call struct {
		From  common.Address `json:"from"`
		To    common.Address `json:"to"`
		Data  hexutil.Bytes  `json:"data,omitempty"`
		Value *hexutil.Big   `json:"value,omitempty"`
	}
	type block struct {
		StateOverrides map[common.Address]map[string]*hexutil.Big `json:"stateOverrides,omitempty"`
		Calls          []call                                     `json:"calls"`
	}
	var bsc []block
	for i := range blocks {
		to := readHolder(100 + i)
		payee := common.BytesToAddress(crypto.Keccak256([]byte(fmt.Sprintf("payee-%d", i)))[12:])
		blk := block{Calls: []call{
			{From: from, To: readToken, Data: mustPack(b, token, "transfer", to, amount)},
			{From: from, To: payee, Value: (*hexutil.Big)(value)},
		}}
		if calls > 2 {
			blk.Calls = append(blk.Calls, call{From: from, To: readToken, Data: mustPack(b, token, "balanceOf", to)})
		}
		if i == 0 {
			blk.StateOverrides = map[common.Address]map[string]*hexutil.Big{from: {"balance": (*hexutil.Big)(new(big.Int).Mul(big.NewInt(1000), big.NewInt(1e18)))}}
		}
		bsc = append(bsc, blk)
	}
	params, err := json.Marshal([]any{map[string]any{"blockStateCalls": bsc, "traceTransfers": true}, "latest"})
	if err != nil {
		b.Fatal(err)
	}
	return string(params)
}

// benchSimulateHandler runs eth_simulateV1 with params through the handler
// and encodes the result as the server does, b.N times.
func benchSimulateHandler(b *testing.B, api *API, params string) {
	var raw []json.RawMessage
	if err := json.Unmarshal([]byte(params), &raw); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	run := func() []byte {
		res, err := api.simulateV1(ctx, rpc.NewParams(raw...))
		if err != nil {
			b.Fatal(err)
		}
		out, err := encodeLikeServer(res)
		if err != nil {
			b.Fatal(err)
		}
		return out
	}
	checkSimulateOK(b, run())
	b.ReportAllocs()
	cpu0 := rpctest.ProcessCPU(b)
	b.ResetTimer()
	for range b.N {
		run()
	}
	b.StopTimer()
	// CPU time of the process per request (GC included): on a shared
	// machine it is steadier than the wall time.
	b.ReportMetric(float64(rpctest.ProcessCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// checkSimulateOK fails unless every call of a simulate result succeeded.
func checkSimulateOK(b *testing.B, result []byte) {
	b.Helper()
	var blocks []struct {
		Calls []struct {
			Status string `json:"status"`
		} `json:"calls"`
	}
	if err := json.Unmarshal(result, &blocks); err != nil || len(blocks) == 0 {
		b.Fatalf("bad simulate result %s: %v", result, err)
	}
	for i, blk := range blocks {
		for j, c := range blk.Calls {
			if c.Status != "0x1" {
				b.Fatalf("block %d call %d failed: %s", i, j, result)
			}
		}
	}
}

// BenchmarkSimulateBench1 / BenchmarkSimulateBench3x3: the side-by-side
// benchmark's simulate1 and simulate3x3 requests through the handler.
func BenchmarkSimulateBench1(b *testing.B) {
	api, _, _, token, _ := readPathAPI(b)
	benchSimulateHandler(b, api, simulateBody(b, token, 1, 2))
}

func BenchmarkSimulateBench3x3(b *testing.B) {
	api, _, _, token, _ := readPathAPI(b)
	benchSimulateHandler(b, api, simulateBody(b, token, 3, 3))
}

// BenchmarkHTTPSimulate1 / BenchmarkHTTPSimulate3x3: the same over HTTP.
func BenchmarkHTTPSimulate1(b *testing.B) {
	_, client, url, token, _ := readPathAPI(b)
	runRequest(b, client, url, `{"jsonrpc":"2.0","id":1,"method":"eth_simulateV1","params":`+simulateBody(b, token, 1, 2)+`}`)
}

func BenchmarkHTTPSimulate3x3(b *testing.B) {
	_, client, url, token, _ := readPathAPI(b)
	runRequest(b, client, url, `{"jsonrpc":"2.0","id":1,"method":"eth_simulateV1","params":`+simulateBody(b, token, 3, 3)+`}`)
}
