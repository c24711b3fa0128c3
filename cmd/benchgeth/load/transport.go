package load

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/tipnode/tipnode/cmd/benchgeth/chaingen"
)

// wsConn is one websocket connection. Requests get their own ids: the
// request line's RequestPrefix is replaced by one carrying the id.
type wsConn struct {
	conn   *websocket.Conn
	nextID uint64
	// pending maps the id of a request in flight to its intended send
	// time (open loop only).
	mu      sync.Mutex
	pending map[uint64]time.Time
}

func dialWS(ctx context.Context, url string) (*wsConn, error) {
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second, ReadBufferSize: 64 << 10, WriteBufferSize: 64 << 10}
	conn, _, err := d.DialContext(ctx, url, nil)
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(64 << 20)
	return &wsConn{conn: conn, pending: map[uint64]time.Time{}}, nil
}

// withID rewrites a request line to carry id.
func withID(line []byte, id uint64, buf []byte) ([]byte, error) {
	if !bytes.HasPrefix(line, []byte(chaingen.RequestPrefix)) {
		return nil, fmt.Errorf("%w: websocket request does not start with %s", ErrConfig, chaingen.RequestPrefix)
	}
	buf = append(buf[:0], `{"jsonrpc":"2.0","id":`...)
	buf = strconv.AppendUint(buf, id, 10)
	buf = append(buf, ',')
	return append(buf, line[len(chaingen.RequestPrefix):]...), nil
}

// send writes a request with a fresh id and returns the id.
func (w *wsConn) send(line []byte, buf []byte) (uint64, []byte, error) {
	w.nextID++
	id := w.nextID
	msg, err := withID(line, id, buf)
	if err != nil {
		return 0, buf, err
	}
	return id, msg, w.conn.WriteMessage(websocket.TextMessage, msg)
}

func (w *wsConn) close() { w.conn.Close() }

// read reads one message and checks it, returning its id (0 when it has
// none: that answer matches no request). err is a connection error.
func (w *wsConn) read(c Check) (uint64, *Failure, error) {
	_, msg, err := w.conn.ReadMessage()
	if err != nil {
		return 0, nil, err
	}
	raw, f := checkBody(c, msg)
	id, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil && f == nil {
		f = badResponse("websocket answer with id %q: %.100s", raw, msg)
	}
	return id, f, nil
}
