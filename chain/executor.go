package chain

import (
	"context"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus"
	"github.com/ethereum/go-ethereum/consensus/beacon"
	"github.com/ethereum/go-ethereum/consensus/ethash"
	"github.com/ethereum/go-ethereum/consensus/misc"
	"github.com/ethereum/go-ethereum/core"
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
}

// NewExecutor returns an executor for config. Pre-merge blocks get ethash
// rewards (block and uncle rewards; the proof-of-work seal itself is not
// verified), post-merge blocks the beacon rules.
func NewExecutor(config *params.ChainConfig) *Executor {
	return &Executor{config: config, engine: beacon.New(ethash.NewFaker())}
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
	return core.NewEVMBlockContext(header, cc, nil)
}

// BlockProcessor executes one block transaction by transaction on a
// StateDB. Import drives it over a block's transactions; the sequencer over
// pool transactions, one pre-confirmation at a time.
type BlockProcessor struct {
	exec     *Executor
	header   *types.Header
	hash     common.Hash // block hash used in logs/receipts (zero while unknown)
	state    *StateDB
	evm      *vm.EVM
	gp       *core.GasPool
	signer   types.Signer
	rules    params.Rules
	receipts types.Receipts
	logs     []*types.Log
	blobGas  uint64
	headers  HeaderSource
}

// NewBlockProcessor starts a block: it applies the DAO fork (when due) and
// the pre-execution system calls (EIP-4788 beacon root, EIP-2935 parent hash).
// blockHash is stamped into receipts and logs; pass the zero hash when the
// block is not sealed yet.
func (e *Executor) NewBlockProcessor(header, parent *types.Header, blockHash common.Hash, state *StateDB, headers HeaderSource, cfg vm.Config) *BlockProcessor {
	p := &BlockProcessor{
		exec:    e,
		header:  header,
		hash:    blockHash,
		state:   state,
		gp:      core.NewGasPool(header.GasLimit),
		signer:  types.MakeSigner(e.config, header.Number, header.Time),
		rules:   e.config.Rules(header.Number, header.Difficulty.Sign() == 0, header.Time),
		headers: headers,
	}
	if e.config.DAOForkSupport && e.config.DAOForkBlock != nil && e.config.DAOForkBlock.Cmp(header.Number) == 0 {
		misc.ApplyDAOHardFork(state)
	}
	p.evm = vm.NewEVM(e.BlockContext(header, headers, state), state, e.config, cfg)
	core.PreExecution(context.Background(), header.ParentBeaconRoot, parent, e.config, p.evm, header.Number, header.Time)
	state.Finalise(p.rules)
	return p
}

// EVM exposes the processor's EVM (e.g. to attach a tracer).
func (p *BlockProcessor) EVM() *vm.EVM { return p.evm }

// State returns the StateDB the block executes on.
func (p *BlockProcessor) State() *StateDB { return p.state }

// Receipts returns the receipts so far.
func (p *BlockProcessor) Receipts() types.Receipts { return p.receipts }

// GasUsed is the cumulative gas used so far.
func (p *BlockProcessor) GasUsed() uint64 { return p.gp.CumulativeUsed() }

// GasLeft is the gas still available in the block.
func (p *BlockProcessor) GasLeft() uint64 { return p.gp.Available(p.rules.IsAmsterdam) }

// BlobGasUsed is the blob gas used so far.
func (p *BlockProcessor) BlobGasUsed() uint64 { return p.blobGas }

// ApplyTransaction executes tx as the next transaction of the block. A
// transaction that cannot be included (bad nonce, funds, gas above the
// block's remaining gas...) returns an error wrapping ErrTxInvalid and leaves
// state and gas pool untouched.
func (p *BlockProcessor) ApplyTransaction(tx *types.Transaction) (*types.Receipt, error) {
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
	snap := p.state.Snapshot()
	gpSnap := p.gp.Snapshot()
	index := len(p.receipts)
	p.state.SetTxContext(tx.Hash(), index, uint32(index+1))
	result, err := core.ApplyMessage(p.evm, msg, p.gp)
	if err != nil {
		p.state.RevertToSnapshot(snap)
		p.gp.Set(gpSnap)
		return nil, fmt.Errorf("%w: tx %s: %v", ErrTxInvalid, tx.Hash(), err)
	}
	if err := p.state.Error(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStateRead, err)
	}
	var root []byte
	p.state.Finalise(p.rules)
	if !p.exec.config.IsByzantium(p.header.Number) {
		r, err := p.state.IntermediateRoot()
		if err != nil {
			return nil, fmt.Errorf("post-state root of tx %s: %w", tx.Hash(), err)
		}
		root = r.Bytes()
	}
	receipt := &types.Receipt{
		Type:              tx.Type(),
		PostState:         root,
		CumulativeGasUsed: p.gp.CumulativeUsed(),
		TxHash:            tx.Hash(),
		GasUsed:           result.UsedGas,
		BlockHash:         p.hash,
		BlockNumber:       new(big.Int).Set(p.header.Number),
		TransactionIndex:  uint(index),
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
	p.receipts = append(p.receipts, receipt)
	p.logs = append(p.logs, receipt.Logs...)
	return receipt, nil
}

// Finish runs the post-transaction part of the block: withdrawals, the
// EIP-7002/7251 request system calls and deposit-log parsing (from Prague),
// and the consensus engine's rewards (ethash block and uncle rewards before
// the merge). It returns the execution requests (nil before Prague).
func (p *BlockProcessor) Finish(withdrawals types.Withdrawals, uncles []*types.Header) ([][]byte, error) {
	requests, _, err := core.PostExecution(context.Background(), p.exec.config, p.header.Number, p.header.Time, p.logs, withdrawals, p.evm, uint32(len(p.receipts)+1))
	if err != nil {
		return nil, fmt.Errorf("block %d post-execution: %w", p.header.Number, err)
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
