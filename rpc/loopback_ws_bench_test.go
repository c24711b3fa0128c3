//go:build unix

package rpc

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/rpc/rpctest"
)

// rawWSClient is a minimal websocket client over one TCP connection: it
// writes a prepared masked text frame and reads one unfragmented answer
// frame, so that a loopback benchmark's CPU is mostly the server's.
type rawWSClient struct {
	c  net.Conn
	br *bufio.Reader
}

func dialRawWS(addr string) (*rawWSClient, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", addr)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		c.Close()
		return nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		c.Close()
		return nil, fmt.Errorf("upgrade: %s", resp.Status)
	}
	return &rawWSClient{c: c, br: br}, nil
}

// wsTextFrame is a client text frame of payload, masked with a fixed key.
func wsTextFrame(payload []byte) []byte {
	key := [4]byte{1, 2, 3, 4}
	f := []byte{0x81}
	switch n := len(payload); {
	case n < 126:
		f = append(f, 0x80|byte(n))
	case n < 1<<16:
		f = append(f, 0x80|126, byte(n>>8), byte(n))
	default:
		f = append(f, 0x80|127)
		f = binary.BigEndian.AppendUint64(f, uint64(n))
	}
	f = append(f, key[:]...)
	for i, b := range payload {
		f = append(f, b^key[i%4])
	}
	return f
}

// readFrame reads one server frame and discards its payload; it returns
// the payload length.
func (rc *rawWSClient) readFrame() (int, error) {
	var h [2]byte
	if _, err := io.ReadFull(rc.br, h[:]); err != nil {
		return 0, err
	}
	if h[0] != 0x81 {
		return 0, fmt.Errorf("unexpected frame header %#x", h[0])
	}
	n := int(h[1] & 0x7f)
	switch n {
	case 126:
		var l [2]byte
		if _, err := io.ReadFull(rc.br, l[:]); err != nil {
			return 0, err
		}
		n = int(binary.BigEndian.Uint16(l[:]))
	case 127:
		var l [8]byte
		if _, err := io.ReadFull(rc.br, l[:]); err != nil {
			return 0, err
		}
		n = int(binary.BigEndian.Uint64(l[:]))
	}
	_, err := rc.br.Discard(n)
	return n, err
}

// BenchmarkLoopbackWS: eth_chainId over real loopback websocket
// connections (frames, envelope, handler, queue and writer), with a
// client that does little but the syscalls. cpu-ns/op is the CPU of the
// whole process (client included) per request. Sub-benchmarks: depth is
// the number of requests each connection keeps in flight.
func BenchmarkLoopbackWS(b *testing.B) {
	for _, depth := range []int{1, 4} {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) { benchLoopbackWS(b, depth, registerInline) })
	}
}

// BenchmarkLoopbackWSPlain is BenchmarkLoopbackWS with the method
// registered by Register, not RegisterInline: the path of every method
// that may block and does not declare HonoursContext (a goroutine of its
// own, the deadline enforced by the server).
func BenchmarkLoopbackWSPlain(b *testing.B) {
	for _, depth := range []int{1, 4} {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) { benchLoopbackWS(b, depth, registerPlain) })
	}
}

// BenchmarkLoopbackWSHonoursContext is BenchmarkLoopbackWS with the method
// registered with HonoursContext: the path of eth_call and the state reads
// (no hand-off, the deadline in the context).
func BenchmarkLoopbackWSHonoursContext(b *testing.B) {
	for _, depth := range []int{1, 4} {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) { benchLoopbackWS(b, depth, registerCooperative) })
	}
}

// How a benchmark registers its method.
const (
	registerInline = iota
	registerPlain
	registerCooperative
)

func benchLoopbackWS(b *testing.B, depth int, how int) {
	s, err := NewServer(Config{Addr: "127.0.0.1:0"}, zerolog.New(io.Discard))
	if err != nil {
		b.Fatal(err)
	}
	h := func(context.Context, Params) (any, error) { return "0x539", nil }
	switch how {
	case registerInline:
		s.RegisterInline("eth_chainId", h)
	case registerPlain:
		s.Register("eth_chainId", h)
	default:
		s.Register("eth_chainId", h, HonoursContext)
	}
	if err := s.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Stop(context.Background()) })
	frame := wsTextFrame([]byte(`{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}`))
	addr := s.Addr().String()
	b.SetParallelism(4) // 4 x GOMAXPROCS connections
	b.ReportAllocs()
	cpu0 := rpctest.ProcessCPU(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		rc, err := dialRawWS(addr)
		if err != nil {
			b.Error(err)
			return
		}
		defer rc.c.Close()
		inflight := 0
		for pb.Next() {
			if _, err := rc.c.Write(frame); err != nil {
				b.Error(err)
				return
			}
			inflight++
			if inflight < depth {
				continue
			}
			if _, err := rc.readFrame(); err != nil {
				b.Error(err)
				return
			}
			inflight--
		}
		for ; inflight > 0; inflight-- {
			if _, err := rc.readFrame(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(rpctest.ProcessCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
}
