//go:build unix

package rpc

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"testing"

	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/rpc/rpctest"
)

// rawClient is a minimal keep-alive HTTP/1.1 client over one TCP
// connection: it writes a prepared request and reads one response, so
// that a loopback benchmark's CPU is mostly the server's.
type rawClient struct {
	c  net.Conn
	br *bufio.Reader
}

func (rc *rawClient) roundTrip(req []byte) (int, error) {
	if _, err := rc.c.Write(req); err != nil {
		return 0, err
	}
	n := -1
	for {
		line, err := rc.br.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		if len(line) <= 2 { // the blank line after the headers
			break
		}
		if k, v, ok := bytes.Cut(line, []byte(":")); ok && bytes.EqualFold(k, []byte("Content-Length")) {
			n, err = strconv.Atoi(string(bytes.TrimSpace(v)))
			if err != nil {
				return 0, err
			}
		}
	}
	if n < 0 {
		return 0, fmt.Errorf("no Content-Length")
	}
	_, err := rc.br.Discard(n)
	return n, err
}

// BenchmarkLoopbackChainID: the whole floor of one small request over a
// real keep-alive loopback connection (the server's sockets, HTTP parsing,
// envelope, handler and response), with a client that does almost nothing
// but the two syscalls. cpu-ns/op is the CPU of the whole process (client
// included) per request.
func BenchmarkLoopbackChainID(b *testing.B) {
	s, err := NewServer(Config{Addr: "127.0.0.1:0"}, zerolog.New(io.Discard))
	if err != nil {
		b.Fatal(err)
	}
	s.RegisterInline("eth_chainId", func(context.Context, Params) (any, error) { return "0x539", nil })
	if err := s.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Stop(context.Background()) })
	body := `{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}`
	req := []byte(fmt.Sprintf("POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body))
	addr := s.Addr().String()
	b.SetParallelism(4) // 4 x GOMAXPROCS connections
	b.ReportAllocs()
	cpu0 := rpctest.ProcessCPU(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Error(err)
			return
		}
		defer c.Close()
		rc := &rawClient{c: c, br: bufio.NewReader(c)}
		for pb.Next() {
			if _, err := rc.roundTrip(req); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(rpctest.ProcessCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
}
