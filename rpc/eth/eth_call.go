package eth

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/rpc"
)

// registerCall installs eth_call.
func (a *API) registerCall(s *rpc.Server) {
	s.RegisterLimited("eth_call", a.execs, a.ethCall, rpc.HonoursContext)
}

// callRequest is a decoded eth_call-style request.
type callRequest struct {
	args  CallArgs
	sel   BlockSelector
	state StateOverride
	block *BlockOverrides
}

// decodeCallRequest decodes (call object, block?, state overrides?, block
// overrides?); an absent block is def.
func decodeCallRequest(p rpc.Params, def BlockTag) (*callRequest, error) {
	if err := p.AtMost(4); err != nil {
		return nil, err
	}
	req := new(callRequest)
	if err := p.Decode(0, "call object", &req.args); err != nil {
		return nil, err
	}
	sel, err := DecodeSelector(p, 1, "block")
	if err != nil {
		return nil, err
	}
	if !p.Present(1) {
		sel = BlockSelector{Tag: def}
	}
	req.sel = sel
	if _, err := p.DecodeOptional(2, "state overrides", &req.state); err != nil {
		return nil, err
	}
	if _, err := p.DecodeOptional(3, "block overrides", &req.block); err != nil {
		return nil, err
	}
	return req, nil
}

// callEnv is everything one message execution on a resolved block needs.
type callEnv struct {
	state    *chain.StateDB
	blockCtx vm.BlockContext
	header   *types.Header // the header the call sees (after block overrides)
	rules    params.Rules
	// precompiles is the precompile set after state overrides moved some
	// (a copy of the fork's); nil when there were no state overrides: the
	// EVM then uses the fork's own set, shared, as go-ethereum's does.
	precompiles vm.PrecompiledContracts
}

// precompileAddrs lists the addresses of the active precompiles.
func (env *callEnv) precompileAddrs() []common.Address {
	if env.precompiles == nil {
		return vm.ActivePrecompiles(env.rules)
	}
	return slices.Collect(maps.Keys(env.precompiles))
}

// prepareCall builds the state (with overrides applied) and block context
// of a call on blk.
func (a *API) prepareCall(blk *ReadContext, stateOv StateOverride, blockOv *BlockOverrides) (*callEnv, error) {
	return a.prepareCallOn(a.newStateDB(blk.State()), blk.Header, blk.Headers, stateOv, blockOv)
}

// prepareCallOn is prepareCall on a given state, block header and ancestors
// (debug_traceCall inside a block: the state after some of its
// transactions).
func (a *API) prepareCallOn(state *chain.StateDB, header *types.Header, headers chain.HeaderSource, stateOv StateOverride, blockOv *BlockOverrides) (*callEnv, error) {
	blockCtx := a.exec.BlockContext(header, headers, state)
	header, err := applyBlockOverrides(blockOv, &blockCtx, header)
	if err != nil {
		return nil, err
	}
	env := &callEnv{state: state, header: header,
		rules: a.exec.Config().Rules(blockCtx.BlockNumber, blockCtx.Random != nil, blockCtx.Time)}
	env.precompiles = a.exec.ChainPrecompiles(env.rules, blockCtx.Time)
	a.exec.PrepareState(state, blockCtx.Time)
	if len(stateOv) > 0 {
		// Overrides may move precompiles: they edit a copy.
		env.precompiles = a.exec.Precompiles(env.rules, blockCtx.Time)
		ov, err := chainOverrides(stateOv)
		if err != nil {
			return nil, err
		}
		if err := chain.ApplyStateOverrides(state, ov, env.precompiles); err != nil {
			return nil, overrideError(err)
		}
	}
	env.blockCtx = blockCtx
	return env, nil
}

// execute runs args on env with gas budget gasCap and the EVM config cfg,
// under the API's EVM timeout. Errors: invalid arguments and consensus
// errors (insufficient funds…) as -32000, a timeout as such; EVM failures
// are in the result.
func (a *API) execute(ctx context.Context, env *callEnv, args CallArgs, gasCap uint64, cfg vm.Config) (*core.ExecutionResult, error) {
	if err := a.callDefaults(&args, gasCap, env.blockCtx.BaseFee); err != nil {
		return nil, err
	}
	msg, err := toMessage(&args, env.header.BaseFee, true)
	if err != nil {
		return nil, err
	}
	evm := a.callEVM(env, msg, cfg)
	defer evm.Release() // its stack arena goes back to go-ethereum's pool

	ctx, cancel := a.evmContext(ctx)
	defer cancel()
	var (
		result *core.ExecutionResult
		msgErr error
	)
	if err := a.runCancellable(ctx, evm, env.state, func() {
		result, msgErr = core.ApplyMessage(evm, msg, core.NewGasPool(gasCap))
	}); err != nil {
		return nil, err
	}
	if msgErr != nil {
		return nil, invalidCall(fmt.Sprintf("err: %v (supplied gas %d)", msgErr, msg.GasLimit))
	}
	return result, nil
}

// evmContext bounds ctx by the EVM timeout. A request context whose
// deadline comes no later than that (the rpc server's request timeout,
// 5 s by default like the EVM timeout) is used as it is: a second timer
// would never fire first, and the outcome of a deadline is the same
// (context.DeadlineExceeded, answered by abortError).
func (a *API) evmContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= a.cfg.EVMTimeout {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, a.cfg.EVMTimeout)
}

// openCall decodes an eth_call-style request (call object, block — def
// when absent —, state overrides and, when allowed, block overrides),
// resolves its block and prepares the state. The caller must Close the
// returned ReadContext.
func (a *API) openCall(ctx context.Context, p rpc.Params, maxArgs int, blockOverrides bool, def BlockTag) (*callRequest, *ReadContext, *callEnv, error) {
	if err := p.AtMost(maxArgs); err != nil {
		return nil, nil, nil, err
	}
	req, err := decodeCallRequest(p, def)
	if err != nil {
		return nil, nil, nil, err
	}
	if req.args.MaxFeePerBlobGas != nil && len(req.args.BlobVersionedHashes) == 0 {
		return nil, nil, nil, invalidCall(msgBlobFeeCapWithoutBlobs)
	}
	blk, err := a.Resolve(ctx, req.sel)
	if err != nil {
		return nil, nil, nil, err
	}
	var blockOv *BlockOverrides
	if blockOverrides {
		blockOv = req.block
	}
	env, err := a.prepareCall(blk, req.state, blockOv)
	if err != nil {
		blk.Close()
		return nil, nil, nil, err
	}
	return req, blk, env, nil
}

// msgBlobFeeCapWithoutBlobs refuses maxFeePerBlobGas without
// blobVersionedHashes, as the reference client does.
const msgBlobFeeCapWithoutBlobs = "maxFeePerBlobGas specified without blobVersionedHashes"

// callEVM returns the EVM a call message runs on. With no fee fields the
// message runs at a zero gas price and the base fee is lowered to zero
// (BASEFEE reads 0, no fee-cap check), like the reference client; the same
// for the blob base fee without a blob fee cap.
func (a *API) callEVM(env *callEnv, msg *core.Message, cfg vm.Config) *vm.EVM {
	blockCtx := env.blockCtx
	if msg.GasPrice.Sign() == 0 {
		blockCtx.BaseFee = new(big.Int)
	}
	if msg.BlobGasFeeCap != nil && msg.BlobGasFeeCap.BitLen() == 0 {
		blockCtx.BlobBaseFee = new(big.Int)
	}
	cfg.NoBaseFee = true
	evm := vm.NewEVM(blockCtx, env.state, a.exec.Config(), cfg)
	if env.precompiles != nil {
		evm.SetPrecompiles(env.precompiles)
	}
	evm.SetJumpDestCache(a.jumpDests)
	return evm
}

// ethCall implements eth_call(callObject, block?, stateOverrides?, blockOverrides?).
func (a *API) ethCall(ctx context.Context, p rpc.Params) (any, error) {
	req, blk, env, err := a.openCall(ctx, p, 4, true, TagLatest)
	if err != nil {
		return nil, err
	}
	defer blk.Close()
	defer env.state.Release()
	result, err := a.execute(ctx, env, req.args, a.cfg.GasCap, vm.Config{})
	if err != nil {
		return nil, err
	}
	// The return (or revert) data is hex-encoded in the answer: refused
	// before that when it cannot fit the response budget.
	if err := p.CheckResponse(2*len(result.ReturnData) + 2); err != nil {
		return nil, err
	}
	if result.Err != nil {
		return nil, callFailure(result)
	}
	return hexResult(result.ReturnData), nil
}

// hexResult is b as a JSON string of 0x-prefixed hex, written once (a
// large return value is not encoded twice, as encoding/json would).
func hexResult(b []byte) rpc.RawResult {
	out := make([]byte, 2*len(b)+4)
	copy(out, `"0x`)
	hex.Encode(out[3:], b)
	out[len(out)-1] = '"'
	return out
}

// callFailure turns a failed execution into eth_call's (and
// eth_estimateGas's) error: a revert is -32000 with the message exactly
// "execution reverted" and the raw revert data (rpc.ErrReverted), from
// which clients decode the reason or custom error; any other EVM failure is
// -32000 naming it.
func callFailure(result *core.ExecutionResult) error {
	if errors.Is(result.Err, vm.ErrExecutionReverted) {
		return rpc.ErrReverted(result.Revert())
	}
	return rpc.ErrServer(result.Err.Error())
}

// revertReason decodes Error(string) / Panic(uint256) revert data, or "".
func revertReason(data []byte) string {
	reason, err := abi.UnpackRevert(data)
	if err != nil {
		return ""
	}
	return reason
}
