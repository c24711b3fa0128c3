package follow

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/follow/followtest"
)

// proxy sits between the follower and a go-ethereum upstream (HTTP) and
// misbehaves on demand.
type proxy struct {
	*httptest.Server
	target string
	mode   atomic.Value // string: "pass", "down", "garbage", "unknown", "tamper"
	tamper atomic.Uint64
}

func newProxy(t *testing.T, target string) *proxy {
	p := &proxy{target: target}
	p.mode.Store("pass")
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.Close)
	return p
}

func (p *proxy) set(mode string) { p.mode.Store(mode) }

func (p *proxy) serve(w http.ResponseWriter, r *http.Request) {
	mode := p.mode.Load().(string)
	if mode == "down" { // the upstream is gone: the connection drops
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	body, _ := io.ReadAll(r.Body)
	if mode == "noheader400" && bytes.Contains(body, []byte("eth_getHeaderByNumber")) { // a gateway refusing the method
		http.Error(w, "unsupported method", http.StatusBadRequest)
		return
	}
	if mode == "garbage" { // well-formed JSON-RPC, nonsense results
		w.Header().Set("Content-Type", "application/json")
		w.Write(garbage(body))
		return
	}
	resp, err := http.Post(p.target, "application/json", bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	switch mode {
	case "unknown", "tamper":
		out = p.rewrite(mode, out)
	case "pruned", "noheader":
		out = refuse(mode, body, out)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

// garbage answers every request of body with a result that is no block,
// header or number.
func garbage(body []byte) []byte {
	var reqs []struct {
		ID json.RawMessage `json:"id"`
	}
	batch := len(body) > 0 && body[0] == '['
	if batch {
		json.Unmarshal(body, &reqs)
	} else {
		reqs = make([]struct {
			ID json.RawMessage `json:"id"`
		}, 1)
		json.Unmarshal(body, &reqs[0])
	}
	var out []json.RawMessage
	for _, r := range reqs {
		out = append(out, json.RawMessage(`{"jsonrpc":"2.0","id":`+string(r.ID)+`,"result":{"number":"0xzz","hash":[1,2]}}`))
	}
	if batch {
		b, _ := json.Marshal(out)
		return b
	}
	return out[0]
}

// refuse answers some requests of body with a JSON-RPC error in place of
// the upstream's answers out: "pruned" answers go-ethereum's pruned-history
// error (4444) for every block asked by number above 0 (an upstream whose
// history starts above our head: it still serves headers), "noheader"
// answers method-not-found for eth_getHeaderByNumber (an upstream without
// go-ethereum's header methods).
func refuse(mode string, body, out []byte) []byte {
	reqs, _, ok1 := splitMessages(body)
	resps, batch, ok2 := splitMessages(out)
	if !ok1 || !ok2 {
		return out
	}
	refused := make(map[string]string) // id -> error object
	for _, q := range reqs {
		var method string
		var params []json.RawMessage
		json.Unmarshal(q["method"], &method)
		json.Unmarshal(q["params"], &params)
		switch {
		case mode == "noheader" && method == "eth_getHeaderByNumber":
			refused[string(q["id"])] = `{"code":-32601,"message":"the method eth_getHeaderByNumber does not exist/is not available"}`
		case mode == "pruned" && (method == "debug_getRawBlock" || method == "eth_getBlockByNumber" && len(params) == 2 && string(params[1]) == "true"):
			var n hexutil.Uint64
			if len(params) > 0 && json.Unmarshal(params[0], &n) == nil && n > 0 {
				refused[string(q["id"])] = `{"code":4444,"message":"pruned history unavailable"}`
			}
		}
	}
	for _, r := range resps {
		if e, ok := refused[string(r["id"])]; ok {
			delete(r, "result")
			r["error"] = json.RawMessage(e)
		}
	}
	return joinMessages(resps, batch)
}

// splitMessages decodes a JSON-RPC message or batch into its messages.
func splitMessages(b []byte) (msgs []map[string]json.RawMessage, batch, ok bool) {
	if batch = len(b) > 0 && b[0] == '['; batch {
		return msgs, true, json.Unmarshal(b, &msgs) == nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return nil, false, false
	}
	return []map[string]json.RawMessage{m}, false, true
}

// joinMessages encodes msgs as splitMessages found them.
func joinMessages(msgs []map[string]json.RawMessage, batch bool) []byte {
	var out []byte
	if batch {
		out, _ = json.Marshal(msgs)
	} else {
		out, _ = json.Marshal(msgs[0])
	}
	return out
}

// rewrite changes block answers: "unknown" answers null for every block
// asked by number (not tags), "tamper" changes gasUsed of block
// p.tamper and re-hashes its header (a self-consistent header whose
// execution does not match).
func (p *proxy) rewrite(mode string, out []byte) []byte {
	msgs, batch, ok := splitMessages(out)
	if !ok {
		return out
	}
	for _, m := range msgs {
		res := m["result"]
		var fields map[string]json.RawMessage
		if len(res) == 0 || res[0] != '{' || json.Unmarshal(res, &fields) != nil || fields["transactions"] == nil {
			continue
		}
		var h types.Header
		if json.Unmarshal(res, &h) != nil {
			continue
		}
		switch {
		case mode == "unknown" && h.Number.Uint64() > 0:
			m["result"] = json.RawMessage("null")
		case mode == "tamper" && h.Number.Uint64() == p.tamper.Load():
			h.GasUsed++
			fields["gasUsed"], _ = json.Marshal(hexutil.Uint64(h.GasUsed))
			fields["hash"], _ = json.Marshal(h.Hash())
			m["result"], _ = json.Marshal(fields)
		}
	}
	return joinMessages(msgs, batch)
}

// nextTimer waits until the follower arms a timer (a poll or a backoff)
// and returns its duration.
func (f *follower) nextTimer() time.Duration {
	f.t.Helper()
	timeout := time.After(time.Minute)
	for {
		changed := f.clock.Changed()
		if d, ok := f.clock.Next(); ok {
			return d
		}
		select {
		case <-changed:
		case <-f.Done():
			f.t.Fatalf("following stopped: %v", f.Err())
		case <-timeout:
			f.t.Fatal("the follower armed no timer")
		}
	}
}

// waitIdle waits until our head is want and the follower waits for its
// next poll (the sync, tags included, is over).
func (f *follower) waitIdle(want common.Hash, cfg Config) {
	f.t.Helper()
	f.waitHead(want, cfg.BackoffMin)
	for f.nextTimer() != cfg.PollInterval {
		f.clock.Advance(cfg.BackoffMin)
	}
}

func (f *follower) faults(kind string) float64 {
	return testutil.ToFloat64(f.metrics.errors.WithLabelValues(kind))
}

// TestFollowFaults drives a follower (http, manual clock) through an
// upstream that goes down, answers garbage, forgets blocks and finally
// serves a tampered block: each transient fault is counted, leaves the
// store untouched and is retried after a backoff that doubles up to its
// cap and starts over after a success; the tampered block, failing
// verification twice, stops following with a divergence naming the block
// and the field, with nothing of it written and reads still served.
func TestFollowFaults(t *testing.T) {
	u := startUpstream(t, followtest.Options{NoDebug: true})
	for range 6 {
		u.block(2, 'a')
	}
	px := newProxy(t, u.HTTP)
	cfg := testConfig(px.URL)
	cfg.PollInterval, cfg.BackoffMin, cfg.BackoffMax = time.Second, 100*time.Millisecond, 400*time.Millisecond
	f := newFollower(t, u.Spec, cfg)
	f.waitHead(u.head().Hash(), cfg.PollInterval)
	if d := f.nextTimer(); d != cfg.PollInterval {
		t.Fatalf("idle follower waits %v, want the poll interval", d)
	}
	stable := f.w.Head().Hash()

	// Each fault: the next poll fails, the store stays, the backoff
	// doubles up to its cap.
	for _, tc := range []struct {
		mode, kind string
	}{{"down", "request"}, {"garbage", "response"}, {"unknown", "unknown_block"}} {
		t.Run(tc.mode, func(t *testing.T) {
			u.block(1, 'b')
			px.set(tc.mode)
			base := f.faults(tc.kind)
			f.clock.Advance(f.nextTimer()) // the poll
			for i, want := range []time.Duration{100, 200, 400, 400} {
				if d := f.nextTimer(); d != want*time.Millisecond {
					t.Fatalf("backoff %d: %v, want %v", i, d, want*time.Millisecond)
				}
				if got := f.faults(tc.kind) - base; got != float64(i+1) {
					t.Fatalf("after fault %d: %v %s faults counted", i+1, got, tc.kind)
				}
				if f.w.Head().Hash() != stable {
					t.Fatal("the store changed during an upstream fault")
				}
				f.clock.Advance(want * time.Millisecond)
			}
			px.set("pass")
			f.waitIdle(u.head().Hash(), cfg)
			stable = f.w.Head().Hash()
			// A success resets the backoff: the next fault waits the minimum.
			px.set("down")
			u.block(1, 'b')
			f.clock.Advance(f.nextTimer())
			if d := f.nextTimer(); d != cfg.BackoffMin {
				t.Fatalf("backoff after a success: %v, want %v", d, cfg.BackoffMin)
			}
			px.set("pass")
			f.waitIdle(u.head().Hash(), cfg)
			stable = f.w.Head().Hash()
		})
	}
	if r := testutil.ToFloat64(f.metrics.reconnects); r < 12 {
		t.Fatalf("%v reconnects counted", r)
	}

	t.Run("divergence", func(t *testing.T) {
		head := f.w.Head().Number()
		bad := u.block(3, 'c')
		px.tamper.Store(head + 1)
		px.set("tamper")
		f.waitDone(f.nextTimer())
		err := f.Err()
		if !errors.Is(err, ErrDivergence) || !errors.Is(err, chain.ErrInvalidBlock) ||
			!strings.Contains(err.Error(), "gas used") || !strings.Contains(err.Error(), big.NewInt(int64(head+1)).String()) {
			t.Fatalf("error %v: want a divergence naming block %d and the gas used", err, head+1)
		}
		if f.faults("verification") != 1 {
			t.Fatalf("%v verification faults before the divergence, want 1 (one refetch)", f.faults("verification"))
		}
		if h := f.w.Head(); h.Number() != head || h.Hash() == bad {
			t.Fatalf("head %d after the divergence, want %d", h.Number(), head)
		}
		if testutil.ToFloat64(f.metrics.stopped) != 1 {
			t.Fatal("tipnode_follow_stopped not set")
		}
		if _, view, err := f.w.OpenHead(); err != nil {
			t.Fatalf("reads after the divergence: %v", err)
		} else {
			view.Close()
		}
		t.Logf("following stopped: %v", err)
	})
}

// TestFollowStartsWithUpstreamDown: an upstream that cannot be reached at
// start is not an error; the follower retries with backoff and follows
// once it answers.
func TestFollowStartsWithUpstreamDown(t *testing.T) {
	u := startUpstream(t, followtest.Options{NoDebug: true})
	for range 3 {
		u.block(2, 'a')
	}
	px := newProxy(t, u.HTTP)
	px.set("down")
	cfg := testConfig(px.URL)
	cfg.BackoffMin, cfg.BackoffMax = 100*time.Millisecond, 400*time.Millisecond
	f := newFollower(t, u.Spec, cfg) // Start succeeded
	for _, want := range []time.Duration{100, 200, 400} {
		if d := f.nextTimer(); d != want*time.Millisecond {
			t.Fatalf("backoff %v, want %v", d, want*time.Millisecond)
		}
		f.clock.Advance(want * time.Millisecond)
	}
	if f.w.Head().Number() != 0 || f.faults("request") < 3 {
		t.Fatalf("head %d, %v request faults while the upstream was down", f.w.Head().Number(), f.faults("request"))
	}
	px.set("pass")
	f.waitHead(u.head().Hash(), 100*time.Millisecond)
	f.checkSameChain(u)
}

// TestFollowUpstreamPruned: an upstream that answers "pruned history
// unavailable" (4444) for the blocks above our head (its history starts
// later than ours) stops following at once with ErrUpstreamPruned naming
// the upstream, the block and the answer: counted (kind "pruned"),
// tipnode_follow_stopped set, no retry, the store untouched.
func TestFollowUpstreamPruned(t *testing.T) {
	u := startUpstream(t, followtest.Options{NoDebug: true})
	for range 3 {
		u.block(2, 'a')
	}
	px := newProxy(t, u.HTTP)
	cfg := testConfig(px.URL)
	cfg.BackoffMin, cfg.BackoffMax = 100*time.Millisecond, 400*time.Millisecond
	f := newFollower(t, u.Spec, cfg)
	f.waitIdle(u.head().Hash(), cfg)
	head := f.w.Head()

	px.set("pruned")
	u.block(2, 'b')
	f.clock.Advance(f.nextTimer()) // the poll
	f.waitDone(0)
	err := f.Err()
	want := []string{px.URL, "pruned history unavailable", hexutil.EncodeUint64(head.Number() + 1), "--snapshot-from"}
	for _, w := range want {
		if !errors.Is(err, ErrUpstreamPruned) || !strings.Contains(err.Error(), w) {
			t.Fatalf("error %v: want ErrUpstreamPruned naming %q", err, w)
		}
	}
	if f.faults("pruned") != 1 || f.faults("fatal") != 1 || testutil.ToFloat64(f.metrics.stopped) != 1 {
		t.Fatalf("faults pruned %v fatal %v, stopped %v: want 1, 1, 1", f.faults("pruned"), f.faults("fatal"), testutil.ToFloat64(f.metrics.stopped))
	}
	if f.clock.Timers() != 0 {
		t.Fatal("a timer is armed after the stop: the follower retries")
	}
	if f.w.Head().Hash() != head.Hash() {
		t.Fatal("the store changed")
	}
	t.Logf("following stopped: %v", err)
}

// TestFollowWithoutHeaderMethods: an upstream without go-ethereum's
// header methods (a JSON-RPC method-not-found, or a gateway's HTTP 400)
// is followed with eth_getBlockByNumber headers.
func TestFollowWithoutHeaderMethods(t *testing.T) {
	for _, mode := range []string{"noheader", "noheader400"} {
		t.Run(mode, func(t *testing.T) {
			u := startUpstream(t, followtest.Options{NoDebug: true})
			for range 3 {
				u.block(2, 'a')
			}
			px := newProxy(t, u.HTTP)
			px.set(mode)
			cfg := testConfig(px.URL)
			f := newFollower(t, u.Spec, cfg)
			f.waitIdle(u.head().Hash(), cfg)
			u.block(2, 'b')
			f.waitIdle(u.head().Hash(), cfg)
			f.checkSameChain(u)
		})
	}
}
