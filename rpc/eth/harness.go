package eth

// The call harness: how eth_call, eth_estimateGas, eth_createAccessList,
// eth_callBundle, eth_simulateV1 and debug_traceCall decode a call, prepare
// its state and block context, and run the EVM under
// APIConfig.EVMTimeout (--rpc.evmtimeout), cancelling it when the request
// ends.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/rpc"
)

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

// runMessage executes msg once on env's state and then reverts every change,
// so env can run the next attempt (eth_estimateGas, eth_createAccessList).
// Like eth_call: with a zero gas price the base fee is lowered to zero, and
// the fee-cap check is off. msgErr is core.ApplyMessage's refusal of the
// message (nonce, funds, intrinsic gas…); err a state read failure or an
// *Error for a timeout or cancellation.
func (a *API) runMessage(ctx context.Context, env *callEnv, msg *core.Message, cfg vm.Config) (res *core.ExecutionResult, msgErr, err error) {
	evm := a.callEVM(env, msg, cfg)
	defer evm.Release()
	snap := env.state.Snapshot()
	err = a.runCancellable(ctx, evm, env.state, func() {
		res, msgErr = core.ApplyMessage(evm, msg, nil)
		env.state.RevertToSnapshot(snap)
	})
	if err != nil {
		return nil, nil, err
	}
	return res, msgErr, nil
}

// runCancellable runs one piece of EVM work on evm (a message, or a
// simulated block's post-execution) so that ctx ending cancels the EVM.
// run's own outcome is left to the caller; the error is a state read failure
// of state, or abortError when ctx ended before or during the run (the
// outcome is then incomplete and must be dropped). eth_call,
// eth_estimateGas, eth_createAccessList and eth_simulateV1 run every message
// through it.
func (a *API) runCancellable(ctx context.Context, evm *vm.EVM, state *chain.StateDB, run func()) error {
	if err := ctx.Err(); err != nil {
		return a.abortError(err)
	}
	stop := context.AfterFunc(ctx, evm.Cancel)
	run()
	stop()
	if err := state.Error(); err != nil {
		return err
	}
	if evm.Cancelled() || ctx.Err() != nil {
		return a.abortError(ctx.Err())
	}
	return nil
}

// abortError is the error of an execution stopped by its context.
func (a *API) abortError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &rpc.Error{Code: rpc.CodeTimeout, Message: fmt.Sprintf("execution aborted (timeout = %v)", a.cfg.EVMTimeout)}
	}
	return &rpc.Error{Code: rpc.CodeServerError, Message: "execution aborted (request cancelled)"}
}
