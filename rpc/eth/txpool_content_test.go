package eth

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// TestTxPoolMethods: nonces 0 and 1 are pending, 3 (after a gap) queued,
// in go-ethereum's shapes.
func TestTxPoolMethods(t *testing.T) {
	d := newDevPendingNode(t, false)
	var txs []*types.Transaction
	for _, n := range []uint64{0, 1, 3} {
		tx := d.signedTransfer(t, n)
		if err := d.pool.Add(tx); err != nil {
			t.Fatal(err)
		}
		txs = append(txs, tx)
	}
	from := d.accs[0].Address.Hex()
	if !strings.ContainsAny(from[2:], "ABCDEF") {
		t.Fatalf("dev account %s has no checksum letters: the key test below is weak", from)
	}
	wantJSON := func(method string, params []any, want string) {
		t.Helper()
		r := callRPC(t, d.url, method, params...)
		if r.Error != nil || !jsonEqual(t, r.Result, want) {
			t.Errorf("%s = %s %+v\nwant %s", method, r.Result, r.Error, want)
		}
	}
	wantJSON("txpool_status", nil, `{"pending":"0x2","queued":"0x1"}`)
	line := func(tx *types.Transaction) string {
		return fmt.Sprintf(`"%s: 1 wei + 21000 gas × 10000000000 wei"`, tx.To().Hex())
	}
	wantJSON("txpool_inspect", nil, fmt.Sprintf(`{"pending":{%q:{"0":%s,"1":%s}},"queued":{%q:{"3":%s}}}`,
		from, line(txs[0]), line(txs[1]), from, line(txs[2])))
	obj := func(tx *types.Transaction) string {
		b := mustJSON(d.api.poolTx(tx))
		return b
	}
	wantJSON("txpool_content", nil, fmt.Sprintf(`{"pending":{%q:{"0":%s,"1":%s}},"queued":{%q:{"3":%s}}}`,
		from, obj(txs[0]), obj(txs[1]), from, obj(txs[2])))
	wantJSON("txpool_contentFrom", []any{d.accs[0].Address}, fmt.Sprintf(`{"pending":{"0":%s,"1":%s},"queued":{"3":%s}}`,
		obj(txs[0]), obj(txs[1]), obj(txs[2])))
	wantJSON("txpool_contentFrom", []any{common.Address{1}}, `{"pending":{},"queued":{}}`)
	// The transaction object is the pool's eth_getTransactionByHash one.
	if r := callRPC(t, d.url, "eth_getTransactionByHash", txs[0].Hash()); !jsonEqual(t, r.Result, obj(txs[0])) {
		t.Errorf("pool object %s, eth_getTransactionByHash %s", obj(txs[0]), r.Result)
	}
	// Pre-confirmed: out of the pool; nonce 3 is still queued.
	d.start(t)
	d.clock.Advance(d.seqCfg.PreconfInterval)
	d.seq.Sync()
	wantJSON("txpool_status", nil, `{"pending":"0x0","queued":"0x1"}`)
}
