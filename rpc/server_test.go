package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
)

func TestEnvelope(t *testing.T) {
	_, url := testServer(t, Config{}, nil)
	tests := []struct {
		name, body, want string
	}{
		{"number id", `{"jsonrpc":"2.0","id":1,"method":"echo","params":["a"]}`,
			`{"jsonrpc":"2.0","id":1,"result":"a"}`},
		{"string id", `{"jsonrpc":"2.0","id":"abc","method":"echo","params":[1]}`,
			`{"jsonrpc":"2.0","id":"abc","result":1}`},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"echo","params":[true]}`,
			`{"jsonrpc":"2.0","id":null,"result":true}`},
		{"absent params", `{"jsonrpc":"2.0","id":2,"method":"echo"}`,
			`{"jsonrpc":"2.0","id":2,"result":null}`},
		{"null params", `{"jsonrpc":"2.0","id":2,"method":"echo","params":null}`,
			`{"jsonrpc":"2.0","id":2,"result":null}`},
		{"null result", `{"jsonrpc":"2.0","id":3,"method":"nil","params":[]}`,
			`{"jsonrpc":"2.0","id":3,"result":null}`},
		{"raw result sent as is", `{"jsonrpc":"2.0","id":3,"method":"raw","params":[]}`,
			`{"jsonrpc":"2.0","id":3,"result":{"b":[1,2],"a":"x"}}`},
		{"unknown members ignored", `{"jsonrpc":"2.0","id":3,"method":"nil","extra":{}}`,
			`{"jsonrpc":"2.0","id":3,"result":null}`},
		{"notification", `{"jsonrpc":"2.0","method":"echo","params":[1]}`, ``},
		{"batch in order", `[{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]},{"jsonrpc":"2.0","id":"2","method":"echo","params":[2]},{"jsonrpc":"2.0","id":3,"method":"echo","params":[3]}]`,
			`[{"jsonrpc":"2.0","id":1,"result":1},{"jsonrpc":"2.0","id":"2","result":2},{"jsonrpc":"2.0","id":3,"result":3}]`},
		{"batch with notifications", `[{"jsonrpc":"2.0","method":"echo"},{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]},{"jsonrpc":"2.0","method":"nosuch"}]`,
			`[{"jsonrpc":"2.0","id":1,"result":1}]`},
		{"batch of notifications", `[{"jsonrpc":"2.0","method":"echo"},{"jsonrpc":"2.0","method":"echo"}]`, ``},
		{"empty batch", `[]`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: empty batch"}}`},
		{"batch of non-objects", `[1,"x",null]`,
			`[{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: not a JSON object"}},{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: not a JSON object"}},{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: not a JSON object"}}]`},
		{"batch mixed invalid", `[{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]},{"jsonrpc":"1.0","id":2,"method":"echo"}]`,
			`[{"jsonrpc":"2.0","id":1,"result":1},{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"invalid request: \"jsonrpc\" must be \"2.0\""}}]`},
		{"parse error", `{"jsonrpc":"2.0","id":1,"method":"echo"`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: unexpected end of JSON input"}}`},
		{"parse error batch", `[{"jsonrpc":"2.0"},`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: unexpected end of JSON input"}}`},
		{"empty body", ``,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: empty message"}}`},
		{"scalar message", `42`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: not a JSON object"}}`},
		{"missing method", `{"jsonrpc":"2.0","id":1}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"invalid request: \"method\" must be a string"}}`},
		{"non-string method", `{"jsonrpc":"2.0","id":1,"method":7}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"invalid request: \"method\" must be a string"}}`},
		{"empty method", `{"jsonrpc":"2.0","id":1,"method":""}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"invalid request: \"method\" must not be empty"}}`},
		{"wrong jsonrpc", `{"jsonrpc":"1.0","id":1,"method":"echo"}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"invalid request: \"jsonrpc\" must be \"2.0\""}}`},
		{"missing jsonrpc", `{"id":1,"method":"echo"}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"invalid request: \"jsonrpc\" must be \"2.0\""}}`},
		{"numeric jsonrpc", `{"jsonrpc":2.0,"id":1,"method":"echo"}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"invalid request: \"jsonrpc\" must be \"2.0\""}}`},
		{"invalid without id is answered", `{"jsonrpc":"2.0","method":1}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: \"method\" must be a string"}}`},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"echo"}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: id must be a string, number or null"}}`},
		{"bool id", `{"jsonrpc":"2.0","id":true,"method":"echo"}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: id must be a string, number or null"}}`},
		{"scalar params", `{"jsonrpc":"2.0","id":1,"method":"echo","params":"x"}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"invalid request: \"params\" must be an array"}}`},
		{"object params", `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":1}}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"invalid params: params must be an array"}}`},
		{"method not found", `{"jsonrpc":"2.0","id":1,"method":"eth_nosuch"}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"the method eth_nosuch does not exist/is not available"}}`},
		{"too many args", `{"jsonrpc":"2.0","id":1,"method":"echo","params":[1,2]}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"too many arguments, want at most 1"}}`},
		{"invalid param names argument", `{"jsonrpc":"2.0","id":1,"method":"word","params":["0xzz"]}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"invalid argument 0 (slot): invalid hex in 32-byte word \"0xzz\""}}`},
		{"missing param", `{"jsonrpc":"2.0","id":1,"method":"word","params":[]}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"missing value for required argument 0 (slot)"}}`},
		{"plain error is internal", `{"jsonrpc":"2.0","id":1,"method":"plainErr"}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"disk on fire"}}`},
		{"panic recovered", `{"jsonrpc":"2.0","id":1,"method":"panic"}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"internal error"}}`},
		{"wrapped *Error with data", `{"jsonrpc":"2.0","id":1,"method":"rpcErr"}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":3,"message":"execution reverted","data":"0x01"}}`},
		{"error mapper", `{"jsonrpc":"2.0","id":1,"method":"sentinel"}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"header not found"}}`},
		{"ErrorCoder", `{"jsonrpc":"2.0","id":1,"method":"coded"}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32015,"message":"coded failure","data":"0xdead"}}`},
		{"deadline exceeded", `{"jsonrpc":"2.0","id":1,"method":"deadline"}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"request timed out"}}`},
		{"unmarshallable result", `{"jsonrpc":"2.0","id":1,"method":"unmarshallable"}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"internal error: result cannot be encoded"}}`},
		{"subscribe over http", `{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"notifications not supported"}}`},
		{"whitespace around", " \n {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\",\"params\":[1]} \n",
			`{"jsonrpc":"2.0","id":1,"result":1}`},
		{"inline result", `{"jsonrpc":"2.0","id":1,"method":"inlineEcho","params":["x"]}`,
			`{"jsonrpc":"2.0","id":1,"result":"x"}`},
		{"inline params error", `{"jsonrpc":"2.0","id":1,"method":"inlineEcho","params":[1,2]}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"too many arguments, want at most 1"}}`},
		{"inline panic recovered", `{"jsonrpc":"2.0","id":1,"method":"inlinePanic"}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"internal error"}}`},
		{"inline plain error", `{"jsonrpc":"2.0","id":1,"method":"inlineSentinel"}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"inline failure"}}`},
		{"inline in a batch", `[{"jsonrpc":"2.0","id":1,"method":"inlineEcho","params":[1]},{"jsonrpc":"2.0","id":2,"method":"inlinePanic"}]`,
			`[{"jsonrpc":"2.0","id":1,"result":1},{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"internal error"}}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, got := post(t, url, tt.body)
			if status != http.StatusOK {
				t.Fatalf("status %d, body %s", status, got)
			}
			if !jsonEqual(t, got, tt.want) {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// The id is echoed byte for byte, whatever its JSON type and size.
func TestIDEchoedExactly(t *testing.T) {
	_, url := testServer(t, Config{}, nil)
	for _, id := range []string{`1`, `0`, `-7`, `123456789012345678901234567890`, `1.5`, `1e400`, `"x\u0041"`, `""`, `null`} {
		t.Run(id, func(t *testing.T) {
			_, got := post(t, url, `{"jsonrpc":"2.0","method":"nil","id":`+id+`}`)
			want := `{"jsonrpc":"2.0","id":` + id + `,"result":null}`
			if string(got) != want {
				t.Errorf("got %s want %s", got, want)
			}
		})
	}
}

func TestHTTPStatus(t *testing.T) {
	s, url := testServer(t, Config{MaxRequestBytes: 1024}, func(s *Server) {
		s.Handle("GET /metrics", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "metrics") }))
	})
	_ = s
	t.Run("GET rejected", func(t *testing.T) {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
			t.Errorf("status %d allow %q", resp.StatusCode, resp.Header.Get("Allow"))
		}
	})
	t.Run("mounted handler", func(t *testing.T) {
		resp, err := http.Get(url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "metrics" {
			t.Errorf("status %d body %q", resp.StatusCode, b)
		}
	})
	// Only application/json, with at most charset=utf-8: anything a web page
	// may POST cross-origin without a preflight is 415 with a JSON-RPC body.
	for _, tc := range []struct {
		ct string
		ok bool
	}{
		{"application/json", true},
		{"application/json; charset=utf-8", true},
		{"Application/JSON;charset=UTF-8", true},
		{"text/plain", false},
		{"text/plain;charset=UTF-8", false},
		{"", false},
		{"application/x-www-form-urlencoded", false},
		{"multipart/form-data; boundary=x", false},
		{"application/json-rpc", false},
		{"application/jsonrequest", false},
		{"application/json; charset=latin1", false},
		{"application/json; boundary=x", false},
		{"application/json;", true},
		{"application/json; charset", false},
	} {
		t.Run("content-type "+tc.ct, func(t *testing.T) {
			resp, err := http.Post(url, tc.ct, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"nil"}`))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if tc.ok {
				if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
					t.Errorf("status %d content-type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
				}
				return
			}
			shown := tc.ct
			if shown == "" {
				shown = "(none)"
			}
			msg, _ := json.Marshal("invalid request: unsupported content type " + shown + ": JSON-RPC takes Content-Type application/json")
			want := fmt.Sprintf(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":%s}}`, msg)
			if resp.StatusCode != http.StatusUnsupportedMediaType || resp.Header.Get("Content-Type") != "application/json" || !jsonEqual(t, body, want) {
				t.Errorf("status %d content-type %q body %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
		})
	}
	t.Run("body too large", func(t *testing.T) {
		big := `{"jsonrpc":"2.0","id":1,"method":"echo","params":["` + strings.Repeat("a", 2000) + `"]}`
		status, got := post(t, url, big)
		if status != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d", status)
		}
		want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32005,"message":"request body too large (limit 1024 bytes)"}}`
		if !jsonEqual(t, got, want) {
			t.Errorf("got %s", got)
		}
		// Chunked body (no Content-Length) is cut at the limit too.
		req, _ := http.NewRequest("POST", url, io.MultiReader(strings.NewReader(big)))
		req.Header.Set("Content-Type", "application/json")
		req.ContentLength = -1
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("chunked: status %d", resp.StatusCode)
		}
		// A normal request is unaffected.
		status, got = post(t, url, `{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]}`)
		if status != 200 || !jsonEqual(t, got, `{"jsonrpc":"2.0","id":1,"result":1}`) {
			t.Errorf("normal request after limit: %d %s", status, got)
		}
	})
}

// ServeHTTP works without Start, e.g. under httptest.
func TestServeHTTPWithHTTPTest(t *testing.T) {
	s, err := NewServer(Config{}, zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	registerTestMethods(s)
	ts := httptest.NewServer(s)
	defer ts.Close()
	_, got := post(t, ts.URL, `{"jsonrpc":"2.0","id":1,"method":"echo","params":["x"]}`)
	if !jsonEqual(t, got, `{"jsonrpc":"2.0","id":1,"result":"x"}`) {
		t.Errorf("got %s", got)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	status, _ := post(t, ts.URL, `{"jsonrpc":"2.0","id":1,"method":"echo","params":["x"]}`)
	if status != http.StatusServiceUnavailable {
		t.Errorf("after Stop: status %d", status)
	}
}

// enterCounted counts one more handler running in cur and raises max to
// cur when it is above; it returns the count.
func enterCounted(cur, max *atomic.Int32) int32 {
	n := cur.Add(1)
	for {
		m := max.Load()
		if n <= m || max.CompareAndSwap(m, n) {
			return n
		}
	}
}

func TestBatchConcurrencyBounded(t *testing.T) {
	const limit = 3
	// More Ps than the limit: with every P running a handler, a batch's
	// elements run one at a time (TestBatchInlineWhenBusy).
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(limit + 1))
	var cur, max atomic.Int32
	gate := make(chan struct{})
	var once sync.Once
	_, url := testServer(t, Config{BatchParallelism: limit}, func(s *Server) {
		s.Register("slot", func(ctx context.Context, p Params) (any, error) {
			n := enterCounted(&cur, &max)
			defer cur.Add(-1)
			if n == limit {
				once.Do(func() { close(gate) })
			}
			select { // the first calls wait until `limit` of them run at once
			case <-gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			var i int
			if err := p.Decode(0, "i", &i); err != nil {
				return nil, err
			}
			return i, nil
		})
	})
	var b strings.Builder
	var want strings.Builder
	b.WriteString("[")
	want.WriteString("[")
	for i := 0; i < 20; i++ {
		if i > 0 {
			b.WriteString(",")
			want.WriteString(",")
		}
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"slot","params":[%d]}`, i, i)
		fmt.Fprintf(&want, `{"jsonrpc":"2.0","id":%d,"result":%d}`, i, i)
	}
	b.WriteString("]")
	want.WriteString("]")
	_, got := post(t, url, b.String())
	if !jsonEqual(t, got, want.String()) {
		t.Fatalf("got %s", got)
	}
	if m := max.Load(); m != limit {
		t.Errorf("max concurrency %d, want %d", m, limit)
	}
}

// A batch's elements run concurrently while the server has a P without a
// handler, and one after another, on the batch's goroutine, once every P
// has one. Only handlers count, whatever the transport.
func TestBatchInlineWhenBusy(t *testing.T) {
	const procs = 2
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	var cur, max atomic.Int32
	hold := make(chan struct{})
	s, url := testServer(t, Config{BatchParallelism: 8}, func(s *Server) {
		s.Register("hold", func(ctx context.Context, p Params) (any, error) {
			select {
			case <-hold:
				return true, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
		s.Register("track", func(ctx context.Context, p Params) (any, error) {
			n := enterCounted(&cur, &max)
			defer cur.Add(-1)
			time.Sleep(5 * time.Millisecond)
			return n, nil
		})
	})
	var batch strings.Builder
	batch.WriteString("[")
	for i := range 6 {
		if i > 0 {
			batch.WriteString(",")
		}
		fmt.Fprintf(&batch, `{"jsonrpc":"2.0","id":%d,"method":"track","params":[]}`, i)
	}
	batch.WriteString("]")

	// Idle: the batch spreads over the Ps.
	if _, got := post(t, url, batch.String()); !bytes.Contains(got, []byte(`"result"`)) {
		t.Fatalf("batch: %s", got)
	}
	if m := max.Load(); m < 2 {
		t.Errorf("idle server: a batch ran at most %d element at once, want at least 2", m)
	}

	// Handlers are counted, not the goroutines waiting for them: with all
	// Ps but one holding a handler, a batch over a websocket (whose message
	// goroutine waits for its elements) still runs two elements at once.
	var wg sync.WaitGroup
	holdUntil := func(n int32) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			post(t, url, `{"jsonrpc":"2.0","id":1,"method":"hold","params":[]}`)
		}()
		deadline := time.Now().Add(5 * time.Second)
		for s.handlers.Load() < n {
			if time.Now().After(deadline) {
				t.Fatalf("held handlers never ran (%d running)", s.handlers.Load())
			}
			time.Sleep(time.Millisecond)
		}
	}
	for n := int32(1); n < procs; n++ {
		holdUntil(n)
	}
	max.Store(0)
	if got := wsCall(t, wsDial(t, url), batch.String()); !bytes.Contains(got, []byte(`"result"`)) {
		t.Fatalf("websocket batch: %s", got)
	}
	if m := max.Load(); m < 2 {
		t.Errorf("one P free: a websocket batch ran at most %d element at once, want at least 2", m)
	}

	// Every P has a handler (held): the batch runs one element at a time.
	holdUntil(procs)
	max.Store(0)
	if _, got := post(t, url, batch.String()); !bytes.Contains(got, []byte(`"result"`)) {
		t.Fatalf("batch: %s", got)
	}
	if m := max.Load(); m != 1 {
		t.Errorf("busy server: a batch ran %d elements at once, want 1", m)
	}
	close(hold)
	wg.Wait()
}

func TestBatchTooLarge(t *testing.T) {
	_, url := testServer(t, Config{MaxBatch: 3}, nil)
	el := `{"jsonrpc":"2.0","id":1,"method":"nil"}`
	_, got := post(t, url, "["+strings.Repeat(el+",", 3)+el+"]")
	if !jsonEqual(t, got, `{"jsonrpc":"2.0","id":null,"error":{"code":-32005,"message":"batch too large (4 elements, limit 3)"}}`) {
		t.Errorf("got %s", got)
	}
	_, got = post(t, url, "["+el+","+el+","+el+"]")
	if r := parseArray(t, got); len(r) != 3 {
		t.Errorf("batch at limit: %s", got)
	}
}

func parseArray(t *testing.T, b []byte) []rpcResp {
	t.Helper()
	var out []rpcResp
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return out
}

func TestResponseTooLarge(t *testing.T) {
	_, url := testServer(t, Config{MaxResponseBytes: 400}, nil)
	tooLarge := `{"code":-32005,"message":"response too large (limit 400 bytes)"}`
	_, got := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"big","params":[500]}`)
	if !jsonEqual(t, got, `{"jsonrpc":"2.0","id":1,"error":`+tooLarge+`}`) {
		t.Errorf("single: %s", got)
	}
	// In a batch, answers are counted in element order: the big element is
	// replaced, and it spends the batch's budget, so the elements after it
	// are refused too (run or not: those started alongside it ran).
	_, got = post(t, url, `[{"jsonrpc":"2.0","id":1,"method":"big","params":[10]},{"jsonrpc":"2.0","id":2,"method":"big","params":[150]},{"jsonrpc":"2.0","id":3,"method":"big","params":[500]},{"jsonrpc":"2.0","id":4,"method":"big","params":[10]}]`)
	r := parseArray(t, got)
	if len(r) != 4 || string(r[0].Result) != `"xxxxxxxxxx"` || string(r[1].Result) != `"`+strings.Repeat("x", 150)+`"` {
		t.Fatalf("batch: %s", got)
	}
	for _, e := range r[2:] {
		if e.Error == nil || e.Error.Code != CodeLimitExceeded || !strings.HasPrefix(e.Error.Message, "response too large (limit 400 bytes)") {
			t.Fatalf("batch: %s", got)
		}
	}
}

// TestBatchBudgetStopsExecution: a batch whose answers passed
// MaxResponseBytes runs no further element: those get -32005 "… not
// executed" without their handler being called; the answers that fit are
// the first ones, in element order, whatever the parallelism.
func TestBatchBudgetStopsExecution(t *testing.T) {
	for _, par := range []int{1, 4} {
		t.Run(fmt.Sprint(par), func(t *testing.T) {
			var calls atomic.Int64
			_, url := testServer(t, Config{MaxResponseBytes: 1000, BatchParallelism: par}, func(s *Server) {
				s.Register("sized", func(ctx context.Context, p Params) (any, error) {
					calls.Add(1)
					var n int
					if err := p.Decode(0, "size", &n); err != nil {
						return nil, err
					}
					return strings.Repeat("y", n), nil
				})
			})
			var b strings.Builder
			b.WriteString("[")
			const elements, size = 40, 300
			for i := range elements {
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"sized","params":[%d]}`, i, size)
			}
			b.WriteString("]")
			_, got := post(t, url, b.String())
			r := parseArray(t, got)
			if len(r) != elements {
				t.Fatalf("%d answers", len(r))
			}
			notRun := 0
			for i, e := range r {
				switch {
				case i < 2: // two answers of about 340 bytes fit in 1000, three do not
					if e.Error != nil {
						t.Fatalf("element %d: %+v", i, e.Error)
					}
				case e.Error == nil || e.Error.Code != CodeLimitExceeded:
					t.Fatalf("element %d: %s", i, got)
				case strings.HasSuffix(e.Error.Message, "not executed"):
					notRun++
				}
			}
			if ran := calls.Load(); ran+int64(notRun) != elements || ran > int64(3+par) {
				t.Fatalf("%d elements ran, %d not executed: want at most %d run", ran, notRun, 3+par)
			}
		})
	}
}

func TestRequestTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var sawDeadline atomic.Bool
	_, url := testServer(t, Config{RequestTimeout: 50 * time.Millisecond}, func(s *Server) {
		s.Register("stuck", func(ctx context.Context, p Params) (any, error) {
			<-release // ignores ctx on purpose
			return "late", nil
		})
		s.Register("polite", func(ctx context.Context, p Params) (any, error) {
			if _, ok := ctx.Deadline(); ok {
				sawDeadline.Store(true)
			}
			<-ctx.Done()
			return nil, ctx.Err()
		})
	})
	timeout := `{"code":-32002,"message":"request timed out"}`
	var wg sync.WaitGroup
	for _, m := range []string{"stuck", "polite"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, got := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"`+m+`"}`)
			if !jsonEqual(t, got, `{"jsonrpc":"2.0","id":1,"error":`+timeout+`}`) {
				t.Errorf("%s: %s", m, got)
			}
		}()
	}
	// A concurrent normal request is answered normally.
	_, got := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"echo","params":[5]}`)
	if !jsonEqual(t, got, `{"jsonrpc":"2.0","id":1,"result":5}`) {
		t.Errorf("normal: %s", got)
	}
	wg.Wait()
	if !sawDeadline.Load() {
		t.Error("handler context had no deadline")
	}
	// In a batch, finished elements keep their results.
	_, got = post(t, url, `[{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]},{"jsonrpc":"2.0","id":2,"method":"stuck"}]`)
	if !jsonEqual(t, got, `[{"jsonrpc":"2.0","id":1,"result":1},{"jsonrpc":"2.0","id":2,"error":`+timeout+`}]`) {
		t.Errorf("batch: %s", got)
	}
}

func TestConnectionLimit(t *testing.T) {
	_, url := testServer(t, Config{MaxConns: 2}, nil)
	addr := strings.TrimPrefix(url, "http://")
	// Connection A: a keep-alive client that makes normal requests.
	clientA := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer clientA.CloseIdleConnections()
	callA := func() {
		t.Helper()
		resp, err := clientA.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !jsonEqual(t, b, `{"jsonrpc":"2.0","id":1,"result":1}`) {
			t.Fatalf("normal request: %d %s", resp.StatusCode, b)
		}
	}
	callA()
	// Connection B: held open, fills the limit.
	b, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// Connection C is refused with 503.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"nil"}`
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	rb, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || parseResp(t, rb).Error.Code != CodeLimitExceeded {
		t.Errorf("refused connection: %d %s", resp.StatusCode, rb)
	}
	// A still works on its open connection.
	callA()
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("zero config: %v", err)
	}
	d := DefaultConfig()
	if d.Addr != "127.0.0.1:8545" || d.MaxRequestBytes != 5<<20 || d.MaxBatch != 1000 || d.RequestTimeout != 5*time.Second {
		t.Errorf("defaults: %+v", d)
	}
	if d.WSMaxQueuedBytes != 32<<20 || d.MaxQueuedOutput != 256<<20 || d.WSIdleTimeout != 5*time.Minute ||
		d.MaxConnsPerIP != 100 || d.ConnReserve != 100 || d.ConnReservePerIP != 4 || d.ReadTimeout != 15*time.Second {
		t.Errorf("limit defaults: %+v", d)
	}
	// Derived defaults follow the limits they depend on.
	if c := (Config{MaxResponseBytes: 64 << 20, MaxConns: 50}).WithDefaults(); c.WSMaxQueuedBytes != 64<<20 || c.MaxQueuedOutput != 256<<20 || c.ConnReserve != 5 {
		t.Errorf("derived defaults: %+v", c)
	}
	bad := []Config{
		{Addr: "nohostport"},
		{MaxBatch: -1},
		{RequestTimeout: -time.Second},
		{MaxConns: -5},
		{WSMaxMessageBytes: -1},
		{MaxConnsPerIP: -1},
		{WSIdleTimeout: -time.Second},
		{WSMaxQueuedBytes: 1 << 20}, // below MaxResponseBytes
		{WSMaxQueuedBytes: 64 << 20, MaxQueuedOutput: 32 << 20}, // output below one queue
		{MaxConns: 10, ConnReserve: 10},
		{ReadHeaderTimeout: 20 * time.Second, ReadTimeout: 10 * time.Second},
	}
	for _, c := range bad {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: want error", c)
		}
		if _, err := NewServer(c, zerolog.New(io.Discard)); err == nil {
			t.Errorf("NewServer(%+v): want error", c)
		}
	}
}

func TestRegisterPanics(t *testing.T) {
	s, _ := NewServer(Config{}, zerolog.New(io.Discard))
	s.Register("a", func(context.Context, Params) (any, error) { return nil, nil })
	for name, f := range map[string]func(){
		"dup":       func() { s.Register("a", func(context.Context, Params) (any, error) { return nil, nil }) },
		"reserved":  func() { s.Register(MethodSubscribe, func(context.Context, Params) (any, error) { return nil, nil }) },
		"nil":       func() { s.Register("b", nil) },
		"dup sub":   func() { s.RegisterSubscription("k", noopSub); s.RegisterSubscription("k", noopSub) },
		"empty sub": func() { s.RegisterSubscription("", noopSub) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

func noopSub(context.Context, *Subscription, Params) error { return nil }

func TestGracefulStop(t *testing.T) {
	started := make(chan struct{})
	release := make(chan struct{})
	s, url := testServer(t, Config{}, func(s *Server) {
		s.Register("slow", func(ctx context.Context, p Params) (any, error) {
			close(started)
			<-release
			return "done", nil
		})
	})
	got := make(chan []byte, 1)
	go func() {
		resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"slow"}`))
		if err != nil {
			t.Error(err)
			got <- nil
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- b
	}()
	<-started
	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop(context.Background()) }()
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned before the in-flight request finished: %v", err)
	default:
	}
	close(release)
	if b := <-got; !jsonEqual(t, b, `{"jsonrpc":"2.0","id":1,"result":"done"}`) {
		t.Errorf("in-flight response: %s", b)
	}
	if err := <-stopped; err != nil {
		t.Errorf("Stop: %v", err)
	}
	if _, err := http.Post(url, "application/json", strings.NewReader(`{}`)); err == nil {
		t.Error("server still accepting after Stop")
	}
}

func TestStopTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{})
	s, err := NewServer(Config{Addr: "127.0.0.1:0"}, zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	s.Register("stuck", func(ctx context.Context, p Params) (any, error) { close(started); <-release; return nil, nil })
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	go http.Post("http://"+s.Addr().String(), "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"stuck"}`))
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Stop(ctx); err == nil {
		t.Error("Stop with a stuck handler and expired context: want error")
	}
}

// A connection that never sends a request must not hold Stop up
// (net/http would wait 5s for it).
func TestStopClosesUnusedConnections(t *testing.T) {
	s, url := testServer(t, Config{}, nil)
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Make sure the server has accepted it: a request on another connection
	// is served after the accept loop passed c.
	post(t, url, `{"jsonrpc":"2.0","id":1,"method":"nil"}`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

// WrapHandlers wraps every registered method but the inline ones.
func TestWrapHandlers(t *testing.T) {
	_, url := testServer(t, Config{}, func(s *Server) {
		s.Register("plain", func(context.Context, Params) (any, error) { return "plain", nil })
		s.RegisterInline("inline", func(context.Context, Params) (any, error) { return "inline", nil })
		s.WrapHandlers(func(method string, h Handler) Handler {
			return func(ctx context.Context, p Params) (any, error) {
				res, err := h(ctx, p)
				return fmt.Sprintf("wrapped %s: %v", method, res), err
			}
		})
	})
	for method, want := range map[string]string{"plain": `"wrapped plain: plain"`, "inline": `"inline"`} {
		_, body := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"`+method+`"}`)
		if !jsonEqual(t, body, `{"jsonrpc":"2.0","id":1,"result":`+want+`}`) {
			t.Errorf("%s: %s", method, body)
		}
	}
}

// TestHonoursContext: a method registered with HonoursContext runs on the
// goroutine executing the message, so its call is answered when the
// handler returns (the handler enforces the deadline), not at the deadline
// as a method with a goroutine of its own is. Once the context has ended, a
// failed handler's answer is the same timeout error as the others'; a
// result it still produced is kept. Over HTTP, a websocket and in a batch.
func TestHonoursContext(t *testing.T) {
	const timeout = 100 * time.Millisecond
	release := make(chan struct{})
	var running atomic.Int32
	s, url := testServer(t, Config{RequestTimeout: timeout}, func(s *Server) {
		late := func(ctx context.Context, p Params) (any, error) {
			var fail bool
			if err := p.Decode(0, "fail", &fail); err != nil {
				return nil, err
			}
			running.Add(1)
			defer running.Add(-1)
			<-release // ignores ctx on purpose: answered only when it returns
			if fail {
				return nil, errors.New("the handler's own failure")
			}
			return "late", nil
		}
		s.Register("cooperative", late, HonoursContext)
		limiter, err := NewLimiter(1, 0, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		s.RegisterLimited("cooperativeLimited", limiter, late, HonoursContext)
		s.Register("handedOff", late)
	})
	timeoutErr := `{"code":-32002,"message":"request timed out"}`
	type answer struct {
		body []byte
		at   time.Duration
	}
	call := func(msg string, ws bool) <-chan answer {
		out := make(chan answer, 1)
		start := time.Now()
		var c *websocket.Conn
		if ws {
			c = wsDial(t, url)
		}
		go func() {
			var b []byte
			if ws {
				if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err == nil {
					_, b, _ = c.ReadMessage()
				}
				c.Close()
			} else {
				_, b = post(t, url, msg)
			}
			out <- answer{b, time.Since(start)}
		}()
		return out
	}
	req := func(method string, fail bool) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":[%v]}`, method, fail)
	}
	// Handed off: answered at the deadline while the handler still runs.
	got := <-call(req("handedOff", false), false)
	if !jsonEqual(t, got.body, `{"jsonrpc":"2.0","id":1,"error":`+timeoutErr+`}`) || got.at > 20*timeout {
		t.Fatalf("handed off: %s after %v", got.body, got.at)
	}
	cases := []struct {
		msg  string
		ws   bool
		want string
	}{
		{req("cooperative", true), false, `{"jsonrpc":"2.0","id":1,"error":` + timeoutErr + `}`},
		{req("cooperative", false), false, `{"jsonrpc":"2.0","id":1,"result":"late"}`},
		{req("cooperativeLimited", true), true, `{"jsonrpc":"2.0","id":1,"error":` + timeoutErr + `}`},
		{`[` + req("cooperative", false) + `,` + strings.Replace(req("cooperative", true), `"id":1`, `"id":2`, 1) + `]`, false,
			`[{"jsonrpc":"2.0","id":1,"result":"late"},{"jsonrpc":"2.0","id":2,"error":` + timeoutErr + `}]`},
	}
	answers := make([]<-chan answer, len(cases))
	for i, tc := range cases {
		answers[i] = call(tc.msg, tc.ws)
	}
	// Every call's handler is running (and the handed-off one still; the
	// batch's second element starts only when a core is free of handlers),
	// well past the deadline, and no call has been answered.
	const handlers = 5
	deadline := time.Now().Add(20 * timeout)
	for running.Load() < handlers && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(3 * timeout)
	for i, a := range answers {
		select {
		case got := <-a:
			t.Fatalf("case %d answered while its handler runs: %s after %v", i, got.body, got.at)
		default:
		}
	}
	if n := running.Load(); n < handlers {
		t.Fatalf("%d handlers running, want at least %d", n, handlers)
	}
	close(release)
	for i, tc := range cases {
		if got := <-answers[i]; !jsonEqual(t, got.body, tc.want) {
			t.Errorf("case %d: %s", i, got.body)
		}
	}
	// The count drops just after each handler returns.
	for s.handlers.Load() > 0 && time.Now().Before(deadline.Add(time.Minute)) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := s.handlers.Load(); n != 0 {
		t.Errorf("%d handlers counted after all returned", n)
	}
}

// TestHandedOffParamsOutliveAnswer: a handed-off handler still running
// after its call was answered at the deadline reads its own parameters,
// not the next request's: the HTTP transport reuses a connection's request
// buffer once a request is answered.
func TestHandedOffParamsOutliveAnswer(t *testing.T) {
	release := make(chan struct{})
	seen := make(chan string, 1)
	_, url := testServer(t, Config{RequestTimeout: 50 * time.Millisecond}, func(s *Server) {
		s.Register("late", func(ctx context.Context, p Params) (any, error) {
			<-release // ignores ctx on purpose: reads its parameters after the answer
			var v string
			err := p.Decode(0, "v", &v)
			seen <- fmt.Sprint(v, err)
			return v, err
		})
	})
	// One keep-alive connection: the second request lands in the buffer
	// the first one was read into.
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	send := func(body string) string {
		resp, err := client.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	first, second := strings.Repeat("a", 64), strings.Repeat("b", 64)
	if got := send(`{"jsonrpc":"2.0","id":1,"method":"late","params":["` + first + `"]}`); !strings.Contains(got, "request timed out") {
		t.Fatalf("first call: %s", got)
	}
	if got := send(`{"jsonrpc":"2.0","id":1,"method":"echo","params":["` + second + `"]}`); !strings.Contains(got, second) {
		t.Fatalf("second call: %s", got)
	}
	close(release)
	if got := <-seen; got != first+"<nil>" {
		t.Fatalf("the late handler read %q, want its own parameter %q", got, first)
	}
}
