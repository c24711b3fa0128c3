package rpc

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/rpc/rpctest"
)

// errSentinel is mapped by the test error mapper.
var errSentinel = errors.New("sentinel")

type codedErr struct{}

func (codedErr) Error() string  { return "coded failure" }
func (codedErr) ErrorCode() int { return CodeVMError }
func (codedErr) ErrorData() any { return "0xdead" }

// hexWord is a test decoder with its own error text, as the method layer's
// decoders have (eth.Word): Params must prefix that text with the
// argument's position and name.
type hexWord string

func (w *hexWord) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if _, err := hex.DecodeString(strings.TrimPrefix(s, "0x")); err != nil {
		return fmt.Errorf("invalid hex in 32-byte word %q", s)
	}
	*w = hexWord(s)
	return nil
}

// testServer starts a Server on 127.0.0.1:0 with the standard test methods
// and stops it at cleanup.
func testServer(t *testing.T, cfg Config, setup func(*Server)) (*Server, string) {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	s, err := NewServer(cfg, zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	registerTestMethods(s)
	if setup != nil {
		setup(s)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return s, "http://" + s.Addr().String()
}

func registerTestMethods(s *Server) {
	// RegisterInline: same answers as Register's, on the message's goroutine.
	s.RegisterInline("inlineEcho", func(ctx context.Context, p Params) (any, error) {
		if err := p.AtMost(1); err != nil {
			return nil, err
		}
		var v any
		_, err := p.DecodeOptional(0, "value", &v)
		return v, err
	})
	s.RegisterInline("inlinePanic", func(context.Context, Params) (any, error) { panic("inline boom") })
	s.RegisterInline("inlineSentinel", func(context.Context, Params) (any, error) { return nil, errors.New("inline failure") })
	s.Register("echo", func(ctx context.Context, p Params) (any, error) {
		if err := p.AtMost(1); err != nil {
			return nil, err
		}
		var v any
		if _, err := p.DecodeOptional(0, "value", &v); err != nil {
			return nil, err
		}
		return v, nil
	})
	s.Register("nil", func(ctx context.Context, p Params) (any, error) { return nil, nil })
	s.Register("raw", func(ctx context.Context, p Params) (any, error) { return RawResult(`{"b":[1,2],"a":"x"}`), nil })
	s.Register("word", func(ctx context.Context, p Params) (any, error) {
		var w hexWord
		if err := p.Decode(0, "slot", &w); err != nil {
			return nil, err
		}
		return w, nil
	})
	s.Register("plainErr", func(ctx context.Context, p Params) (any, error) { return nil, errors.New("disk on fire") })
	s.Register("panic", func(ctx context.Context, p Params) (any, error) { panic("boom") })
	s.Register("rpcErr", func(ctx context.Context, p Params) (any, error) {
		return nil, fmt.Errorf("wrapped: %w", &Error{Code: CodeExecutionReverted, Message: "execution reverted", Data: "0x01"})
	})
	s.Register("sentinel", func(ctx context.Context, p Params) (any, error) {
		return nil, fmt.Errorf("ctx: %w", errSentinel)
	})
	s.Register("coded", func(ctx context.Context, p Params) (any, error) { return nil, codedErr{} })
	s.Register("deadline", func(ctx context.Context, p Params) (any, error) { return nil, context.DeadlineExceeded })
	s.Register("unmarshallable", func(ctx context.Context, p Params) (any, error) { return make(chan int), nil })
	s.Register("big", func(ctx context.Context, p Params) (any, error) {
		var n int
		if err := p.Decode(0, "size", &n); err != nil {
			return nil, err
		}
		return strings.Repeat("x", n), nil
	})
	s.SetErrorMapper(func(err error) *Error {
		if errors.Is(err, errSentinel) {
			return &Error{Code: CodeHeaderNotFound, Message: "header not found"}
		}
		return nil
	})
}

func post(t testing.TB, url, body string) (int, []byte) {
	t.Helper()
	return rpctest.Post(t, url, body)
}

func postCT(t testing.TB, url, ct, body string) (int, []byte) {
	t.Helper()
	return rpctest.PostCT(t, url, ct, body)
}

func jsonEqual(t *testing.T, got []byte, want string) bool {
	t.Helper()
	return rpctest.JSONEqual(t, got, want)
}

type rpcResp struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *Error          `json:"error"`
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

func wsDial(t *testing.T, url string) *websocket.Conn {
	t.Helper()
	c, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(url, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	t.Cleanup(func() { c.Close() })
	return c
}

func wsCall(t *testing.T, c *websocket.Conn, msg string) []byte {
	t.Helper()
	if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		t.Fatal(err)
	}
	return wsRead(t, c)
}

func wsRead(t *testing.T, c *websocket.Conn) []byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, b, err := c.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
