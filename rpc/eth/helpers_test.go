package eth

import (
	"encoding/json"
	"testing"

	"github.com/tipnode/tipnode/rpc"
	"github.com/tipnode/tipnode/rpc/rpctest"
)

// HTTP and JSON helpers of the method tests (shared parts in rpc/rpctest).

func post(t testing.TB, url, body string) (int, []byte) {
	t.Helper()
	return rpctest.Post(t, url, body)
}

func jsonEqual(t *testing.T, got []byte, want string) bool {
	t.Helper()
	return rpctest.JSONEqual(t, got, want)
}

type rpcResp struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *rpc.Error      `json:"error"`
	Method string          `json:"method"`
	Params *struct {
		Subscription string          `json:"subscription"`
		Result       json.RawMessage `json:"result"`
	} `json:"params"`
}

func parseResp(t testing.TB, b []byte) rpcResp {
	t.Helper()
	var r rpcResp
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("bad response %s: %v", b, err)
	}
	return r
}
