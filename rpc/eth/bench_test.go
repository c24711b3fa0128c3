package eth

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/rpc"
)

// benchNode starts a node on the conformance store and returns a keep-alive
// client and the URL; it skips when the data is absent.
func benchNode(b *testing.B) (*http.Client, string) {
	b.Helper()
	db, g := chaintest.ImportedStore(b)
	_, url := startNode(b, db, g, nil)
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}, url
}

// benchRequest runs body through the full HTTP stack b.N times (in
// parallel), skipping when the method is not registered and failing on any
// error response.
func benchRequest(b *testing.B, body string) {
	client, url := benchNode(b)
	first, err := postRaw(client, url, body)
	if err != nil {
		b.Fatal(err)
	}
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *rpc.Error      `json:"error"`
	}
	if err := json.Unmarshal(first, &r); err != nil {
		b.Fatalf("bad response %s: %v", first, err)
	}
	if r.Error != nil && r.Error.Code == rpc.CodeMethodNotFound {
		b.Skipf("method not registered yet: %s", r.Error.Message)
	}
	if r.Error != nil {
		b.Fatalf("error response: %d %s", r.Error.Code, r.Error.Message)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := postRaw(client, url, body); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkHTTPGetStorageAt: one storage read at latest (beacon-roots
// contract slot) per request.
func BenchmarkHTTPGetStorageAt(b *testing.B) {
	benchRequest(b, `{"jsonrpc":"2.0","id":1,"method":"eth_getStorageAt","params":["0x000f3df6d732807ef1319fb7b8bb8522d0beac02","0x1a4","latest"]}`)
}

// BenchmarkHTTPGetProof: eth_getProof of a conformance contract with 2
// storage keys at latest (EIP-1186 proofs from the state trie).
func BenchmarkHTTPGetProof(b *testing.B) {
	benchRequest(b, `{"jsonrpc":"2.0","id":1,"method":"eth_getProof","params":["0x7dcd17433742f4c0ca53122ab541d0ba67fc27df",["0x0","0x1"],"latest"]}`)
}

// BenchmarkHTTPCall: a small eth_call against a conformance contract.
func BenchmarkHTTPCall(b *testing.B) {
	benchRequest(b, `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":"0x17e7eedce4ac02ef114a7ed9fe6e2f33feba1667","input":"0xff01"},"latest"]}`)
}

// BenchmarkHTTPGetBlockByNumberFull: the head block with full transactions.
func BenchmarkHTTPGetBlockByNumberFull(b *testing.B) {
	benchRequest(b, `{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["latest",true]}`)
}

// BenchmarkHTTPGetLogsAddress: eth_getLogs of one contract over the whole
// chain (bloom skipping; the unfiltered answer is a 21 MB log dump).
func BenchmarkHTTPGetLogsAddress(b *testing.B) {
	benchRequest(b, `{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[{"fromBlock":"earliest","toBlock":"latest","address":"0x7dcd17433742f4c0ca53122ab541d0ba67fc27df"}]}`)
}
