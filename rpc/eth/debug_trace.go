package eth

// Tracing: debug_traceTransaction, debug_traceCall, debug_traceBlockByNumber
// and debug_traceBlockByHash, with go-ethereum's own tracers (eth/tracers:
// the struct logger of eth/tracers/logger when no tracer is named, the
// native tracers — callTracer, flatCallTracer, prestateTracer, 4byteTracer,
// … — by name, JavaScript tracers only with APIConfig.JSTracers). They run
// on our StateDB, which reports state changes to the tracer's hooks
// (chain/hooks.go), inside a chain.BlockProcessor (SetTracer frames each
// transaction with OnTxStart / OnTxEnd) or, for debug_traceCall, on the
// call's EVM.
//
// A traced transaction is re-executed on its block's parent state after the
// block's system calls and the transactions before it (untraced). A
// pre-confirmed transaction is traced the same way on the pending block:
// its parent's state, then the pending transactions before it. The pending
// block is traced like any block (its hash is zero: it is not sealed).
//
// Limits: every trace is an execution (APIConfig.MaxExecutions, the
// -32005 refusals of the limiter), and runs under APIConfig.EVMTimeout (a
// tracer's "timeout" option may only shorten it) together with whatever it
// replays first. The output of one trace — one transaction's, or a whole
// block's — is bounded by APIConfig.TraceMaxOutput: the struct logger stops
// recording there (its "limit" option may only lower it), the native
// tracers that collect as the execution goes are metered as they grow
// (trace_meter.go), and every transaction's result is measured as it is
// added; a trace over the bound is refused with -32005 naming the limit,
// and is never completed in memory.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/eth/tracers"
	"github.com/ethereum/go-ethereum/eth/tracers/logger"

	// The native and JavaScript tracers register themselves in
	// tracers.DefaultDirectory (their constructors are not exported):
	// imported for that only. JavaScript is refused unless
	// APIConfig.JSTracers (newTracer).
	_ "github.com/ethereum/go-ethereum/eth/tracers/js"
	_ "github.com/ethereum/go-ethereum/eth/tracers/native"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/rpc"
	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// registerTrace installs the debug_trace* methods, each an execution under
// the API's limiter.
func (a *API) registerTrace(s *rpc.Server) {
	s.RegisterLimited("debug_traceTransaction", a.execs, a.traceTransaction)
	s.RegisterLimited("debug_traceCall", a.execs, a.traceCall)
	s.RegisterLimited("debug_traceBlockByNumber", a.execs, blockMethod(2, false, a.traceBlock))
	s.RegisterLimited("debug_traceBlockByHash", a.execs, blockMethod(2, true, a.traceBlock))
}

// traceConfig is go-ethereum's TraceConfig: the struct logger's options
// (used when Tracer is absent), the tracer's name, a timeout and the named
// tracer's own configuration. Unknown fields are ignored, as go-ethereum
// does.
type traceConfig struct {
	EnableMemory     bool            `json:"enableMemory"`
	DisableStack     bool            `json:"disableStack"`
	DisableStorage   bool            `json:"disableStorage"`
	EnableReturnData bool            `json:"enableReturnData"`
	Limit            int             `json:"limit"`
	Tracer           *string         `json:"tracer"`
	Timeout          *string         `json:"timeout"`
	TracerConfig     json.RawMessage `json:"tracerConfig"`
}

// traceCallConfig is debug_traceCall's: a traceConfig with state and block
// overrides and, optionally, the position in the block the call runs at
// (after the block's first TxIndex transactions).
type traceCallConfig struct {
	traceConfig
	StateOverrides StateOverride   `json:"stateOverrides"`
	BlockOverrides *BlockOverrides `json:"blockOverrides"`
	TxIndex        *hexutil.Uint   `json:"txIndex"`
}

// Refusals of the tracing methods (-32000, go-ethereum's messages).
var (
	errTraceTxNotFound = rpc.ErrServer("transaction not found")
	errTraceGenesis    = rpc.ErrServer("genesis is not traceable")
)

// traceTimeout is the time one trace request may run: the EVM timeout,
// shortened by the config's timeout option.
func (a *API) traceTimeout(cfg *traceConfig) (time.Duration, error) {
	d := a.cfg.EVMTimeout
	if cfg.Timeout != nil {
		t, err := time.ParseDuration(*cfg.Timeout)
		if err != nil || t <= 0 {
			return 0, rpc.ErrInvalidParams("invalid tracer timeout %s: want a positive duration such as \"5s\"", quoteInput(*cfg.Timeout))
		}
		d = min(d, t)
	}
	return d, nil
}

// traceContext bounds ctx by the trace's timeout, which it returns too.
func (a *API) traceContext(ctx context.Context, cfg *traceConfig) (context.Context, time.Duration, context.CancelFunc, error) {
	d, err := a.traceTimeout(cfg)
	if err != nil {
		return nil, 0, nil, err
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
		c, cancel := context.WithCancel(ctx)
		return c, d, cancel, nil
	}
	c, cancel := context.WithTimeout(ctx, d)
	return c, d, cancel, nil
}

// traceAbort is the error of a trace stopped by its context.
func traceAbort(ctx context.Context, timeout time.Duration) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &rpc.Error{Code: rpc.CodeTimeout, Message: fmt.Sprintf("execution aborted (timeout = %v)", timeout)}
	}
	return &rpc.Error{Code: rpc.CodeServerError, Message: "execution aborted (request cancelled)"}
}

// errTraceTooLarge refuses a trace whose output passes the bound.
func (a *API) errTraceTooLarge() error {
	a.log.Debug().Int("limit", a.cfg.TraceMaxOutput).Msg("trace refused: output over the bound")
	return rpc.ErrLimit("trace output exceeds the limit of %d bytes (--rpc.maxoutput); trace fewer transactions, or use a lighter tracer or options (callTracer, disableStack, limit)", a.cfg.TraceMaxOutput)
}

// txTracer is one transaction's tracer with its output meter.
type txTracer struct {
	*tracers.Tracer
	meter *outputMeter // nil: the tracer is not metered while it runs
}

// newTracer builds the tracer cfg names for one transaction (txctx: its
// block, index and hash; zero for a call), whose output may take at most
// budget bytes.
func (a *API) newTracer(cfg *traceConfig, txctx *tracers.Context, budget int) (*txTracer, error) {
	if cfg.Tracer == nil {
		lc := logger.Config{
			EnableMemory: cfg.EnableMemory, DisableStack: cfg.DisableStack,
			DisableStorage: cfg.DisableStorage, EnableReturnData: cfg.EnableReturnData,
			Limit: budget,
		}
		if cfg.Limit > 0 && cfg.Limit < budget {
			lc.Limit = cfg.Limit
		}
		// The struct logger stops recording once its entries pass Limit: a
		// trace over the budget stays about the budget's size in memory.
		l := logger.NewStructLogger(&lc)
		return &txTracer{Tracer: &tracers.Tracer{Hooks: l.Hooks(), GetResult: l.GetResult, Stop: l.Stop}}, nil
	}
	name := *cfg.Tracer
	if !a.cfg.JSTracers {
		if js, ok := usesJS(name, cfg.TracerConfig, 0); !ok {
			return nil, rpc.ErrInvalidParams("muxTracer nested more than %d deep", maxMuxDepth)
		} else if js != "" {
			return nil, rpc.ErrInvalidParams("tracer %s not available: not a built-in tracer, and JavaScript tracers are disabled on this node (--rpc.jstracers)", quoteInput(js))
		}
	}
	t, err := tracers.DefaultDirectory.New(name, txctx, cfg.TracerConfig, a.exec.Config())
	if err != nil {
		return nil, rpc.ErrInvalidParams("tracer %s: %v", quoteInput(name), err)
	}
	tt := &txTracer{Tracer: t}
	if spec, ok := meterSpecOf(name, cfg.TracerConfig, 0); ok {
		tt.meter = &outputMeter{budget: budget, spec: spec}
		tt.Hooks = tt.meter.wrap(t.Hooks)
	}
	return tt, nil
}

// maxMuxDepth bounds muxTracer configs nested in muxTracer configs.
const maxMuxDepth = 4

// usesJS returns the first JavaScript tracer name builds: name itself, or
// one of the tracers a muxTracer's config names (go-ethereum's muxTracer
// builds them from the same directory). ok is false when muxTracers nest
// deeper than maxMuxDepth.
func usesJS(name string, cfg json.RawMessage, depth int) (js string, ok bool) {
	if tracers.DefaultDirectory.IsJS(name) {
		return name, true
	}
	if name != "muxTracer" {
		return "", true
	}
	if depth >= maxMuxDepth {
		return "", false
	}
	var subs map[string]json.RawMessage
	if json.Unmarshal(cfg, &subs) != nil {
		return "", true // refused by the muxTracer's own decoding
	}
	for sub, subCfg := range subs {
		if js, ok := usesJS(sub, subCfg, depth+1); !ok || js != "" {
			return js, ok
		}
	}
	return "", true
}

// traceResult returns the tracer's output, refused when over budget.
func (a *API) traceResult(ctx context.Context, t *txTracer, budget int, timeout time.Duration) (json.RawMessage, error) {
	if t.meter != nil && t.meter.over() {
		return nil, a.errTraceTooLarge()
	}
	res, err := t.GetResult()
	if ctx.Err() != nil {
		return nil, traceAbort(ctx, timeout)
	}
	if err != nil {
		return nil, rpc.ErrServer(err.Error())
	}
	if len(res) > budget {
		return nil, a.errTraceTooLarge()
	}
	return res, nil
}

// --- blocks re-executed for tracing ------------------------------------------

// traceBlockEnv is a block to re-execute: its header, its parent's header
// and post-state, the headers BLOCKHASH reads, and its transactions. For
// the pending block, hash is zero.
type traceBlockEnv struct {
	header  *types.Header
	parent  *types.Header
	hash    common.Hash
	txs     chaintypes.Txs
	state   chain.Backend
	headers chain.HeaderSource
}

// canonicalTraceEnv prepares block b (read from r) for re-execution on its
// parent's state, which must be the canonical block below it.
func (a *API) canonicalTraceEnv(r *pending.Read, b *chaintypes.Block) (*traceBlockEnv, error) {
	n := b.NumberU64()
	if n == 0 {
		return nil, errTraceGenesis
	}
	headers := r.Headers()
	parent, err := headers.HeaderByNumber(n - 1)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if err != nil || parent.Hash() != b.ParentHash() {
		return nil, rpc.ErrServer(fmt.Sprintf("block %s is not on the canonical chain: the state of its parent is not kept", b.Hash().Hex()))
	}
	st, err := r.View.StateAt(n - 1)
	if errors.Is(err, store.ErrNotFound) {
		return nil, rpc.ErrServer(fmt.Sprintf("state of block %d is not available", n-1))
	}
	if err != nil {
		return nil, err
	}
	return &traceBlockEnv{header: b.Header(), parent: parent, hash: b.Hash(), txs: b.Transactions(), state: st, headers: headers}, nil
}

// pendingTraceEnv prepares the pending block of r (r.Snapshot non-nil) for
// re-execution on its parent's state: the canonical anchor's, or its
// pending parent's final state on top of it.
func (a *API) pendingTraceEnv(r *pending.Read) (*traceBlockEnv, error) {
	snap := r.Snapshot
	st, err := r.PendingParentState()
	if err != nil {
		return nil, err
	}
	parent := snap.Anchor()
	if p := snap.Parent(); p != nil {
		parent = p.Header()
	}
	return &traceBlockEnv{header: snap.ExecHeader(), parent: parent, txs: snap.Transactions(), state: st, headers: r.PendingHeaders()}, nil
}

// blockRun is a traceBlockEnv being re-executed.
type blockRun struct {
	env    *traceBlockEnv
	proc   *chain.BlockProcessor
	signer types.Signer
	cur    atomic.Pointer[txTracer] // the tracer running (stopped with the EVM)
	stop   func() bool              // releases the cancellation hook
}

// errTraceStopped is what a tracer stopped by the end of its request's
// context is told (a JavaScript tracer is interrupted with it).
var errTraceStopped = errors.New("execution timeout")

// startBlock opens the block on its parent's state and runs the system
// calls that precede its transactions. When ctx ends, the EVM and the
// running tracer (a JavaScript one may be busy in its own code) stop.
func (a *API) startBlock(ctx context.Context, env *traceBlockEnv) *blockRun {
	st := a.newStateDB(env.state)
	proc := a.exec.NewBlockProcessor(env.header, env.parent, env.hash, st, env.headers, vm.Config{})
	proc.EVM().SetJumpDestCache(a.jumpDests)
	b := &blockRun{env: env, proc: proc, signer: a.signerFor(env.header)}
	b.stop = context.AfterFunc(ctx, func() {
		proc.EVM().Cancel()
		if t := b.cur.Load(); t != nil {
			t.Stop(errTraceStopped)
		}
	})
	return b
}

// apply executes the block's next transaction tx, traced by t when t is
// not nil.
func (b *blockRun) apply(ctx context.Context, tx chaintypes.Tx, t *txTracer, timeout time.Duration) error {
	if t != nil {
		if t.meter != nil {
			t.meter.cancel = b.proc.EVM().Cancel
		}
		b.cur.Store(t)
		b.proc.SetTracer(t.Hooks)
		defer b.proc.SetTracer(nil)
	}
	var err error
	if signed, ok := tx.(*types.Transaction); ok && isImpersonated(signed) {
		// A dev chain's impersonated transaction (tipnode dev).
		msg, merr := core.TransactionToMessage(signed, pending.DevSigner(b.signer), b.env.header.BaseFee)
		if merr != nil {
			return rpc.ErrServer(fmt.Sprintf("tracing failed: %v", merr))
		}
		_, _, err = b.proc.ApplyMessage(signed, msg)
	} else {
		_, err = b.proc.ApplyTx(tx) // deposits too (OP chains)
	}
	if ctx.Err() != nil || b.proc.EVM().Cancelled() {
		if t != nil && t.meter != nil && t.meter.over() {
			return nil // the caller refuses the output
		}
		return traceAbort(ctx, timeout)
	}
	if err != nil {
		if errors.Is(err, chain.ErrTxInvalid) {
			return rpc.ErrServer(fmt.Sprintf("tracing failed: %v", err))
		}
		return err
	}
	return nil
}

// close releases the run's cancellation hook.
func (b *blockRun) close() { b.stop() }

// --- debug_traceTransaction ----------------------------------------------------

// traceTransaction: debug_traceTransaction(hash, config?). A canonical
// transaction, or a pre-confirmed one (on the pending block).
func (a *API) traceTransaction(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(2); err != nil {
		return nil, err
	}
	var hash common.Hash
	if err := p.Decode(0, "transactionHash", &hash); err != nil {
		return nil, err
	}
	var cfg traceConfig
	if _, err := p.DecodeOptional(1, "tracer config", &cfg); err != nil {
		return nil, err
	}
	ctx, timeout, cancel, err := a.traceContext(ctx, &cfg)
	if err != nil {
		return nil, err
	}
	defer cancel()

	r, err := a.open(ctx)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, index, err := a.lookupTx(r.View, hash)
	if err != nil {
		return nil, err
	}
	var env *traceBlockEnv
	switch {
	case b != nil:
		if env, err = a.canonicalTraceEnv(r, b); err != nil {
			return nil, err
		}
	case r.Snapshot != nil:
		_, _, i, ok := r.Snapshot.Transaction(hash)
		if !ok {
			return nil, errTraceTxNotFound
		}
		if env, err = a.pendingTraceEnv(r); err != nil {
			return nil, err
		}
		index = uint64(i)
	default:
		return nil, errTraceTxNotFound
	}
	// The tracer first: a bad config is refused before any replay.
	budget := a.cfg.TraceMaxOutput
	t, err := a.newTracer(&cfg, &tracers.Context{BlockHash: env.hash, BlockNumber: new(big.Int).Set(env.header.Number), TxIndex: int(index), TxHash: hash}, budget)
	if err != nil {
		return nil, err
	}
	run := a.startBlock(ctx, env)
	defer run.close()
	for i := range index {
		if err := run.apply(ctx, env.txs[i], nil, timeout); err != nil {
			return nil, err
		}
	}
	if err := run.apply(ctx, env.txs[index], t, timeout); err != nil {
		return nil, err
	}
	return a.traceResult(ctx, t, budget, timeout)
}

// --- debug_traceBlockByNumber / debug_traceBlockByHash ---------------------

// traceBlock: debug_traceBlockBy…(block, config?): every transaction of the
// block traced, [{txHash, result}] in block order. `pending` traces the
// pending block.
func (a *API) traceBlock(ctx context.Context, sel BlockSelector, p rpc.Params) (any, error) {
	var cfg traceConfig
	if _, err := p.DecodeOptional(1, "tracer config", &cfg); err != nil {
		return nil, err
	}
	ctx, timeout, cancel, err := a.traceContext(ctx, &cfg)
	if err != nil {
		return nil, err
	}
	defer cancel()

	c, err := a.loadBlock(ctx, sel)
	if err != nil {
		return nil, err
	}
	if c == nil {
		if sel.Hash != nil {
			return nil, rpc.ErrServer(fmt.Sprintf("block %s not found", sel.Hash.Hex()))
		}
		return nil, rpc.ErrServer(fmt.Sprintf("block %s not found", sel))
	}
	defer c.Close()
	var env *traceBlockEnv
	if c.Snap != nil {
		env, err = a.pendingTraceEnv(c.res.Read)
	} else {
		env, err = a.canonicalTraceEnv(c.res.Read, c.Block)
	}
	if err != nil {
		return nil, err
	}
	// A bad config is refused before anything runs.
	budget := a.cfg.TraceMaxOutput
	if _, err := a.newTracer(&cfg, new(tracers.Context), budget); err != nil {
		return nil, err
	}
	run := a.startBlock(ctx, env)
	defer run.close()

	// The answer is written as the transactions are traced, and refused as
	// soon as it passes the bound.
	out := make([]byte, 0, 256)
	out = append(out, '[')
	for i, tx := range env.txs {
		left := budget - len(out)
		if left <= 0 {
			return nil, a.errTraceTooLarge()
		}
		txctx := &tracers.Context{BlockHash: env.hash, BlockNumber: new(big.Int).Set(env.header.Number), TxIndex: i, TxHash: tx.Hash()}
		t, err := a.newTracer(&cfg, txctx, left)
		if err != nil {
			return nil, err
		}
		if err := run.apply(ctx, tx, t, timeout); err != nil {
			return nil, err
		}
		res, err := a.traceResult(ctx, t, left, timeout)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"txHash":"`...)
		out = append(out, tx.Hash().Hex()...)
		out = append(out, `","result":`...)
		out = append(out, res...)
		out = append(out, '}')
	}
	out = append(out, ']')
	if len(out) > budget {
		return nil, a.errTraceTooLarge()
	}
	return rpc.RawResult(out), nil
}

// --- debug_traceCall -----------------------------------------------------------

// traceCall: debug_traceCall(call, block?, config?): the call traced on the
// block's state (any selector, pending included), with the config's state
// and block overrides; with txIndex, inside the block after its first
// txIndex transactions.
func (a *API) traceCall(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(3); err != nil {
		return nil, err
	}
	var args CallArgs
	if err := p.Decode(0, "call object", &args); err != nil {
		return nil, err
	}
	sel, err := DecodeSelector(p, 1, "block")
	if err != nil {
		return nil, err
	}
	if !p.Present(1) {
		sel = Latest()
	}
	var cfg traceCallConfig
	if _, err := p.DecodeOptional(2, "tracer config", &cfg); err != nil {
		return nil, err
	}
	if args.MaxFeePerBlobGas != nil && len(args.BlobVersionedHashes) == 0 {
		return nil, invalidCall(msgBlobFeeCapWithoutBlobs)
	}
	ctx, timeout, cancel, err := a.traceContext(ctx, &cfg.traceConfig)
	if err != nil {
		return nil, err
	}
	defer cancel()
	// A bad tracer config is refused before anything runs.
	if _, err := a.newTracer(&cfg.traceConfig, new(tracers.Context), a.cfg.TraceMaxOutput); err != nil {
		return nil, err
	}

	var (
		state   *chain.StateDB
		header  *types.Header
		headers chain.HeaderSource
	)
	if cfg.TxIndex == nil {
		blk, err := a.Resolve(ctx, sel)
		if err != nil {
			return nil, err
		}
		defer blk.Close()
		state, header, headers = a.newStateDB(blk.State()), blk.Header, blk.Headers
	} else {
		// Inside the block: its parent's state and its first TxIndex
		// transactions, with the block's own context.
		c, err := a.loadBlock(ctx, sel)
		if err != nil {
			return nil, err
		}
		if c == nil {
			return nil, fmt.Errorf("%w: block %s", errBlockNotFound, sel)
		}
		defer c.Close()
		var env *traceBlockEnv
		if c.Snap != nil {
			env, err = a.pendingTraceEnv(c.res.Read)
		} else {
			env, err = a.canonicalTraceEnv(c.res.Read, c.Block)
		}
		if err != nil {
			return nil, err
		}
		idx := int(*cfg.TxIndex)
		if idx > len(env.txs) {
			return nil, rpc.ErrInvalidParams("txIndex %d out of range: block %d has %d transactions", idx, env.header.Number.Uint64(), len(env.txs))
		}
		run := a.startBlock(ctx, env)
		defer run.close()
		for _, tx := range env.txs[:idx] {
			if err := run.apply(ctx, tx, nil, timeout); err != nil {
				return nil, err
			}
		}
		state, header, headers = run.proc.State(), env.header, env.headers
	}
	if o := cfg.BlockOverrides; o != nil && o.Number != nil && uint64(*o.Number) == header.Number.Uint64()+1 {
		// As go-ethereum: a call overriding the number to the next block
		// sees the selected block as its parent (BLOCKHASH of it is not 0).
		next := types.CopyHeader(header)
		next.ParentHash = header.Hash()
		next.Number = new(big.Int).Add(header.Number, common.Big1)
		header = next
	}
	env, err := a.prepareCallOn(state, header, headers, cfg.StateOverrides, cfg.BlockOverrides)
	if err != nil {
		return nil, err
	}
	if err := a.callDefaults(&args, a.cfg.GasCap, env.blockCtx.BaseFee); err != nil {
		return nil, err
	}
	msg, err := toMessage(&args, env.header.BaseFee, true)
	if err != nil {
		return nil, err
	}
	msg.SkipExecutionGasCapCheck()
	txArgs := args
	if txArgs.Nonce == nil {
		txArgs.Nonce = new(hexutil.Uint64)
	}
	tx := simTransaction(&txArgs)

	budget := a.cfg.TraceMaxOutput
	t, err := a.newTracer(&cfg.traceConfig, new(tracers.Context), budget)
	if err != nil {
		return nil, err
	}
	evm := a.callEVM(env, msg, vm.Config{Tracer: t.Hooks})
	defer evm.Release()
	if t.meter != nil {
		t.meter.cancel = evm.Cancel
	}
	env.state.SetHooks(t.Hooks)
	defer env.state.SetHooks(nil)
	env.state.SetTxContext(common.Hash{}, 0, 1)

	stop := context.AfterFunc(ctx, func() {
		evm.Cancel()
		t.Stop(errTraceStopped)
	})
	defer stop()
	msgErr := runTracedMessage(evm, env.state, msg, tx)
	if err := env.state.Error(); err != nil {
		return nil, err
	}
	if ctx.Err() != nil || (evm.Cancelled() && !(t.meter != nil && t.meter.over())) {
		return nil, traceAbort(ctx, timeout)
	}
	if msgErr != nil {
		return nil, rpc.ErrServer(fmt.Sprintf("tracing failed: %v", msgErr))
	}
	return a.traceResult(ctx, t, budget, timeout)
}

// runTracedMessage runs msg (the call, recorded as tx) on evm as
// go-ethereum's ApplyTransactionWithEVM does for a tracer: OnTxStart, the
// message, Finalise, then OnTxEnd with the receipt.
func runTracedMessage(evm *vm.EVM, state *chain.StateDB, msg *core.Message, tx *types.Transaction) (err error) {
	var receipt *types.Receipt
	if h := evm.Config.Tracer; h != nil {
		if h.OnTxStart != nil {
			h.OnTxStart(evm.GetVMContext(), tx, msg.From)
		}
		if h.OnTxEnd != nil {
			defer func() { h.OnTxEnd(receipt, err) }()
		}
	}
	result, err := core.ApplyMessage(evm, msg, core.NewGasPool(msg.GasLimit))
	if err != nil {
		return err
	}
	state.Finalise(evm.GetRules())
	// The receipt's logs are those recorded under the call's transaction
	// hash, as go-ethereum's ApplyTransactionWithEVM reads them: the call
	// records its logs under the zero hash (SetTxContext above, as
	// go-ethereum's traceCall does), so the receipt OnTxEnd receives has
	// none, exactly as go-ethereum's (the tracers see the logs through
	// OnLog).
	receipt = &types.Receipt{Type: tx.Type(), TxHash: tx.Hash(), GasUsed: result.UsedGas, CumulativeGasUsed: result.UsedGas,
		BlockNumber: new(big.Int).Set(evm.Context.BlockNumber), Logs: state.GetLogs(tx.Hash(), evm.Context.BlockNumber.Uint64(), common.Hash{}, evm.Context.Time)}
	if result.Failed() {
		receipt.Status = types.ReceiptStatusFailed
	} else {
		receipt.Status = types.ReceiptStatusSuccessful
	}
	return nil
}

// isImpersonated reports a dev chain's impersonated transaction.
func isImpersonated(tx *types.Transaction) bool {
	_, ok := pending.ImpersonatedSender(tx)
	return ok
}
