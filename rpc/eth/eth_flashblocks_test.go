package eth

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	gethrpc "github.com/ethereum/go-ethereum/rpc"
)

func (d *devPendingNode) wsClient(t *testing.T) *gethrpc.Client {
	t.Helper()
	c, err := gethrpc.Dial("ws" + strings.TrimPrefix(d.url, "http"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func next(t *testing.T, ch chan json.RawMessage) json.RawMessage {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no notification")
		return nil
	}
}

func noMore(t *testing.T, ch chan json.RawMessage) {
	t.Helper()
	select {
	case m := <-ch:
		t.Fatalf("unexpected notification %s", m)
	case <-time.After(50 * time.Millisecond):
	}
}

// TestFlashblockSubscriptions: newFlashblocks sends the pending block as
// eth_getBlockByNumber("pending", true) answers it, at every
// pre-confirmation; newFlashblockTransactions sends each new transaction
// once: its hash, or the object with its receipt's fields (the receipt's
// values), or only those with a matching log.
func TestFlashblockSubscriptions(t *testing.T) {
	d := newDevPendingNode(t, true)
	c := d.wsClient(t)
	ctx := context.Background()
	blocks, hashes, full, filtered := make(chan json.RawMessage, 16), make(chan json.RawMessage, 16), make(chan json.RawMessage, 16), make(chan json.RawMessage, 16)
	for _, s := range []struct {
		ch   chan json.RawMessage
		args []any
	}{
		{blocks, []any{"newFlashblocks"}},
		{hashes, []any{"newFlashblockTransactions"}},
		{full, []any{"newFlashblockTransactions", true}},
		{filtered, []any{"newFlashblockTransactions", map[string]any{"topics": []any{logTopic}}}},
	} {
		sub, err := c.EthSubscribe(ctx, s.ch, s.args...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sub.Unsubscribe)
	}
	transfer, deploy := d.signedTransfer(t, 0), d.logDeploy(t, 1)
	d.preconfirm(t, transfer)
	b1 := next(t, blocks)
	if want := callRPC(t, d.url, "eth_getBlockByNumber", "pending", true); !jsonEqual(t, b1, string(want.Result)) {
		t.Fatalf("newFlashblocks %s\nwant eth_getBlockByNumber(pending, true) %s", b1, want.Result)
	}
	d.preconfirm(t, deploy)
	var b2 struct {
		Number       hexutil.Uint64    `json:"number"`
		Transactions []json.RawMessage `json:"transactions"`
	}
	if err := json.Unmarshal(next(t, blocks), &b2); err != nil || b2.Number != 1 || len(b2.Transactions) != 2 {
		t.Fatalf("second flashblock: %+v %v", b2, err)
	}
	for i, tx := range []common.Hash{transfer.Hash(), deploy.Hash()} {
		var h common.Hash
		if err := json.Unmarshal(next(t, hashes), &h); err != nil || h != tx {
			t.Fatalf("hash %d: %s %v", i, h, err)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(next(t, full), &obj); err != nil {
			t.Fatal(err)
		}
		var rec map[string]json.RawMessage
		wantResult(t, callRPC(t, d.url, "eth_getTransactionReceipt", tx), &rec)
		var txObj map[string]json.RawMessage
		wantResult(t, callRPC(t, d.url, "eth_getTransactionByHash", tx), &txObj)
		for k, v := range txObj {
			if !jsonEqual(t, obj[k], string(v)) {
				t.Errorf("tx %d field %s = %s, eth_getTransactionByHash has %s", i, k, obj[k], v)
			}
		}
		for _, k := range []string{"logs", "gasUsed", "status", "cumulativeGasUsed", "contractAddress", "logsBloom"} {
			if !jsonEqual(t, obj[k], string(rec[k])) {
				t.Errorf("tx %d field %s = %s, receipt has %s", i, k, obj[k], rec[k])
			}
		}
	}
	var only struct {
		Hash common.Hash `json:"hash"`
	}
	if err := json.Unmarshal(next(t, filtered), &only); err != nil || only.Hash != deploy.Hash() {
		t.Fatalf("filtered: %+v %v", only, err)
	}
	noMore(t, hashes)
	noMore(t, filtered)
	if _, err := c.EthSubscribe(ctx, make(chan json.RawMessage), "newFlashblockTransactions", map[string]any{"fromBlock": "0x1"}); err == nil {
		t.Fatal("a filter with a range accepted")
	}
}
