package eth

import (
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/rpc"
)

// Call-object handling shared by eth_call, eth_estimateGas,
// eth_createAccessList and eth_simulateV1: defaults, fee semantics and the
// conversion to a core.Message, following go-ethereum's TransactionArgs
// (CallDefaults + ToMessage) so results match the reference client.

// callDefaults fills the defaults of a call object in place: chain id, gas
// (what is left of the gas budget; requested gas is capped to it), nonce
// (0 — the nonce check is skipped for calls), value, and fee fields per the
// base fee. It rejects invalid combinations.
func (a *API) callDefaults(args *CallArgs, gasAvailable uint64, baseFee *big.Int) error {
	if args.GasPrice != nil && (args.MaxFeePerGas != nil || args.MaxPriorityFeePerGas != nil) {
		return invalidCall("both gasPrice and (maxFeePerGas or maxPriorityFeePerGas) specified")
	}
	if args.To == nil {
		if args.BlobVersionedHashes != nil {
			return invalidCall(core.ErrBlobTxCreate.Error())
		}
		if args.AuthorizationList != nil {
			return invalidCall(core.ErrSetCodeTxCreate.Error())
		}
	}
	chainID := a.exec.Config().ChainID
	if args.ChainID == nil {
		args.ChainID = (*hexBig)(new(big.Int).Set(chainID))
	} else if have := args.ChainID.ToInt(); have.Cmp(chainID) != 0 {
		return invalidCall(fmt.Sprintf("chainId does not match node's (have=%v, want=%v)", have, chainID))
	}
	if args.Gas == nil {
		g := hexU64(gasAvailable)
		args.Gas = &g
	} else if uint64(*args.Gas) > gasAvailable {
		g := hexU64(gasAvailable)
		args.Gas = &g
	}
	if args.Nonce == nil {
		args.Nonce = new(hexU64)
	}
	if args.Value == nil {
		args.Value = new(hexBig)
	}
	if baseFee == nil {
		if args.MaxFeePerGas != nil || args.MaxPriorityFeePerGas != nil {
			return invalidCall("maxFeePerGas and maxPriorityFeePerGas are not valid before London is active")
		}
		if args.GasPrice == nil {
			args.GasPrice = new(hexBig)
		}
	} else {
		if args.MaxFeePerGas == nil {
			args.MaxFeePerGas = new(hexBig)
		}
		if args.MaxPriorityFeePerGas == nil {
			args.MaxPriorityFeePerGas = new(hexBig)
		}
	}
	if args.MaxFeePerBlobGas == nil && args.BlobVersionedHashes != nil {
		args.MaxFeePerBlobGas = new(hexBig)
	}
	return nil
}

// toMessage converts a defaulted call object. Fee fields are honoured; with
// none, the call runs at a zero gas price (and the caller lowers the block
// base fee to zero so BASEFEE reads 0 and no fee check applies).
func toMessage(args *CallArgs, baseFee *big.Int, skipNonceCheck bool) (*core.Message, error) {
	return newMessage(args, baseFee, skipNonceCheck, true)
}

// newMessage is toMessage with the choice of lifting the post-Amsterdam
// execution gas cap (eth_simulateV1 keeps it when validating).
func newMessage(args *CallArgs, baseFee *big.Int, skipNonceCheck, skipExecutionGasCap bool) (*core.Message, error) {
	var gasPrice, feeCap, tipCap *uint256.Int
	u := func(b *hexBig, name string) (*uint256.Int, error) {
		if b == nil {
			return new(uint256.Int), nil
		}
		v, overflow := uint256.FromBig(b.ToInt())
		if overflow || b.ToInt().Sign() < 0 {
			return nil, invalidCall(fmt.Sprintf("%s out of range", name))
		}
		return v, nil
	}
	var err error
	if baseFee == nil || args.GasPrice != nil {
		if gasPrice, err = u(args.GasPrice, "gasPrice"); err != nil {
			return nil, err
		}
		feeCap, tipCap = gasPrice, gasPrice
	} else {
		if feeCap, err = u(args.MaxFeePerGas, "maxFeePerGas"); err != nil {
			return nil, err
		}
		if tipCap, err = u(args.MaxPriorityFeePerGas, "maxPriorityFeePerGas"); err != nil {
			return nil, err
		}
		gasPrice = new(uint256.Int)
		if feeCap.BitLen() > 0 || tipCap.BitLen() > 0 {
			gasPrice.Add(tipCap, uint256.MustFromBig(baseFee))
			if gasPrice.Cmp(feeCap) > 0 {
				gasPrice = feeCap
			}
		}
	}
	value, err := u(args.Value, "value")
	if err != nil {
		return nil, err
	}
	var blobFeeCap *uint256.Int
	if args.MaxFeePerBlobGas != nil {
		if blobFeeCap, err = u(args.MaxFeePerBlobGas, "maxFeePerBlobGas"); err != nil {
			return nil, err
		}
	}
	var accessList types.AccessList
	if args.AccessList != nil {
		accessList = *args.AccessList
	}
	var from common.Address
	if args.From != nil {
		from = *args.From
	}
	msg := &core.Message{
		From:                  from,
		To:                    args.To,
		Value:                 value,
		Nonce:                 uint64(*args.Nonce),
		GasLimit:              uint64(*args.Gas),
		GasPrice:              gasPrice,
		GasFeeCap:             feeCap,
		GasTipCap:             tipCap,
		Data:                  args.Data(),
		AccessList:            accessList,
		BlobGasFeeCap:         blobFeeCap,
		BlobHashes:            args.BlobVersionedHashes,
		SetCodeAuthorizations: args.AuthorizationList,
	}
	if skipNonceCheck {
		msg.SkipNonceCheck()
	}
	msg.SkipEOACheck().SkipGasLimitCapCheck()
	if skipExecutionGasCap {
		msg.SkipExecutionGasCapCheck()
	}
	return msg, nil
}

// chainOverrides converts decoded state overrides to the chain package's.
func chainOverrides(ov StateOverride) (map[common.Address]chain.AccountOverride, error) {
	if len(ov) == 0 {
		return nil, nil
	}
	out := make(map[common.Address]chain.AccountOverride, len(ov))
	for addr, acc := range ov {
		var c chain.AccountOverride
		if acc.Nonce != nil {
			n := uint64(*acc.Nonce)
			c.Nonce = &n
		}
		if acc.Code != nil {
			code := []byte(*acc.Code)
			c.Code = &code
		}
		if acc.Balance != nil {
			b, overflow := uint256.FromBig(acc.Balance.ToInt())
			if overflow || acc.Balance.ToInt().Sign() < 0 {
				return nil, rpc.ErrInvalidParams("state override for account %s: balance out of range", addr.Hex())
			}
			c.Balance = b
		}
		if acc.State != nil {
			c.State = make(map[common.Hash]common.Hash, len(acc.State))
			for k, v := range acc.State {
				c.State[common.Hash(k)] = common.Hash(v)
			}
		}
		if acc.StateDiff != nil {
			c.StateDiff = make(map[common.Hash]common.Hash, len(acc.StateDiff))
			for k, v := range acc.StateDiff {
				c.StateDiff[common.Hash(k)] = common.Hash(v)
			}
		}
		c.MovePrecompileTo = acc.MovePrecompileTo
		out[addr] = c
	}
	return out, nil
}

// applyBlockOverrides applies eth_call's block overrides to the EVM block
// context and returns the header as the call sees it.
func applyBlockOverrides(o *BlockOverrides, ctx *vm.BlockContext, header *types.Header) (*types.Header, error) {
	if o == nil {
		return header, nil
	}
	if o.BeaconRoot != nil {
		return nil, rpc.ErrInvalidParams(`block override "beaconRoot" is not supported for this RPC method`)
	}
	if o.Withdrawals != nil {
		return nil, rpc.ErrInvalidParams(`block override "withdrawals" is not supported for this RPC method`)
	}
	h := types.CopyHeader(header)
	if o.Number != nil {
		ctx.BlockNumber = new(big.Int).SetUint64(uint64(*o.Number))
		h.Number = new(big.Int).SetUint64(uint64(*o.Number))
	}
	if o.Difficulty != nil {
		ctx.Difficulty = o.Difficulty.ToInt()
		if h.Difficulty == nil || h.Difficulty.Sign() != 0 {
			h.Difficulty = o.Difficulty.ToInt()
		}
	}
	if o.Time != nil {
		ctx.Time = uint64(*o.Time)
		h.Time = uint64(*o.Time)
	}
	if o.GasLimit != nil {
		ctx.GasLimit = uint64(*o.GasLimit)
		h.GasLimit = uint64(*o.GasLimit)
	}
	if o.FeeRecipient != nil {
		ctx.Coinbase = *o.FeeRecipient
		h.Coinbase = *o.FeeRecipient
	}
	if o.PrevRandao != nil {
		r := common.Hash(*o.PrevRandao)
		ctx.Random = &r
		h.MixDigest = r
	}
	if o.BaseFeePerGas != nil {
		ctx.BaseFee = o.BaseFeePerGas.ToInt()
		h.BaseFee = o.BaseFeePerGas.ToInt()
	}
	if o.BlobBaseFee != nil {
		ctx.BlobBaseFee = o.BlobBaseFee.ToInt()
	}
	return h, nil
}

type (
	hexBig = hexutil.Big
	hexU64 = hexutil.Uint64
)
