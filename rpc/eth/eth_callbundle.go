package eth

// eth_callBundle (Flashbots' searcher API, as reth and mev-geth serve it):
// signed transactions executed in order on top of a block's state, with
// per-transaction results, nothing committed.
//
//	params: [{txs: [raw signed tx, …], blockNumber, stateBlockNumber?,
//	          timestamp?, coinbase?, gasLimit?, baseFee?, difficulty?}]
//
// The state is stateBlockNumber's (any selector; default "latest"). The
// transactions run in a block built on it: on "pending" (with a pending
// block) the pending block itself, after its pre-confirmed transactions;
// on any other block the next block (NextHeader: base fee, gas limit,
// coinbase zero, timestamp the state block's + 12 s as reth). blockNumber
// and the optional fields override that header. Each transaction is
// checked as in a block (signature, nonce, funds, fee cap against the base
// fee, block gas): one that cannot be included fails the whole call with
// -32000 naming it; a reverted one is a result with "revert".
//
// Result (Flashbots' shape; wei amounts as decimal strings):
//
//	{bundleHash, bundleGasPrice, coinbaseDiff, ethSentToCoinbase, gasFees,
//	 stateBlockNumber, totalGasUsed,
//	 results: [{txHash, fromAddress, toAddress, gasUsed, gasPrice, gasFees,
//	            coinbaseDiff, ethSentToCoinbase, value | revert}]}
//
// gasPrice is the effective tip, gasFees gasUsed × tip, coinbaseDiff the
// coinbase's balance change, ethSentToCoinbase coinbaseDiff − gasFees;
// bundleHash is keccak256 of the transaction hashes concatenated,
// bundleGasPrice coinbaseDiff / totalGasUsed. It is an execution: it takes
// a --rpc.evmconcurrency slot and runs under --rpc.evmtimeout; at most
// maxBundleTxs transactions.

import (
	"context"
	"fmt"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/rpc"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// maxBundleTxs bounds the transactions of one eth_callBundle.
const maxBundleTxs = 256

// registerBundle installs eth_callBundle under the execution limiter.
func (a *API) registerBundle(s *rpc.Server) {
	s.RegisterLimited("eth_callBundle", a.execs, a.ethCallBundle, rpc.HonoursContext)
}

// callBundleArgs is eth_callBundle's argument.
type callBundleArgs struct {
	Txs              []hexutil.Bytes `json:"txs"`
	BlockNumber      *hexutil.Big    `json:"blockNumber"`
	StateBlockNumber *BlockSelector  `json:"stateBlockNumber"`
	Timestamp        *hexutil.Uint64 `json:"timestamp"`
	Coinbase         *common.Address `json:"coinbase"`
	GasLimit         *hexutil.Uint64 `json:"gasLimit"`
	BaseFee          *hexutil.Big    `json:"baseFee"`
	Difficulty       *hexutil.Big    `json:"difficulty"`
}

type bundleTxResult struct {
	TxHash            common.Hash     `json:"txHash"`
	FromAddress       common.Address  `json:"fromAddress"`
	ToAddress         *common.Address `json:"toAddress"`
	GasUsed           uint64          `json:"gasUsed"`
	GasPrice          string          `json:"gasPrice"`
	GasFees           string          `json:"gasFees"`
	CoinbaseDiff      string          `json:"coinbaseDiff"`
	EthSentToCoinbase string          `json:"ethSentToCoinbase"`
	Value             *hexutil.Bytes  `json:"value,omitempty"`
	Revert            *hexutil.Bytes  `json:"revert,omitempty"`
}

type bundleResult struct {
	BundleHash        common.Hash      `json:"bundleHash"`
	BundleGasPrice    string           `json:"bundleGasPrice"`
	CoinbaseDiff      string           `json:"coinbaseDiff"`
	EthSentToCoinbase string           `json:"ethSentToCoinbase"`
	GasFees           string           `json:"gasFees"`
	Results           []bundleTxResult `json:"results"`
	StateBlockNumber  uint64           `json:"stateBlockNumber"`
	TotalGasUsed      uint64           `json:"totalGasUsed"`
}

func (a *API) ethCallBundle(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(1); err != nil {
		return nil, err
	}
	var args callBundleArgs
	if err := p.Decode(0, "bundle", &args); err != nil {
		return nil, err
	}
	if len(args.Txs) == 0 {
		return nil, p.ArgError(0, "bundle", "txs is empty")
	}
	if len(args.Txs) > maxBundleTxs {
		return nil, rpc.ErrLimit("bundle of %d transactions (limit %d)", len(args.Txs), maxBundleTxs)
	}
	if args.BlockNumber == nil {
		return nil, p.ArgError(0, "bundle", "blockNumber is required")
	}
	txs := make([]*types.Transaction, len(args.Txs))
	for i, raw := range args.Txs {
		if len(raw) > maxRawTxBytes {
			return nil, rpc.ErrLimit("transaction %d too large: %d bytes (limit %d)", i, len(raw), maxRawTxBytes)
		}
		tx := new(types.Transaction)
		if err := tx.UnmarshalBinary(raw); err != nil {
			return nil, p.ArgError(0, "bundle", "transaction %d: cannot decode: %v", i, err)
		}
		txs[i] = tx
	}
	sel := Latest()
	if args.StateBlockNumber != nil {
		sel = *args.StateBlockNumber
	}
	rc, err := a.Resolve(ctx, sel)
	if err != nil {
		return nil, err
	}
	defer rc.Close()

	var header, parent *types.Header
	if rc.Pending != nil {
		header = types.CopyHeader(rc.Header)
		if parent, err = rc.Headers.HeaderByNumber(header.Number.Uint64() - 1); err != nil {
			return nil, fmt.Errorf("parent of the pending block: %w", err)
		}
	} else {
		parent = rc.Header
		header = pending.NextHeader(a.exec.Config(), parent, time.Unix(int64(parent.Time+12), 0), pending.HeaderParams{})
	}
	header.Number = args.BlockNumber.ToInt()
	if args.Timestamp != nil {
		header.Time = uint64(*args.Timestamp)
	}
	if args.Coinbase != nil {
		header.Coinbase = *args.Coinbase
	}
	if args.GasLimit != nil {
		header.GasLimit = uint64(*args.GasLimit)
	}
	if args.BaseFee != nil {
		header.BaseFee = args.BaseFee.ToInt()
	}
	if args.Difficulty != nil {
		header.Difficulty = args.Difficulty.ToInt()
	}

	state := a.newStateDB(rc.State())
	proc := a.exec.NewBlockProcessor(header, parent, common.Hash{}, state, rc.Headers, vm.Config{})
	evm := proc.EVM()
	signer := types.MakeSigner(a.exec.Config(), header.Number, header.Time)
	ctx, cancel := a.evmContext(ctx)
	defer cancel()

	// stateBlockNumber: the block whose state was read (on pending, the
	// pending block's number).
	out := &bundleResult{Results: make([]bundleTxResult, 0, len(txs)), StateBlockNumber: rc.Header.Number.Uint64()}
	coinbaseTotal, feesTotal := new(big.Int), new(big.Int)
	hashes := make([]byte, 0, len(txs)*common.HashLength)
	for i, tx := range txs {
		from, err := types.Sender(signer, tx)
		if err != nil {
			return nil, invalidCall(fmt.Sprintf("transaction %d (%s): invalid sender: %v", i, tx.Hash().Hex(), err))
		}
		msg, err := core.TransactionToMessage(tx, signer, header.BaseFee)
		if err != nil {
			return nil, invalidCall(fmt.Sprintf("transaction %d (%s): %v", i, tx.Hash().Hex(), err))
		}
		before := state.GetBalance(header.Coinbase).ToBig()
		var (
			receipt  *chaintypes.Receipt
			result   *core.ExecutionResult
			applyErr error
		)
		if err := a.runCancellable(ctx, evm, state, func() {
			receipt, result, applyErr = proc.ApplyMessage(tx, msg)
		}); err != nil {
			return nil, err
		}
		if applyErr != nil {
			return nil, invalidCall(fmt.Sprintf("transaction %d (%s) from %s: %v", i, tx.Hash().Hex(), from.Hex(), applyErr))
		}
		diff := new(big.Int).Sub(state.GetBalance(header.Coinbase).ToBig(), before)
		tip, _ := tx.EffectiveGasTip(header.BaseFee)
		if tip == nil || tip.Sign() < 0 {
			tip = new(big.Int)
		}
		fees := new(big.Int).Mul(tip, new(big.Int).SetUint64(receipt.GasUsed))
		r := bundleTxResult{
			TxHash: tx.Hash(), FromAddress: from, ToAddress: tx.To(), GasUsed: receipt.GasUsed,
			GasPrice: tip.String(), GasFees: fees.String(), CoinbaseDiff: diff.String(),
			EthSentToCoinbase: new(big.Int).Sub(diff, fees).String(),
		}
		ret := hexutil.Bytes(result.Return())
		if result.Err != nil {
			rev := hexutil.Bytes(result.Revert())
			if rev == nil {
				rev = hexutil.Bytes{}
			}
			r.Revert = &rev
		} else {
			r.Value = &ret
		}
		out.Results = append(out.Results, r)
		out.TotalGasUsed += receipt.GasUsed
		coinbaseTotal.Add(coinbaseTotal, diff)
		feesTotal.Add(feesTotal, fees)
		hashes = append(hashes, tx.Hash().Bytes()...)
	}
	out.BundleHash = crypto.Keccak256Hash(hashes)
	out.CoinbaseDiff, out.GasFees = coinbaseTotal.String(), feesTotal.String()
	out.EthSentToCoinbase = new(big.Int).Sub(coinbaseTotal, feesTotal).String()
	price := new(big.Int)
	if out.TotalGasUsed > 0 {
		price.Div(coinbaseTotal, new(big.Int).SetUint64(out.TotalGasUsed))
	}
	out.BundleGasPrice = price.String()
	return out, nil
}
