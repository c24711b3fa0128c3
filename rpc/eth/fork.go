package eth

// The upstream fallback of a fork (`tipnode dev --fork`): blocks,
// transactions, receipts, logs and state the fork's store does not hold
// (at or below the fork block) are read from the upstream the fork was
// made of. The state itself is fetched by the store (store.ForkSource);
// this layer covers what the store answers as pruned history and the
// lookups by hash that find nothing locally.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	gethrpc "github.com/ethereum/go-ethereum/rpc"

	"github.com/tipnode/tipnode/rpc"
	"github.com/tipnode/tipnode/store"
)

// forkUpstream forwards requests to the fork's upstream.
type forkUpstream struct {
	url     string
	block   uint64
	c       *gethrpc.Client
	timeout time.Duration
}

// forkLookups are the methods whose null answer (nothing by that hash
// here) is asked of the upstream, and the member of the upstream's answer
// that gives its block number (an answer above the fork block is not on
// the fork's chain: null).
var forkLookups = map[string]string{
	"eth_getBlockByHash":                    "number",
	"eth_getTransactionByHash":              "blockNumber",
	"eth_getTransactionReceipt":             "blockNumber",
	"eth_getTransactionByBlockHashAndIndex": "blockNumber",
	"eth_getUncleByBlockHashAndIndex":       "number",
}

// ForwardBelowFork makes s answer, on a fork of the upstream at url made at
// block, what the store does not hold from the upstream: every method
// whose local answer is pruned history (a block, its receipts or logs, or
// a state read below the fork's headers), and the lookups by hash of
// forkLookups that find nothing here and that the upstream has at or
// below the fork block. Call it after every method is registered. Close
// releases the client (API.Close).
func (a *API) ForwardBelowFork(s *rpc.Server, url string, block uint64) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := gethrpc.DialContext(ctx, url)
	if err != nil {
		return fmt.Errorf("fork upstream %s: %w", url, err)
	}
	f := &forkUpstream{url: url, block: block, c: c, timeout: 30 * time.Second}
	a.fork = f
	s.WrapHandlers(f.wrap)
	return nil
}

// CloseFork releases the fork upstream's client (nothing without one).
func (a *API) CloseFork() {
	if a.fork != nil {
		a.fork.c.Close()
	}
}

func (f *forkUpstream) wrap(method string, h rpc.Handler) rpc.Handler {
	member, lookup := forkLookups[method]
	return func(ctx context.Context, p rpc.Params) (any, error) {
		res, err := h(ctx, p)
		switch {
		case err != nil && errors.Is(err, store.ErrPrunedHistory):
			if method == "eth_getLogs" {
				if ferr := f.checkLogsRange(p); ferr != nil {
					return nil, ferr
				}
			}
			return f.forward(ctx, method, p)
		case err == nil && lookup && isNull(res):
			raw, ferr := f.forward(ctx, method, p)
			if ferr != nil {
				return nil, ferr
			}
			if !f.atOrBelowFork(raw, member) {
				return nil, nil
			}
			return raw, nil
		}
		return res, err
	}
}

// forward sends the request to the upstream and returns its answer as is;
// a failure is -32000 naming the upstream.
func (f *forkUpstream) forward(ctx context.Context, method string, p rpc.Params) (rpc.RawResult, error) {
	args := make([]any, p.Len())
	for i := range args {
		args[i] = p.Raw(i)
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	var raw json.RawMessage
	if err := f.c.CallContext(ctx, &raw, method, args...); err != nil {
		var re gethrpc.Error
		if errors.As(err, &re) { // the upstream's own answer
			return nil, &rpc.Error{Code: re.ErrorCode(), Message: re.Error()}
		}
		return nil, rpc.ErrServer(fmt.Sprintf("fork upstream %s: %s: %v", f.url, method, err))
	}
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	// The upstream's answer counts against the response budget as a local
	// one does.
	if err := p.CheckResponse(len(raw)); err != nil {
		return nil, err
	}
	return rpc.RawResult(raw), nil
}

// atOrBelowFork reports whether the upstream's answer raw is an object
// whose member (a block number) is at or below the fork block.
func (f *forkUpstream) atOrBelowFork(raw rpc.RawResult, member string) bool {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return false
	}
	var n hexutil.Uint64
	if json.Unmarshal(obj[member], &n) != nil {
		return false
	}
	return uint64(n) <= f.block
}

// checkLogsRange refuses an eth_getLogs range that reaches above the fork
// block: the upstream holds the part below, the fork the part above.
func (f *forkUpstream) checkLogsRange(p rpc.Params) error {
	var crit struct {
		BlockHash *json.RawMessage `json:"blockHash"`
		ToBlock   *json.RawMessage `json:"toBlock"`
	}
	if json.Unmarshal(p.Raw(0), &crit) != nil || crit.BlockHash != nil {
		return nil
	}
	var to hexutil.Uint64
	if crit.ToBlock != nil && json.Unmarshal(*crit.ToBlock, &to) == nil && uint64(to) <= f.block {
		return nil
	}
	return rpc.ErrServer(fmt.Sprintf("the logs range reaches both below and above the fork block %d: ask for the part up to %d (answered by the fork's upstream) and the part from %d separately",
		f.block, f.block, f.block+1))
}

// isNull reports whether a handler's result encodes as JSON null.
func isNull(res any) bool {
	if res == nil {
		return true
	}
	if r, ok := res.(rpc.RawResult); ok {
		return string(r) == "null"
	}
	v := reflect.ValueOf(res)
	return (v.Kind() == reflect.Pointer || v.Kind() == reflect.Map || v.Kind() == reflect.Slice || v.Kind() == reflect.Interface) && v.IsNil()
}
