package follow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	gethrpc "github.com/ethereum/go-ethereum/rpc"

	"github.com/tipnode/tipnode/store/chaintypes"
)

// wsMessageLimit bounds one websocket message from the upstream (a batch of
// blocks with their transactions).
const wsMessageLimit = 256 << 20

// upstream is one connection to the upstream node (go-ethereum's RPC
// client, http or websocket). Every call is bounded by the request timeout
// and returns an error wrapping ErrUpstream, ErrBadResponse or
// ErrUnknownBlock.
type upstream struct {
	c       *gethrpc.Client
	cfg     Config
	metrics *Metrics
	noRaw   atomic.Bool // the upstream refused debug_getRawBlock: JSON only
	// noHeader: the upstream refused eth_getHeaderByNumber (not every
	// node has go-ethereum's header methods): headers are read with
	// eth_getBlockByNumber(n, false), which an anchored node answers only
	// from its history anchor up.
	noHeader atomic.Bool
}

func dial(ctx context.Context, cfg Config, m *Metrics) (*upstream, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.RequestTimeout)
	defer cancel()
	opts := []gethrpc.ClientOption{gethrpc.WithWebsocketMessageSizeLimit(wsMessageLimit)}
	if cfg.NoGzip {
		opts = append(opts, gethrpc.WithHTTPClient(&http.Client{Transport: &http.Transport{DisableCompression: true}}))
	}
	c, err := gethrpc.DialOptions(ctx, cfg.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: dial %s: %v", ErrUpstream, cfg.URL, err)
	}
	u := &upstream{c: c, cfg: cfg, metrics: m}
	u.noRaw.Store(cfg.JSONBlocks)
	return u, nil
}

func (u *upstream) close() { u.c.Close() }

// call runs one request under the request timeout and decodes its result
// into result (a result that does not decode is ErrBadResponse).
func (u *upstream) call(ctx context.Context, result any, method string, args ...any) error {
	ctx, cancel := context.WithTimeout(ctx, u.cfg.RequestTimeout)
	defer cancel()
	var raw json.RawMessage
	if err := u.c.CallContext(ctx, &raw, method, args...); err != nil {
		if isPruned(err) {
			return u.pruned(fmt.Sprintf("%s %v", method, args), err)
		}
		return fmt.Errorf("%w: %s: %w", ErrUpstream, method, err)
	}
	if out, ok := result.(*json.RawMessage); ok {
		*out = raw
		return nil
	}
	if err := json.Unmarshal(raw, result); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBadResponse, method, err)
	}
	return nil
}

// batch runs elems as one JSON-RPC batch under the request timeout. A
// transport failure is returned; per-element errors stay in the elements.
func (u *upstream) batch(ctx context.Context, elems []gethrpc.BatchElem) error {
	ctx, cancel := context.WithTimeout(ctx, u.cfg.RequestTimeout)
	defer cancel()
	if err := u.c.BatchCallContext(ctx, elems); err != nil {
		return fmt.Errorf("%w: batch of %d %s: %v", ErrUpstream, len(elems), elems[0].Method, err)
	}
	return nil
}

// chainID asks eth_chainId.
func (u *upstream) chainID(ctx context.Context) (*big.Int, error) {
	var id hexutil.Big
	if err := u.call(ctx, &id, "eth_chainId"); err != nil {
		return nil, err
	}
	return (*big.Int)(&id), nil
}

// isPruned reports the upstream's answer for history it does not hold:
// go-ethereum's "pruned history unavailable" (code 4444), which tipnode
// answers below the history anchor of a store initialised from a state
// dump or a snapshot.
func isPruned(err error) bool {
	var e gethrpc.Error
	return errors.As(err, &e) && e.ErrorCode() == prunedHistoryCode ||
		err != nil && strings.Contains(err.Error(), "pruned history unavailable")
}

// refused reports a JSON-RPC error answer other than pruned history (a
// method the upstream does not have or does not enable), or an HTTP 4xx
// other than 429 (a gateway refusing a method it does not know).
func refused(err error) bool {
	var e gethrpc.Error
	var h gethrpc.HTTPError
	return err != nil && !errors.Is(err, ErrUpstreamPruned) && (errors.As(err, &e) ||
		errors.As(err, &h) && h.StatusCode >= 400 && h.StatusCode < 500 && h.StatusCode != http.StatusTooManyRequests)
}

// prunedHistoryCode is go-ethereum's JSON-RPC error code for pruned history.
const prunedHistoryCode = 4444

// pruned is the error of a request for history the upstream does not hold
// (what: the request): ErrUpstreamPruned naming the upstream, the request
// and its answer.
func (u *upstream) pruned(what string, err error) error {
	return fmt.Errorf("%w: %s answers %s with %q: it does not hold that history (it was initialised at a later block, or pruned it); "+
		"follow an upstream that holds it, or initialise this data directory again from a recent snapshot of this upstream (tipnode init --snapshot-from)",
		ErrUpstreamPruned, u.cfg.URL, what, err.Error())
}

// header returns the header at a number or tag ("latest", "safe",
// "finalized"): go-ethereum's eth_getHeaderByNumber, which answers the
// headers a node holds below its history (block 0 and the headers below
// the anchor of an anchored tipnode or go-ethereum with pruned history);
// eth_getBlockByNumber(at, false) for an upstream that refuses it (the
// first header call decides, for this connection).
func (u *upstream) header(ctx context.Context, at string) (*types.Header, error) {
	var raw json.RawMessage
	var err error
	if u.noHeader.Load() {
		err = u.call(ctx, &raw, "eth_getBlockByNumber", at, false)
	} else if err = u.call(ctx, &raw, "eth_getHeaderByNumber", at); refused(err) {
		if err = u.call(ctx, &raw, "eth_getBlockByNumber", at, false); err == nil {
			u.noHeader.Store(true)
		}
	}
	if err != nil {
		return nil, err
	}
	h, err := decodeHeader(raw)
	if err != nil {
		return nil, fmt.Errorf("header %s: %w", at, err)
	}
	return h, nil
}

// headerElem is the batch element asking for the header at (a number or
// tag), with the method header chose for this connection.
func (u *upstream) headerElem(at any) gethrpc.BatchElem {
	if u.noHeader.Load() {
		return gethrpc.BatchElem{Method: "eth_getBlockByNumber", Args: []any{at, false}, Result: new(json.RawMessage)}
	}
	return gethrpc.BatchElem{Method: "eth_getHeaderByNumber", Args: []any{at}, Result: new(json.RawMessage)}
}

// elemError is the error of a batch element's JSON-RPC error (what names
// the element).
func (u *upstream) elemError(what string, e gethrpc.BatchElem) error {
	if isPruned(e.Error) {
		return u.pruned(fmt.Sprintf("%s %v (%s)", e.Method, e.Args, what), e.Error)
	}
	return fmt.Errorf("%w: %s: %w", ErrUpstream, what, e.Error)
}

// headers returns the headers of blocks from..to in one batch.
func (u *upstream) headers(ctx context.Context, from, to uint64) ([]*types.Header, error) {
	elems := make([]gethrpc.BatchElem, 0, to-from+1)
	for n := from; n <= to; n++ {
		elems = append(elems, u.headerElem(hexutil.Uint64(n)))
	}
	if err := u.batch(ctx, elems); err != nil {
		return nil, err
	}
	out := make([]*types.Header, len(elems))
	for i, e := range elems {
		n := from + uint64(i)
		if e.Error != nil {
			return nil, u.elemError(fmt.Sprintf("header %d", n), e)
		}
		h, err := decodeHeader(*e.Result.(*json.RawMessage))
		if err == nil && h.Number.Uint64() != n {
			err = fmt.Errorf("%w: asked for header %d, got %d", ErrBadResponse, n, h.Number)
		}
		if err != nil {
			return nil, fmt.Errorf("header %d: %w", n, err)
		}
		out[i] = h
	}
	return out, nil
}

// tags returns the upstream's safe and finalized headers (nil when the
// upstream has none, as before the merge).
func (u *upstream) tags(ctx context.Context) (safe, finalized *types.Header, err error) {
	elems := []gethrpc.BatchElem{u.headerElem("safe"), u.headerElem("finalized")}
	if err := u.batch(ctx, elems); err != nil {
		return nil, nil, err
	}
	out := make([]*types.Header, 2)
	for i, e := range elems {
		if e.Error != nil {
			continue // "safe block not found" and the like
		}
		h, err := decodeHeader(*e.Result.(*json.RawMessage))
		if errors.Is(err, ErrUnknownBlock) {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s header: %w", e.Args[0], err)
		}
		out[i] = h
	}
	return out[0], out[1], nil
}

// blocks returns blocks from..to (ascending) in one batch: raw blocks when
// the upstream serves debug_getRawBlock, else JSON blocks with full
// transactions (and a second batch for uncle headers, if any). When the
// raw method answers a JSON-RPC error and JSON then works, the upstream
// does not serve raw blocks: JSON from then on.
func (u *upstream) blocks(ctx context.Context, from, to uint64) ([]*chaintypes.Block, error) {
	if u.noRaw.Load() {
		return u.jsonBlocks(ctx, from, to)
	}
	blocks, refused, err := u.rawBlocks(ctx, from, to)
	if !refused || errors.Is(err, ErrUpstreamPruned) {
		return blocks, err // pruned: no JSON block either
	}
	blocks, jerr := u.jsonBlocks(ctx, from, to)
	if jerr != nil {
		return nil, errors.Join(err, jerr)
	}
	u.noRaw.Store(true)
	return blocks, nil
}

// rawBlocks fetches debug_getRawBlock for from..to. refused reports that
// an element was answered with a JSON-RPC error (err says which).
func (u *upstream) rawBlocks(ctx context.Context, from, to uint64) (blocks []*chaintypes.Block, refused bool, err error) {
	elems := make([]gethrpc.BatchElem, 0, to-from+1)
	for n := from; n <= to; n++ {
		elems = append(elems, gethrpc.BatchElem{Method: "debug_getRawBlock", Args: []any{hexutil.Uint64(n)}, Result: new(json.RawMessage)})
	}
	if err := u.batch(ctx, elems); err != nil {
		return nil, false, err
	}
	blocks = make([]*chaintypes.Block, len(elems))
	for i, e := range elems {
		n := from + uint64(i)
		if e.Error != nil {
			var rpcErr gethrpc.Error
			return nil, errors.As(e.Error, &rpcErr), u.elemError(fmt.Sprintf("raw block %d", n), e)
		}
		b, err := decodeRawBlock(*e.Result.(*json.RawMessage))
		if err == nil && b.NumberU64() != n {
			err = fmt.Errorf("%w: asked for block %d, got %d", ErrBadResponse, n, b.NumberU64())
		}
		if err != nil {
			return nil, false, fmt.Errorf("block %d: %w", n, err)
		}
		blocks[i] = b
	}
	u.metrics.fetch("raw", len(blocks))
	return blocks, false, nil
}

func (u *upstream) jsonBlocks(ctx context.Context, from, to uint64) ([]*chaintypes.Block, error) {
	elems := make([]gethrpc.BatchElem, 0, to-from+1)
	for n := from; n <= to; n++ {
		elems = append(elems, gethrpc.BatchElem{Method: "eth_getBlockByNumber", Args: []any{hexutil.Uint64(n), true}, Result: new(json.RawMessage)})
	}
	if err := u.batch(ctx, elems); err != nil {
		return nil, err
	}
	type part struct {
		h      *types.Header
		body   *chaintypes.Body
		uncles []common.Hash
	}
	parts := make([]part, len(elems))
	var uncleElems []gethrpc.BatchElem
	for i, e := range elems {
		n := from + uint64(i)
		if e.Error != nil {
			return nil, u.elemError(fmt.Sprintf("block %d", n), e)
		}
		h, body, uncles, err := decodeBlock(*e.Result.(*json.RawMessage))
		if err == nil && h.Number.Uint64() != n {
			err = fmt.Errorf("%w: asked for block %d, got %d", ErrBadResponse, n, h.Number)
		}
		if err != nil {
			return nil, fmt.Errorf("block %d: %w", n, err)
		}
		parts[i] = part{h, body, uncles}
		for j := range uncles {
			uncleElems = append(uncleElems, gethrpc.BatchElem{Method: "eth_getUncleByBlockHashAndIndex",
				Args: []any{h.Hash(), hexutil.Uint64(j)}, Result: new(json.RawMessage)})
		}
	}
	if len(uncleElems) > 0 {
		if err := u.batch(ctx, uncleElems); err != nil {
			return nil, err
		}
	}
	out := make([]*chaintypes.Block, len(parts))
	next := 0
	for i, p := range parts {
		uncles := make([]*types.Header, len(p.uncles))
		for j := range uncles {
			e := uncleElems[next]
			next++
			if e.Error != nil {
				return nil, fmt.Errorf("%w: uncle %d of block %d: %v", ErrUpstream, j, p.h.Number, e.Error)
			}
			uh, err := decodeHeader(*e.Result.(*json.RawMessage))
			if err != nil {
				return nil, fmt.Errorf("uncle %d of block %d: %w", j, p.h.Number, err)
			}
			uncles[j] = uh
		}
		b, err := assembleBlock(p.h, p.body, p.uncles, uncles)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	u.metrics.fetch("json", len(out))
	return out, nil
}

// subscribeHeads subscribes to newHeads (websocket only); notifications
// arrive undecoded on ch.
func (u *upstream) subscribeHeads(ctx context.Context, ch chan<- json.RawMessage) (*gethrpc.ClientSubscription, error) {
	ctx, cancel := context.WithTimeout(ctx, u.cfg.RequestTimeout)
	defer cancel()
	sub, err := u.c.EthSubscribe(ctx, ch, "newHeads")
	if err != nil {
		return nil, fmt.Errorf("%w: subscribe newHeads: %v", ErrUpstream, err)
	}
	return sub, nil
}
