package rpc

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
)

// TestHandleStream: a long-lived mounted handler counts against the
// connection limits while connected, and Stop cancels its context and
// waits for it instead of timing out.
func TestHandleStream(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.MaxConnsPerIP = 1
	cfg.ConnReserve = 0
	s, err := NewServer(cfg, zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	returned := make(chan struct{})
	up := websocket.Upgrader{}
	s.HandleStream("/feed", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(returned)
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		<-r.Context().Done()
		_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "bye"), time.Now().Add(time.Second))
	}))
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	url := "ws://" + s.Addr().String() + "/feed"
	c, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The stream holds this address's only connection.
	resp, err := http.Post("http://"+s.Addr().String(), "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"x"}`))
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("second connection: HTTP %d, want 503", resp.StatusCode)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	<-returned
	_, _, err = c.ReadMessage()
	if !websocket.IsCloseError(err, websocket.CloseGoingAway) {
		t.Fatalf("client got %v, want close 1001", err)
	}
}
