package remotestate

import (
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"context"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/rs/zerolog"
)

// fakeRPC answers eth_getBalance / eth_getTransactionCount / eth_getCode /
// eth_getStorageAt from fixed values (or a JSON-RPC error when fail is
// set), counting HTTP requests and the calls in them.
type fakeRPC struct {
	requests, calls atomic.Int64
	fail            atomic.Bool
}

func (f *fakeRPC) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	body, _ := io.ReadAll(r.Body)
	var batch []struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(body, &batch) != nil {
		http.Error(w, "want a batch", http.StatusBadRequest)
		return
	}
	out := make([]map[string]any, len(batch))
	for i, c := range batch {
		f.calls.Add(1)
		res := map[string]any{"jsonrpc": "2.0", "id": c.ID}
		switch {
		case f.fail.Load():
			res["error"] = map[string]any{"code": -32000, "message": "missing trie node"}
		case c.Method == "eth_getBalance":
			res["result"] = "0x2a"
		case c.Method == "eth_getTransactionCount":
			res["result"] = "0x3"
		case c.Method == "eth_getCode":
			res["result"] = "0x6001"
		case c.Method == "eth_getStorageAt":
			res["result"] = "0x00000000000000000000000000000000000000000000000000000000000000ff"
		}
		out[i] = res
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// An account is one HTTP request (a batch of three calls), a slot one
// request; a failing upstream is ErrFetch naming the upstream and the
// entity.
func TestSourceFetch(t *testing.T) {
	up := new(fakeRPC)
	srv := httptest.NewServer(up)
	defer srv.Close()
	s, err := Dial(context.Background(), Config{URL: srv.URL}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a := common.HexToAddress("0x1234")
	acc, code, err := s.Account(7, a)
	if err != nil || acc.Nonce != 3 || acc.Balance.Uint64() != 42 || string(code) != "\x60\x01" || acc.CodeHash != crypto.Keccak256Hash(code) {
		t.Fatalf("account %+v %x, %v", acc, code, err)
	}
	if up.requests.Load() != 1 || up.calls.Load() != 3 {
		t.Fatalf("%d requests, %d calls for an account", up.requests.Load(), up.calls.Load())
	}
	v, err := s.Storage(7, a, common.Hash{1})
	if err != nil || v != common.BigToHash(big.NewInt(255)) {
		t.Fatalf("slot %x, %v", v, err)
	}
	if up.requests.Load() != 2 {
		t.Fatalf("%d requests after a slot", up.requests.Load())
	}
	up.fail.Store(true)
	_, _, err = s.Account(7, a)
	if !errors.Is(err, ErrFetch) || !strings.Contains(err.Error(), srv.URL) || !strings.Contains(err.Error(), a.Hex()) || !strings.Contains(err.Error(), "missing trie node") {
		t.Fatalf("failing upstream: %v", err)
	}
	if _, err := s.Storage(7, a, common.Hash{1}); !errors.Is(err, ErrFetch) || !strings.Contains(err.Error(), "slot") {
		t.Fatalf("failing upstream: %v", err)
	}
}

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct {
		in, url  string
		block    uint64
		hasBlock bool
		err      bool
	}{
		{"http://h:8545", "http://h:8545", 0, false, false},
		{"http://h:8545@123", "http://h:8545", 123, true, false},
		{"ws://h:8546@0x10", "ws://h:8546", 16, true, false},
		{"https://user@h/path", "https://user@h/path", 0, false, false},
		{"https://user@h/path@5", "https://user@h/path", 5, true, false},
		{"http://h@latest", "", 0, false, true},
	} {
		u, b, has, err := ParseTarget(tc.in)
		if (err != nil) != tc.err || u != tc.url || b != tc.block || has != tc.hasBlock {
			t.Errorf("ParseTarget(%q) = %q, %d, %v, %v", tc.in, u, b, has, err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{}, {URL: "ftp://x"}, {URL: "http://x", MaxInFlight: -1}} {
		if err := c.WithDefaults().Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v", c, err)
		}
	}
	if err := (Config{URL: "http://x"}).WithDefaults().Validate(); err != nil {
		t.Error(err)
	}
}

func FuzzParseTarget(f *testing.F) {
	f.Add("http://h:8545@123")
	f.Add("ws://u@h/p@0x10")
	f.Fuzz(func(t *testing.T, s string) {
		u, _, has, err := ParseTarget(s)
		if err == nil && !has && u != s {
			t.Fatalf("ParseTarget(%q) changed the URL to %q without a block", s, u)
		}
	})
}
