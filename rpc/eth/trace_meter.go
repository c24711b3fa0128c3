package eth

import (
	"encoding/json"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/crypto"
)

// Metering a native tracer while it runs. go-ethereum's native tracers
// collect in memory what they will answer (call frames, logs, accounts and
// slots, keccak preimages) and encode it only at the end, so a request
// could make one hold far more than any answer may carry. An outputMeter
// wraps the tracer's hooks and adds up, from the same events, a lower
// bound of what the tracer keeps (the hex of frames' input and output, of
// logs' data, of preimages, accounts' code, a few fields each); when it
// passes the budget the EVM is cancelled and the trace refused. Tracers
// whose output is bounded by what they collect (4byteTracer: distinct
// selectors; noopTracer) are not metered; the struct logger is bounded by
// its own limit.

// meterSpec says what a tracer collects. A muxTracer collects what its
// tracers do (the union).
type meterSpec struct {
	frames   bool // call frames (input, output)
	topOnly  bool // only the top frame (callTracer onlyTopCall)
	logs     bool // logs (callTracer withLog)
	keccak   bool // distinct keccak256 preimages
	accounts bool // accounts touched (with code) and slots read or written
	code     bool // ... with their code
	slots    bool // ... and their slots
}

func (s meterSpec) union(o meterSpec) meterSpec {
	return meterSpec{
		frames: s.frames || o.frames, topOnly: (s.topOnly || !s.frames) && (o.topOnly || !o.frames),
		logs: s.logs || o.logs, keccak: s.keccak || o.keccak,
		accounts: s.accounts || o.accounts, code: s.code || o.code, slots: s.slots || o.slots,
	}
}

// meterSpecOf is what tracer name (with its config) collects; ok false for
// a tracer that is not metered.
func meterSpecOf(name string, cfg json.RawMessage, depth int) (spec meterSpec, ok bool) {
	switch name {
	case "callTracer":
		var c struct {
			OnlyTopCall bool `json:"onlyTopCall"`
			WithLog     bool `json:"withLog"`
		}
		_ = json.Unmarshal(cfg, &c) // the tracer refused a bad config already
		return meterSpec{frames: true, topOnly: c.OnlyTopCall, logs: c.WithLog}, true
	case "flatCallTracer":
		return meterSpec{frames: true}, true
	case "erc7562Tracer":
		return meterSpec{frames: true, logs: true, keccak: true}, true
	case "keccak256PreimageTracer":
		return meterSpec{keccak: true}, true
	case "prestateTracer":
		var c struct {
			DisableCode    bool `json:"disableCode"`
			DisableStorage bool `json:"disableStorage"`
		}
		_ = json.Unmarshal(cfg, &c)
		return meterSpec{accounts: true, code: !c.DisableCode, slots: !c.DisableStorage}, true
	case "muxTracer":
		var subs map[string]json.RawMessage
		if depth >= maxMuxDepth || json.Unmarshal(cfg, &subs) != nil {
			return meterSpec{}, false
		}
		for sub, subCfg := range subs {
			if s, ok2 := meterSpecOf(sub, subCfg, depth+1); ok2 {
				spec, ok = spec.union(s), true
			}
		}
		if !ok {
			return meterSpec{}, false
		}
		if !spec.frames {
			spec.topOnly = false
		}
		return spec, true
	}
	return meterSpec{}, false
}

// outputMeter counts what a native tracer keeps (see above) and cancels
// the execution once the count passes the budget.
type outputMeter struct {
	spec   meterSpec
	budget int
	n      int
	cancel func() // stops the EVM (set by the runner)

	preimages map[common.Hash]struct{}
	accounts  map[common.Address]struct{}
	slots     map[[2]common.Hash]struct{}
}

// Lower bounds of the JSON of a frame, a log, a preimage entry, an account
// and a slot without their variable data.
const (
	meterFrameBytes    = 64
	meterLogBytes      = 64
	meterTopicBytes    = 68
	meterPreimageBytes = 70
	meterAccountBytes  = 50
	meterSlotBytes     = 134
)

func (m *outputMeter) add(n int) {
	m.n += n
	if m.n > m.budget && m.cancel != nil {
		m.cancel()
	}
}

func (m *outputMeter) over() bool { return m.n > m.budget }

// wrap returns h with the hooks of what the tracer collects metered.
func (m *outputMeter) wrap(h *tracing.Hooks) *tracing.Hooks {
	w := *h
	if m.spec.frames {
		onEnter, onExit := h.OnEnter, h.OnExit
		w.OnEnter = func(depth int, typ byte, from, to common.Address, input []byte, gas uint64, value *big.Int) {
			if depth == 0 || !m.spec.topOnly {
				m.add(meterFrameBytes + 2*len(input))
			}
			if onEnter != nil {
				onEnter(depth, typ, from, to, input, gas, value)
			}
		}
		w.OnExit = func(depth int, output []byte, gasUsed uint64, err error, reverted bool) {
			if depth == 0 || !m.spec.topOnly {
				m.add(2 * len(output))
			}
			if onExit != nil {
				onExit(depth, output, gasUsed, err, reverted)
			}
		}
	}
	if m.spec.logs {
		onLog := h.OnLog
		w.OnLog = func(l *types.Log) {
			m.add(meterLogBytes + 2*len(l.Data) + meterTopicBytes*len(l.Topics))
			if onLog != nil {
				onLog(l)
			}
		}
	}
	if m.spec.keccak || m.spec.accounts {
		onOpcode := h.OnOpcode
		var onTxStart tracing.TxStartHook
		var env *tracing.VMContext
		onTxStart = h.OnTxStart
		w.OnTxStart = func(vmctx *tracing.VMContext, tx *types.Transaction, from common.Address) {
			env = vmctx
			if onTxStart != nil {
				onTxStart(vmctx, tx, from)
			}
		}
		w.OnOpcode = func(pc uint64, op byte, gas, cost uint64, scope tracing.OpContext, rData []byte, depth int, err error) {
			if err == nil {
				m.opcode(vm.OpCode(op), scope, env)
			}
			if onOpcode != nil {
				onOpcode(pc, op, gas, cost, scope, rData, depth, err)
			}
		}
	}
	return &w
}

// opcode meters what the tracers keep of one opcode: a new preimage, a new
// account or slot.
func (m *outputMeter) opcode(op vm.OpCode, scope tracing.OpContext, env *tracing.VMContext) {
	stack := scope.StackData()
	n := len(stack)
	switch {
	case m.spec.keccak && op == vm.KECCAK256 && n >= 2:
		off, size := stack[n-1], stack[n-2]
		mem := scope.MemoryData()
		if !off.IsUint64() || !size.IsUint64() || off.Uint64()+size.Uint64() > uint64(len(mem)) || off.Uint64()+size.Uint64() < off.Uint64() {
			return // the EVM expands memory first; nothing is kept otherwise
		}
		data := mem[off.Uint64() : off.Uint64()+size.Uint64()]
		h := crypto.Keccak256Hash(data)
		if _, seen := m.preimages[h]; !seen {
			put(&m.preimages, h, struct{}{})
			m.add(meterPreimageBytes + 2*len(data))
		}
	case m.spec.accounts && m.spec.slots && (op == vm.SLOAD || op == vm.SSTORE) && n >= 1:
		k := [2]common.Hash{common.BytesToHash(scope.Address().Bytes()), common.Hash(stack[n-1].Bytes32())}
		if _, seen := m.slots[k]; !seen {
			put(&m.slots, k, struct{}{})
			m.add(meterSlotBytes)
		}
	case m.spec.accounts && n >= 1 && (op == vm.EXTCODECOPY || op == vm.EXTCODEHASH || op == vm.EXTCODESIZE || op == vm.BALANCE || op == vm.SELFDESTRUCT):
		m.account(common.Address(stack[n-1].Bytes20()), env)
	case m.spec.accounts && n >= 5 && (op == vm.CALL || op == vm.CALLCODE || op == vm.DELEGATECALL || op == vm.STATICCALL):
		m.account(common.Address(stack[n-2].Bytes20()), env)
	}
}

func (m *outputMeter) account(addr common.Address, env *tracing.VMContext) {
	if _, seen := m.accounts[addr]; seen {
		return
	}
	put(&m.accounts, addr, struct{}{})
	n := meterAccountBytes
	if m.spec.code && env != nil && env.StateDB != nil {
		n += 2 * len(env.StateDB.GetCode(addr))
	}
	m.add(n)
}

// put inserts into a map allocated on first use.
func put[K comparable, V any](m *map[K]V, k K, v V) {
	if *m == nil {
		*m = make(map[K]V)
	}
	(*m)[k] = v
}
