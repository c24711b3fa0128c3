package eth

import (
	"encoding/json"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/holiman/uint256"
)

// What each tracer configuration is metered for.
func TestMeterSpecOf(t *testing.T) {
	for _, c := range []struct {
		name, cfg string
		want      meterSpec
		metered   bool
	}{
		{"callTracer", `{}`, meterSpec{frames: true}, true},
		{"callTracer", `{"onlyTopCall":true,"withLog":true}`, meterSpec{frames: true, topOnly: true, logs: true}, true},
		{"flatCallTracer", `{}`, meterSpec{frames: true}, true},
		{"prestateTracer", `{"diffMode":true}`, meterSpec{accounts: true, code: true, slots: true}, true},
		{"prestateTracer", `{"disableCode":true,"disableStorage":true}`, meterSpec{accounts: true}, true},
		{"keccak256PreimageTracer", `{}`, meterSpec{keccak: true}, true},
		{"4byteTracer", `{}`, meterSpec{}, false},
		{"noopTracer", `{}`, meterSpec{}, false},
		{"muxTracer", `{"4byteTracer":{}}`, meterSpec{}, false},
		{"muxTracer", `{"callTracer":{"onlyTopCall":true},"keccak256PreimageTracer":{}}`, meterSpec{frames: true, topOnly: true, keccak: true}, true},
		{"muxTracer", `{"callTracer":{"onlyTopCall":true},"flatCallTracer":{}}`, meterSpec{frames: true}, true},
		{"muxTracer", `{"muxTracer":{"prestateTracer":{}}}`, meterSpec{accounts: true, code: true, slots: true}, true},
	} {
		got, ok := meterSpecOf(c.name, json.RawMessage(c.cfg), 0)
		if ok != c.metered || got != c.want {
			t.Errorf("%s %s: %+v %v, want %+v %v", c.name, c.cfg, got, ok, c.want, c.metered)
		}
	}
}

// opCtx is a tracing.OpContext with a given stack and memory.
type opCtx struct {
	stack []uint256.Int
	mem   []byte
	addr  common.Address
}

func (o opCtx) MemoryData() []byte       { return o.mem }
func (o opCtx) StackData() []uint256.Int { return o.stack }
func (o opCtx) Caller() common.Address   { return common.Address{} }
func (o opCtx) Address() common.Address  { return o.addr }
func (o opCtx) CallValue() *uint256.Int  { return new(uint256.Int) }
func (o opCtx) CallInput() []byte        { return nil }
func (o opCtx) ContractCode() []byte     { return nil }

// Preimages and slots are counted once each; the meter cancels past the
// budget and the tracer's own hook still runs.
func TestMeterOpcodes(t *testing.T) {
	seen := 0
	m := &outputMeter{budget: 1000, spec: meterSpec{keccak: true, accounts: true, slots: true}}
	cancelled := false
	m.cancel = func() { cancelled = true }
	h := m.wrap(&tracing.Hooks{OnOpcode: func(uint64, byte, uint64, uint64, tracing.OpContext, []byte, int, error) { seen++ }})
	mem := make([]byte, 256)
	keccak := func(off, size uint64) {
		h.OnOpcode(0, byte(vm.KECCAK256), 0, 0, opCtx{stack: []uint256.Int{*uint256.NewInt(size), *uint256.NewInt(off)}, mem: mem}, nil, 1, nil)
	}
	keccak(0, 100) // 70 + 200
	keccak(0, 100) // the same preimage: not counted again
	if m.n != meterPreimageBytes+200 {
		t.Fatalf("one preimage of 100 bytes counted %d", m.n)
	}
	keccak(200, 1000) // out of memory: nothing kept
	sload := func(slot uint64) {
		h.OnOpcode(0, byte(vm.SLOAD), 0, 0, opCtx{stack: []uint256.Int{*uint256.NewInt(slot)}}, nil, 1, nil)
	}
	for i := range 3 {
		sload(uint64(i))
		sload(uint64(i))
	}
	if want := meterPreimageBytes + 200 + 3*meterSlotBytes; m.n != want || cancelled {
		t.Fatalf("after 3 slots: %d (cancelled %v), want %d", m.n, cancelled, want)
	}
	for i := range 3 {
		sload(uint64(10 + i))
	}
	if !cancelled || !m.over() || seen != 12 {
		t.Fatalf("past the budget: cancelled %v over %v, tracer saw %d opcodes", cancelled, m.over(), seen)
	}
}
