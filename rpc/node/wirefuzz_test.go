package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"github.com/tipnode/tipnode/rpc"
)

// The wire fuzz test: random and mutated JSON-RPC messages (every kind of
// method, wrong types, huge quantities, deep nesting, invalid UTF-8, giant
// overrides, absurd gas, mixed batches) over HTTP and websocket against a
// real node. Its oracles, for every answer: valid UTF-8 and valid JSON
// without lone surrogates, Content-Type application/json, a documented
// HTTP status, JSON-RPC 2.0 responses (one per request with an id) whose
// error codes are documented and never -32603, an answer within a bounded
// time; for the node: the Go heap stays bounded, a well-behaved client on
// another address is served all along, and the node answers at the end.
//
// make test runs it for 3 s; make fuzz for TIPNODE_WIREFUZZ (a duration).
// TIPNODE_WIREFUZZ_SEED replays a seed (each run logs its own).

// wireFuzzCodes are the documented JSON-RPC error codes (README, error
// codes): -32603 is not one a client should ever see.
var wireFuzzCodes = map[int]bool{
	rpc.CodeParseError: true, rpc.CodeInvalidRequest: true, rpc.CodeMethodNotFound: true, rpc.CodeInvalidParams: true,
	rpc.CodeServerError: true, rpc.CodeTimeout: true, rpc.CodeLimitExceeded: true, rpc.CodeVMError: true,
	rpc.CodeExecutionReverted: true, rpc.CodeNonceTooLow: true, rpc.CodeNonceTooHigh: true, rpc.CodeBaseFeeTooLow: true,
	rpc.CodeIntrinsicGas: true, rpc.CodeInsufficientFunds: true, rpc.CodeBlockGasLimitReached: true,
	rpc.CodeBlockNumberInvalid: true, rpc.CodeBlockTimestampInvalid: true, rpc.CodeMovePrecompileSelfReference: true,
	rpc.CodeMovePrecompileDuplicate: true, rpc.CodeSenderIsNotEOA: true, rpc.CodeMaxInitCodeSizeExceeded: true,
	rpc.CodeClientLimitExceeded: true,
}

// wireFuzzStatus are the HTTP statuses the node documents.
var wireFuzzStatus = map[int]bool{200: true, 400: true, 405: true, 408: true, 413: true, 415: true, 431: true, 503: true}

// loneSurrogate finds a \u escape of a UTF-16 surrogate; pairs are checked
// by wellPaired.
var surrogateEscape = regexp.MustCompile(`\\u[dD][89a-fA-F][0-9a-fA-F]{2}`)

// wellPaired returns "" when every surrogate escape in b is a high one
// directly followed by a low one, else the offending part of b. A match
// behind an odd run of backslashes is not an escape (an escaped backslash,
// then the text "u d800", as an error message quoting its input writes).
func wellPaired(b []byte) string {
	var locs [][]int
	for _, loc := range surrogateEscape.FindAllIndex(b, -1) {
		n := 0
		for k := loc[0] - 1; k >= 0 && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			locs = append(locs, loc)
		}
	}
	high := func(c byte) bool { return strings.IndexByte("89abAB", c) >= 0 }
	for i := 0; i < len(locs); i++ {
		at := locs[i][0]
		if high(b[at+3]) && i+1 < len(locs) && locs[i+1][0] == locs[i][1] && !high(b[locs[i+1][0]+3]) {
			i++
			continue
		}
		return string(b[max(0, at-40):min(len(b), at+40)])
	}
	return ""
}

// checkAnswer checks one JSON-RPC answer (HTTP body or websocket message).
func checkAnswer(b []byte) error {
	if !utf8.Valid(b) {
		return fmt.Errorf("answer not valid UTF-8")
	}
	if !json.Valid(b) {
		return fmt.Errorf("answer not valid JSON")
	}
	if bad := wellPaired(b); bad != "" {
		return fmt.Errorf("answer holds a lone surrogate escape: %q", bad)
	}
	b = bytes.TrimSpace(b)
	var msgs []json.RawMessage
	if len(b) > 0 && b[0] == '[' {
		if err := json.Unmarshal(b, &msgs); err != nil || len(msgs) == 0 {
			return fmt.Errorf("batch answer: %v", err)
		}
	} else {
		msgs = []json.RawMessage{b}
	}
	for _, m := range msgs {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(m, &fields); err != nil {
			return fmt.Errorf("response: %v", err)
		}
		var r struct {
			JSONRPC string     `json:"jsonrpc"`
			Error   *rpc.Error `json:"error"`
			Method  string     `json:"method"`
		}
		if err := json.Unmarshal(m, &r); err != nil {
			return fmt.Errorf("response: %v", err)
		}
		_, hasID := fields["id"]
		_, hasResult := fields["result"]
		_, hasError := fields["error"]
		switch {
		case r.JSONRPC != "2.0":
			return fmt.Errorf("jsonrpc %q", r.JSONRPC)
		case r.Method == "eth_subscription" && !hasID:
			continue // a notification
		case !hasID:
			return fmt.Errorf("response without id")
		case hasResult == hasError:
			return fmt.Errorf("response without exactly one of result and error")
		case hasError && (r.Error == nil || !wireFuzzCodes[r.Error.Code]):
			return fmt.Errorf("undocumented error %+v", r.Error)
		}
	}
	return nil
}

// wireGen generates requests.
type wireGen struct{ r *rand.Rand }

const (
	fuzzAddr  = "0x00000000000000000000000000000000000c0de3"
	fuzzHash  = "0x" + "ab" + "00000000000000000000000000000000000000000000000000000000000000"
	bigReturn = "0x624000006000f3" // returns 4 MiB
)

var wireMethods = []string{
	"eth_call", "eth_estimateGas", "eth_createAccessList", "eth_simulateV1", "eth_getLogs", "eth_getBalance",
	"eth_getCode", "eth_getStorageAt", "eth_getTransactionCount", "eth_getBlockByNumber", "eth_getBlockByHash",
	"eth_getBlockReceipts", "eth_feeHistory", "eth_blockNumber", "eth_chainId", "eth_gasPrice",
	"eth_sendRawTransaction", "eth_getTransactionByHash", "eth_getTransactionReceipt", "eth_getProof",
	"eth_subscribe", "eth_unsubscribe", "web3_clientVersion", "web3_sha3", "net_version", "debug_getRawBlock",
	"eth_getStorageValues", "eth_syncing", "tipnode_genesis", "no_such_method", "",
}

func (g *wireGen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

// value is a random JSON value of depth at most d.
func (g *wireGen) value(d int) string {
	switch n := g.r.IntN(22); {
	case n < 3:
		return g.pick(`"latest"`, `"pending"`, `"earliest"`, `"safe"`, `"finalized"`, `"0x0"`, `"0x1"`, `"0x"`, `"0x00"`, `"0xffffffffffffffff"`,
			`"0x10000000000000000"`, `"0x`+strings.Repeat("f", 80)+`"`, `"-0x1"`, `"1"`)
	case n < 5:
		return g.pick(`"`+fuzzAddr+`"`, `"`+fuzzHash+`"`, `"0x12"`, `"0x`+strings.Repeat("g", 40)+`"`)
	case n < 7:
		return g.pick(`0`, `-1`, `1e999`, `18446744073709551616`, `3.5`, `true`, `false`, `null`, `""`, `{}`, `[]`)
	case n < 8:
		return g.pick("\"a\xff\"", `"\ud800"`, "\"\xed\xa0\x80\"", `"\u0000"`, `"\\"`, `"`+strings.Repeat("x", g.r.IntN(1<<16))+`"`)
	case n < 9:
		depth := 1 + g.r.IntN(12000)
		return strings.Repeat("[", depth) + strings.Repeat("]", depth)
	case n < 14 && d > 0:
		var b strings.Builder
		b.WriteByte('{')
		for i := range g.r.IntN(5) {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"%s":%s`, g.pick("to", "from", "gas", "gasPrice", "value", "data", "input", "code", "balance",
				"nonce", "fromBlock", "toBlock", "address", "topics", "blockHash", "blockStateCalls", "calls", "stateOverrides",
				"blockOverrides", "maxFeePerGas", "state", "stateDiff", "movePrecompileToAddress", "returnFullTransactions"), g.value(d-1))
		}
		b.WriteByte('}')
		return b.String()
	case n < 18 && d > 0:
		var b strings.Builder
		b.WriteByte('[')
		for i := range g.r.IntN(5) {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(g.value(d - 1))
		}
		b.WriteByte(']')
		return b.String()
	}
	return g.pick(`"`+fuzzAddr+`"`, `"latest"`, `"0x5208"`, `"0x2faf080"`, `"0xffffffffffffffffffff"`)
}

// params is a plausible or random params array for method.
func (g *wireGen) params(method string) string {
	override := fmt.Sprintf(`{"%s":{"code":"%s"}}`, fuzzAddr, g.pick(bigReturn, "0x5b600056", "0x60006000fd", "0x6001600155"))
	call := fmt.Sprintf(`{"to":"%s","gas":"%s"}`, fuzzAddr, g.pick("0x5208", "0x2faf080", "0xffffffffffffffff", "0x0"))
	switch g.r.IntN(3) {
	case 0:
		return "[" + g.value(2) + "," + g.value(2) + "]"
	case 1:
		return g.value(3)
	}
	switch method {
	case "eth_call", "eth_estimateGas", "eth_createAccessList":
		return "[" + call + `,"latest",` + override + "]"
	case "eth_simulateV1":
		calls := strings.TrimSuffix(strings.Repeat(call+",", 1+g.r.IntN(50)), ",")
		return fmt.Sprintf(`[{"blockStateCalls":[{"stateOverrides":%s,"calls":[%s]}],"traceTransfers":%v},"latest"]`, override, calls, g.r.IntN(2) == 0)
	case "eth_getLogs":
		return fmt.Sprintf(`[{"fromBlock":%s,"toBlock":%s}]`, g.value(0), g.value(0))
	case "eth_subscribe":
		return "[" + g.pick(`"newHeads"`, `"logs"`, `"newPendingTransactions"`, `"newPreconfirmations"`, `"nope"`) + "]"
	case "eth_feeHistory":
		return `["` + g.pick("0x400", "0xffffffff", "0x1") + `","latest",[25,75]]`
	}
	return "[" + g.value(1) + "]"
}

// request is one request object, its id possibly odd or absent.
func (g *wireGen) request(id int) string {
	method := wireMethods[g.r.IntN(len(wireMethods))]
	idv := strconv.Itoa(id)
	switch g.r.IntN(12) {
	case 0:
		idv = g.pick("\"a\xff\"", `"\ud800"`, `"\ud83d\ude00"`, `null`, `{}`, `1.5e300`, `"`+strings.Repeat("i", 200)+`"`)
	case 1:
		return fmt.Sprintf(`{"jsonrpc":"2.0","method":"%s","params":%s}`, method, g.params(method)) // a notification
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"%s","params":%s}`, idv, method, g.params(method))
}

// message is a single request, a batch, or a mutation of either.
func (g *wireGen) message() []byte {
	var msg string
	if g.r.IntN(4) == 0 {
		n := 1 + g.r.IntN([]int{8, 70, 1100}[g.r.IntN(3)]) // beyond the 1,000 limit too
		parts := make([]string, n)
		for i := range parts {
			parts[i] = g.request(i)
		}
		msg = "[" + strings.Join(parts, ",") + "]"
	} else {
		msg = g.request(1)
	}
	b := []byte(msg)
	for range g.r.IntN(3) { // mutations
		if len(b) == 0 {
			break
		}
		i := g.r.IntN(len(b))
		switch g.r.IntN(4) {
		case 0:
			b[i] = byte(g.r.IntN(256))
		case 1:
			b = append(b[:i:i], append([]byte(g.pick(`\ud800`, "\xff", `"`, `[`, `{`, `,`, `null`, `0x`, "\x00", `\`)), b[i:]...)...)
		case 2:
			b = append(b[:i:i], b[min(len(b), i+1+g.r.IntN(16)):]...)
		case 3:
			b = b[:i]
		}
	}
	return b
}

func wireFuzzDuration(t *testing.T) time.Duration {
	if s := os.Getenv("TIPNODE_WIREFUZZ"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("TIPNODE_WIREFUZZ=%q: %v", s, err)
		}
		return d
	}
	return 3 * time.Second
}

func TestWireFuzz(t *testing.T) {
	duration := wireFuzzDuration(t)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("TIPNODE_WIREFUZZ_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("seed %d (TIPNODE_WIREFUZZ_SEED replays it), %s", seed, duration)
	n := startLoadNode(t, rpc.Config{}, 0)
	url := "http://" + n.Server.Addr().String()
	// An answer within the request timeout plus reading and writing.
	maxLatency := rpc.DefaultRequestTimeout + 10*time.Second

	runtime.GC()
	base := heapObjects()
	sampler := sampleHeap()
	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	var (
		wg       sync.WaitGroup
		failMu   sync.Mutex
		failures []string
		sent     atomic.Int64
	)
	fail := func(what string, req []byte, err error) {
		failMu.Lock()
		defer failMu.Unlock()
		if len(failures) < 10 {
			r := req
			if len(r) > 300 {
				r = r[:300]
			}
			failures = append(failures, fmt.Sprintf("%s: %v (request %q)", what, err, r))
		}
	}
	for w := range 2 { // HTTP clients
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := &wireGen{rand.New(rand.NewPCG(seed, uint64(w)))}
			client := httpClientFrom("127.0.0.1", w == 0)
			for ctx.Err() == nil {
				req := g.message()
				start := time.Now()
				resp, err := client.Post(url, g.pick("application/json", "application/json", "application/json", "text/plain"), bytes.NewReader(req))
				if err != nil {
					fail("http", req, err)
					continue
				}
				body, err := readAllLimited(resp.Body)
				resp.Body.Close()
				sent.Add(1)
				switch {
				case err != nil:
					fail("http read", req, err)
				case time.Since(start) > maxLatency:
					fail("http latency", req, fmt.Errorf("%s", time.Since(start)))
				case !wireFuzzStatus[resp.StatusCode]:
					fail("http status", req, fmt.Errorf("%d", resp.StatusCode))
				case resp.Header.Get("Content-Type") != "application/json":
					fail("http content type", req, fmt.Errorf("%q with status %d", resp.Header.Get("Content-Type"), resp.StatusCode))
				case len(body) == 0 && resp.StatusCode == 200:
					// only notifications
				default:
					if err := checkAnswer(body); err != nil {
						fail("http answer", req, fmt.Errorf("%v: %.300q", err, body))
					}
				}
			}
		}()
	}
	for w := range 2 { // websocket clients
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := &wireGen{rand.New(rand.NewPCG(seed, uint64(10+w)))}
			var c *websocket.Conn
			defer func() {
				if c != nil {
					c.Close()
				}
			}()
			for i := 0; ctx.Err() == nil; i++ {
				if c == nil {
					var err error
					if c, err = wsDialFrom(ctx, "127.0.0.1", url); err != nil {
						if ctx.Err() == nil {
							fail("ws dial", nil, err)
						}
						return
					}
				}
				req := g.message()
				sentinel := fmt.Sprintf(`"sentinel-%d"`, i)
				start := time.Now()
				c.SetWriteDeadline(start.Add(maxLatency))
				err := c.WriteMessage(websocket.TextMessage, req)
				if err == nil {
					err = c.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":`+sentinel+`,"method":"eth_chainId"}`))
				}
				sent.Add(1)
				c.SetReadDeadline(start.Add(maxLatency))
				for err == nil {
					var msg []byte
					if _, msg, err = c.ReadMessage(); err != nil {
						break
					}
					if cerr := checkAnswer(msg); cerr != nil {
						fail("ws answer", req, fmt.Errorf("%v: %.300q", cerr, msg))
					}
					if bytes.Contains(msg, []byte(`"id":`+sentinel)) {
						break
					}
				}
				if err != nil {
					// The server may close a connection for a documented
					// reason (a message too big, 1009); anything else fails.
					var ce *websocket.CloseError
					if !errors.As(err, &ce) || (ce.Code != rpc.CloseMessageTooBig && ce.Code != rpc.ClosePolicyViolation && ce.Code != rpc.CloseTryAgainLater) {
						fail("ws", req, err)
					}
					c.Close()
					c = nil
				}
			}
		}()
	}
	// The well-behaved client, from another address: always served.
	var good, goodFailed atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		client := httpClientFrom("127.0.0.2", true)
		for ctx.Err() == nil {
			start := time.Now()
			status, body, err := postFrom(client, url, `{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}`)
			if err != nil || status != 200 || !bytes.Contains(body, []byte(`"result":"0x`)) || time.Since(start) > maxLatency {
				goodFailed.Add(1)
				fail("well-behaved client", nil, fmt.Errorf("status %d, %v, %s, %.200q", status, err, time.Since(start), body))
			} else {
				good.Add(1)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	wg.Wait()
	peak := sampler.stop()
	growth := int64(peak) - int64(base)
	t.Logf("%d messages, %d well-behaved requests served; heap %d MiB at rest, peak +%d MiB", sent.Load(), good.Load(), base>>20, growth>>20)
	for _, f := range failures {
		t.Error(f)
	}
	if good.Load() == 0 {
		t.Error("the well-behaved client was never served")
	}
	// Bounded memory: a few responses' worth (25 MiB each) per client.
	if growth > 400<<20 {
		t.Errorf("heap peak %d MiB above its rest level, want under 400", growth>>20)
	}
	status, body, err := postFrom(httpClientFrom("127.0.0.3", false), url, `{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}`)
	if err != nil || status != 200 || !bytes.Contains(body, []byte(`"result"`)) {
		t.Fatalf("the node does not answer after the fuzz: %d %v %s", status, err, body)
	}
}

// readAllLimited reads an answer body (at most twice the response limit).
func readAllLimited(r io.Reader) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r, 2*rpc.DefaultMaxResponseBytes))
}

// TestWellPaired: the wire fuzzer's surrogate oracle flags lone surrogate
// escapes, and not a pair, nor an escaped backslash followed by "ud800".
func TestWellPaired(t *testing.T) {
	for _, c := range []struct {
		in   string
		lone bool
	}{
		{`"\ud800"`, true},
		{`"\ude00"`, true},
		{`"\ud83d x"`, true},
		{`"\ud83d\ude00"`, false},
		{`"a\\ud800"`, false},
		{`"\\\ud800"`, true},
		{`"\\\\ud800"`, false},
		{`{"message":"invalid block selector \"[[\\\"\\\\ud800\\\"]]\""}`, false},
	} {
		if got := wellPaired([]byte(c.in)) != ""; got != c.lone {
			t.Errorf("%s: lone surrogate %v, want %v", c.in, got, c.lone)
		}
	}
}
