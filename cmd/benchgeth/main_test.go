package main

import (
	"strings"
	"testing"
	"time"

	"github.com/tipnode/tipnode/cmd/benchgeth/chaingen"
)

func workload(t *testing.T, name string) chaingen.Workload {
	t.Helper()
	for _, w := range chaingen.Workloads() {
		if w.Name == name {
			return w
		}
	}
	t.Fatalf("no workload %s", name)
	return chaingen.Workload{}
}

// TestNormalize: what legitimately differs between the nodes is ignored,
// anything else is not.
func TestNormalize(t *testing.T) {
	for _, tc := range []struct {
		workload string
		a, b     string
		same     bool
	}{
		{"balanceof-latest", `{"jsonrpc":"2.0","id":1,"result":"0x01"}`, `{"id":1,"jsonrpc":"2.0","result":"0x01"}`, true},
		{"balanceof-latest", `{"jsonrpc":"2.0","id":1,"result":"0x01"}`, `{"jsonrpc":"2.0","id":1,"result":"0x02"}`, false},
		// A revert: each node's own code, data compared, message not (go-ethereum
		// appends the reason, tipnode answers exactly "execution reverted").
		{"revert", `{"id":1,"error":{"code":3,"message":"execution reverted: x","data":"0x08c3"}}`,
			`{"id":1,"error":{"code":-32000,"message":"execution reverted","data":"0x08c3"}}`, true},
		{"revert", `{"id":1,"error":{"code":3,"message":"execution reverted: x","data":"0x08c3"}}`,
			`{"id":1,"error":{"code":-32000,"message":"execution reverted","data":"0x08c4"}}`, false},
		// tipnode answering a revert with go-ethereum's code is a difference.
		{"revert", `{"id":1,"error":{"code":3,"message":"execution reverted: x","data":"0x08c3"}}`,
			`{"id":1,"error":{"code":3,"message":"execution reverted","data":"0x08c3"}}`, false},
		// Other errors: message and data.
		{"balanceof-latest", `{"id":1,"error":{"code":-32000,"message":"out of gas"}}`,
			`{"id":1,"error":{"code":-32000,"message":"out of gas"}}`, true},
		{"balanceof-latest", `{"id":1,"error":{"code":-32000,"message":"out of gas"}}`,
			`{"id":1,"error":{"code":-32000,"message":"invalid opcode"}}`, false},
		{"simulate1", `{"id":1,"result":[{"hash":"0xaa","stateRoot":"0x11","calls":[{"status":"0x1","returnData":"0x","gasUsed":"0x5208","logs":[{"address":"0x01","topics":["0x02"],"data":"0x","blockHash":"0xaa"}]}]}]}`,
			`{"id":1,"result":[{"hash":"0xbb","stateRoot":"0x00","calls":[{"status":"0x1","returnData":"0x","gasUsed":"0x5208","logs":[{"address":"0x01","topics":["0x02"],"data":"0x","blockHash":"0xbb"}]}]}]}`, true},
		{"simulate1", `{"id":1,"result":[{"calls":[{"status":"0x1","returnData":"0x","gasUsed":"0x5208"}]}]}`,
			`{"id":1,"result":[{"calls":[{"status":"0x1","returnData":"0x","gasUsed":"0x5209"}]}]}`, false},
		// eth_getProof at latest: the account proof leads to each node's own
		// latest root (tipnode's sequencer seals blocks); the rest must agree.
		{"getproof", `{"id":1,"result":{"address":"0x01","accountProof":["0xaa"],"balance":"0x0","storageHash":"0x5","storageProof":[{"key":"0x1","value":"0x2","proof":["0xcc"]}]}}`,
			`{"id":1,"result":{"address":"0x01","accountProof":["0xbb"],"balance":"0x0","storageHash":"0x5","storageProof":[{"key":"0x1","value":"0x2","proof":["0xcc"]}]}}`, true},
		{"getproof", `{"id":1,"result":{"address":"0x01","accountProof":["0xaa"],"balance":"0x0","storageHash":"0x5","storageProof":[{"key":"0x1","value":"0x2","proof":["0xcc"]}]}}`,
			`{"id":1,"result":{"address":"0x01","accountProof":["0xaa"],"balance":"0x0","storageHash":"0x5","storageProof":[{"key":"0x1","value":"0x2","proof":["0xcd"]}]}}`, false},
		{"batch100", `[{"id":2,"result":"0x2"},{"id":1,"result":"0x1"}]`, `[{"id":1,"result":"0x1"},{"id":2,"result":"0x2"}]`, true},
		{"batch100", `[{"id":1,"result":"0x1"},{"id":2,"result":"0x2"}]`, `[{"id":1,"result":"0x1"},{"id":2,"result":"0x3"}]`, false},
	} {
		w := workload(t, tc.workload)
		a, err := normalize(w, []byte(tc.a), gethKind("geth").revertCode)
		if err != nil {
			t.Fatal(err)
		}
		b, err := normalize(w, []byte(tc.b), tipnodeKind("tipnode", false).revertCode)
		if err != nil {
			t.Fatal(err)
		}
		if (a == b) != tc.same {
			t.Errorf("%s: same=%v, want %v:\n%s\n%s", tc.workload, a == b, tc.same, a, b)
		}
	}
}

func TestImportElapsed(t *testing.T) {
	geth := gethKind("geth")
	out := []byte("INFO [..] Imported new chain segment\nImport done in 1m2.5s.\n\nObject memory: 1 MB\n")
	if d, ok := geth.importElapsed(out); !ok || d != 62500*time.Millisecond {
		t.Errorf("geth: %v %v", d, ok)
	}
	segs := []byte("INFO [11-23|03:23:33.762] Imported new chain segment               number=10 hash=48eebb..e429a2 blocks=10 txs=200 mgas=8.308 elapsed=206.461ms mgasps=40.241 age=3y3w3d\n" +
		"INFO [11-23|03:23:40.000] Imported new chain segment               number=20 hash=48eebb..e429a2 blocks=10 txs=200 mgas=8.308 elapsed=1m2.5s mgasps=40.241 age=3y3w3d\n")
	if d, ok := geth.blocksElapsed(segs); !ok || d != 62500*time.Millisecond+206461*time.Microsecond {
		t.Errorf("geth blocks: %v %v", d, ok)
	}
	if _, ok := geth.importElapsed([]byte("Fatal: boom\n")); ok {
		t.Error("geth: found a time in a failed import")
	}
	tip := tipnodeKind("tipnode", false)
	out = []byte(`{"level":"info","message":"importing","elapsed":"9s"}` + "\n" + `{"level":"info","blocks":300,"elapsed":"1.234s","message":"import done"}` + "\n")
	if d, ok := tip.importElapsed(out); !ok || d != 1234*time.Millisecond {
		t.Errorf("tipnode: %v %v", d, ok)
	}
}

func TestQuickFlags(t *testing.T) {
	o, err := parseFlags([]string{"--quick", "--gen-only", "--blocks", "7"})
	if err != nil {
		t.Fatal(err)
	}
	q := chaingen.QuickConfig()
	if o.Chain.Slots != q.Slots || o.Chain.Blocks != 7 || o.Load.Duration != 3*time.Second {
		t.Fatalf("quick options %+v", o)
	}
	if _, err := parseFlags([]string{"--gen-only", "--workloads", "nope"}); err != nil {
		t.Fatal("--gen-only does not look at workloads; got", err)
	}
	if _, err := parseFlags([]string{"--geth", "/nonexistent"}); err == nil {
		t.Fatal("missing geth binary accepted")
	}
	for _, env := range []string{"GOMAXPROCS", "=1", "GOMAXPROCS=1 GOGC"} {
		if _, err := parseFlags([]string{"--gen-only", "--tipnode.env", env}); err == nil || !strings.Contains(err.Error(), "KEY=VALUE") {
			t.Fatalf("--tipnode.env %q: got %v, want a KEY=VALUE refusal", env, err)
		}
	}
	if o, err := parseFlags([]string{"--gen-only", "--tipnode.env", "GOMAXPROCS=1 GOGC=200"}); err != nil || o.TipnodeEnv != "GOMAXPROCS=1 GOGC=200" {
		t.Fatalf("--tipnode.env GOMAXPROCS=1 GOGC=200: %v %+v", err, o)
	}
}
