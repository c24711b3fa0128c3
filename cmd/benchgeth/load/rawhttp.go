package load

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// The HTTP client is a lean HTTP/1.1 client for one kind of exchange: a
// JSON POST to "/" on a kept-alive loopback connection, the answer read by
// its Content-Length or chunked encoding. It costs the load generator a
// fraction of net/http's CPU per request, which matters with one client
// core against a server answering tens of thousands of requests a second.

// httpConn is one kept-alive connection.
type httpConn struct {
	c   net.Conn
	br  *bufio.Reader
	req []byte // reused request buffer
}

// httpClient dials and pools connections to one server. Idle connections
// are reused newest first; at most max exist at once.
type httpClient struct {
	addr, host string
	max        int

	mu   sync.Mutex
	idle []*httpConn
	open int
	// slot is signalled when a connection is returned or closed.
	slot chan struct{}
}

func newHTTPClient(rawURL string, max int) (*httpClient, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("%w: URL %q: want http://host:port", ErrConfig, rawURL)
	}
	return &httpClient{addr: u.Host, host: u.Host, max: max, slot: make(chan struct{}, 1)}, nil
}

// get returns an idle connection, or a new one while fewer than max exist,
// or waits for one.
func (h *httpClient) get(ctx context.Context) (*httpConn, error) {
	for {
		h.mu.Lock()
		if n := len(h.idle); n > 0 {
			c := h.idle[n-1]
			h.idle = h.idle[:n-1]
			h.mu.Unlock()
			return c, nil
		}
		if h.open < h.max {
			h.open++
			h.mu.Unlock()
			d := net.Dialer{Timeout: 5 * time.Second}
			c, err := d.DialContext(ctx, "tcp", h.addr)
			if err != nil {
				h.release()
				return nil, err
			}
			return &httpConn{c: c, br: bufio.NewReaderSize(c, 64<<10)}, nil
		}
		h.mu.Unlock()
		select {
		case <-h.slot:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// put returns a healthy connection to the pool.
func (h *httpClient) put(c *httpConn) {
	h.mu.Lock()
	h.idle = append(h.idle, c)
	h.mu.Unlock()
	h.signal()
}

// drop closes a broken connection.
func (h *httpClient) drop(c *httpConn) {
	c.c.Close()
	h.release()
}

func (h *httpClient) release() {
	h.mu.Lock()
	h.open--
	h.mu.Unlock()
	h.signal()
}

func (h *httpClient) signal() {
	select {
	case h.slot <- struct{}{}:
	default:
	}
}

func (h *httpClient) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.idle {
		c.c.Close()
	}
	h.open -= len(h.idle)
	h.idle = nil
}

// post sends body and returns the answer's body in buf. The connection's
// deadline is the context's.
func (h *httpClient) post(ctx context.Context, body []byte, buf *bytes.Buffer) ([]byte, *Failure) {
	c, err := h.get(ctx)
	if err != nil {
		return nil, transportFailure(ctx, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		c.c.SetDeadline(dl)
	}
	status, keep, err := c.exchange(h.host, body, buf)
	if err != nil {
		h.drop(c)
		return nil, transportFailure(ctx, err)
	}
	if keep {
		h.put(c)
	} else {
		h.drop(c)
	}
	if status != 200 {
		return nil, &Failure{Kind: "http " + strconv.Itoa(status), Detail: fmt.Sprintf("%.200s", buf.Bytes())}
	}
	return buf.Bytes(), nil
}

func transportFailure(ctx context.Context, err error) *Failure {
	var ne net.Error
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return &Failure{Kind: "timeout", Detail: "no answer before the run's deadline"}
	}
	return &Failure{Kind: "transport", Detail: err.Error()}
}

// exchange writes one request and reads its response into buf. keep is
// false when the server will close the connection.
func (c *httpConn) exchange(host string, body []byte, buf *bytes.Buffer) (status int, keep bool, err error) {
	r := append(c.req[:0], "POST / HTTP/1.1\r\nHost: "...)
	r = append(r, host...)
	r = append(r, "\r\nContent-Type: application/json\r\nContent-Length: "...)
	r = strconv.AppendInt(r, int64(len(body)), 10)
	r = append(r, "\r\n\r\n"...)
	r = append(r, body...)
	c.req = r
	if _, err := c.c.Write(r); err != nil {
		return 0, false, err
	}
	return readResponse(c.br, buf)
}

// readResponse reads an HTTP/1.1 response: status line, headers, and a body
// of Content-Length bytes or chunked.
func readResponse(br *bufio.Reader, buf *bytes.Buffer) (status int, keep bool, err error) {
	line, err := readLine(br)
	if err != nil {
		return 0, false, err
	}
	// "HTTP/1.1 200 OK"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return 0, false, fmt.Errorf("bad status line %q", line)
	}
	if status, err = strconv.Atoi(string(line[9:12])); err != nil {
		return 0, false, fmt.Errorf("bad status line %q", line)
	}
	keep = line[7] == '1'
	length, chunked := -1, false
	for {
		line, err = readLine(br)
		if err != nil {
			return 0, false, err
		}
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return 0, false, fmt.Errorf("bad header %q", line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 {
				return 0, false, fmt.Errorf("bad Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(value, []byte("chunked"))
		case bytes.EqualFold(name, []byte("Connection")):
			if bytes.EqualFold(value, []byte("close")) {
				keep = false
			}
		}
	}
	buf.Reset()
	switch {
	case chunked:
		err = readChunked(br, buf)
	case length >= 0:
		buf.Grow(length)
		_, err = io.CopyN(buf, br, int64(length))
	default: // body until close
		keep = false
		_, err = buf.ReadFrom(br)
	}
	return status, keep, err
}

func readChunked(br *bufio.Reader, buf *bytes.Buffer) error {
	for {
		line, err := readLine(br)
		if err != nil {
			return err
		}
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i]
		}
		n, err := strconv.ParseUint(string(bytes.TrimSpace(line)), 16, 32)
		if err != nil {
			return fmt.Errorf("bad chunk size %q", line)
		}
		if n == 0 {
			for { // trailers, then the blank line
				line, err := readLine(br)
				if err != nil {
					return err
				}
				if len(line) == 0 {
					return nil
				}
			}
		}
		if _, err := io.CopyN(buf, br, int64(n)); err != nil {
			return err
		}
		if line, err := readLine(br); err != nil || len(line) != 0 {
			return fmt.Errorf("chunk not followed by CRLF: %v", err)
		}
	}
}

// readLine reads a CRLF- (or LF-) terminated line without its terminator.
// The slice is valid until the next read.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, errors.New("header line too long")
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}
