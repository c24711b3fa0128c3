package eth

import (
	"context"
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/rpc"
)

// registerEstimate installs eth_estimateGas.
func (a *API) registerEstimate(s *rpc.Server) {
	s.RegisterLimited("eth_estimateGas", a.execs, a.estimateGas, rpc.HonoursContext)
}

// estimateErrorRatio is the relative over-estimation at which the binary
// search of eth_estimateGas stops: wallets add a margin anyway, and stopping
// at 1.5% saves several executions (the reference client uses the same).
const estimateErrorRatio = 0.015

// estimateGas implements eth_estimateGas(callObject, block?, stateOverrides?,
// blockOverrides?): the lowest gas limit (within estimateErrorRatio) at which
// the call succeeds. Without a block it estimates at "pending" (go-ethereum:
// latest): the block the transaction would join, which holds what is
// pre-confirmed, so a write to a contract whose deployment is only
// pre-confirmed is estimated on that contract.
//
// The upper bound is the requested gas (when at least 21000) or else the
// block gas limit, capped by EIP-7825 from Osaka, by what the sender can pay
// when a fee is set, and by APIConfig.GasCap. A call that fails at the upper
// bound is reported as eth_call reports it (revert: -32000, message exactly
// "execution reverted", data the revert bytes); running out of gas there is "gas
// required exceeds allowance (N)". The whole estimation runs under
// APIConfig.EVMTimeout.
func (a *API) estimateGas(ctx context.Context, p rpc.Params) (any, error) {
	// Without a block: the pending block the transaction would join (on a
	// node without a pending layer, latest), so that a transaction calling
	// a contract only pre-confirmed so far is estimated right.
	req, blk, env, err := a.openCall(ctx, p, 4, true, TagPending)
	if err != nil {
		return nil, err
	}
	defer blk.Close()
	args := req.args
	// No gas given: keep it 0 so the search starts from the block gas limit
	// (callDefaults would otherwise set it to the cap).
	if args.Gas == nil {
		args.Gas = new(hexU64)
	}
	if err := a.callDefaults(&args, a.cfg.GasCap, env.blockCtx.BaseFee); err != nil {
		return nil, err
	}
	msg, err := toMessage(&args, env.header.BaseFee, true)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.EVMTimeout)
	defer cancel()
	gas, failure, err := a.estimate(ctx, env, msg)
	if err != nil {
		return nil, err
	}
	if failure != nil {
		return nil, callFailure(failure)
	}
	return hexutil.Uint64(gas), nil
}

// estimate binary-searches the gas limit of msg on env. A non-nil failure is
// the result of a run that failed for a reason other than gas (revert,
// invalid opcode…) at the highest allowed limit.
func (a *API) estimate(ctx context.Context, env *callEnv, msg *core.Message) (gas uint64, failure *core.ExecutionResult, err error) {
	cfg := a.exec.Config()
	header := env.header
	hi := header.GasLimit
	if msg.GasLimit >= params.TxGas {
		hi = msg.GasLimit
	}
	if hi > params.MaxTxGas && cfg.IsOsaka(header.Number, header.Time) && !cfg.IsAmsterdam(header.Number, header.Time) {
		hi = params.MaxTxGas
	}
	// With a fee, the sender must afford gas * fee: cap hi by its balance.
	feeCap := msg.GasFeeCap
	if feeCap == nil {
		feeCap = msg.GasPrice
	}
	if feeCap != nil && feeCap.BitLen() != 0 {
		available := new(uint256.Int).Set(env.state.GetBalance(msg.From))
		if msg.Value != nil {
			if msg.Value.Cmp(available) >= 0 {
				return 0, nil, invalidCall(core.ErrInsufficientFundsForTransfer.Error())
			}
			available.Sub(available, msg.Value)
		}
		if len(msg.BlobHashes) > 0 && msg.BlobGasFeeCap != nil && cfg.IsCancun(header.Number, header.Time) {
			blobCost := new(uint256.Int).SetUint64(uint64(len(msg.BlobHashes)) * params.BlobTxBlobGasPerBlob)
			blobCost.Mul(blobCost, msg.BlobGasFeeCap)
			if blobCost.Cmp(available) >= 0 {
				return 0, nil, invalidCall(core.ErrInsufficientFunds.Error())
			}
			available.Sub(available, blobCost)
		}
		allowance := new(uint256.Int).Div(available, feeCap)
		if allowance.IsUint64() && hi > allowance.Uint64() {
			hi = allowance.Uint64()
		}
	}
	if hi > a.cfg.GasCap {
		hi = a.cfg.GasCap
	}

	// A plain value transfer to a code-less account runs no code and gets no
	// refund: one run at 21000 gives the exact answer.
	if len(msg.Data) == 0 && msg.To != nil && env.state.GetCodeSize(*msg.To) == 0 {
		failed, res, err := a.tryGas(ctx, env, msg, params.TxGas)
		var e *rpc.Error
		if errors.As(err, &e) {
			return 0, nil, err // timeout
		}
		if err == nil && !failed {
			return res.UsedGas, nil, nil
		}
	}

	failed, res, err := a.tryGas(ctx, env, msg, hi)
	if err != nil {
		return 0, nil, err
	}
	if failed {
		if res != nil && !errors.Is(res.Err, vm.ErrOutOfGas) {
			return 0, res, nil
		}
		return 0, nil, invalidCall(fmt.Sprintf("gas required exceeds allowance (%d)", hi))
	}
	// The gas used at the top bounds the answer from below (bar calls that
	// inspect their remaining gas). Most calls succeed with the peak gas use
	// plus the stipend and the 1/64 retained by each call frame: try that.
	lo := res.UsedGas - 1
	if optimistic := (res.MaxUsedGas + params.CallStipend) * 64 / 63; optimistic < hi {
		failed, _, err := a.tryGas(ctx, env, msg, optimistic)
		if err != nil {
			return 0, nil, err
		}
		if failed {
			lo = optimistic
		} else {
			hi = optimistic
		}
	}
	for lo+1 < hi {
		if float64(hi-lo)/float64(hi) < estimateErrorRatio {
			break
		}
		mid := lo + (hi-lo)/2
		if mid > lo*2 {
			// Skew towards the low side: most calls need little more than
			// they used.
			mid = lo * 2
		}
		failed, _, err := a.tryGas(ctx, env, msg, mid)
		if err != nil {
			return 0, nil, err
		}
		if failed {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, nil, nil
}

// tryGas runs msg with the gas limit gas. failed reports a failure that more
// gas might fix: an EVM failure, or a gas limit below the intrinsic gas. err
// is a failure no gas limit fixes (insufficient funds, timeout…).
func (a *API) tryGas(ctx context.Context, env *callEnv, msg *core.Message, gas uint64) (failed bool, res *core.ExecutionResult, err error) {
	m := *msg
	m.GasLimit = gas
	res, msgErr, err := a.runMessage(ctx, env, &m, vm.Config{})
	if err != nil {
		return true, nil, err
	}
	if msgErr != nil {
		if errors.Is(msgErr, core.ErrIntrinsicGas) || errors.Is(msgErr, core.ErrGasLimitTooHigh) {
			return true, nil, nil
		}
		return true, nil, invalidCall(fmt.Sprintf("failed with %d gas: %v", gas, msgErr))
	}
	return res.Failed(), res, nil
}
