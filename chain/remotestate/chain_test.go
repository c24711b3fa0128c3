package remotestate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain/devnet"
)

// methodRPC answers the methods it has a result for (single calls and
// batches) and "method not found" for the rest.
func methodRPC(t *testing.T, results map[string]json.RawMessage) *Source {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		batch := bytes.HasPrefix(bytes.TrimSpace(body), []byte("["))
		if !batch {
			body = append(append([]byte("["), body...), ']')
		}
		var calls []struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.Unmarshal(body, &calls); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		out := make([]map[string]any, len(calls))
		for i, c := range calls {
			out[i] = map[string]any{"jsonrpc": "2.0", "id": c.ID}
			if res, ok := results[c.Method]; ok {
				out[i]["result"] = res
			} else {
				out[i]["error"] = map[string]any{"code": -32601, "message": "the method " + c.Method + " does not exist/is not available"}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		if batch {
			json.NewEncoder(w).Encode(out)
		} else {
			json.NewEncoder(w).Encode(out[0])
		}
	}))
	t.Cleanup(srv.Close)
	src, err := Dial(context.Background(), Config{URL: srv.URL}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Close)
	return src
}

func chainIDResult(id uint64) json.RawMessage {
	b, _ := json.Marshal(hexutil.EncodeUint64(id))
	return b
}

// DetectChain asks tipnode_genesis, then the preset of the chain id, then
// debug_chainConfig; an answer of another chain id is refused; with none,
// it says what it tried.
func TestDetectChain(t *testing.T) {
	opSpec, err := devnet.OPGenesis(devnet.GenesisConfig{ChainID: 4242})
	if err != nil {
		t.Fatal(err)
	}
	l1Spec, err := devnet.Genesis(devnet.GenesisConfig{ChainID: 4242})
	if err != nil {
		t.Fatal(err)
	}
	var opConfig struct {
		Config json.RawMessage `json:"config"`
	}
	if err := json.Unmarshal(opSpec, &opConfig); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		id       uint64
		results  map[string]json.RawMessage
		from     string
		op       bool
		tried    int
		errWant  error
		errWords []string
	}{
		{"a tipnode OP upstream", 4242, map[string]json.RawMessage{"tipnode_genesis": opSpec, "debug_chainConfig": []byte(`{"chainId":4242}`)}, "tipnode_genesis", true, 0, nil, nil},
		{"a tipnode L1 upstream", 4242, map[string]json.RawMessage{"tipnode_genesis": l1Spec}, "tipnode_genesis", false, 0, nil, nil},
		{"a preset's chain id", 10, map[string]json.RawMessage{}, "preset op-mainnet", true, 1, nil, nil},
		{"op-geth", 4242, map[string]json.RawMessage{"debug_chainConfig": opConfig.Config}, "debug_chainConfig", true, 2, nil, nil},
		{"debug_chainConfig of another chain", 5, map[string]json.RawMessage{"debug_chainConfig": opConfig.Config}, "", false, 0, ErrChain, []string{"4242", "eth_chainId 5"}},
		{"tipnode_genesis of another chain", 5, map[string]json.RawMessage{"tipnode_genesis": opSpec}, "", false, 0, ErrChain, []string{"4242", "eth_chainId 5"}},
		{"nothing", 4242, map[string]json.RawMessage{}, "", false, 3, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.results["eth_chainId"] = chainIDResult(tc.id)
			src := methodRPC(t, tc.results)
			id, err := src.ChainID()
			if err != nil || id.Uint64() != tc.id {
				t.Fatalf("chain id %v, %v", id, err)
			}
			c, tried, err := src.DetectChain(context.Background(), id)
			if tc.errWant != nil {
				if !errors.Is(err, tc.errWant) {
					t.Fatalf("error %v, want %v", err, tc.errWant)
				}
				for _, w := range tc.errWords {
					if !strings.Contains(err.Error(), w) {
						t.Fatalf("error %q does not say %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(tried) != tc.tried {
				t.Fatalf("tried %q, want %d", tried, tc.tried)
			}
			if tc.from == "" {
				if c != nil {
					t.Fatalf("found %s", c.From)
				}
				if !strings.Contains(strings.Join(tried, " "), "tipnode_genesis") || !strings.Contains(strings.Join(tried, " "), "debug_chainConfig") {
					t.Fatalf("tried %q", tried)
				}
				return
			}
			if c == nil || c.From != tc.from || c.OP() != tc.op {
				t.Fatalf("found %+v, want from %s (OP %v)", c, tc.from, tc.op)
			}
			if c.Genesis.Config.ChainID.Uint64() != tc.id {
				t.Fatalf("chain id %v", c.Genesis.Config.ChainID)
			}
			if !tc.op {
				return
			}
			// The stored config keeps the OP part, and another chain id
			// keeps it too.
			again, err := NewChain(c.Config, "stored")
			if err != nil || !again.OP() {
				t.Fatalf("stored config: %v (OP %v)", err, again != nil && again.OP())
			}
			other, err := c.WithChainID(big.NewInt(31337))
			if err != nil || !other.OP() || other.Genesis.Config.ChainID.Uint64() != 31337 || other.Genesis.OP.ChainID != 31337 {
				t.Fatalf("WithChainID: %+v, %v", other, err)
			}
		})
	}
}
