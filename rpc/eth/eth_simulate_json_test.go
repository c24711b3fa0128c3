package eth

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/rpc"
)

// simResultMaps is the reference encoding of a simulate result: each block
// as marshalBlock's map plus "calls", encoded by encoding/json (what
// eth_simulateV1 returned before simResult wrote its JSON by hand).
func simResultMaps(r simResult) []any {
	out := make([]any, len(r))
	for i, b := range r {
		m := marshalBlock(b.block, true, b.fullTx, b.config, nil)
		if b.fullTx {
			for k, tx := range m["transactions"].([]any) {
				if rt, ok := tx.(*rpcTransaction); ok && k < len(b.senders) {
					rt.From = b.senders[k]
				}
			}
		}
		m["calls"] = b.calls
		out[i] = m
	}
	return out
}

// TestSimulateJSONMatchesMaps runs every eth_simulateV1 request of the
// conformance fixtures through the handler and checks that simResult's
// encoding is byte for byte the reference encoding (so also valid, compact
// JSON, as an rpc.RawResult must be).
func TestSimulateJSONMatchesMaps(t *testing.T) {
	db, g := chaintest.ImportedStore(t)
	w := chaintest.StartWriter(t, db, g)
	mgr := pending.NewManager(w, g.Config, pending.HeaderParams{}, nil, nil)
	api, err := NewAPI(DefaultAPIConfig(), g, chain.NewExecutor(g.Config), mgr, w, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	files := listConformanceFiles(t, filepath.Join(chaintest.Dir(t), "tests", simulateDir))
	checked := 0
	for _, f := range files {
		data, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		io, err := parseIOFile(data)
		if err != nil {
			t.Fatalf("%s: %v", f.rel, err)
		}
		for _, p := range io.pairs {
			var req struct {
				Method string            `json:"method"`
				Params []json.RawMessage `json:"params"`
			}
			if err := json.Unmarshal([]byte(p.request), &req); err != nil || req.Method != "eth_simulateV1" {
				continue
			}
			res, err := api.simulate(context.Background(), rpc.NewParams(req.Params...))
			if err != nil {
				continue // an error answer: nothing encoded
			}
			got, err := res.encode()
			if err != nil {
				t.Fatalf("%s line %d: %v", f.rel, p.line, err)
			}
			want, err := json.Marshal(simResultMaps(res))
			if err != nil {
				t.Fatalf("%s line %d: reference: %v", f.rel, p.line, err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s line %d: encodings differ\n got %s\nwant %s", f.rel, p.line, got, want)
			}
			checked++
		}
	}
	if checked < 20 {
		t.Fatalf("only %d simulate results compared", checked)
	}
	t.Logf("%d simulate results compared", checked)
}

// TestReadContextHash: a ReadContext's hash (the in-memory head's for
// latest, which eth_simulateV1 takes as its first block's parent hash) is
// its header's, for every kind of selector.
func TestReadContextHash(t *testing.T) {
	db, g := chaintest.ImportedStore(t)
	w := chaintest.StartWriter(t, db, g)
	mgr := pending.NewManager(w, g.Config, pending.HeaderParams{}, nil, nil)
	api, err := NewAPI(DefaultAPIConfig(), g, chain.NewExecutor(g.Config), mgr, w, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	one := uint64(1)
	for _, sel := range []BlockSelector{{Tag: TagLatest}, {Tag: TagPending}, {Tag: TagEarliest}, {Number: &one}} {
		rc, err := api.Resolve(context.Background(), sel)
		if err != nil {
			t.Fatalf("%+v: %v", sel, err)
		}
		if got, want := rc.Hash(), rc.Header.Hash(); got != want {
			t.Errorf("%+v: hash %s, header hashes to %s", sel, got, want)
		}
		rc.Close()
	}
}
