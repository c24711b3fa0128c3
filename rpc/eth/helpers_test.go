package eth

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/tipnode/tipnode/rpc"
)

// HTTP and JSON helpers of the method tests (the transport's own tests have
// their copies in package rpc).

func post(t testing.TB, url, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// jsonEqual compares two JSON texts structurally (numbers as text).
func jsonEqual(t *testing.T, got []byte, want string) bool {
	t.Helper()
	if want == "" {
		return len(bytes.TrimSpace(got)) == 0
	}
	g, err := decodeAny(got)
	if err != nil {
		t.Errorf("response is not JSON: %v: %s", err, got)
		return false
	}
	w, err := decodeAny([]byte(want))
	if err != nil {
		t.Fatalf("bad want JSON: %v: %s", err, want)
	}
	return reflect.DeepEqual(g, w)
}

func decodeAny(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
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
