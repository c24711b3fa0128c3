package eth

import (
	"context"
	"errors"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/rpc"
	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// eth_simulateV1: a chain of simulated blocks on top of any block (or the
// pending state), each with optional block and state overrides and a list
// of calls, executed on one StateDB so every block sees what the previous
// ones left. Blocks are assembled like real ones (receipts, roots, bloom,
// withdrawals, EIP-7685 requests) except that the state root is always zero:
// nothing is committed to a trie. Nothing is returned unless the whole
// simulation succeeds within APIConfig.EVMTimeout.

// registerSimulate installs eth_simulateV1.
func (a *API) registerSimulate(s *rpc.Server) {
	s.RegisterLimited("eth_simulateV1", a.execs, a.simulateV1, rpc.HonoursContext)
}

// simDefaultBlockInterval is the default time between simulated blocks when
// the chain configuration does not name a block period.
const simDefaultBlockInterval = 12

// simPayload is eth_simulateV1's first argument.
type simPayload struct {
	BlockStateCalls        []simBlockInput `json:"blockStateCalls"`
	TraceTransfers         bool            `json:"traceTransfers"`
	Validation             bool            `json:"validation"`
	ReturnFullTransactions bool            `json:"returnFullTransactions"`
}

// simBlockInput is one entry of blockStateCalls.
type simBlockInput struct {
	BlockOverrides *BlockOverrides `json:"blockOverrides"`
	StateOverrides StateOverride   `json:"stateOverrides"`
	Calls          []CallArgs      `json:"calls"`
}

// simCallResult is the outcome of one simulated call.
type simCallResult struct {
	ReturnData hexutil.Bytes  `json:"returnData"`
	Logs       []*types.Log   `json:"logs"`
	GasUsed    hexutil.Uint64 `json:"gasUsed"`
	MaxUsedGas hexutil.Uint64 `json:"maxUsedGas"`
	Status     hexutil.Uint64 `json:"status"`
	Error      *simCallError  `json:"error,omitempty"`
}

// simCallError is the error member of a failed call: code 3 with the revert
// data for a revert, CodeVMError for any other EVM failure.
type simCallError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    string `json:"data,omitempty"`
}

// simulateV1 implements eth_simulateV1(payload, block?).
func (a *API) simulateV1(ctx context.Context, p rpc.Params) (any, error) {
	res, err := a.simulate(ctx, p)
	if err != nil {
		return nil, err
	}
	b, err := res.encode()
	if err != nil {
		return nil, err
	}
	return rpc.RawResult(b), nil
}

// simulate runs eth_simulateV1 and returns the simulated blocks.
func (a *API) simulate(ctx context.Context, p rpc.Params) (simResult, error) {
	if err := p.AtMost(2); err != nil {
		return nil, err
	}
	var in simPayload
	if err := p.Decode(0, "payload", &in); err != nil {
		return nil, err
	}
	sel, err := DecodeSelector(p, 1, "block")
	if err != nil {
		return nil, err
	}
	if err := a.checkSimulateSize(&in); err != nil {
		return nil, err
	}
	blk, err := a.Resolve(ctx, sel)
	if err != nil {
		return nil, err
	}
	defer blk.Close()

	ctx, cancel := a.evmContext(ctx)
	defer cancel()
	sim := &simulator{
		api:      a,
		config:   a.exec.Config(),
		base:     blk.Header,
		state:    a.newStateDB(blk.State()),
		headers:  newSimHeaders(blk.Header, blk.Hash(), blk.Headers),
		budget:   a.cfg.GasCap,
		validate: in.Validation,
		trace:    in.TraceTransfers,
		hasher:   trie.NewStackTrie(nil),
		fits:     p.CheckResponse,
	}
	defer sim.state.Release()
	blocks, err := sim.plan(in.BlockStateCalls)
	if err != nil {
		return nil, err
	}
	out := make(simResult, 0, len(blocks))
	for _, pb := range blocks {
		if err := sim.produce(simBlockJSON); err != nil {
			return nil, err
		}
		res, err := sim.processBlock(ctx, pb)
		if err != nil {
			return nil, sim.abort(ctx, err)
		}
		res.fullTx = in.ReturnFullTransactions
		out = append(out, res)
	}
	return out, nil
}

// checkSimulateSize enforces the request-size limits before any work.
func (a *API) checkSimulateSize(in *simPayload) error {
	if len(in.BlockStateCalls) == 0 {
		return rpc.ErrInvalidParams("empty input")
	}
	if n := uint64(len(in.BlockStateCalls)); n > a.cfg.SimulateMaxBlocks {
		return &rpc.Error{Code: rpc.CodeClientLimitExceeded, Message: fmt.Sprintf("too many blocks: %d (limit %d)", n, a.cfg.SimulateMaxBlocks)}
	}
	total := 0
	for i, b := range in.BlockStateCalls {
		if len(b.Calls) > a.cfg.SimulateMaxCallsPerBlock {
			return &rpc.Error{Code: rpc.CodeClientLimitExceeded, Message: fmt.Sprintf("too many calls in block %d: %d (limit %d per block)", i, len(b.Calls), a.cfg.SimulateMaxCallsPerBlock)}
		}
		total += len(b.Calls)
	}
	if total > a.cfg.SimulateMaxCalls {
		return &rpc.Error{Code: rpc.CodeClientLimitExceeded, Message: fmt.Sprintf("too many calls: %d (limit %d per request)", total, a.cfg.SimulateMaxCalls)}
	}
	return nil
}

// simulator runs one eth_simulateV1 request. Not safe for concurrent use.
type simulator struct {
	api      *API
	config   *params.ChainConfig
	base     *types.Header
	state    *chain.StateDB
	headers  *simHeaders
	budget   uint64 // what is left of the request's gas cap
	validate bool
	trace    bool
	hasher   *trie.StackTrie // derives every block's tx and receipt roots (DeriveSha resets it)
	// fits checks the answer's estimated size so far (produced) against
	// the response budget (rpc.Params.CheckResponse): a simulation whose
	// results cannot be sent stops as soon as that is known.
	fits     func(n int) error
	produced int
}

// Estimated encoded sizes of a simulated call, log and block (the fixed
// fields, without variable data): the answer's size is checked as the
// results are produced.
const (
	simCallJSON  = 160
	simLogJSON   = 520
	simBlockJSON = 1400
)

// produce counts n more bytes of answer.
func (sim *simulator) produce(n int) error {
	sim.produced += n
	if sim.fits == nil {
		return nil
	}
	return sim.fits(sim.produced)
}

// plannedBlock is one block to simulate: its preliminary header (number,
// time, fee recipient, gas limit, difficulty, prev-randao, overridden base
// fee, fork fields) and its input (empty for a gap filler).
type plannedBlock struct {
	header *types.Header
	in     simBlockInput
}

func (sim *simulator) blockInterval() uint64 {
	if c := sim.config.Clique; c != nil && c.Period > 0 {
		return c.Period
	}
	return simDefaultBlockInterval
}

// plan checks the block sequence (numbers and timestamps strictly
// increasing, span within the limit), fills number gaps with empty blocks
// and builds the preliminary headers.
func (sim *simulator) plan(inputs []simBlockInput) ([]plannedBlock, error) {
	var (
		out      = make([]plannedBlock, 0, len(inputs))
		baseNum  = sim.base.Number.Uint64()
		prevNum  = baseNum
		prevTime = sim.base.Time
		interval = sim.blockInterval()
		maxSpan  = sim.api.cfg.SimulateMaxBlocks
	)
	for _, in := range inputs {
		ov := in.BlockOverrides
		if ov == nil {
			ov = new(BlockOverrides)
		}
		num := prevNum + 1
		if ov.Number != nil {
			num = uint64(*ov.Number)
		}
		if num <= prevNum {
			return nil, &rpc.Error{Code: rpc.CodeBlockNumberInvalid, Message: fmt.Sprintf("block numbers must be in order: %d <= %d", num, prevNum)}
		}
		if num-baseNum > maxSpan {
			return nil, &rpc.Error{Code: rpc.CodeClientLimitExceeded, Message: fmt.Sprintf("too many blocks: block %d is %d blocks after the base block %d, gaps included (limit %d)", num, num-baseNum, baseNum, maxSpan)}
		}
		for n := prevNum + 1; n < num; n++ {
			prevTime += interval
			out = append(out, plannedBlock{in: simBlockInput{BlockOverrides: &BlockOverrides{Number: ptrU64(n), Time: ptrU64(prevTime)}}})
		}
		t := prevTime + interval
		if ov.Time != nil {
			t = uint64(*ov.Time)
			if t <= prevTime {
				return nil, &rpc.Error{Code: rpc.CodeBlockTimestampInvalid, Message: fmt.Sprintf("block timestamps must be in order: %d <= %d", t, prevTime)}
			}
		}
		cp := *ov
		cp.Number, cp.Time = ptrU64(num), ptrU64(t)
		in.BlockOverrides = &cp
		out = append(out, plannedBlock{in: in})
		prevNum, prevTime = num, t
	}
	prev := sim.base
	for i := range out {
		h, err := sim.prelimHeader(prev, out[i].in.BlockOverrides)
		if err != nil {
			return nil, err
		}
		out[i].header = h
		prev = h
	}
	return out, nil
}

func ptrU64(v uint64) *hexutil.Uint64 { u := hexutil.Uint64(v); return &u }

// prelimHeader builds the header fields that do not depend on execution.
// Fee recipient, gas limit and difficulty are inherited from the previous
// block unless overridden; difficulty is zero after the merge, where
// overriding it is an error.
func (sim *simulator) prelimHeader(prev *types.Header, ov *BlockOverrides) (*types.Header, error) {
	num := new(big.Int).SetUint64(uint64(*ov.Number))
	t := uint64(*ov.Time)
	h := &types.Header{
		UncleHash:   types.EmptyUncleHash,
		TxHash:      types.EmptyTxsHash,
		ReceiptHash: types.EmptyReceiptsHash,
		Coinbase:    prev.Coinbase,
		Difficulty:  new(big.Int).Set(prev.Difficulty),
		Number:      num,
		GasLimit:    prev.GasLimit,
		Time:        t,
		Extra:       []byte{},
	}
	if sim.config.IsPostMerge(num.Uint64(), t) {
		h.Difficulty = new(big.Int)
	}
	if ov.Difficulty != nil {
		if h.Difficulty.Sign() == 0 {
			return nil, rpc.ErrInvalidParams("block %d: difficulty override is not allowed after the merge", num)
		}
		h.Difficulty = new(big.Int).Set(ov.Difficulty.ToInt())
	}
	if sim.config.IsShanghai(num, t) {
		h.WithdrawalsHash = &types.EmptyWithdrawalsHash
	}
	if sim.config.IsCancun(num, t) {
		root := common.Hash{}
		if ov.BeaconRoot != nil {
			root = *ov.BeaconRoot
		}
		h.ParentBeaconRoot = &root
	}
	if prev.SlotNumber != nil {
		slot := *prev.SlotNumber + 1
		h.SlotNumber = &slot
	}
	if ov.GasLimit != nil {
		h.GasLimit = uint64(*ov.GasLimit)
	}
	if ov.FeeRecipient != nil {
		h.Coinbase = *ov.FeeRecipient
	}
	if ov.PrevRandao != nil {
		h.MixDigest = common.Hash(*ov.PrevRandao)
	}
	if ov.BaseFeePerGas != nil {
		h.BaseFee = new(big.Int).Set(ov.BaseFeePerGas.ToInt())
	}
	return h, nil
}

// processBlock executes one planned block on the shared state and returns
// the assembled block with its call results and the senders of its calls.
func (sim *simulator) processBlock(ctx context.Context, pb plannedBlock) (*simBlockResult, error) {
	parent, parentHash := sim.headers.last()
	header := pb.header
	ov := pb.in.BlockOverrides
	header.ParentHash = parentHash
	if sim.config.IsLondon(header.Number) && header.BaseFee == nil {
		// Without validation the base fee is zero unless overridden, so
		// calls without fee fields run (gasPrice 0 < baseFee otherwise).
		if sim.validate {
			header.BaseFee = sim.api.exec.NextBaseFee(parent, header.Time)
		} else {
			header.BaseFee = new(big.Int)
		}
	}
	cancun := sim.config.IsCancun(header.Number, header.Time)
	if cancun {
		excess := sim.api.exec.NextExcessBlobGas(parent, header.Time)
		header.ExcessBlobGas = &excess
	}
	rules := sim.config.Rules(header.Number, header.Difficulty.Sign() == 0, header.Time)
	precompiles := sim.api.exec.Precompiles(rules, header.Time)

	ovs, err := chainOverrides(pb.in.StateOverrides)
	if err != nil {
		return nil, err
	}
	if err := chain.ApplyStateOverridesWith(sim.state, ovs, precompiles, chain.OverrideOptions{AllowSharedMoveTarget: true}); err != nil {
		return nil, overrideError(err)
	}

	// Post-Amsterdam the protocol itself logs every ETH transfer (EIP-7708).
	tracer := newSimLogTracer(sim.trace && !rules.IsAmsterdam, header.Number.Uint64(), header.Time)
	hooks := tracer.hooks()
	opts := chain.ProcessOptions{
		VM:           vm.Config{Tracer: hooks},
		NoValidation: !sim.validate,
		Precompiles:  precompiles,
		NoDAOFork:    true,
		// The log tracer gathers the calls' logs: the system calls have none.
		UntracedSystemCalls: true,
	}
	if ov.BlobBaseFee != nil {
		opts.BlobBaseFee = ov.BlobBaseFee.ToInt()
	}
	sim.state.SetLogCount(0)
	proc := sim.api.exec.NewBlockProcessorWith(header, parent, common.Hash{}, sim.state, sim.headers, opts)
	defer proc.EVM().Release() // its 32 KiB stack arena goes back to go-ethereum's pool

	var (
		calls   = pb.in.Calls
		txs     = make(chaintypes.Txs, len(calls))
		results = make([]simCallResult, len(calls))
		senders = make([]common.Address, len(calls))
	)
	for i := range calls {
		call := calls[i] // a copy: defaults are filled in place
		capped, err := sim.callDefaults(&call, header, proc, rules)
		if err != nil {
			return nil, err
		}
		msg, err := newMessage(&call, header.BaseFee, false, false) // proc skips the checks without validation
		if err != nil {
			return nil, err
		}
		tx := simTransaction(&call)
		txs[i], senders[i] = tx, msg.From
		tracer.startTx(tx.Hash(), uint(i))

		var (
			receipt  *chaintypes.Receipt
			result   *core.ExecutionResult
			applyErr error
		)
		if err := sim.api.runCancellable(ctx, proc.EVM(), sim.state, func() {
			receipt, result, applyErr = proc.ApplyMessage(tx, msg)
		}); err != nil {
			return nil, err
		}
		var refused *chain.TxError
		switch {
		case errors.As(applyErr, &refused):
			return nil, simTxError(refused.Err, msg.GasLimit)
		case applyErr != nil:
			return nil, applyErr
		}

		if result.UsedGas > sim.budget {
			return nil, rpc.ErrServer(fmt.Sprintf("RPC gas cap exhausted: need %d, remaining %d", result.UsedGas, sim.budget))
		}
		sim.budget -= result.UsedGas

		res := simCallResult{
			ReturnData: result.Return(),
			Logs:       tracer.logs(),
			GasUsed:    hexutil.Uint64(result.UsedGas),
			MaxUsedGas: hexutil.Uint64(result.MaxUsedGas),
			Status:     hexutil.Uint64(receipt.Status),
		}
		if res.Logs == nil {
			res.Logs = []*types.Log{}
		}
		size := simCallJSON + 2*len(res.ReturnData) + 2*len(result.Revert())
		for _, l := range res.Logs {
			size += simLogJSON + 2*len(l.Data) + 70*len(l.Topics)
		}
		if err := sim.produce(size); err != nil {
			return nil, err
		}
		if result.Failed() {
			if errors.Is(result.Err, vm.ErrExecutionReverted) {
				msg := "execution reverted"
				if reason := revertReason(result.Revert()); reason != "" {
					msg += ": " + reason
				}
				res.Error = &simCallError{Code: rpc.CodeExecutionReverted, Message: msg, Data: hexutil.Encode(result.Revert())}
			} else {
				msg := result.Err.Error()
				if capped {
					msg += " (gas limit was capped by the RPC server's global gas cap)"
				}
				res.Error = &simCallError{Code: rpc.CodeVMError, Message: msg}
			}
		}
		results[i] = res
	}
	header.GasUsed = proc.BlockGasUsed()
	if cancun {
		blobGas := proc.BlobGasUsed()
		header.BlobGasUsed = &blobGas
	}
	body := &chaintypes.Body{Transactions: txs}
	if sim.config.IsShanghai(header.Number, header.Time) {
		body.Withdrawals = types.Withdrawals{}
		if ov.Withdrawals != nil {
			body.Withdrawals = *ov.Withdrawals
		}
	}
	var (
		requests  [][]byte
		finishErr error
	)
	if err := sim.api.runCancellable(ctx, proc.EVM(), sim.state, func() {
		requests, finishErr = proc.Finish(body.Withdrawals, nil)
	}); err != nil {
		return nil, err
	}
	if finishErr != nil {
		// Finish names the block; report core's error under the simulated one.
		if inner := errors.Unwrap(finishErr); inner != nil {
			finishErr = inner
		}
		return nil, rpc.ErrServer(fmt.Sprintf("simulated block %d: %v", header.Number, finishErr))
	}
	if requests != nil {
		h := types.CalcRequestsHash(requests)
		header.RequestsHash = &h
	}
	header.Root = common.Hash{} // simulation commits nothing to a trie
	block := chaintypes.NewBlock(header, body, proc.Receipts(), sim.hasher)
	hash := block.Hash()
	for i := range results {
		for _, l := range results[i].Logs {
			l.BlockHash = hash
		}
	}
	bh := block.Header()
	sim.headers.add(bh, hash)
	return &simBlockResult{block: block, header: bh, hash: hash, calls: results, senders: senders, config: sim.config}, nil
}

// callDefaults fills a call's defaults like the reference client: nonce
// from state, gas = what is left of the block (a larger request fails the
// simulation with -38015), clamped to what is left of the request's gas
// cap; then eth_call's defaults (chain id, value, fee fields). capped
// reports that the gas cap lowered the call's gas.
func (sim *simulator) callDefaults(call *CallArgs, header *types.Header, proc *chain.BlockProcessor, rules params.Rules) (capped bool, err error) {
	var from common.Address
	if call.From != nil {
		from = *call.From
	}
	if call.Nonce == nil {
		n := hexU64(sim.state.GetNonce(from))
		call.Nonce = &n
	}
	remaining := proc.GasLeft()
	if rules.IsAmsterdam && !sim.validate {
		// The execution gas is not capped without validation, so the whole
		// limit must fit the execution dimension too.
		remaining = min(remaining, header.GasLimit-proc.ExecutionGasUsed())
	}
	if call.Gas == nil {
		g := hexU64(remaining)
		call.Gas = &g
	}
	if uint64(*call.Gas) > remaining {
		return false, &rpc.Error{Code: rpc.CodeBlockGasLimitReached, Message: fmt.Sprintf("block gas limit reached: remaining: %d, required: %d", remaining, uint64(*call.Gas))}
	}
	gas := min(uint64(*call.Gas), sim.budget)
	capped = gas < uint64(*call.Gas)
	g := hexU64(gas)
	call.Gas = &g
	return capped, sim.api.callDefaults(call, gas, header.BaseFee)
}

// simTransaction turns a defaulted call into the unsigned transaction the
// simulated block contains, hashed as the reference client does: a
// dynamic-fee transaction unless the call's fields ask for another type
// (authorizations → set-code, blob hashes → blob, gasPrice → legacy or,
// with an access list, access-list).
func simTransaction(c *CallArgs) *types.Transaction {
	typ := uint8(types.DynamicFeeTxType)
	switch {
	case c.AuthorizationList != nil:
		typ = types.SetCodeTxType
	case c.BlobVersionedHashes != nil:
		typ = types.BlobTxType
	}
	if c.GasPrice != nil {
		typ = types.LegacyTxType
		if c.AccessList != nil {
			typ = types.AccessListTxType
		}
	}
	al := types.AccessList{}
	if c.AccessList != nil {
		al = *c.AccessList
	}
	// types.NewTx copies every field (a nil big.Int becomes zero): the
	// call's own values are handed over as they are.
	toBig := func(v *hexBig) *big.Int {
		if v == nil {
			return nil
		}
		return v.ToInt()
	}
	u256 := func(v *hexBig) *uint256.Int {
		if v == nil {
			return new(uint256.Int)
		}
		return uint256.MustFromBig(v.ToInt())
	}
	nonce, gas, data := uint64(*c.Nonce), uint64(*c.Gas), c.Data()
	switch typ {
	case types.SetCodeTxType:
		auths := c.AuthorizationList
		if auths == nil {
			auths = []types.SetCodeAuthorization{}
		}
		return types.NewTx(&types.SetCodeTx{
			ChainID: u256(c.ChainID), Nonce: nonce, Gas: gas, To: *c.To,
			GasFeeCap: u256(c.MaxFeePerGas), GasTipCap: u256(c.MaxPriorityFeePerGas),
			Value: u256(c.Value), Data: data, AccessList: al, AuthList: auths,
		})
	case types.BlobTxType:
		return types.NewTx(&types.BlobTx{
			ChainID: u256(c.ChainID), Nonce: nonce, Gas: gas, To: *c.To,
			GasFeeCap: u256(c.MaxFeePerGas), GasTipCap: u256(c.MaxPriorityFeePerGas),
			Value: u256(c.Value), Data: data, AccessList: al,
			BlobHashes: c.BlobVersionedHashes, BlobFeeCap: u256(c.MaxFeePerBlobGas),
		})
	case types.DynamicFeeTxType:
		return types.NewTx(&types.DynamicFeeTx{
			ChainID: toBig(c.ChainID), Nonce: nonce, Gas: gas, To: c.To,
			GasFeeCap: toBig(c.MaxFeePerGas), GasTipCap: toBig(c.MaxPriorityFeePerGas),
			Value: toBig(c.Value), Data: data, AccessList: al,
		})
	case types.AccessListTxType:
		return types.NewTx(&types.AccessListTx{
			ChainID: toBig(c.ChainID), Nonce: nonce, Gas: gas, To: c.To,
			GasPrice: toBig(c.GasPrice), Value: toBig(c.Value), Data: data, AccessList: al,
		})
	default:
		return types.NewTx(&types.LegacyTx{
			Nonce: nonce, Gas: gas, To: c.To, GasPrice: toBig(c.GasPrice), Value: toBig(c.Value), Data: data,
		})
	}
}

// simTxError maps a call the protocol refuses (ApplyMessage error) to the
// execution-API code; the whole simulation fails with it.
func simTxError(err error, gas uint64) *rpc.Error {
	code := rpc.CodeInternal
	switch {
	case errors.Is(err, core.ErrNonceTooHigh):
		code = rpc.CodeNonceTooHigh
	case errors.Is(err, core.ErrNonceTooLow):
		code = rpc.CodeNonceTooLow
	case errors.Is(err, core.ErrSenderNoEOA):
		code = rpc.CodeSenderIsNotEOA
	case errors.Is(err, core.ErrFeeCapVeryHigh), errors.Is(err, core.ErrTipVeryHigh), errors.Is(err, core.ErrTipAboveFeeCap):
		code = rpc.CodeInvalidParams
	case errors.Is(err, core.ErrFeeCapTooLow):
		code = rpc.CodeBaseFeeTooLow
	case errors.Is(err, core.ErrInsufficientFunds), errors.Is(err, core.ErrInsufficientFundsForTransfer):
		code = rpc.CodeInsufficientFunds
	case errors.Is(err, core.ErrIntrinsicGas), errors.Is(err, core.ErrFloorDataGas):
		code = rpc.CodeIntrinsicGas
	case errors.Is(err, vm.ErrMaxInitCodeSizeExceeded):
		code = rpc.CodeMaxInitCodeSizeExceeded
	}
	return &rpc.Error{Code: code, Message: fmt.Sprintf("err: %v (supplied gas %d)", err, gas)}
}

// abort turns an error that ended the simulation into the response error:
// the time limit as eth_call reports it, anything else unchanged.
func (sim *simulator) abort(ctx context.Context, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return sim.api.abortError(context.DeadlineExceeded)
	}
	return err
}

// simHeaders resolves headers for the simulated chain: the simulated blocks
// so far, the base block (which, for pending, is not in the store) and the
// canonical chain below the base.
type simHeaders struct {
	base     *types.Header
	baseHash common.Hash
	below    chain.HeaderSource
	sim      []*types.Header
	hashes   []common.Hash // hashes[i] is sim[i]'s
}

// newSimHeaders starts the simulated chain on base, whose hash is baseHash.
func newSimHeaders(base *types.Header, baseHash common.Hash, below chain.HeaderSource) *simHeaders {
	return &simHeaders{base: base, baseHash: baseHash, below: below}
}

// last is the newest block and its hash: the parent of the next simulated
// block.
func (s *simHeaders) last() (*types.Header, common.Hash) {
	if n := len(s.sim); n > 0 {
		return s.sim[n-1], s.hashes[n-1]
	}
	return s.base, s.baseHash
}

// add appends the next simulated block's header; hash is its hash.
func (s *simHeaders) add(h *types.Header, hash common.Hash) {
	s.sim = append(s.sim, h)
	s.hashes = append(s.hashes, hash)
}

func (s *simHeaders) HeaderByHash(hash common.Hash) (*types.Header, error) {
	if hash == s.baseHash {
		return s.base, nil
	}
	for i, h := range s.hashes {
		if h == hash {
			return s.sim[i], nil
		}
	}
	return s.below.HeaderByHash(hash)
}

func (s *simHeaders) HeaderByNumber(number uint64) (*types.Header, error) {
	base := s.base.Number.Uint64()
	switch {
	case number == base:
		return s.base, nil
	case number < base:
		return s.below.HeaderByNumber(number)
	}
	if i := number - base - 1; i < uint64(len(s.sim)) && s.sim[i].Number.Uint64() == number {
		return s.sim[i], nil
	}
	for _, h := range s.sim {
		if h.Number.Uint64() == number {
			return h, nil
		}
	}
	return nil, fmt.Errorf("simulated header %d: %w", number, store.ErrNotFound)
}
