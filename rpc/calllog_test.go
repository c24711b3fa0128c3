package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// syncBuffer is a log sink written by the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// lines returns the JSON log lines with the given message.
func (s *syncBuffer) lines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		if strings.Count(l, `"component"`) > 1 {
			t.Errorf("component repeated: %s", l)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["message"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// Bad requests are logged at debug with their code and message, durations
// carry their unit, timed-out requests are warned about at most once per
// interval (with the count of those held back), and HTTP-level refusals
// are logged.
func TestCallLog(t *testing.T) {
	var logs syncBuffer
	s, err := NewServer(Config{Addr: "127.0.0.1:0", RequestTimeout: 50 * time.Millisecond, MaxRequestBytes: 4096}, zerolog.New(&logs).Level(zerolog.DebugLevel))
	if err != nil {
		t.Fatal(err)
	}
	var clock struct {
		sync.Mutex
		now time.Time
	}
	clock.now = time.Unix(1_700_000_000, 0)
	s.timeoutWarn.now = func() time.Time { clock.Lock(); defer clock.Unlock(); return clock.now }
	release := make(chan struct{})
	s.Register("stuck", func(ctx context.Context, p Params) (any, error) { <-release; return nil, nil })
	s.Register("ok", func(ctx context.Context, p Params) (any, error) { return 1, nil })
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		close(release)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Stop(ctx)
	}()
	url := "http://" + s.Addr().String()
	call := func(method string, params string) {
		post(t, url, `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`)
	}
	call("ok", "[]")
	call("ok", "[1")   // parse error
	call("nope", "[]") // unknown method
	for range 3 {
		call("stuck", "[]")
	}
	clock.Lock()
	clock.now = clock.now.Add(timeoutWarnEvery + time.Second)
	clock.Unlock()
	call("stuck", "[]")
	postCT(t, url, "text/plain", `{}`)
	post(t, url, `{"jsonrpc":"2.0","id":1,"method":"ok","params":["`+strings.Repeat("a", 5000)+`"]}`)
	if resp, err := http.Get(url); err == nil {
		resp.Body.Close()
	}

	calls := logs.lines(t, "rpc call")
	if len(calls) != 7 {
		t.Fatalf("%d call lines, want 7", len(calls))
	}
	for _, c := range calls {
		d, ok := c["duration"].(string)
		if _, err := time.ParseDuration(d); !ok || err != nil {
			t.Fatalf("duration %v is not a duration with its unit", c["duration"])
		}
	}
	if c := calls[1]; c["code"] != float64(CodeParseError) || !strings.Contains(c["error"].(string), "parse error") {
		t.Fatalf("parse error logged as %v", c)
	}
	if c := calls[2]; c["code"] != float64(CodeMethodNotFound) || c["method"] != "nope" || !strings.Contains(c["error"].(string), "does not exist") {
		t.Fatalf("unknown method logged as %v", c)
	}
	warns := logs.lines(t, "rpc request timed out")
	if len(warns) != 2 || warns[0]["level"] != "warn" || warns[0]["unreported"] != float64(0) || warns[1]["unreported"] != float64(2) || warns[0]["limit"] != "50ms" {
		t.Fatalf("timeout warnings %v: want two (the first, then one after the interval counting 2 held back)", warns)
	}
	if r := logs.lines(t, "rpc request refused: content type"); len(r) != 1 || r[0]["contentType"] != "text/plain" {
		t.Fatalf("content-type refusal logged as %v", r)
	}
	if r := logs.lines(t, "rpc request refused: body too large"); len(r) != 1 || r[0]["limit"] != float64(4096) {
		t.Fatalf("body-too-large refusal logged as %v", r)
	}
	if r := logs.lines(t, "rpc request refused: method"); len(r) != 1 || r[0]["httpMethod"] != "GET" {
		t.Fatalf("GET refusal logged as %v", r)
	}
}
