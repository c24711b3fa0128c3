package eth

import (
	"context"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/eth/tracers/logger"

	"github.com/tipnode/tipnode/rpc"
)

// registerAccessList installs eth_createAccessList.
func (a *API) registerAccessList(s *rpc.Server) {
	s.RegisterLimited("eth_createAccessList", a.execs, a.createAccessList, rpc.HonoursContext)
}

// accessListResult is eth_createAccessList's result. Error holds the EVM
// failure of the call run with the final list ("execution reverted"…),
// omitted on success.
type accessListResult struct {
	AccessList types.AccessList `json:"accessList"`
	Error      string           `json:"error,omitempty"`
	GasUsed    hexutil.Uint64   `json:"gasUsed"`
}

// createAccessList implements eth_createAccessList(callObject, block?,
// stateOverrides?) (without a block: "pending", as eth_estimateGas): the
// accounts and slots the call touches, found by
// running it with an access-list tracer and feeding the list back in until
// it no longer changes (warming an address changes gas, which may change
// the path taken). The sender, the recipient (or created contract), the
// active precompiles and the authorities of valid-looking EIP-7702
// authorizations are left out as addresses (they are warm anyway), but the
// recipient's slots are listed. The list only grows from one run to the
// next, so the loop ends; APIConfig.EVMTimeout bounds it.
func (a *API) createAccessList(ctx context.Context, p rpc.Params) (any, error) {
	req, blk, env, err := a.openCall(ctx, p, 3, false, TagPending) // like eth_estimateGas
	if err != nil {
		return nil, err
	}
	defer blk.Close()
	args := req.args
	var from common.Address
	if args.From != nil {
		from = *args.From
	}
	// The nonce decides the address of a created contract.
	if args.Nonce == nil {
		n := hexU64(env.state.GetNonce(from))
		args.Nonce = &n
	}
	if err := a.callDefaults(&args, a.cfg.GasCap, env.blockCtx.BaseFee); err != nil {
		return nil, err
	}
	to := crypto.CreateAddress(from, uint64(*args.Nonce))
	if args.To != nil {
		to = *args.To
	}
	exclude := map[common.Address]struct{}{from: {}, to: {}}
	for _, addr := range env.precompileAddrs() {
		exclude[addr] = struct{}{}
	}
	chainID := a.exec.Config().ChainID
	for _, auth := range args.AuthorizationList {
		if (!auth.ChainID.IsZero() && auth.ChainID.CmpBig(chainID) != 0) || auth.Nonce+1 < auth.Nonce {
			continue // invalid: the authorization will be skipped
		}
		if authority, err := auth.Authority(); err == nil {
			exclude[authority] = struct{}{}
		}
	}

	var initial types.AccessList
	if args.AccessList != nil {
		initial = *args.AccessList
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.EVMTimeout)
	defer cancel()
	prev := logger.NewAccessListTracer(initial, exclude)
	for {
		list := prev.AccessList()
		args.AccessList = &list
		msg, err := toMessage(&args, env.header.BaseFee, true)
		if err != nil {
			return nil, err
		}
		tracer := logger.NewAccessListTracer(list, exclude)
		res, msgErr, err := a.runMessage(ctx, env, msg, vm.Config{Tracer: tracer.Hooks()})
		if err != nil {
			return nil, err
		}
		if msgErr != nil {
			return nil, invalidCall(fmt.Sprintf("failed to apply transaction: %v", msgErr))
		}
		if tracer.Equal(prev) {
			out := &accessListResult{AccessList: list, GasUsed: hexutil.Uint64(res.UsedGas)}
			if res.Err != nil {
				out.Error = res.Err.Error()
			}
			return out, nil
		}
		prev = tracer
	}
}
