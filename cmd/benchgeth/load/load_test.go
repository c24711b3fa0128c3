package load

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

func TestCheckBody(t *testing.T) {
	for _, tc := range []struct {
		name  string
		check Check
		body  string
		kind  string // "" = success
	}{
		{"result", CheckResult, `{"jsonrpc":"2.0","id":1,"result":"0x1"}`, ""},
		{"error", CheckResult, `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"boom"}}`, "rpc error -32000"},
		{"null result", CheckResult, `{"jsonrpc":"2.0","id":1,"result":null}`, "bad response"},
		{"not json", CheckResult, `<html>`, "bad response"},
		{"revert", CheckRevert, `{"jsonrpc":"2.0","id":1,"error":{"code":3,"message":"execution reverted: no","data":"0x08"}}`, ""},
		{"revert as -32000", CheckRevert, `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"execution reverted"}}`, ""},
		{"revert wanted, result", CheckRevert, `{"jsonrpc":"2.0","id":1,"result":"0x"}`, "bad response"},
		{"revert wanted, other error", CheckRevert, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"invalid params"}}`, "rpc error -32602"},
		{"simulate ok", CheckSimulate, `{"id":1,"result":[{"calls":[{"status":"0x1"},{"status":"0x1"}]}]}`, ""},
		{"simulate call failed", CheckSimulate, `{"id":1,"result":[{"calls":[{"status":"0x1"}]},{"calls":[{"status":"0x0","error":{"code":3,"message":"execution reverted"}}]}]}`, "simulated call failed"},
		{"simulate no blocks", CheckSimulate, `{"id":1,"result":[]}`, "bad response"},
		{"batch ok", CheckBatch, `[{"id":1,"result":"0x1"},{"id":2,"result":"0x2"}]`, ""},
		{"batch element error", CheckBatch, `[{"id":1,"result":"0x1"},{"id":2,"error":{"code":-32005,"message":"limit"}}]`, "rpc error -32005"},
		{"batch refused whole", CheckBatch, `{"id":null,"error":{"code":-32600,"message":"too big"}}`, "bad response"},
	} {
		_, f := checkBody(tc.check, []byte(tc.body))
		got := ""
		if f != nil {
			got = f.Kind
		}
		if got != tc.kind {
			t.Errorf("%s: failure %q (%v), want %q", tc.name, got, f, tc.kind)
		}
	}
}

func TestWithID(t *testing.T) {
	line := []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[]}`)
	got, err := withID(line, 12345, nil)
	if err != nil || string(got) != `{"jsonrpc":"2.0","id":12345,"method":"eth_call","params":[]}` {
		t.Fatalf("%s, %v", got, err)
	}
	if _, err := withID([]byte(`{"id":1,"jsonrpc":"2.0"}`), 1, nil); err == nil {
		t.Fatal("line without the prefix accepted")
	}
}

// rpcServer answers eth_chainId with a result and everything else with an
// error, over HTTP POST and websocket; it echoes request ids.
func rpcServer(t *testing.T) *httptest.Server {
	answer := func(body []byte) []byte {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`)
		}
		if req.Method == "eth_chainId" {
			return []byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":"0x1"}`)
		}
		return []byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"error":{"code":-32601,"message":"no such method"}}`)
	}
	var up websocket.Upgrader
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if websocket.IsWebSocketUpgrade(r) {
			conn, err := up.Upgrade(w, r, nil)
			if err != nil {
				return
			}
			defer conn.Close()
			for {
				_, msg, err := conn.ReadMessage()
				if err != nil {
					return
				}
				if err := conn.WriteMessage(websocket.TextMessage, answer(msg)); err != nil {
					return
				}
			}
		}
		body, _ := io.ReadAll(r.Body)
		w.Write(answer(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestRunsCountEveryRequest checks the accounting of both loops over both
// transports: every scheduled request is answered, and the requests the
// server refuses (one line in three) are counted as failures.
func TestRunsCountEveryRequest(t *testing.T) {
	srv := rpcServer(t)
	reqs := [][]byte{
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}`),
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}`),
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"eth_nope","params":[]}`),
	}
	cfg := Config{Duration: 300 * time.Millisecond, Rate: 200, Workers: 4, Connections: 3, Grace: 20 * time.Second}
	for _, ws := range []bool{false, true} {
		url := srv.URL
		if ws {
			url = "ws" + strings.TrimPrefix(srv.URL, "http")
		}
		job := Job{URL: url, WebSocket: ws, Check: CheckResult, Requests: reqs, ServerPID: os.Getpid()}
		res, err := OpenLoop(t.Context(), cfg, job)
		if err != nil {
			t.Fatal(err)
		}
		if res.Scheduled != 60 || res.Answered != 60 || res.OK != 40 || res.Failed != 20 {
			t.Errorf("open loop ws=%v: scheduled %d answered %d ok %d failed %d, want 60 60 40 20 (%v)", ws, res.Scheduled, res.Answered, res.OK, res.Failed, res.Failures)
		}
		if res.Failures["rpc error -32601"].Count != 20 || res.Latency.TotalCount() != 60 {
			t.Errorf("open loop ws=%v: failures %v, %d latencies", ws, res.Failures, res.Latency.TotalCount())
		}
		res, err = ClosedLoop(t.Context(), cfg, job)
		if err != nil {
			t.Fatal(err)
		}
		if res.Answered == 0 || res.OK+res.Failed != res.Answered || res.Failed < res.Answered/3-int64(cfg.Connections) {
			t.Errorf("closed loop ws=%v: answered %d ok %d failed %d", ws, res.Answered, res.OK, res.Failed)
		}
	}
}

// TestOpenLoopDeadline: a server that never answers makes every request a
// failure once the grace period ends, and the run returns at the deadline.
func TestOpenLoopDeadline(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	cfg := Config{Duration: 100 * time.Millisecond, Rate: 100, Workers: 2, Connections: 1, Grace: 200 * time.Millisecond}
	res, err := OpenLoop(t.Context(), cfg, Job{URL: srv.URL, Check: CheckResult, Requests: [][]byte{[]byte(`{}`)}, ServerPID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK != 0 || res.Failed != res.Scheduled || res.Scheduled != 10 {
		t.Fatalf("scheduled %d ok %d failed %d: %v", res.Scheduled, res.OK, res.Failed, res.Failures)
	}
	if !bytes.Contains([]byte(strings.Join(res.FailureKinds(), ",")), []byte("timeout")) {
		t.Fatalf("failure kinds %v", res.FailureKinds())
	}
}

func TestReadResponse(t *testing.T) {
	for _, tc := range []struct {
		name   string
		raw    string
		status int
		keep   bool
		body   string
		bad    bool
	}{
		{"length", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\nhelloNEXT", 200, true, "hello", false},
		{"chunked", "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\na;x=1\r\n0123456789\r\n0\r\nTrailer: 1\r\n\r\n", 200, true, "abc0123456789", false},
		{"close", "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 4\r\n\r\nbusy", 503, false, "busy", false},
		{"until eof", "HTTP/1.0 200 OK\r\n\r\nall of it", 200, false, "all of it", false},
		{"bad status", "HTTP/2 200\r\n\r\n", 0, false, "", true},
		{"bad length", "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", 0, false, "", true},
		{"short body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", 0, false, "", true},
		{"bad chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 0, false, "", true},
	} {
		var buf bytes.Buffer
		status, keep, err := readResponse(bufio.NewReader(strings.NewReader(tc.raw)), &buf)
		if tc.bad {
			if err == nil {
				t.Errorf("%s: accepted", tc.name)
			}
			continue
		}
		if err != nil || status != tc.status || keep != tc.keep || buf.String() != tc.body {
			t.Errorf("%s: %d %v %q %v; want %d %v %q", tc.name, status, keep, buf.String(), err, tc.status, tc.keep, tc.body)
		}
	}
}

// TestHTTPClientPool: the pool never opens more than its limit and reuses
// connections; large (chunked) answers from net/http arrive whole.
func TestHTTPClientPool(t *testing.T) {
	big := strings.Repeat("x", 100_000)
	conns := make(chan struct{}, 100)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":"` + big + `"}`))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns <- struct{}{}
		}
	}
	srv.Start()
	defer srv.Close()
	h, err := newHTTPClient(srv.URL, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf bytes.Buffer
			for j := 0; j < 10; j++ {
				body, f := h.post(t.Context(), []byte(`{}`), &buf)
				if f != nil || !bytes.Contains(body, []byte(big)) {
					t.Errorf("post: %v, %d bytes", f, len(body))
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := len(conns); n > 2 || n == 0 {
		t.Fatalf("%d connections opened, limit 2", n)
	}
}

func TestCombine(t *testing.T) {
	a, b := newRecorder(), newRecorder()
	a.answer(time.Millisecond, nil)
	a.answer(3*time.Millisecond, &Failure{Kind: "rpc error 1", Detail: "x"})
	b.answer(2*time.Millisecond, nil)
	b.fail(&Failure{Kind: "timeout", Detail: "y"})
	ra, rb := &Result{Elapsed: time.Second, ServerCPU: 10 * time.Millisecond}, &Result{Elapsed: time.Second, ServerCPU: 20 * time.Millisecond}
	merge(ra, []*recorder{a})
	merge(rb, []*recorder{b})
	c := Combine(ra, rb)
	if c.OK != 2 || c.Failed != 2 || c.Answered != 3 || c.Elapsed != 2*time.Second || c.RPS() != 1 {
		t.Fatalf("combined %+v", c)
	}
	if c.CPUPerRequest() != 10*time.Millisecond || c.Latency.TotalCount() != 3 || len(c.Failures) != 2 {
		t.Fatalf("cpu/req %v, %d latencies, failures %v", c.CPUPerRequest(), c.Latency.TotalCount(), c.Failures)
	}
	if q := c.Quantile(100); q < 3*time.Millisecond || q > 3100*time.Microsecond {
		t.Fatalf("max latency %v", q)
	}
}
