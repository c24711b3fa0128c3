package eth

import (
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
)

// Log collection for eth_simulateV1.
//
// The logs a simulated call reports are gathered by a tracer, frame by
// frame, so that (with traceTransfers) synthetic ERC-20 Transfer logs for
// ETH value transfers interleave with the real logs in execution order, and
// everything a reverted frame produced is dropped with it. The receipts (and
// so the block's bloom and receipts root) use the StateDB's logs, which never
// contain the synthetic ones.

var (
	// simTransferTopic is keccak256("Transfer(address,address,uint256)").
	simTransferTopic = common.HexToHash("0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef")
	// simTransferAddress is the ERC-7528 pseudo-address for native ETH.
	simTransferAddress = common.HexToAddress("0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE")
)

// simLogTracer keeps one log list per open call frame. A frame's logs move
// to its parent when it returns successfully and are discarded when it
// reverts. Indices count from 0 per simulated block and are never reused.
type simLogTracer struct {
	transfers bool
	frames    [][]*types.Log
	next      uint // log index of the next log in the block

	number, time uint64
	txHash       common.Hash
	txIndex      uint
}

func newSimLogTracer(transfers bool, number, time uint64) *simLogTracer {
	return &simLogTracer{transfers: transfers, number: number, time: time}
}

// hooks returns the EVM hooks: calls, exits and every emitted log (the
// block processor hands OnLog each log as the EVM adds it).
func (t *simLogTracer) hooks() *tracing.Hooks {
	return &tracing.Hooks{OnEnter: t.enter, OnExit: t.exit, OnLog: t.onLog}
}

// startTx prepares for the next call of the block.
func (t *simLogTracer) startTx(hash common.Hash, index uint) {
	t.frames = t.frames[:0]
	t.txHash, t.txIndex = hash, index
}

// logs returns the logs of the finished call (nil when it reverted).
func (t *simLogTracer) logs() []*types.Log {
	if len(t.frames) == 0 {
		return nil
	}
	return t.frames[0]
}

func (t *simLogTracer) enter(depth int, typ byte, from, to common.Address, _ []byte, _ uint64, value *big.Int) {
	if depth == 0 {
		t.frames = t.frames[:0]
	}
	t.frames = append(t.frames, nil)
	op := vm.OpCode(typ)
	if t.transfers && op != vm.DELEGATECALL && op != vm.CALLCODE && value != nil && value.Sign() > 0 {
		t.add(simTransferAddress, []common.Hash{
			simTransferTopic,
			common.BytesToHash(from.Bytes()),
			common.BytesToHash(to.Bytes()),
		}, common.BigToHash(value).Bytes())
	}
}

func (t *simLogTracer) exit(depth int, _ []byte, _ uint64, _ error, reverted bool) {
	n := len(t.frames)
	if n == 0 {
		return
	}
	top := t.frames[n-1]
	if reverted {
		// The dropped logs keep their indices (later logs do not reuse
		// them), as the reference client recorded in the fixtures.
		top = nil
	}
	if depth == 0 || n == 1 {
		t.frames[n-1] = top
		return
	}
	t.frames = t.frames[:n-1]
	t.frames[n-2] = append(t.frames[n-2], top...)
}

func (t *simLogTracer) onLog(l *types.Log) { t.add(l.Address, l.Topics, l.Data) }

func (t *simLogTracer) add(addr common.Address, topics []common.Hash, data []byte) {
	if len(t.frames) == 0 {
		return // a log outside any call frame (system call bookkeeping)
	}
	l := &types.Log{
		Address:        addr,
		Topics:         topics,
		Data:           data,
		BlockNumber:    t.number,
		BlockTimestamp: t.time,
		TxHash:         t.txHash,
		TxIndex:        t.txIndex,
		Index:          t.next,
	}
	t.next++
	t.frames[len(t.frames)-1] = append(t.frames[len(t.frames)-1], l)
}
