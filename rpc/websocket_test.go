package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// feedSub is a test subscription kind: it sends "first" synchronously from
// the subscribe handler (before the id is even returned), then forwards
// values from the test, and reports the Subscription to the test.
type feedSub struct {
	subs   chan *Subscription
	values chan any
}

func newFeedSub() *feedSub {
	return &feedSub{subs: make(chan *Subscription, 10), values: make(chan any)}
}

func (f *feedSub) handler(ctx context.Context, sub *Subscription, p Params) error {
	if err := p.AtMost(1); err != nil {
		return err
	}
	var opt struct {
		Fail bool `json:"fail"`
	}
	if _, err := p.DecodeOptional(0, "options", &opt); err != nil {
		return err
	}
	if opt.Fail {
		return ErrInvalidParams("fail requested")
	}
	if err := sub.Notify("first"); err != nil {
		return err
	}
	f.subs <- sub
	go func() {
		for {
			select {
			case v := <-f.values:
				if sub.Notify(v) != nil {
					return
				}
			case <-sub.Done():
				return
			}
		}
	}()
	return nil
}

func TestWebsocketRequests(t *testing.T) {
	_, url := testServer(t, Config{}, nil)
	c := wsDial(t, url)
	tests := []struct{ name, req, want string }{
		{"single", `{"jsonrpc":"2.0","id":1,"method":"echo","params":["ws"]}`, `{"jsonrpc":"2.0","id":1,"result":"ws"}`},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]},{"jsonrpc":"2.0","id":2,"method":"nosuch"}]`,
			`[{"jsonrpc":"2.0","id":1,"result":1},{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"the method nosuch does not exist/is not available"}}]`},
		{"parse error", `{`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: unexpected end of JSON input"}}`},
		{"empty batch", `[]`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: empty batch"}}`},
		{"unknown kind", `{"jsonrpc":"2.0","id":3,"method":"eth_subscribe","params":["nope"]}`,
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no \"nope\" subscription in eth namespace"}}`},
		{"missing kind", `{"jsonrpc":"2.0","id":3,"method":"eth_subscribe","params":[]}`,
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"missing value for required argument 0 (kind)"}}`},
		{"unsubscribe unknown", `{"jsonrpc":"2.0","id":4,"method":"eth_unsubscribe","params":["0x1234"]}`,
			`{"jsonrpc":"2.0","id":4,"result":false}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := wsCall(t, c, tt.req); !jsonEqual(t, got, tt.want) {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
	// A notification gets no answer: the next message answers the next request.
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","method":"echo","params":[0]}`)); err != nil {
		t.Fatal(err)
	}
	if got := wsCall(t, c, `{"jsonrpc":"2.0","id":9,"method":"echo","params":[9]}`); !jsonEqual(t, got, `{"jsonrpc":"2.0","id":9,"result":9}`) {
		t.Errorf("after notification: %s", got)
	}
}

func TestWebsocketConcurrentRequests(t *testing.T) {
	release := make(chan struct{})
	_, url := testServer(t, Config{}, func(s *Server) {
		s.Register("wait", func(ctx context.Context, p Params) (any, error) {
			select {
			case <-release:
				return "released", nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
	})
	c := wsDial(t, url)
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":1,"method":"wait"}`)); err != nil {
		t.Fatal(err)
	}
	// The second request is answered while the first is still blocked.
	if got := wsCall(t, c, `{"jsonrpc":"2.0","id":2,"method":"echo","params":[2]}`); !jsonEqual(t, got, `{"jsonrpc":"2.0","id":2,"result":2}`) {
		t.Fatalf("got %s", got)
	}
	close(release)
	if got := wsRead(t, c); !jsonEqual(t, got, `{"jsonrpc":"2.0","id":1,"result":"released"}`) {
		t.Errorf("got %s", got)
	}
}

func TestSubscription(t *testing.T) {
	feed := newFeedSub()
	_, url := testServer(t, Config{}, func(s *Server) { s.RegisterSubscription("feed", feed.handler) })
	c := wsDial(t, url)

	// The subscribe response arrives before the notification sent during subscribe.
	resp := parseResp(t, wsCall(t, c, `{"jsonrpc":"2.0","id":7,"method":"eth_subscribe","params":["feed"]}`))
	if resp.Error != nil || string(resp.ID) != "7" {
		t.Fatalf("subscribe: %+v", resp)
	}
	var id string
	if err := json.Unmarshal(resp.Result, &id); err != nil || len(id) != 34 || !strings.HasPrefix(id, "0x") {
		t.Fatalf("subscription id %s", resp.Result)
	}
	sub := <-feed.subs
	if sub.ID() != id || sub.Kind() != "feed" {
		t.Fatalf("sub %s %s", sub.ID(), sub.Kind())
	}
	want := `{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"` + id + `","result":"first"}}`
	if got := wsRead(t, c); !jsonEqual(t, got, want) {
		t.Fatalf("first notification: %s", got)
	}
	feed.values <- map[string]int{"n": 2}
	want = `{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"` + id + `","result":{"n":2}}}`
	if got := wsRead(t, c); !jsonEqual(t, got, want) {
		t.Fatalf("second notification: %s", got)
	}

	// Unsubscribe ends it.
	if got := wsCall(t, c, `{"jsonrpc":"2.0","id":8,"method":"eth_unsubscribe","params":["`+id+`"]}`); !jsonEqual(t, got, `{"jsonrpc":"2.0","id":8,"result":true}`) {
		t.Fatalf("unsubscribe: %s", got)
	}
	<-sub.Done()
	if err := sub.Notify(1); !errors.Is(err, ErrSubscriptionClosed) {
		t.Errorf("Notify after unsubscribe: %v", err)
	}
	if sub.Context().Err() == nil {
		t.Error("sub context not cancelled")
	}

	// Invalid params from the handler: error, and no subscription left behind.
	if got := wsCall(t, c, `{"jsonrpc":"2.0","id":9,"method":"eth_subscribe","params":["feed",{"fail":true}]}`); !jsonEqual(t, got, `{"jsonrpc":"2.0","id":9,"error":{"code":-32602,"message":"fail requested"}}`) {
		t.Errorf("failing subscribe: %s", got)
	}
	// Subscribe inside a batch: the notification still follows the batch response.
	got := wsCall(t, c, `[{"jsonrpc":"2.0","id":10,"method":"eth_subscribe","params":["feed"]},{"jsonrpc":"2.0","id":11,"method":"echo","params":[1]}]`)
	if arr := parseArray(t, got); len(arr) != 2 || arr[0].Error != nil {
		t.Fatalf("batch subscribe: %s", got)
	}
	sub2 := <-feed.subs
	if n := parseResp(t, wsRead(t, c)); n.Method != "eth_subscription" || n.Params.Subscription != sub2.ID() {
		t.Fatalf("batch sub notification: %+v", n)
	}

	// Closing the connection ends the subscription.
	c.Close()
	select {
	case <-sub2.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("subscription not ended by connection close")
	}
}

// More notifications before activation than the queue holds drop the connection.
func TestSlowConsumerDropped(t *testing.T) {
	errc := make(chan error, 1)
	_, url := testServer(t, Config{WSSendQueue: 2}, func(s *Server) {
		s.RegisterSubscription("flood", func(ctx context.Context, sub *Subscription, p Params) error {
			for i := 0; ; i++ {
				if err := sub.Notify(i); err != nil {
					errc <- err
					return nil
				}
			}
		})
	})
	c := wsDial(t, url)
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["flood"]}`)); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, ErrSlowConsumer) {
		t.Fatalf("Notify: %v", err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for { // whatever was queued may arrive; then the connection must end
		if _, _, err := c.ReadMessage(); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("connection not dropped")
			}
			return
		}
	}
}

func TestWebsocketMessageTooLarge(t *testing.T) {
	_, url := testServer(t, Config{WSMaxMessageBytes: 512}, nil)
	other := wsDial(t, url)
	c := wsDial(t, url)
	big := `{"jsonrpc":"2.0","id":1,"method":"echo","params":["` + strings.Repeat("a", 1000) + `"]}`
	if err := c.WriteMessage(websocket.TextMessage, []byte(big)); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _, err := c.ReadMessage()
	if !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
		t.Fatalf("want close 1009, got %v", err)
	}
	// Another connection is unaffected.
	if got := wsCall(t, other, `{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]}`); !jsonEqual(t, got, `{"jsonrpc":"2.0","id":1,"result":1}`) {
		t.Errorf("other connection: %s", got)
	}
}

func TestWebsocketGracefulStop(t *testing.T) {
	feed := newFeedSub()
	started := make(chan struct{})
	release := make(chan struct{})
	s, url := testServer(t, Config{}, func(s *Server) {
		s.RegisterSubscription("feed", feed.handler)
		s.Register("slow", func(ctx context.Context, p Params) (any, error) {
			close(started)
			<-release
			return "done", nil
		})
	})
	c := wsDial(t, url)
	wsCall(t, c, `{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["feed"]}`)
	sub := <-feed.subs
	wsRead(t, c) // "first"
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":2,"method":"slow"}`)); err != nil {
		t.Fatal(err)
	}
	<-started
	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop(context.Background()) }()
	close(release)
	if got := wsRead(t, c); !jsonEqual(t, got, `{"jsonrpc":"2.0","id":2,"result":"done"}`) {
		t.Fatalf("in-flight response: %s", got)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := c.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseGoingAway) {
		t.Errorf("want close 1001, got %v", err)
	}
	<-sub.Done()
	if err := <-stopped; err != nil {
		t.Errorf("Stop: %v", err)
	}
}

// TestWebsocketMessageSizes: messages around the read buffer's sizes (its
// first 512 bytes, the 64 KiB it keeps) and the limit itself are read
// whole, one after the other on one connection; one byte over the limit
// closes with 1009.
func TestWebsocketMessageSizes(t *testing.T) {
	const limit = 100 << 10
	_, url := testServer(t, Config{WSMaxMessageBytes: limit}, nil)
	c := wsDial(t, url)
	envelope := len(`{"jsonrpc":"2.0","id":1,"method":"echo","params":[""]}`)
	for _, size := range []int{envelope, 511, 512, 513, 4096, wsKeepReadBuffer + 1, 100, limit} {
		pad := strings.Repeat("a", size-envelope)
		req := `{"jsonrpc":"2.0","id":1,"method":"echo","params":["` + pad + `"]}`
		if len(req) != size {
			t.Fatalf("built %d bytes, want %d", len(req), size)
		}
		if got, want := wsCall(t, c, req), `{"jsonrpc":"2.0","id":1,"result":"`+pad+`"}`; string(got) != want {
			t.Fatalf("size %d: got %d bytes, want %d", size, len(got), len(want))
		}
	}
	over := `{"jsonrpc":"2.0","id":1,"method":"echo","params":["` + strings.Repeat("a", limit+1-envelope) + `"]}`
	if err := c.WriteMessage(websocket.TextMessage, []byte(over)); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := c.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
		t.Fatalf("want close 1009, got %v", err)
	}
}

// TestWebsocketPipelined: many requests sent before any answer is read
// (answers written by the messages' goroutines and by the writer, in turn)
// are each answered exactly once.
func TestWebsocketPipelined(t *testing.T) {
	_, url := testServer(t, Config{}, nil)
	c := wsDial(t, url)
	const n = 500
	for i := range n {
		req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"echo","params":[%d]}`, i, i)
		if err := c.WriteMessage(websocket.TextMessage, []byte(req)); err != nil {
			t.Fatal(err)
		}
	}
	seen := make(map[int]bool)
	for range n {
		var resp struct {
			ID     int `json:"id"`
			Result int `json:"result"`
		}
		if err := json.Unmarshal(wsRead(t, c), &resp); err != nil {
			t.Fatal(err)
		}
		if resp.ID != resp.Result || seen[resp.ID] || resp.ID < 0 || resp.ID >= n {
			t.Fatalf("unexpected answer %+v (seen before: %v)", resp, seen[resp.ID])
		}
		seen[resp.ID] = true
	}
}

// TestWebsocketRequestTimeout: a handler that ignores its context is
// answered -32002 at the deadline while it runs on; its execution slot is
// free again (WSMaxInflight 1: the next request is served), its late result
// is never sent, and a timed-out notification gets no answer.
func TestWebsocketRequestTimeout(t *testing.T) {
	release := make(chan struct{})
	returned := make(chan struct{}, 4)
	_, url := testServer(t, Config{RequestTimeout: 50 * time.Millisecond, WSMaxInflight: 1}, func(s *Server) {
		s.Register("stuck", func(ctx context.Context, p Params) (any, error) {
			defer func() { returned <- struct{}{} }()
			<-release // ignores ctx on purpose
			return "late", nil
		})
	})
	c := wsDial(t, url)
	timeout := `{"code":-32002,"message":"request timed out"}`
	if got := wsCall(t, c, `{"jsonrpc":"2.0","id":1,"method":"stuck"}`); !jsonEqual(t, got, `{"jsonrpc":"2.0","id":1,"error":`+timeout+`}`) {
		t.Fatalf("stuck: %s", got)
	}
	// Notification: nothing is sent for it; the next answer is id 3's.
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","method":"stuck"}`)); err != nil {
		t.Fatal(err)
	}
	if got := wsCall(t, c, `{"jsonrpc":"2.0","id":3,"method":"echo","params":[3]}`); !jsonEqual(t, got, `{"jsonrpc":"2.0","id":3,"result":3}`) {
		t.Fatalf("after timeouts: %s", got)
	}
	close(release)
	for range 2 {
		select {
		case <-returned:
		case <-time.After(5 * time.Second):
			t.Fatal("stuck handlers did not return")
		}
	}
	// The late results were dropped: the next message is id 4's answer.
	if got := wsCall(t, c, `{"jsonrpc":"2.0","id":4,"method":"echo","params":[4]}`); !jsonEqual(t, got, `{"jsonrpc":"2.0","id":4,"result":4}`) {
		t.Fatalf("late result sent: %s", got)
	}
}
