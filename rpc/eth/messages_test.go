package eth

// Error messages a newcomer reads: each names the argument as the client
// sent it and says what is wanted (or which limit was hit).

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/rpc"
)

func TestErrorMessages(t *testing.T) {
	db, g, w := chaintest.GenesisStore(t)
	w.Stop()
	cfg := DefaultAPIConfig()
	cfg.SimulateMaxBlocks = 4
	_, url := startNodeCfg(t, cfg, db, g, nil)
	c, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(url, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	defer c.Close()
	ws := func(body string) []byte {
		t.Helper()
		if err := c.WriteMessage(websocket.TextMessage, []byte(body)); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, b, err := c.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	httpCall := func(body string) []byte {
		t.Helper()
		_, b := post(t, url, body)
		return b
	}
	addr := "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
	req := func(method, params string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params)
	}
	for _, tc := range []struct {
		name string
		do   func(string) []byte
		body string
		code int
		msg  string // the whole message
	}{
		// eth_subscribe's argument 0 is the kind: a filter is argument 1.
		{"ws logs filter decoding", ws, req("eth_subscribe", `["logs",{"address":"0xzz"}]`), rpc.CodeInvalidParams,
			`invalid argument 1 (filter): invalid address: hex string has length 2, want 40 for common.Address`},
		{"ws logs filter blockHash", ws, req("eth_subscribe", `["logs",{"blockHash":"0x`+strings.Repeat("11", 32)+`"}]`), rpc.CodeInvalidParams,
			"invalid argument 1 (filter): blockHash is not supported in a logs subscription"},
		{"ws newHeads extra argument", ws, req("eth_subscribe", `["newHeads",{},1]`), rpc.CodeInvalidParams,
			"too many arguments, want at most 2"},
		// A negative number is not "without 0x prefix".
		{"negative block number", httpCall, req("eth_getBalance", `["`+addr+`","-0x1"]`), rpc.CodeInvalidParams,
			`invalid argument 1 (block): invalid block number "-0x1": negative (want 0x followed by hex digits, or a tag)`},
		{"negative quantity", httpCall, req("eth_call", `[{"to":"`+addr+`","value":"-0x1"}]`), rpc.CodeInvalidParams,
			`invalid argument 0 (call object): not a hex quantity: want 0x followed by hex digits, without a sign (field "value")`},
		// -38026 states the limit.
		{"simulate too many blocks", httpCall, req("eth_simulateV1", `[{"blockStateCalls":[{},{},{},{},{}]}]`), rpc.CodeClientLimitExceeded,
			"too many blocks: 5 (limit 4)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := parseResp(t, tc.do(tc.body))
			if r.Error == nil || r.Error.Code != tc.code || r.Error.Message != tc.msg {
				t.Fatalf("got %+v\nwant %d %q", r.Error, tc.code, tc.msg)
			}
		})
	}
}
