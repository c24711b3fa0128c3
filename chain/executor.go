package chain

import (
	"sync/atomic"

	"github.com/tipnode/tipnode/chain/op"
	"github.com/tipnode/tipnode/store/chaintypes"

	"context"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus"
	"github.com/ethereum/go-ethereum/consensus/beacon"
	"github.com/ethereum/go-ethereum/consensus/ethash"
	"github.com/ethereum/go-ethereum/consensus/misc"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
)

// Executor runs blocks and messages with go-ethereum's EVM under one chain
// configuration. One Executor serves block import, the pending sequencer,
// eth_call and eth_simulateV1. It is stateless and safe for concurrent use.
type Executor struct {
	config *params.ChainConfig
	engine consensus.Engine
	op     *opRules // the OP Stack seam (opstack.go); nil on an L1 chain
	// forked: the store is a fork (ForFork): it holds only part of the
	// state, so no root over the state is computed.
	forked bool

	// lastCtx is the block context BlockContext built last (without its
	// BLOCKHASH function): calls at one head share one *types.Header, and
	// the context's blob base fee (an exponential in big integers) and
	// fork checks cost a tenth of a balanceOf call's handler.
	lastCtx atomic.Pointer[blockCtxEntry]
}

// blockCtxEntry is a header's block context, GetHash left nil.
type blockCtxEntry struct {
	header *types.Header
	ctx    vm.BlockContext
}

// NewExecutor returns an executor for config. Pre-merge blocks get ethash
// rewards (block and uncle rewards; the proof-of-work seal itself is not
// verified), post-merge blocks the beacon rules.
func NewExecutor(config *params.ChainConfig) *Executor {
	return &Executor{config: config, engine: beacon.New(ethash.NewFaker())}
}

// Precompiles returns the precompiled contracts a block at rules and time
// t runs with, as a fresh map the caller may edit (state overrides move
// precompiles): go-ethereum's fork set, or the OP set on an OP chain.
func (e *Executor) Precompiles(rules params.Rules, t uint64) vm.PrecompiledContracts {
	if e.op != nil {
		return op.Precompiles(e.op.cfg, rules, t)
	}
	return vm.ActivePrecompiledContracts(rules)
}

// ChainPrecompiles is Precompiles where the chain's set differs from
// go-ethereum's fork set (an OP chain), nil where it does not: the EVM then
// uses go-ethereum's shared set.
func (e *Executor) ChainPrecompiles(rules params.Rules, t uint64) vm.PrecompiledContracts {
	if e.op == nil {
		return nil
	}
	return op.Precompiles(e.op.cfg, rules, t)
}

// PrepareState sets what the chain's rules add to every transaction's
// access list at time t on state (the OP precompiles go-ethereum's list
// lacks; nothing on L1).
func (e *Executor) PrepareState(state *StateDB, t uint64) {
	if e.op != nil {
		state.extraWarm = op.ExtraWarmAddresses(e.op.cfg, t)
	}
}

// ForFork returns an executor of the same rules for a forked store
// (`tipnode dev --fork`), which holds only the state the fork wrote or
// fetched and keeps no trie: the headers it seals carry a zero state root
// and, on an OP chain from Isthmus, a zero withdrawals root (the message
// passer's storage is the upstream's, which a fork cannot list).
func (e *Executor) ForFork() *Executor {
	return &Executor{config: e.config, engine: e.engine, op: e.op, forked: true}
}

// Config returns the chain configuration.
func (e *Executor) Config() *params.ChainConfig { return e.config }

// Engine returns the consensus engine (ethash rewards + beacon).
func (e *Executor) Engine() consensus.Engine { return e.engine }

// BlockContext builds the EVM block context of header. headers resolves
// BLOCKHASH; it must know header's ancestors. A failed header read is
// recorded on state (StateDB.Error), so the execution is not trusted.
func (e *Executor) BlockContext(header *types.Header, headers HeaderSource, state *StateDB) vm.BlockContext {
	cc := &chainContext{config: e.config, engine: e.engine, headers: headers, current: header, fail: state.setErr}
	if last := e.lastCtx.Load(); last != nil && last.header == header {
		// Headers are never changed once built, nor are the context's
		// big integers (the EVM and its callers replace them, never set
		// them in place): only BLOCKHASH is this call's own.
		ctx := last.ctx
		ctx.GetHash = core.GetHashFn(header, cc)
		return ctx
	}
	ctx := core.NewEVMBlockContext(header, cc, nil)
	entry := &blockCtxEntry{header: header, ctx: ctx}
	entry.ctx.GetHash = nil
	e.lastCtx.Store(entry)
	return ctx
}

// BlockProcessor executes one block transaction by transaction on a
// StateDB. Import drives it over a block's transactions; the sequencer over
// pool transactions, one pre-confirmation at a time; eth_simulateV1 over
// call messages (ApplyMessage), with ProcessOptions.
type BlockProcessor struct {
	exec     *Executor
	header   *types.Header
	hash     common.Hash // block hash used in logs/receipts (zero while unknown)
	state    *StateDB
	evm      *vm.EVM
	gp       *core.GasPool
	signer   types.Signer
	rules    params.Rules
	receipts chaintypes.Receipts
	opb      opBlock // OP Stack per-block state (opstack.go)
	logs     []*types.Log
	blobGas  uint64
	headers  HeaderSource
	opts     ProcessOptions
}

// ProcessOptions is what a simulated block (eth_simulateV1) changes in a
// BlockProcessor. The zero value is how import and the sequencer run.
type ProcessOptions struct {
	// VM configures the EVM (NoBaseFee, Tracer...). A tracer's OnLog hook
	// receives every log the block emits, as it is emitted (our StateDB has
	// no other tracing hooks).
	VM vm.Config
	// NoValidation runs the block as eth_simulateV1 does with validation
	// off: the EVM runs with NoBaseFee (a message without fees may run
	// below the base fee), and ApplyMessage skips the nonce check and the
	// EIP-8037 execution gas cap. Balances are still checked.
	NoValidation bool
	// BlobBaseFee, when not nil, replaces the blob base fee the EVM sees
	// (BLOBBASEFEE, blob fees charged, receipts' blob gas price).
	BlobBaseFee *big.Int
	// Precompiles, when not nil, replaces the active precompiled contracts
	// (state overrides may move or replace them).
	Precompiles vm.PrecompiledContracts
	// NoDAOFork skips the DAO hard fork's balance moves at the DAO fork
	// block (simulated blocks never apply them, like the reference client).
	NoDAOFork bool
	// UntracedSystemCalls runs the system calls that open and close the
	// block (beacon root, parent hash, withdrawals, request queues) without
	// VM.Tracer: a tracer that gathers what the block's calls do (the log
	// tracer of eth_simulateV1) has nothing to see there, and the EVM runs
	// its faster untraced loop. The tracer still sees every transaction.
	UntracedSystemCalls bool
}

// TxError is a transaction or message the protocol refuses (nonce, funds,
// fee caps, intrinsic gas, block gas...): Err is go-ethereum's error. It
// matches both ErrTxInvalid and Err with errors.Is.
type TxError struct {
	Tx  common.Hash
	Err error
}

func (e *TxError) Error() string   { return fmt.Sprintf("%v: tx %s: %v", ErrTxInvalid, e.Tx, e.Err) }
func (e *TxError) Unwrap() []error { return []error{ErrTxInvalid, e.Err} }

// NewBlockProcessor starts a block: it applies the DAO fork (when due) and
// the pre-execution system calls (EIP-4788 beacon root, EIP-2935 parent hash).
// blockHash is stamped into receipts and logs; pass the zero hash when the
// block is not sealed yet.
func (e *Executor) NewBlockProcessor(header, parent *types.Header, blockHash common.Hash, state *StateDB, headers HeaderSource, cfg vm.Config) *BlockProcessor {
	return e.NewBlockProcessorWith(header, parent, blockHash, state, headers, ProcessOptions{VM: cfg})
}

// NewBlockProcessorWith is NewBlockProcessor with the options of a
// simulated block.
func (e *Executor) NewBlockProcessorWith(header, parent *types.Header, blockHash common.Hash, state *StateDB, headers HeaderSource, opts ProcessOptions) *BlockProcessor {
	p := &BlockProcessor{
		exec:    e,
		header:  header,
		hash:    blockHash,
		state:   state,
		gp:      core.NewGasPool(header.GasLimit),
		signer:  types.MakeSigner(e.config, header.Number, header.Time),
		rules:   e.config.Rules(header.Number, header.Difficulty.Sign() == 0, header.Time),
		headers: headers,
		opts:    opts,
		opb:     e.newOPBlock(header, parent),
	}
	if !opts.NoDAOFork && e.config.DAOForkSupport && e.config.DAOForkBlock != nil && e.config.DAOForkBlock.Cmp(header.Number) == 0 {
		misc.ApplyDAOHardFork(state)
	}
	e.applyCanyonDeployer(header, state)
	blockCtx := e.BlockContext(header, headers, state)
	if opts.BlobBaseFee != nil {
		blockCtx.BlobBaseFee = new(big.Int).Set(opts.BlobBaseFee)
	}
	cfg := opts.VM
	if opts.NoValidation {
		cfg.NoBaseFee = true
	}
	var evmState vm.StateDB = state
	if cfg.Tracer != nil && cfg.Tracer.OnLog != nil && state.Hooks() == nil {
		evmState = logHookState{StateDB: state, onLog: cfg.Tracer.OnLog}
	}
	p.evm = vm.NewEVM(blockCtx, evmState, e.config, cfg)
	if opts.Precompiles != nil {
		p.evm.SetPrecompiles(opts.Precompiles)
	} else if pc := e.ChainPrecompiles(p.rules, header.Time); pc != nil {
		p.evm.SetPrecompiles(pc)
	}
	e.PrepareState(state, header.Time)
	p.systemCalls(func() { e.preExecution(header, parent, p.evm) })
	state.Finalise(p.rules)
	return p
}

// preExecution makes the system calls that open a block, as
// core.PreExecution does: the EIP-4788 beacon root, then the EIP-2935
// parent hash. The parent's hash is the header's ParentHash (PreExecution
// hashes the parent header again; a header without one falls back to
// that). The Amsterdam block access list PreExecution would build is not
// kept by tipnode, so none is built.
func (e *Executor) preExecution(header, parent *types.Header, evm *vm.EVM) {
	if header.ParentBeaconRoot != nil {
		core.ProcessBeaconBlockRoot(*header.ParentBeaconRoot, evm, nil)
	}
	if e.config.IsPrague(header.Number, header.Time) || e.config.IsUBT(header.Number, header.Time) {
		parentHash := header.ParentHash
		if parentHash == (common.Hash{}) {
			parentHash = parent.Hash()
		}
		core.ProcessParentBlockHash(parentHash, evm, nil)
	}
}

// systemCalls runs fn, the block's system calls, with the EVM tracer
// detached when the options ask for it.
func (p *BlockProcessor) systemCalls(fn func()) {
	if !p.opts.UntracedSystemCalls || p.evm.Config.Tracer == nil {
		fn()
		return
	}
	tracer := p.evm.Config.Tracer
	p.evm.Config.Tracer = nil
	defer func() { p.evm.Config.Tracer = tracer }()
	fn()
}

// logHookState is the StateDB the EVM runs on when a tracer wants logs: every
// log is also handed to the tracer's OnLog.
type logHookState struct {
	*StateDB
	onLog tracing.LogHook
}

func (s logHookState) AddLog(l *types.Log) {
	s.StateDB.AddLog(l)
	s.onLog(l)
}

// EVM exposes the processor's EVM (e.g. to attach a tracer).
func (p *BlockProcessor) EVM() *vm.EVM { return p.evm }

// SetTracer traces the transactions applied from now on with h (nil: stop
// tracing): the EVM reports execution to it, the StateDB state changes
// (SetHooks), and each transaction or message is framed by OnTxStart and
// OnTxEnd (with its receipt), as go-ethereum's ApplyTransactionWithEVM does.
// The processor must have been made without a VM tracer.
func (p *BlockProcessor) SetTracer(h *tracing.Hooks) {
	p.evm.Config.Tracer = h
	p.state.SetHooks(h)
}

// State returns the StateDB the block executes on.
func (p *BlockProcessor) State() *StateDB { return p.state }

// Receipts returns the receipts so far.
func (p *BlockProcessor) Receipts() chaintypes.Receipts { return p.receipts }

// GasUsed is the cumulative gas used so far.
func (p *BlockProcessor) GasUsed() uint64 { return p.gp.CumulativeUsed() }

// GasLeft is the gas still available in the block.
func (p *BlockProcessor) GasLeft() uint64 { return p.gp.Available(p.rules.IsAmsterdam) }

// BlockGasUsed is the block's gas used so far as its header counts it: the
// same as GasUsed before Amsterdam, the larger of the execution and state
// dimensions after it (EIP-8037).
func (p *BlockProcessor) BlockGasUsed() uint64 { return p.gp.Used() }

// ExecutionGasUsed is the execution-dimension gas used so far (EIP-8037;
// zero before Amsterdam).
func (p *BlockProcessor) ExecutionGasUsed() uint64 { return p.gp.CumulativeExecution() }

// BlobGasUsed is the blob gas used so far.
func (p *BlockProcessor) BlobGasUsed() uint64 { return p.blobGas }

// BlobGasLeft is the blob gas still available in the block under its fork's
// maximum (zero before Cancun). ApplyTransaction refuses a blob
// transaction needing more.
func (p *BlockProcessor) BlobGasLeft() uint64 {
	max := p.exec.maxBlobGas(p.header)
	if p.blobGas >= max {
		return 0
	}
	return max - p.blobGas
}

// ApplyTx executes a block's transaction as the next one of the block:
// ApplyTransaction for a signed transaction. A deposit is refused
// (ErrTxInvalid) on a chain whose rules have no deposits.
func (p *BlockProcessor) ApplyTx(tx chaintypes.Tx) (*chaintypes.Receipt, error) {
	switch t := tx.(type) {
	case *types.Transaction:
		return p.ApplyTransaction(t)
	case *chaintypes.Deposit:
		if p.exec.op != nil {
			return p.applyDeposit(t)
		}
		return nil, fmt.Errorf("%w: tx %s: deposit transactions (type 0x7e) exist only on OP Stack chains", ErrTxInvalid, tx.Hash())
	default:
		return nil, fmt.Errorf("%w: tx %s: transaction type 0x%x is not valid on this chain", ErrTxInvalid, tx.Hash(), tx.Type())
	}
}

// ApplyTransaction executes tx as the next transaction of the block. A
// transaction that cannot be included (bad nonce, funds, gas above the
// block's remaining gas...) returns an error wrapping ErrTxInvalid and leaves
// state and gas pool untouched.
func (p *BlockProcessor) ApplyTransaction(tx *types.Transaction) (*chaintypes.Receipt, error) {
	msg, err := core.TransactionToMessage(tx, p.signer, p.header.BaseFee)
	if err != nil {
		return nil, fmt.Errorf("%w: tx %s: %v", ErrTxInvalid, tx.Hash(), err)
	}
	if tx.Type() == types.BlobTxType {
		max := p.exec.maxBlobGas(p.header)
		if p.blobGas+tx.BlobGas() > max {
			return nil, fmt.Errorf("%w: tx %s: blob gas %d exceeds block limit %d", ErrTxInvalid, tx.Hash(), p.blobGas+tx.BlobGas(), max)
		}
	}
	if p.exec.op != nil {
		return p.applyOPTransaction(tx, msg)
	}
	receipt, _, err := p.apply(tx, msg)
	return receipt, err
}

// ApplyMessage executes msg, a call message that is not signed, as the
// next transaction of the block; tx is the (unsigned) transaction the block
// records for it: its hash, type, nonce and blob gas go into the receipt.
// Unlike ApplyTransaction the block's blob gas limit is not enforced. With
// NoValidation the nonce check and the execution gas cap are skipped (msg
// itself is not changed). A message the protocol refuses returns a *TxError
// and leaves state and gas pool untouched; the result holds the EVM outcome
// (return data, revert, gas) of an executed one.
func (p *BlockProcessor) ApplyMessage(tx *types.Transaction, msg *core.Message) (*chaintypes.Receipt, *core.ExecutionResult, error) {
	if p.opts.NoValidation {
		m := *msg
		m.SkipNonceCheck().SkipExecutionGasCapCheck()
		msg = &m
	}
	return p.apply(tx, msg)
}

// apply runs msg as tx, the next transaction of the block, and records its
// receipt.
func (p *BlockProcessor) apply(tx *types.Transaction, msg *core.Message) (xr *chaintypes.Receipt, result *core.ExecutionResult, err error) {
	if end := p.traceTx(tx, msg.From); end != nil {
		defer func() { end(xr, err) }()
	}
	snap := p.state.Snapshot()
	gpSnap := p.gp.Snapshot()
	index := len(p.receipts)
	p.state.SetTxContext(tx.Hash(), index, uint32(index+1))
	result, err = core.ApplyMessage(p.evm, msg, p.gp)
	if err != nil {
		p.state.RevertToSnapshot(snap)
		p.gp.Set(gpSnap)
		return nil, nil, &TxError{Tx: tx.Hash(), Err: err}
	}
	if err := p.state.Error(); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrStateRead, err)
	}
	var root []byte
	p.state.Finalise(p.rules)
	if !p.exec.config.IsByzantium(p.header.Number) {
		r, err := p.state.IntermediateRoot()
		if err != nil {
			return nil, nil, fmt.Errorf("post-state root of tx %s: %w", tx.Hash(), err)
		}
		root = r.Bytes()
	}
	xr = &chaintypes.Receipt{Receipt: types.Receipt{
		Type:              tx.Type(),
		PostState:         root,
		CumulativeGasUsed: p.gp.CumulativeUsed(),
		TxHash:            tx.Hash(),
		GasUsed:           result.UsedGas,
		BlockHash:         p.hash,
		BlockNumber:       new(big.Int).Set(p.header.Number),
		TransactionIndex:  uint(index),
	}}
	receipt := &xr.Receipt
	// The price paid per gas (go-ethereum derives the same at read time for
	// stored receipts); pending receipts carry it as is.
	if msg.GasPrice != nil {
		receipt.EffectiveGasPrice = msg.GasPrice.ToBig()
	}
	if result.Failed() {
		receipt.Status = types.ReceiptStatusFailed
	} else {
		receipt.Status = types.ReceiptStatusSuccessful
	}
	if tx.Type() == types.BlobTxType {
		receipt.BlobGasUsed = tx.BlobGas()
		receipt.BlobGasPrice = p.evm.Context.BlobBaseFee
		p.blobGas += tx.BlobGas()
	}
	if tx.To() == nil {
		receipt.ContractAddress = crypto.CreateAddress(msg.From, tx.Nonce())
	}
	receipt.Logs = p.state.GetLogs(tx.Hash(), p.header.Number.Uint64(), p.hash, p.header.Time)
	if receipt.Logs == nil {
		receipt.Logs = []*types.Log{}
	}
	receipt.Bloom = types.CreateBloom(receipt)
	p.receipts = append(p.receipts, xr)
	p.logs = append(p.logs, receipt.Logs...)
	return xr, result, nil
}

// traceTx tells the tracer (the EVM config's hooks, if any) that tx from
// from starts, and returns what tells it the transaction ended (nil when
// no tracer wants to know), as go-ethereum's ApplyTransactionWithEVM.
func (p *BlockProcessor) traceTx(tx *types.Transaction, from common.Address) func(*chaintypes.Receipt, error) {
	hooks := p.evm.Config.Tracer
	if hooks == nil {
		return nil
	}
	if hooks.OnTxStart != nil {
		hooks.OnTxStart(p.evm.GetVMContext(), tx, from)
	}
	if hooks.OnTxEnd == nil {
		return nil
	}
	return func(r *chaintypes.Receipt, err error) {
		var receipt *types.Receipt
		if r != nil {
			receipt = &r.Receipt
		}
		hooks.OnTxEnd(receipt, err)
	}
}

// Finish runs the post-transaction part of the block: withdrawals, the
// EIP-7002/7251 request system calls and deposit-log parsing (from Prague),
// and the consensus engine's rewards (ethash block and uncle rewards before
// the merge). It returns the execution requests (nil before Prague).
func (p *BlockProcessor) Finish(withdrawals types.Withdrawals, uncles []*types.Header) ([][]byte, error) {
	var requests [][]byte
	if p.exec.op == nil { // OP chains have no EIP-6110/7002/7251 requests
		var err error
		p.systemCalls(func() {
			requests, _, err = core.PostExecution(context.Background(), p.exec.config, p.header.Number, p.header.Time, p.logs, withdrawals, p.evm, uint32(len(p.receipts)+1))
		})
		if err != nil {
			return nil, fmt.Errorf("block %d post-execution: %w", p.header.Number, err)
		}
	}
	p.exec.Finalize(p.header, p.state, p.headers, &types.Body{Uncles: uncles, Withdrawals: withdrawals})
	p.state.Finalise(p.rules)
	if err := p.state.Error(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStateRead, err)
	}
	return requests, nil
}

// Finalize applies the consensus engine's end-of-block state changes to
// header's block (ethash block and uncle rewards before the merge; nothing
// after it). headers resolves the block's ancestors.
func (e *Executor) Finalize(header *types.Header, state *StateDB, headers HeaderSource, body *types.Body) {
	cc := &chainContext{config: e.config, engine: e.engine, headers: headers, current: header, fail: state.setErr}
	e.engine.Finalize(cc, header, state, body)
}

func (e *Executor) maxBlobGas(h *types.Header) uint64 {
	if !e.config.IsCancun(h.Number, h.Time) {
		return 0
	}
	bcfg := e.config.BlobConfig(e.config.LatestFork(h.Time))
	if bcfg == nil {
		return 0
	}
	return uint64(bcfg.Max) * params.BlobTxBlobGasPerBlob
}
