package rpc

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/rs/zerolog"
)

// discardWriter is a ResponseWriter that keeps nothing but the headers
// (reset per request), as net/http's would for a fresh response.
type discardWriter struct {
	h      http.Header
	status int
	n      int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(status int)      { w.status = status }
func (w *discardWriter) Write(b []byte) (int, error) { w.n += len(b); return len(b), nil }

// BenchmarkServeHTTPChainID: the server's own work for one small request
// (Server.ServeHTTP: checks, body, envelope, handler, response), without
// the sockets and net/http's connection handling.
func BenchmarkServeHTTPChainID(b *testing.B) {
	s, err := NewServer(Config{Addr: "127.0.0.1:0"}, zerolog.New(io.Discard))
	if err != nil {
		b.Fatal(err)
	}
	s.Register("eth_chainId", func(context.Context, Params) (any, error) { return "0x539", nil })
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}`)
	rd := bytes.NewReader(body)
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/", io.NopCloser(rd))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = int64(len(body))
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(body)
		w := &discardWriter{h: make(http.Header)}
		s.ServeHTTP(w, req)
		if w.status != http.StatusOK || w.n == 0 {
			b.Fatalf("status %d, %d bytes", w.status, w.n)
		}
	}
}
