package eth

import (
	"context"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	gethrpc "github.com/ethereum/go-ethereum/rpc"

	"github.com/tipnode/tipnode/pending/sequencer"
	"github.com/tipnode/tipnode/rpc"
)

// signedTransfer signs a 1-wei transfer of dev account 0 with nonce n.
func (d *devPendingNode) signedTransfer(t *testing.T, n uint64) *types.Transaction {
	t.Helper()
	to := common.HexToAddress("0x00000000000000000000000000000000000b0b05")
	tx, err := types.SignNewTx(d.accs[0].Key, types.LatestSigner(d.g.Config), &types.DynamicFeeTx{
		ChainID: d.g.Config.ChainID, Nonce: n, GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(10 * params.GWei),
		Gas: 21_000, To: &to, Value: big.NewInt(1),
	})
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

func rawHex(t *testing.T, tx *types.Transaction) string {
	t.Helper()
	b, err := tx.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return hexutil.Encode(b)
}

// preconfirmWhenWaiting pre-confirms the pool once the sync call is waiting
// (its waiter registered and the transaction pooled).
func (d *devPendingNode) preconfirmWhenWaiting(t *testing.T, hash common.Hash) {
	t.Helper()
	for d.api.txWaits.waiting() == 0 || d.pool.Get(hash) == nil {
		time.Sleep(time.Millisecond)
	}
	d.clock.Advance(d.seqCfg.PreconfInterval)
	d.seq.Sync()
}

// TestSendRawTransactionSync: the call returns the pre-confirmed receipt,
// the one eth_getTransactionReceipt answers, over HTTP (number and hex
// timeouts) and websocket.
func TestSendRawTransactionSync(t *testing.T) {
	d := newDevPendingNode(t, true)
	for i, tc := range []struct {
		name    string
		timeout any // nil: none
		ws      bool
	}{
		{"http no timeout", nil, false},
		{"http number timeout", 30_000, false},
		{"http hex timeout", "0x7530", false},
		{"websocket", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tx := d.signedTransfer(t, uint64(i))
			params := []any{rawHex(t, tx)}
			if tc.timeout != nil {
				params = append(params, tc.timeout)
			}
			got := make(chan json.RawMessage, 1)
			errc := make(chan error, 1)
			go func() {
				if tc.ws {
					c, err := gethrpc.Dial("ws" + strings.TrimPrefix(d.url, "http"))
					if err != nil {
						errc <- err
						return
					}
					defer c.Close()
					var r json.RawMessage
					if err := c.CallContext(context.Background(), &r, "eth_sendRawTransactionSync", params...); err != nil {
						errc <- err
						return
					}
					got <- r
					return
				}
				r := callRPC(t, d.url, "eth_sendRawTransactionSync", params...)
				if r.Error != nil {
					errc <- r.Error
					return
				}
				got <- r.Result
			}()
			d.preconfirmWhenWaiting(t, tx.Hash())
			var res json.RawMessage
			select {
			case res = <-got:
			case err := <-errc:
				t.Fatal(err)
			}
			var rec struct {
				TxHash      common.Hash    `json:"transactionHash"`
				Status      hexutil.Uint64 `json:"status"`
				BlockNumber hexutil.Uint64 `json:"blockNumber"`
			}
			if err := json.Unmarshal(res, &rec); err != nil {
				t.Fatal(err)
			}
			if rec.TxHash != tx.Hash() || rec.Status != 1 || rec.BlockNumber != 1 {
				t.Fatalf("receipt %s", res)
			}
			want := callRPC(t, d.url, "eth_getTransactionReceipt", tx.Hash())
			if !jsonEqual(t, res, string(want.Result)) {
				t.Fatalf("sync receipt %s\nwant eth_getTransactionReceipt's %s", res, want.Result)
			}
			if n := d.api.txWaits.waiting(); n != 0 {
				t.Fatalf("%d waiters left", n)
			}
		})
	}
}

// preconfirmingPool pre-confirms each transaction as soon as the pool
// accepted it: the receipt exists before the call starts waiting.
type preconfirmingPool struct {
	*devPendingNode
}

func (p preconfirmingPool) Add(tx *types.Transaction) error {
	if err := p.pool.Add(tx); err != nil {
		return err
	}
	p.clock.Advance(p.seqCfg.PreconfInterval)
	p.seq.Sync()
	return nil
}
func (p preconfirmingPool) Get(h common.Hash) *types.Transaction           { return p.pool.Get(h) }
func (p preconfirmingPool) Nonces(a common.Address) sequencer.PooledNonces { return p.pool.Nonces(a) }

// TestSendRawTransactionSyncNoRace: a receipt published between the
// submission and the wait is not missed.
func TestSendRawTransactionSyncNoRace(t *testing.T) {
	d := newDevPendingNode(t, true)
	d.api.pool = preconfirmingPool{d}
	tx := d.signedTransfer(t, 0)
	r := callRPC(t, d.url, "eth_sendRawTransactionSync", rawHex(t, tx), 30_000)
	if r.Error != nil {
		t.Fatalf("error %d %s", r.Error.Code, r.Error.Message)
	}
	if !strings.Contains(string(r.Result), tx.Hash().Hex()[2:]) {
		t.Fatalf("receipt %s", r.Result)
	}
}

// TestSendRawTransactionSyncErrors: EIP-7966's timeout (code 4) and
// unreadiness (code 5, a nonce gap) errors carry the hash; a refused
// transaction is the eth_sendRawTransaction error.
func TestSendRawTransactionSyncErrors(t *testing.T) {
	d := newDevPendingNode(t, true)
	// Timeout: nothing pre-confirms (the clock does not move).
	tx := d.signedTransfer(t, 0)
	r := callRPC(t, d.url, "eth_sendRawTransactionSync", rawHex(t, tx), 1)
	if r.Error == nil || r.Error.Code != rpc.CodeTxSyncTimeout || !strings.Contains(r.Error.Message, "wasn't processed in") || r.Error.Data != tx.Hash().Hex() {
		t.Fatalf("timeout: %+v %s", r.Error, r.Result)
	}
	// Nonce gap: nonce 2 while 1 is next.
	gap := d.signedTransfer(t, 2)
	r = callRPC(t, d.url, "eth_sendRawTransactionSync", rawHex(t, gap))
	if r.Error == nil || r.Error.Code != rpc.CodeTxSyncNotReady || !strings.Contains(r.Error.Message, "next nonce is 0x1") || r.Error.Data != gap.Hash().Hex() {
		t.Fatalf("gap: %+v %s", r.Error, r.Result)
	}
	// Refused by the pool (already known): -32000, at once.
	r = callRPC(t, d.url, "eth_sendRawTransactionSync", rawHex(t, tx))
	if r.Error == nil || r.Error.Code != rpc.CodeServerError {
		t.Fatalf("known: %+v %s", r.Error, r.Result)
	}
	// Bad timeout argument.
	r = callRPC(t, d.url, "eth_sendRawTransactionSync", rawHex(t, d.signedTransfer(t, 1)), "soon")
	if r.Error == nil || r.Error.Code != rpc.CodeInvalidParams {
		t.Fatalf("bad timeout: %+v %s", r.Error, r.Result)
	}
	if n := d.api.txWaits.waiting(); n != 0 {
		t.Fatalf("%d waiters left", n)
	}
}

func TestSyncTimeout(t *testing.T) {
	a := &API{cfg: DefaultAPIConfig()}
	for _, tc := range []struct {
		ms   millis
		want time.Duration
	}{
		{0, 2 * time.Second},
		{1, time.Millisecond},
		{5000, 5 * time.Second},
		{10_000, 10 * time.Second},
		{10_001, 2 * time.Second}, // above the maximum: the default (EIP-7966)
		{1 << 62, 2 * time.Second},
	} {
		if got := a.syncTimeout(tc.ms); got != tc.want {
			t.Errorf("syncTimeout(%d) = %s, want %s", tc.ms, got, tc.want)
		}
	}
}
