package eth

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/vm"

	"github.com/tipnode/tipnode/rpc"
)

// registerCall installs eth_call.
func (a *API) registerCall(s *rpc.Server) {
	s.RegisterLimited("eth_call", a.execs, a.ethCall, rpc.HonoursContext)
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
