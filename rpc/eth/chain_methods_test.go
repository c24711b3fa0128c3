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
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/rpc"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// callRPC posts one request built from method and params.
func callRPC(t testing.TB, url, method string, params ...any) rpcResp {
	t.Helper()
	if params == nil {
		params = []any{}
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	_, b := post(t, url, string(body))
	return parseResp(t, b)
}

func wantCode(t *testing.T, r rpcResp, code int) {
	t.Helper()
	if r.Error == nil {
		t.Fatalf("expected error %d, got result %s", code, r.Result)
	}
	if r.Error.Code != code {
		t.Fatalf("expected error %d, got %d: %s", code, r.Error.Code, r.Error.Message)
	}
}

func wantResult(t testing.TB, r rpcResp, dst any) {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("unexpected error %d: %s", r.Error.Code, r.Error.Message)
	}
	if err := json.Unmarshal(r.Result, dst); err != nil {
		t.Fatalf("decoding %s: %v", r.Result, err)
	}
}

// TestFeeHistoryExact: the fixture is judged on shape only by the harness,
// but its values come from go-ethereum; ours must equal them.
func TestFeeHistoryExact(t *testing.T) {
	db, g := chaintest.ImportedStore(t)
	_, url := startNode(t, db, g, nil)
	data, err := os.ReadFile(filepath.Join(chaintest.Dir(t), "tests", "eth_feeHistory", "fee-history.io"))
	if err != nil {
		t.Fatal(err)
	}
	fx, err := parseIOFile(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range fx.pairs {
		_, got := post(t, url, p.request)
		if d := (&judge{}).compare([]byte(p.response), got); d != "" {
			t.Fatalf("%s\n got %s", d, got)
		}
	}
}

func TestFeeMethods(t *testing.T) {
	db, g := chaintest.ImportedStore(t)
	_, url := startNode(t, db, g, nil)
	var price, tip hexutil.Big
	wantResult(t, callRPC(t, url, "eth_gasPrice"), &price)
	wantResult(t, callRPC(t, url, "eth_maxPriorityFeePerGas"), &tip)
	var head map[string]any
	wantResult(t, callRPC(t, url, "eth_getBlockByNumber", "latest", false), &head)
	base := hexutil.MustDecodeBig(head["baseFeePerGas"].(string))
	if tip.ToInt().Sign() <= 0 {
		t.Fatalf("tip %v must be positive", tip.ToInt())
	}
	if want := new(big.Int).Add(tip.ToInt(), base); price.ToInt().Cmp(want) != 0 {
		t.Fatalf("gasPrice %v, want tip %v + base fee %v", price.ToInt(), tip.ToInt(), base)
	}
	// Fee history invariants over the whole chain.
	var fh struct {
		OldestBlock  hexutil.Uint64  `json:"oldestBlock"`
		Reward       [][]hexutil.Big `json:"reward"`
		BaseFee      []hexutil.Big   `json:"baseFeePerGas"`
		GasUsedRatio []float64       `json:"gasUsedRatio"`
		BlobBaseFee  []hexutil.Big   `json:"baseFeePerBlobGas"`
		BlobRatio    []float64       `json:"blobGasUsedRatio"`
	}
	wantResult(t, callRPC(t, url, "eth_feeHistory", "0x400", "latest", []float64{10, 50, 90}), &fh)
	if fh.OldestBlock != 0 || len(fh.GasUsedRatio) != 55 || len(fh.BaseFee) != 56 || len(fh.BlobBaseFee) != 56 || len(fh.Reward) != 55 || len(fh.BlobRatio) != 55 {
		t.Fatalf("shape: oldest %d, %d ratios, %d base fees, %d blob fees, %d rewards", fh.OldestBlock, len(fh.GasUsedRatio), len(fh.BaseFee), len(fh.BlobBaseFee), len(fh.Reward))
	}
	for i, row := range fh.Reward {
		if len(row) != 3 || row[0].ToInt().Cmp(row[1].ToInt()) > 0 || row[1].ToInt().Cmp(row[2].ToInt()) > 0 {
			t.Fatalf("reward row %d not monotonic: %v", i, row)
		}
	}
	if fh.BaseFee[54].ToInt().Cmp(base) != 0 {
		t.Fatalf("base fee of block 54 %v, header says %v", fh.BaseFee[54].ToInt(), base)
	}
	var next hexutil.Big
	wantResult(t, callRPC(t, url, "eth_baseFee"), &next)
	if fh.BaseFee[55].ToInt().Cmp(next.ToInt()) != 0 {
		t.Fatalf("next base fee %v, eth_baseFee %v", fh.BaseFee[55].ToInt(), next.ToInt())
	}
	for _, bad := range [][]float64{{50, 10}, {-1}, {101}} {
		wantCode(t, callRPC(t, url, "eth_feeHistory", "0x2", "latest", bad), rpc.CodeInvalidParams)
	}
	wantCode(t, callRPC(t, url, "eth_feeHistory", "0x2", "0x100", []float64{}), rpc.CodeHeaderNotFound)
}

// TestGetLogsAgainstReceipts cross-checks eth_getLogs (bloom skipping,
// filters) with the logs of every block's receipts.
func TestGetLogsAgainstReceipts(t *testing.T) {
	db, g := chaintest.ImportedStore(t)
	_, url := startNode(t, db, g, nil)
	var all []*types.Log
	for n := 0; n <= 54; n++ {
		var rs []struct {
			Logs []*types.Log `json:"logs"`
		}
		wantResult(t, callRPC(t, url, "eth_getBlockReceipts", hexutil.EncodeUint64(uint64(n))), &rs)
		for _, r := range rs {
			all = append(all, r.Logs...)
		}
	}
	if len(all) == 0 {
		t.Fatal("conformance chain has no logs?")
	}
	var got []*types.Log
	wantResult(t, callRPC(t, url, "eth_getLogs", map[string]any{"fromBlock": "earliest", "toBlock": "latest"}), &got)
	if len(got) != len(all) {
		t.Fatalf("eth_getLogs over the chain: %d logs, receipts hold %d", len(got), len(all))
	}
	for i := range all {
		a, _ := json.Marshal(all[i])
		b, _ := json.Marshal(got[i])
		if string(a) != string(b) {
			t.Fatalf("log %d differs:\n receipts %s\n getLogs  %s", i, a, b)
		}
	}
	// Filter by the first log's address (single-string form) and topic 0.
	first := all[0]
	want := 0
	for _, l := range all {
		if l.Address == first.Address && len(l.Topics) > 0 && l.Topics[0] == first.Topics[0] {
			want++
		}
	}
	wantResult(t, callRPC(t, url, "eth_getLogs", map[string]any{
		"fromBlock": "0x0", "address": first.Address, "topics": []any{first.Topics[0]},
	}), &got)
	if len(got) != want {
		t.Fatalf("filtered: %d logs, want %d", len(got), want)
	}
	// A topic nobody emits, and an OR with it.
	nobody := common.HexToHash("0xdeadbeef")
	wantResult(t, callRPC(t, url, "eth_getLogs", map[string]any{"fromBlock": "0x0", "topics": []any{nobody}}), &got)
	if len(got) != 0 {
		t.Fatalf("expected no logs, got %d", len(got))
	}
	wantResult(t, callRPC(t, url, "eth_getLogs", map[string]any{"fromBlock": "0x0", "address": first.Address, "topics": []any{[]any{nobody, first.Topics[0]}}}), &got)
	if len(got) != want {
		t.Fatalf("OR topics: %d logs, want %d", len(got), want)
	}
	// An empty result is [] not null.
	r := callRPC(t, url, "eth_getLogs", map[string]any{"fromBlock": "0x0", "toBlock": "0x0"})
	if string(r.Result) != "[]" {
		t.Fatalf("empty result: %s", r.Result)
	}
}

func TestGetLogsErrorsAndLimits(t *testing.T) {
	db, g := chaintest.ImportedStore(t)
	cfg := DefaultAPIConfig()
	cfg.LogsRangeLimit = 10
	cfg.LogsResultLimit = 1
	_, url := startNodeCfg(t, cfg, db, g, nil)
	tests := []struct {
		name   string
		filter any
		code   int
	}{
		{"range over limit", map[string]any{"fromBlock": "0x0", "toBlock": "0x14"}, rpc.CodeLimitExceeded},
		{"results over limit", map[string]any{"fromBlock": "0x1", "toBlock": "0x4", "address": "0x7dcd17433742f4c0ca53122ab541d0ba67fc27df"}, rpc.CodeLimitExceeded},
		{"reversed", map[string]any{"fromBlock": "0x5", "toBlock": "0x4"}, rpc.CodeInvalidParams},
		{"beyond head", map[string]any{"fromBlock": "0x30", "toBlock": "0x37"}, rpc.CodeInvalidParams},
		{"hash and range", map[string]any{"blockHash": chaintest.HeadHash, "fromBlock": "0x1"}, rpc.CodeInvalidParams},
		{"five topic positions", map[string]any{"topics": []any{nil, nil, nil, nil, nil}}, rpc.CodeInvalidParams},
		{"bad address", map[string]any{"address": "0x12"}, rpc.CodeInvalidParams},
		{"bad topic", map[string]any{"topics": []any{"0x12"}}, rpc.CodeInvalidParams},
		{"hash as fromBlock", map[string]any{"fromBlock": chaintest.HeadHash}, rpc.CodeInvalidParams},
		{"unknown block hash", map[string]any{"blockHash": "0x00000000000000000000000000000000000000000000000000000000deadbeef"}, rpc.CodeServerError},
		{"not an object", "latest", rpc.CodeInvalidParams},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := callRPC(t, url, "eth_getLogs", tc.filter)
			wantCode(t, r, tc.code)
			// Messages speak JSON, not Go types.
			if strings.Contains(r.Error.Message, "struct {") {
				t.Fatalf("message %q", r.Error.Message)
			}
			if tc.code == rpc.CodeLimitExceeded && !strings.Contains(r.Error.Message, "10") && !strings.Contains(r.Error.Message, "1 ") && !strings.Contains(r.Error.Message, "than 1") {
				t.Fatalf("limit message does not state the limit: %q", r.Error.Message)
			}
		})
	}
}

func TestSendRawTransactionChecks(t *testing.T) {
	db, g := chaintest.ImportedStore(t)
	key, err := crypto.HexToECDSA("bfcd0e032489319f4e5ca03e643b2025db624be6cf99cbfed90c4502e3754850")
	if err != nil {
		t.Fatal(err)
	}
	to := common.HexToAddress("0xaa")
	sign := func(s types.Signer, tx *types.TxData) string {
		signed, err := types.SignNewTx(key, s, *tx)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := signed.MarshalBinary()
		return hexutil.Encode(b)
	}
	var legacy types.TxData = &types.LegacyTx{Nonce: 0, GasPrice: big.NewInt(1e9), Gas: 21000, To: &to, Value: big.NewInt(1)}
	eip155 := types.NewEIP155Signer(g.Config.ChainID)
	good := sign(eip155, &legacy)
	unprotected := sign(types.HomesteadSigner{}, &legacy)
	var pricey types.TxData = &types.LegacyTx{Nonce: 0, GasPrice: big.NewInt(1e18), Gas: 21000, To: &to}
	tooPricey := sign(eip155, &pricey)
	var big1 types.TxData = &types.LegacyTx{Nonce: 0, GasPrice: big.NewInt(1), Gas: 21000, To: &to, Data: make([]byte, maxRawTxBytes)}
	tooBig := sign(eip155, &big1)

	pool := newTestPool(g)
	_, url := startNode(t, db, g, pool)
	var h common.Hash
	wantResult(t, callRPC(t, url, "eth_sendRawTransaction", good), &h)
	if len(pool.txs) != 1 || pool.txs[0].Hash() != h {
		t.Fatalf("pool got %d txs, hash %s", len(pool.txs), h)
	}
	wantCode(t, callRPC(t, url, "eth_sendRawTransaction", unprotected), rpc.CodeServerError)
	wantCode(t, callRPC(t, url, "eth_sendRawTransaction", tooPricey), rpc.CodeServerError)
	wantCode(t, callRPC(t, url, "eth_sendRawTransaction", tooBig), rpc.CodeLimitExceeded)
	wantCode(t, callRPC(t, url, "eth_sendRawTransaction", "0x02zz"), rpc.CodeInvalidParams)
	wantCode(t, callRPC(t, url, "eth_sendRawTransaction", "0x0201"), rpc.CodeInvalidParams)
	wantCode(t, callRPC(t, url, "eth_sendRawTransaction", "0x"), rpc.CodeInvalidParams)
	dep, _ := chaintypes.NewDeposit(chaintypes.DepositFields{From: to, Gas: 21000, Mint: big.NewInt(1)}).MarshalBinary()
	if r := callRPC(t, url, "eth_sendRawTransaction", hexutil.Encode(dep)); r.Error == nil || r.Error.Code != rpc.CodeInvalidParams || !strings.Contains(r.Error.Message, "deposit") {
		t.Fatalf("a deposit sent: %+v, want invalid params naming deposits", r.Error)
	}
	if len(pool.txs) != 1 {
		t.Fatalf("refused transactions reached the pool")
	}

	// Without a pool: a clear -32000.
	_, url2 := startNode(t, db, g, nil)
	r := callRPC(t, url2, "eth_sendRawTransaction", good)
	wantCode(t, r, rpc.CodeServerError)
	if !strings.Contains(r.Error.Message, "pool") {
		t.Fatalf("message should explain the missing pool: %q", r.Error.Message)
	}
}

func TestUnclesAndMissingBlocks(t *testing.T) {
	db, g := chaintest.ImportedStore(t)
	_, url := startNode(t, db, g, nil)
	data, err := os.ReadFile(filepath.Join(chaintest.Dir(t), "chain", "txinfo.json"))
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Uncles map[string]struct {
			Hashes []common.Hash `json:"hashes"`
		} `json:"uncles"`
	}
	if err := json.Unmarshal(data, &info); err != nil {
		t.Fatal(err)
	}
	if len(info.Uncles) == 0 {
		t.Fatal("txinfo has no uncles")
	}
	for num, u := range info.Uncles {
		var n uint64
		fmt.Sscan(num, &n)
		sel := hexutil.EncodeUint64(n)
		var count hexutil.Uint
		wantResult(t, callRPC(t, url, "eth_getUncleCountByBlockNumber", sel), &count)
		if int(count) != len(u.Hashes) {
			t.Fatalf("block %d: %d uncles, want %d", n, count, len(u.Hashes))
		}
		var blk map[string]any
		wantResult(t, callRPC(t, url, "eth_getBlockByNumber", sel, false), &blk)
		for i, h := range u.Hashes {
			var uncle map[string]any
			wantResult(t, callRPC(t, url, "eth_getUncleByBlockHashAndIndex", blk["hash"], hexutil.EncodeUint64(uint64(i))), &uncle)
			if uncle["hash"] != h.Hex() {
				t.Fatalf("block %d uncle %d: hash %v, want %s", n, i, uncle["hash"], h.Hex())
			}
			if _, has := uncle["transactions"]; has {
				t.Fatal("uncle object must not list transactions")
			}
		}
		r := callRPC(t, url, "eth_getUncleByBlockNumberAndIndex", sel, hexutil.EncodeUint64(uint64(len(u.Hashes))))
		if string(r.Result) != "null" {
			t.Fatalf("uncle past the end: %s", r.Result)
		}
	}
	for _, c := range []struct {
		method string
		params []any
	}{
		{"eth_getBlockByNumber", []any{"0x100", false}},
		{"eth_getUncleCountByBlockNumber", []any{"0x100"}},
		{"eth_getUncleCountByBlockHash", []any{common.Hash{}}},
		{"eth_getBlockTransactionCountByNumber", []any{"0x100"}},
		{"eth_getTransactionByBlockNumberAndIndex", []any{"0x1", "0x100"}},
		{"eth_getTransactionByBlockHashAndIndex", []any{common.Hash{}, "0x0"}},
		{"eth_getTransactionReceipt", []any{common.Hash{1}}},
	} {
		r := callRPC(t, url, c.method, c.params...)
		if r.Error != nil || string(r.Result) != "null" {
			t.Fatalf("%s%v: want null, got %s %+v", c.method, c.params, r.Result, r.Error)
		}
	}
	// Without a pending layer, "pending" is the latest block.
	var pend, latest map[string]any
	wantResult(t, callRPC(t, url, "eth_getBlockByNumber", "pending", false), &pend)
	wantResult(t, callRPC(t, url, "eth_getBlockByNumber", "latest", false), &latest)
	if pend["hash"] != latest["hash"] {
		t.Fatalf("pending without a pending layer: %v, latest %v", pend["hash"], latest["hash"])
	}
	wantCode(t, callRPC(t, url, "eth_getBlockByNumber", "latest"), rpc.CodeInvalidParams)
	var version, syncing any
	wantResult(t, callRPC(t, url, "web3_clientVersion"), &version)
	wantResult(t, callRPC(t, url, "eth_syncing"), &syncing)
	if version != "tipnode" || syncing != false {
		t.Fatalf("clientVersion %v syncing %v", version, syncing)
	}
}

// headFeedNode serves the conformance genesis with the first n blocks of
// the chain imported through the node's writer, and returns the API, the
// writer and all blocks.
func headFeedNode(t *testing.T, n int) (*API, *chain.Writer, []*chaintypes.Block) {
	t.Helper()
	db, g, w := chaintest.GenesisStore(t)
	w.Stop() // the node runs its own writer
	blocks := chaintest.Blocks(t)
	api, _ := startNode(t, db, g, nil)
	w = writerOf(api)
	if err := w.Import(blocks[:n], chain.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	return api, w, blocks
}

// TestHeadFeedCatchUp: a subscriber that has seen head 50 and is woken by
// a burst of writes up to 54 receives 51..54 in order (blocks it was not
// woken for are read back from the head and the store); a subscriber that
// stops reading never blocks the writer.
func TestHeadFeedCatchUp(t *testing.T) {
	api, w, blocks := headFeedNode(t, 49)
	done := make(chan struct{})
	defer close(done)
	got := make(chan uint64, 16)
	api.followHeads(done, func(h *types.Header) bool {
		select {
		case got <- h.Number.Uint64():
			return true
		case <-done:
			return false
		}
	})
	expect := func(want uint64) {
		t.Helper()
		select {
		case n := <-got:
			if n != want {
				t.Fatalf("got head %d, want %d", n, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no head %d delivered", want)
		}
	}
	if err := w.ImportBlock(blocks[49]); err != nil {
		t.Fatal(err)
	}
	expect(50)
	if err := w.Import(blocks[50:54], chain.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	for n := uint64(51); n <= 54; n++ {
		expect(n)
	}
	// A subscriber that never reads (its deliver blocks) does not block
	// the writer: unwinds and re-imports complete.
	stuck := make(chan struct{})
	defer close(stuck)
	api.followHeads(done, func(h *types.Header) bool {
		<-stuck
		return false
	})
	for range 5 {
		if err := w.UnwindTo(44, nil); err != nil {
			t.Fatal(err)
		}
		if err := w.Import(blocks[44:54], chain.ImportOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHeadFeedFirstAnnouncementCatchUp: blocks written after a subscriber
// started but before its goroutine first woke (here 53 and 54, written in
// one burst) are all delivered, in order.
func TestHeadFeedFirstAnnouncementCatchUp(t *testing.T) {
	api, w, blocks := headFeedNode(t, 52)
	done := make(chan struct{})
	defer close(done)
	got := make(chan uint64, 16)
	api.followHeads(done, func(h *types.Header) bool {
		got <- h.Number.Uint64()
		return true
	})
	if err := w.Import(blocks[52:54], chain.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []uint64{53, 54} {
		select {
		case n := <-got:
			if n != want {
				t.Fatalf("got head %d, want %d", n, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no head %d delivered", want)
		}
	}
}

// FuzzLogFilter: the filter decoder never panics, and whatever it accepts
// respects the documented limits and exclusivity.
func FuzzLogFilter(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"address":"0x7dcd17433742f4c0ca53122ab541d0ba67fc27df","fromBlock":"0x1","toBlock":"latest"}`,
		`{"address":["0x7dcd17433742f4c0ca53122ab541d0ba67fc27df"],"topics":[null,["0x00000000000000000000000000000000000000000000000000000000656d6974",null]]}`,
		`{"blockHash":"0xd226371d0b1551adb03fb52b71f08e3e11247fe9b1af994768af8cdaa8e7dcd7","topics":[[]]}`,
		`{"blockHash":"0xd226371d0b1551adb03fb52b71f08e3e11247fe9b1af994768af8cdaa8e7dcd7","fromBlock":"0x1"}`,
		`{"topics":[null,null,null,null,null]}`,
		`{"address":7}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var lf LogFilter
		if err := json.Unmarshal(data, &lf); err != nil {
			return
		}
		if lf.BlockHash != nil && (lf.FromBlock != nil || lf.ToBlock != nil) {
			t.Fatal("accepted blockHash together with a range")
		}
		if len(lf.Topics) > maxFilterTopics || len(lf.Addresses) > maxFilterAddresses {
			t.Fatal("accepted a filter over the limits")
		}
		for _, s := range []*BlockSelector{lf.FromBlock, lf.ToBlock} {
			if s != nil && s.Hash != nil {
				t.Fatal("accepted a hash as range bound")
			}
		}
		lf.matches(&types.Log{})
		lf.bloomMatches(types.Bloom{})
	})
}
