package rpc

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// rawExchange writes req on a new connection to addr, all of it before
// reading (as Python's http.client and many health checkers do), then reads
// one response. The write error, if any, is returned with the response.
func rawExchange(t *testing.T, addr string, req []byte) (*http.Response, []byte, error) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.Write(req); err != nil {
		return nil, nil, fmt.Errorf("write: %w", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return nil, nil, fmt.Errorf("read: %w", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, body, err
}

// checkJSONRPCError checks an HTTP refusal: the status, Content-Type
// application/json and a JSON-RPC error body (id null) with the code.
func checkJSONRPCError(t *testing.T, resp *http.Response, body []byte, status, code int) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d (body %q)", resp.StatusCode, status, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q (body %q)", ct, body)
	}
	var msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *Error          `json:"error"`
	}
	if err := json.Unmarshal(body, &msg); err != nil || msg.JSONRPC != "2.0" || string(msg.ID) != "null" || msg.Error == nil || msg.Error.Code != code || msg.Error.Message == "" {
		t.Fatalf("body %q (%v): want a JSON-RPC error %d with id null", body, err, code)
	}
}

// TestHTTPRefusalsAreJSONRPC: every refusal at the HTTP level, websocket
// upgrades included, answers with Content-Type application/json and a
// JSON-RPC error naming the reason.
func TestHTTPRefusalsAreJSONRPC(t *testing.T) {
	s, _ := testServer(t, Config{MaxRequestBytes: 1 << 20}, nil)
	addr := s.Addr().String()
	call := `{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]}`
	upgrade := "Connection: Upgrade\r\nUpgrade: websocket\r\n"
	wsKey := "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	for _, tc := range []struct {
		name         string
		req          string
		status, code int
	}{
		{"upgrade by POST", "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + upgrade +
			fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(call), call), http.StatusMethodNotAllowed, CodeInvalidRequest},
		{"upgrade without key", "GET / HTTP/1.1\r\nHost: x\r\n" + upgrade + "Sec-WebSocket-Version: 13\r\n\r\n", http.StatusBadRequest, CodeInvalidRequest},
		{"upgrade of another version", "GET / HTTP/1.1\r\nHost: x\r\n" + upgrade + wsKey + "Sec-WebSocket-Version: 8\r\n\r\n", http.StatusBadRequest, CodeInvalidRequest},
		{"GET", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusMethodNotAllowed, CodeInvalidRequest},
		{"text/plain", fmt.Sprintf("POST / HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(call), call),
			http.StatusUnsupportedMediaType, CodeInvalidRequest},
		{"body too large", fmt.Sprintf("POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", 2<<20, strings.Repeat(" ", 2<<20)),
			http.StatusRequestEntityTooLarge, CodeLimitExceeded},
		{"headers too large", "POST / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 20<<10) + "\r\n\r\n",
			http.StatusRequestHeaderFieldsTooLarge, CodeInvalidRequest},
		{"malformed", "POST / HTTP/1.1\r\nHost x\r\n\r\n", http.StatusBadRequest, CodeInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body, err := rawExchange(t, addr, []byte(tc.req))
			if err != nil {
				t.Fatal(err)
			}
			checkJSONRPCError(t, resp, body, tc.status, tc.code)
		})
	}
}

// TestRefusalSeenByClientWritingFirst: a client that writes its whole
// oversized request (a 5 MiB body over a 1 MiB limit, announced or chunked,
// or 4 MiB of headers) before reading gets the 413 / 431 answer: the node
// reads and discards the rest of the request before closing, instead of
// closing with input unread (a connection reset, the answer lost).
func TestRefusalSeenByClientWritingFirst(t *testing.T) {
	s, _ := testServer(t, Config{MaxRequestBytes: 1 << 20}, nil)
	addr := s.Addr().String()
	body := strings.Repeat(" ", 5<<20)
	for _, tc := range []struct {
		name   string
		req    string
		status int
		code   int
	}{
		{"announced body", fmt.Sprintf("POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body),
			http.StatusRequestEntityTooLarge, CodeLimitExceeded},
		{"chunked body", fmt.Sprintf("POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(body), body),
			http.StatusRequestEntityTooLarge, CodeLimitExceeded},
		{"headers", "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + strings.Repeat("X-Big: "+strings.Repeat("a", 1000)+"\r\n", 4096) + "Content-Length: 2\r\n\r\n[]",
			http.StatusRequestHeaderFieldsTooLarge, CodeInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 3 {
				resp, b, err := rawExchange(t, addr, []byte(tc.req))
				if err != nil {
					t.Fatalf("the client did not get the answer: %v", err)
				}
				checkJSONRPCError(t, resp, b, tc.status, tc.code)
			}
		})
	}
}

// TestIDNotValidUnicode: a request whose string id holds invalid UTF-8 or
// an escaped lone surrogate is refused with -32700 and id null (the id is
// echoed byte for byte, so echoing it would make the answer invalid
// JSON); valid ids, escaped surrogate pairs included, are echoed as sent.
// Every answer is valid UTF-8.
func TestIDNotValidUnicode(t *testing.T) {
	_, url := testServer(t, Config{}, nil)
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"\"a\xff\"", false},
		{"\"\xed\xa0\x80\"", false}, // a surrogate encoded in UTF-8
		{`"\ud800"`, false},
		{`"\uDC00x"`, false},
		{`"x\ud800y"`, false},
		{`"\ud800\u0041"`, false},
		{`"\ud800\\u0041"`, false},
		{`"\ud83d\ude00"`, true},
		{`"\uD83D\uDE00\u00e9"`, true},
		{"\"\xc3\xa9\xf0\x9f\x98\x80\"", true},
		{`"\\ud800"`, true}, // an escaped backslash, not an escape
		{`7`, true},
	} {
		for _, batch := range []bool{false, true} {
			body := `{"jsonrpc":"2.0","id":` + tc.id + `,"method":"echo","params":[1]}`
			if batch {
				body = "[" + body + `,{"jsonrpc":"2.0","id":2,"method":"echo","params":[2]}]`
			}
			_, got := post(t, url, body)
			if !utf8.Valid(got) {
				t.Fatalf("id %s: answer not valid UTF-8: %q", tc.id, got)
			}
			var r rpcResp
			if batch {
				all := parseArray(t, got)
				if len(all) != 2 || string(all[1].ID) != "2" || string(all[1].Result) != "2" {
					t.Fatalf("id %s: batch answer %s", tc.id, got)
				}
				r = all[0]
			} else if err := json.Unmarshal(got, &r); err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.ok && (string(r.ID) != tc.id || string(r.Result) != "1"):
				t.Fatalf("id %s (batch %v): answer %s", tc.id, batch, got)
			case !tc.ok && (string(r.ID) != "null" || r.Error == nil || r.Error.Code != CodeParseError):
				t.Fatalf("id %q (batch %v): answer %s, want -32700 with id null", tc.id, batch, got)
			}
		}
	}
}
