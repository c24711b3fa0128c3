package eth

// Node-held accounts (APIConfig.Accounts: the dev accounts of `tipnode
// dev`): eth_accounts, eth_sendTransaction, eth_signTransaction, eth_sign,
// personal_sign and eth_signTypedData_v4, as go-ethereum and anvil serve
// them, so that ethers' provider.getSigner(), web3's eth.getAccounts() and
// scripts written for Hardhat or anvil work unmodified. Signing uses
// go-ethereum: types.SignTx, accounts.TextHash (EIP-191) and
// apitypes.TypedDataAndHash (EIP-712).
//
// A node without accounts (`tipnode run`) answers eth_accounts with [] and
// refuses the others with ErrNoAccounts; an address that is not one of the
// node's gets ErrUnknownAccount.

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/accounts"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/rpc"
)

// registerAccounts installs the account and signing methods.
func (a *API) registerAccounts(s *rpc.Server) {
	s.Register("eth_accounts", a.ethAccounts)
	s.Register("eth_sendTransaction", a.ethSendTransaction)
	s.Register("eth_signTransaction", a.ethSignTransaction)
	s.Register("eth_sign", a.ethSign)
	s.Register("personal_sign", a.personalSign)
	s.Register("eth_signTypedData_v4", a.ethSignTypedDataV4)
}

// keyOf returns the key of a node-held account.
func (a *API) keyOf(addr common.Address) (*ecdsa.PrivateKey, error) {
	if len(a.accounts) == 0 {
		return nil, ErrNoAccounts
	}
	key, ok := a.accounts[addr]
	if !ok {
		return nil, fmt.Errorf("%w %s: not one of this node's dev accounts (eth_accounts lists them)", ErrUnknownAccount, addr.Hex())
	}
	return key, nil
}

func (a *API) ethAccounts(_ context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(0); err != nil {
		return nil, err
	}
	out := make([]common.Address, 0, len(a.cfg.Accounts))
	for _, k := range a.cfg.Accounts {
		out = append(out, crypto.PubkeyToAddress(k.PublicKey))
	}
	return out, nil
}

// signHash signs a 32-byte hash with the account's key: 65 bytes r ‖ s ‖ v
// with v = 27 or 28, as eth_sign and the typed-data methods return it.
func (a *API) signHash(addr common.Address, hash []byte) (hexutil.Bytes, error) {
	key, err := a.keyOf(addr)
	if err != nil {
		return nil, err
	}
	sig, err := crypto.Sign(hash, key)
	if err != nil {
		return nil, err
	}
	sig[crypto.RecoveryIDOffset] += 27
	return sig, nil
}

// ethSign implements eth_sign(address, data): the EIP-191 signature of the
// message data ("\x19Ethereum Signed Message:\n" ‖ len ‖ data).
func (a *API) ethSign(_ context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(2); err != nil {
		return nil, err
	}
	var addr common.Address
	if err := p.Decode(0, "address", &addr); err != nil {
		return nil, err
	}
	var data hexutil.Bytes
	if err := p.Decode(1, "message", &data); err != nil {
		return nil, err
	}
	return a.signHash(addr, accounts.TextHash(data))
}

// personalSign implements personal_sign(data, address[, password]): the
// same signature as eth_sign with the arguments the other way round (the
// password, which dev accounts do not have, is ignored).
func (a *API) personalSign(_ context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(3); err != nil {
		return nil, err
	}
	var data hexutil.Bytes
	if err := p.Decode(0, "message", &data); err != nil {
		return nil, err
	}
	var addr common.Address
	if err := p.Decode(1, "address", &addr); err != nil {
		return nil, err
	}
	return a.signHash(addr, accounts.TextHash(data))
}

// ethSignTypedDataV4 implements eth_signTypedData_v4(address, typedData):
// the signature of the EIP-712 hash of typedData, given as a JSON object
// or, as most libraries send it, a string holding the JSON.
func (a *API) ethSignTypedDataV4(_ context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(2); err != nil {
		return nil, err
	}
	var addr common.Address
	if err := p.Decode(0, "address", &addr); err != nil {
		return nil, err
	}
	if !p.Present(1) {
		return nil, p.Missing(1, "typed data")
	}
	td, err := decodeTypedData(p.Raw(1))
	if err != nil {
		return nil, p.ArgError(1, "typed data", "%v", err)
	}
	hash, _, err := apitypes.TypedDataAndHash(*td)
	if err != nil {
		return nil, p.ArgError(1, "typed data", "%v", err)
	}
	return a.signHash(addr, hash)
}

// decodeTypedData decodes EIP-712 typed data from a JSON object or a JSON
// string holding one. Numbers in the message are kept exact (apitypes
// reads a JSON number as a float64; a decimal string is exact).
func decodeTypedData(raw json.RawMessage) (*apitypes.TypedData, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		raw = json.RawMessage(s)
	}
	var td struct {
		Types       apitypes.Types           `json:"types"`
		PrimaryType string                   `json:"primaryType"`
		Domain      apitypes.TypedDataDomain `json:"domain"`
		Message     json.RawMessage          `json:"message"`
	}
	if err := json.Unmarshal(raw, &td); err != nil {
		return nil, fmt.Errorf("not EIP-712 typed data: %s", rpc.DescribeJSONError(err))
	}
	if td.PrimaryType == "" || td.Types == nil {
		return nil, fmt.Errorf(`not EIP-712 typed data: "types" and "primaryType" are required`)
	}
	dec := json.NewDecoder(bytes.NewReader(td.Message))
	dec.UseNumber()
	var msg map[string]any
	if err := dec.Decode(&msg); err != nil {
		return nil, fmt.Errorf("message: %s", rpc.DescribeJSONError(err))
	}
	return &apitypes.TypedData{Types: td.Types, PrimaryType: td.PrimaryType, Domain: td.Domain, Message: exactNumbers(msg).(map[string]any)}, nil
}

// exactNumbers turns every json.Number inside v into its decimal string.
func exactNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		return x.String()
	case map[string]any:
		for k, e := range x {
			x[k] = exactNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = exactNumbers(e)
		}
	}
	return v
}

// ethSendTransaction implements eth_sendTransaction(tx): fill in what the
// call object leaves out (fillTransaction), sign with the sender's dev key
// and pool it like eth_sendRawTransaction. The hash is returned once the
// transaction is pooled: eth_getTransactionByHash and the pending nonce see
// it from then on.
func (a *API) ethSendTransaction(ctx context.Context, p rpc.Params) (any, error) {
	if a.pool == nil {
		return nil, ErrNoTxPool
	}
	// One at a time: the nonce is chosen and the transaction pooled before
	// the next send chooses its own.
	a.sendMu.Lock()
	defer a.sendMu.Unlock()
	if hash, handled, err := a.sendImpersonated(ctx, p); handled {
		return hash, err
	}
	tx, err := a.signTransaction(ctx, p)
	if err != nil {
		return nil, err
	}
	if err := a.submit(tx); err != nil {
		return nil, err
	}
	return tx.Hash(), nil
}

// ethSignTransaction implements eth_signTransaction(tx): the transaction
// filled in and signed like eth_sendTransaction's, returned as its raw
// 0x-hex encoding (anvil's answer, what ethers and viem expect) and not
// sent.
func (a *API) ethSignTransaction(ctx context.Context, p rpc.Params) (any, error) {
	tx, err := a.signTransaction(ctx, p)
	if err != nil {
		return nil, err
	}
	raw, err := tx.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return hexutil.Bytes(raw), nil
}

// signTransaction decodes a transaction object, fills it in and signs it
// with the sender's key.
func (a *API) signTransaction(ctx context.Context, p rpc.Params) (*types.Transaction, error) {
	if err := p.AtMost(1); err != nil {
		return nil, err
	}
	var args CallArgs
	if err := p.Decode(0, "transaction", &args); err != nil {
		return nil, err
	}
	if args.From == nil {
		return nil, p.ArgError(0, "transaction", `"from" is required`)
	}
	key, err := a.keyOf(*args.From)
	if err != nil {
		return nil, err
	}
	inner, err := a.fillTransaction(ctx, args)
	if err != nil {
		return nil, err
	}
	return types.SignNewTx(key, types.LatestSigner(a.exec.Config()), inner)
}

// fillTransaction completes a transaction object for signing, against the
// pending block (as go-ethereum's and anvil's eth_sendTransaction):
//   - type: 0x4 with an authorizationList, 0x0 (or 0x1 with an accessList)
//     with a gasPrice, else 0x2 from London; "type" may ask for one.
//     Blob transactions need their sidecar: sign them locally.
//   - chainId: the node's (a different one is refused).
//   - nonce: the sender's pending nonce, pooled transactions included.
//   - fees: the tip defaults to eth_maxPriorityFeePerGas (bounded by a given
//     maxFeePerGas), maxFeePerGas to 2 x the pending base fee + tip, and a
//     legacy gasPrice to the pending base fee + tip.
//   - gas: eth_estimateGas of the filled object at "pending" (a revert is
//     reported as eth_estimateGas reports it).
func (a *API) fillTransaction(ctx context.Context, args CallArgs) (types.TxData, error) {
	cfg := a.exec.Config()
	if args.ChainID != nil && args.ChainID.ToInt().Cmp(cfg.ChainID) != 0 {
		return nil, invalidCall(fmt.Sprintf("chainId does not match node's (have=%v, want=%v)", args.ChainID.ToInt(), cfg.ChainID))
	}
	if args.BlobVersionedHashes != nil || args.MaxFeePerBlobGas != nil {
		return nil, invalidCall("blob transactions need their sidecar: sign them locally and send them with eth_sendRawTransaction")
	}
	if args.GasPrice != nil && (args.MaxFeePerGas != nil || args.MaxPriorityFeePerGas != nil) {
		return nil, invalidCall("both gasPrice and (maxFeePerGas or maxPriorityFeePerGas) specified")
	}
	blk, err := a.Resolve(ctx, BlockSelector{Tag: TagPending})
	if err != nil {
		return nil, err
	}
	header, view, head := blk.Header, blk.View, blk.Read.Head.Header()
	tip, err := a.suggestTip(view, head)
	blk.Close()
	if err != nil {
		return nil, err
	}
	txType := uint64(types.DynamicFeeTxType)
	switch {
	case args.Type != nil:
		txType = uint64(*args.Type)
	case args.AuthorizationList != nil:
		txType = types.SetCodeTxType
	case args.GasPrice != nil && args.AccessList != nil:
		txType = types.AccessListTxType
	case args.GasPrice != nil || header.BaseFee == nil:
		txType = types.LegacyTxType
	}
	switch txType {
	case types.LegacyTxType, types.AccessListTxType:
		if args.MaxFeePerGas != nil || args.MaxPriorityFeePerGas != nil {
			return nil, invalidCall(fmt.Sprintf("transaction type %d takes gasPrice, not maxFeePerGas / maxPriorityFeePerGas", txType))
		}
		if args.GasPrice == nil {
			price := new(big.Int).Set(tip)
			if header.BaseFee != nil {
				price.Add(price, header.BaseFee)
			}
			args.GasPrice = (*hexBig)(price)
		}
	case types.DynamicFeeTxType, types.SetCodeTxType:
		if header.BaseFee == nil {
			return nil, invalidCall("maxFeePerGas and maxPriorityFeePerGas are not valid before London is active")
		}
		if args.GasPrice != nil {
			return nil, invalidCall(fmt.Sprintf("transaction type %d takes maxFeePerGas / maxPriorityFeePerGas, not gasPrice", txType))
		}
		if args.MaxPriorityFeePerGas == nil {
			t := new(big.Int).Set(tip)
			if args.MaxFeePerGas != nil && args.MaxFeePerGas.ToInt().Cmp(t) < 0 {
				t.Set(args.MaxFeePerGas.ToInt())
			}
			args.MaxPriorityFeePerGas = (*hexBig)(t)
		}
		if args.MaxFeePerGas == nil {
			fc := new(big.Int).Mul(header.BaseFee, big.NewInt(2))
			args.MaxFeePerGas = (*hexBig)(fc.Add(fc, args.MaxPriorityFeePerGas.ToInt()))
		}
		if args.MaxFeePerGas.ToInt().Cmp(args.MaxPriorityFeePerGas.ToInt()) < 0 {
			return nil, invalidCall(fmt.Sprintf("maxFeePerGas (%v) < maxPriorityFeePerGas (%v)", args.MaxFeePerGas.ToInt(), args.MaxPriorityFeePerGas.ToInt()))
		}
	default:
		return nil, invalidCall(fmt.Sprintf("transaction type %d cannot be sent with eth_sendTransaction", txType))
	}
	if txType == types.SetCodeTxType && args.To == nil {
		return nil, invalidCall("set-code transactions cannot create contracts")
	}
	args.ChainID = (*hexBig)(new(big.Int).Set(cfg.ChainID))
	if args.Value == nil {
		args.Value = new(hexBig)
	}
	if args.Nonce == nil {
		n, err := a.nonceAt(ctx, *args.From, BlockSelector{Tag: TagPending})
		if err != nil {
			return nil, err
		}
		args.Nonce = (*hexU64)(&n)
	}
	if args.Gas == nil {
		gas, err := a.estimateAtPending(ctx, args)
		if err != nil {
			return nil, err
		}
		args.Gas = (*hexU64)(&gas)
	}
	var al types.AccessList
	if args.AccessList != nil {
		al = *args.AccessList
	}
	nonce, gas, value, data := uint64(*args.Nonce), uint64(*args.Gas), args.Value.ToInt(), args.Data()
	switch txType {
	case types.LegacyTxType:
		return &types.LegacyTx{Nonce: nonce, GasPrice: args.GasPrice.ToInt(), Gas: gas, To: args.To, Value: value, Data: data}, nil
	case types.AccessListTxType:
		return &types.AccessListTx{ChainID: cfg.ChainID, Nonce: nonce, GasPrice: args.GasPrice.ToInt(), Gas: gas, To: args.To, Value: value, Data: data, AccessList: al}, nil
	case types.DynamicFeeTxType:
		return &types.DynamicFeeTx{ChainID: cfg.ChainID, Nonce: nonce, GasTipCap: args.MaxPriorityFeePerGas.ToInt(), GasFeeCap: args.MaxFeePerGas.ToInt(),
			Gas: gas, To: args.To, Value: value, Data: data, AccessList: al}, nil
	default: // set-code
		u := func(b *big.Int) (*uint256.Int, error) {
			v, overflow := uint256.FromBig(b)
			if overflow || b.Sign() < 0 {
				return nil, invalidCall(fmt.Sprintf("value %v out of range", b))
			}
			return v, nil
		}
		chainID, err1 := u(cfg.ChainID)
		tipCap, err2 := u(args.MaxPriorityFeePerGas.ToInt())
		feeCap, err3 := u(args.MaxFeePerGas.ToInt())
		v, err4 := u(value)
		for _, err := range []error{err1, err2, err3, err4} {
			if err != nil {
				return nil, err
			}
		}
		return &types.SetCodeTx{ChainID: chainID, Nonce: nonce, GasTipCap: tipCap, GasFeeCap: feeCap, Gas: gas, To: *args.To,
			Value: v, Data: data, AccessList: al, AuthList: args.AuthorizationList}, nil
	}
}

// estimateAtPending is eth_estimateGas of a filled call object at
// "pending".
func (a *API) estimateAtPending(ctx context.Context, args CallArgs) (uint64, error) {
	blk, err := a.Resolve(ctx, BlockSelector{Tag: TagPending})
	if err != nil {
		return 0, err
	}
	defer blk.Close()
	env, err := a.prepareCall(blk, nil, nil)
	if err != nil {
		return 0, err
	}
	zero := hexU64(0)
	args.Gas = &zero // search from the block gas limit
	if err := a.callDefaults(&args, a.cfg.GasCap, env.blockCtx.BaseFee); err != nil {
		return 0, err
	}
	msg, err := toMessage(&args, env.header.BaseFee, true) // the nonce may count pooled transactions
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.EVMTimeout)
	defer cancel()
	gas, failure, err := a.estimate(ctx, env, msg)
	if err != nil {
		return 0, err
	}
	if failure != nil {
		return 0, callFailure(failure)
	}
	return gas, nil
}
