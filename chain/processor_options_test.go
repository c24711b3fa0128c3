package chain_test

import (
	"errors"
	"fmt"
	"math/big"
	"slices"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/store"
)

// emptyBackend is a state with no accounts; tests set up what they need on
// the StateDB.
type emptyBackend struct{}

func (emptyBackend) Account(common.Address) (*store.Account, error) { return nil, nil }
func (emptyBackend) Storage(common.Address, common.Hash) (common.Hash, error) {
	return common.Hash{}, nil
}
func (emptyBackend) Code(common.Hash) ([]byte, error) { return nil, nil }

// headerList resolves the headers of a short test chain.
type headerList []*types.Header

func (l headerList) HeaderByNumber(n uint64) (*types.Header, error) {
	for _, h := range l {
		if h.Number.Uint64() == n {
			return h, nil
		}
	}
	return nil, fmt.Errorf("header %d: %w", n, store.ErrNotFound)
}

func (l headerList) HeaderByHash(hash common.Hash) (*types.Header, error) {
	for _, h := range l {
		if h.Hash() == hash {
			return h, nil
		}
	}
	return nil, fmt.Errorf("header %s: %w", hash.Hex(), store.ErrNotFound)
}

var (
	optSender   = common.HexToAddress("0x00000000000000000000000000000000000a11ce")
	optContract = common.HexToAddress("0x00000000000000000000000000000000000c0de0")
	// optLogCode: LOG1(topic 0x2a) with no data, then STOP.
	optLogCode = common.FromHex("602a60006000a100")
	// optReturnCode(op): pushes op's value, returns it as one word.
	optReturnCode = func(op vm.OpCode) []byte { return []byte{byte(op), 0x5f, 0x52, 0x60, 0x20, 0x5f, 0xf3} }
)

// optChain returns a parent and a child header (base fee 1 gwei).
func optChain() (parent, header *types.Header) {
	zero := uint64(0)
	parent = &types.Header{Number: big.NewInt(0), Difficulty: new(big.Int), GasLimit: 30_000_000, BaseFee: big.NewInt(params.GWei), ExcessBlobGas: &zero, BlobGasUsed: &zero}
	header = &types.Header{
		ParentHash: parent.Hash(), Number: big.NewInt(1), Time: 12, Difficulty: new(big.Int),
		GasLimit: 30_000_000, BaseFee: big.NewInt(params.GWei), ExcessBlobGas: &zero,
		ParentBeaconRoot: &common.Hash{},
	}
	return parent, header
}

// optMessage is a call from optSender (no funds, nonce 0 in state) to to,
// without fees unless feeCap is set.
func optMessage(to common.Address, nonce uint64, feeCap uint64, data []byte) (*types.Transaction, *core.Message) {
	fee := uint256.NewInt(feeCap)
	msg := &core.Message{
		From: optSender, To: &to, Nonce: nonce, Value: new(uint256.Int), GasLimit: 100_000,
		GasPrice: fee, GasFeeCap: fee, GasTipCap: new(uint256.Int), Data: data,
	}
	tx := types.NewTx(&types.DynamicFeeTx{Nonce: nonce, To: &to, Gas: msg.GasLimit, GasFeeCap: fee.ToBig(), GasTipCap: new(big.Int), Data: data})
	return tx, msg
}

// TestProcessOptions: each option of a simulated block changes what
// ApplyMessage does, and the zero options keep the protocol's checks.
func TestProcessOptions(t *testing.T) {
	type traced struct {
		enters []common.Address
		logs   []*types.Log
	}
	tr := new(traced)
	hooks := &tracing.Hooks{
		OnEnter: func(depth int, _ byte, _, to common.Address, _ []byte, _ uint64, _ *big.Int) {
			if depth == 0 {
				tr.enters = append(tr.enters, to)
			}
		},
		OnLog: func(l *types.Log) { tr.logs = append(tr.logs, l) },
	}
	word := func(v uint64) []byte { return common.BigToHash(new(big.Int).SetUint64(v)).Bytes() }
	cases := []struct {
		name    string
		opts    chain.ProcessOptions
		nonce   uint64
		feeCap  uint64
		to      common.Address
		data    []byte
		wantErr error // a refusal (*chain.TxError wrapping it), or nil
		check   func(*testing.T, *core.ExecutionResult, *types.Receipt)
	}{
		{name: "NoBaseFee: no fee, no funds, runs below the base fee", opts: chain.ProcessOptions{VM: vm.Config{NoBaseFee: true}}, to: optContract},
		{name: "NoBaseFee alone: wrong nonce refused", opts: chain.ProcessOptions{VM: vm.Config{NoBaseFee: true}}, nonce: 5, to: optContract, wantErr: core.ErrNonceTooHigh},
		{name: "no validation: wrong nonce runs", opts: chain.ProcessOptions{NoValidation: true}, nonce: 5, to: optContract},
		{name: "base fee: fee cap below it refused", opts: chain.ProcessOptions{}, to: optContract, wantErr: core.ErrFeeCapTooLow},
		{name: "no validation: no fee, no funds, runs below the base fee (implies NoBaseFee)", opts: chain.ProcessOptions{NoValidation: true}, to: optContract},
		{name: "no validation: balance still checked", opts: chain.ProcessOptions{NoValidation: true}, feeCap: 2 * params.GWei, to: optContract, wantErr: core.ErrInsufficientFunds},
		{
			name: "tracer sees the call and its log", opts: chain.ProcessOptions{NoValidation: true, VM: vm.Config{Tracer: hooks}}, to: optContract,
			check: func(t *testing.T, _ *core.ExecutionResult, r *types.Receipt) {
				// The pre-execution system calls, then the message.
				want := []common.Address{params.BeaconRootsAddress, params.HistoryStorageAddress, optContract}
				if !slices.Equal(tr.enters, want) {
					t.Fatalf("tracer saw calls %v, want %v", tr.enters, want)
				}
				if len(tr.logs) != 1 || tr.logs[0].Address != optContract || tr.logs[0].Topics[0] != common.BytesToHash([]byte{0x2a}) {
					t.Fatalf("tracer saw logs %v, want the contract's LOG1", tr.logs)
				}
				if len(r.Logs) != 1 || r.Logs[0] != tr.logs[0] {
					t.Fatalf("receipt logs %v, want the traced log", r.Logs)
				}
			},
		},
		{
			name: "blob base fee override", opts: chain.ProcessOptions{NoValidation: true, BlobBaseFee: big.NewInt(7)}, to: common.HexToAddress("0xb10b"),
			check: func(t *testing.T, res *core.ExecutionResult, _ *types.Receipt) {
				if got := res.Return(); string(got) != string(word(7)) {
					t.Fatalf("BLOBBASEFEE returned %x, want 7", got)
				}
			},
		},
		{
			name: "default blob base fee", opts: chain.ProcessOptions{NoValidation: true}, to: common.HexToAddress("0xb10b"),
			check: func(t *testing.T, res *core.ExecutionResult, _ *types.Receipt) {
				if got := res.Return(); string(got) != string(word(1)) { // excess blob gas 0: the minimum
					t.Fatalf("BLOBBASEFEE returned %x, want 1", got)
				}
			},
		},
		{
			name: "active precompiles by default", opts: chain.ProcessOptions{NoValidation: true}, to: common.BytesToAddress([]byte{4}), data: []byte("echo"),
			check: func(t *testing.T, res *core.ExecutionResult, _ *types.Receipt) {
				if string(res.Return()) != "echo" {
					t.Fatalf("identity precompile returned %q", res.Return())
				}
			},
		},
		{
			name: "precompiles replaced", opts: chain.ProcessOptions{NoValidation: true, Precompiles: vm.PrecompiledContracts{}}, to: common.BytesToAddress([]byte{4}), data: []byte("echo"),
			check: func(t *testing.T, res *core.ExecutionResult, _ *types.Receipt) {
				if len(res.Return()) != 0 {
					t.Fatalf("removed precompile still ran: %q", res.Return())
				}
			},
		},
	}
	exec := chain.NewExecutor(params.MergedTestChainConfig)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			*tr = traced{}
			parent, header := optChain()
			state := chain.NewStateDB(emptyBackend{})
			state.SetCode(optContract, optLogCode, tracing.CodeChangeUnspecified)
			state.SetCode(common.HexToAddress("0xb10b"), optReturnCode(vm.BLOBBASEFEE), tracing.CodeChangeUnspecified)
			proc := exec.NewBlockProcessorWith(header, parent, common.Hash{}, state, headerList{parent, header}, tc.opts)
			tx, msg := optMessage(tc.to, tc.nonce, tc.feeCap, tc.data)
			receipt, res, err := proc.ApplyMessage(tx, msg)
			if tc.wantErr != nil {
				var te *chain.TxError
				if !errors.As(err, &te) || !errors.Is(err, tc.wantErr) || !errors.Is(err, chain.ErrTxInvalid) || te.Tx != tx.Hash() {
					t.Fatalf("got %v, want a TxError for %v", err, tc.wantErr)
				}
				if len(proc.Receipts()) != 0 || proc.GasUsed() != 0 || proc.GasLeft() != header.GasLimit {
					t.Fatalf("refused message left %d receipts, %d gas used", len(proc.Receipts()), proc.GasUsed())
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if res.Failed() || receipt.Status != types.ReceiptStatusSuccessful {
				t.Fatalf("execution failed: %v", res.Err)
			}
			if receipt.TxHash != tx.Hash() || receipt.Type != types.DynamicFeeTxType || receipt.GasUsed != res.UsedGas ||
				receipt.CumulativeGasUsed != res.UsedGas || proc.GasUsed() != res.UsedGas || proc.BlockGasUsed() != res.UsedGas {
				t.Fatalf("receipt %+v does not record the message (used %d)", receipt, res.UsedGas)
			}
			if msg.Nonce != tc.nonce || len(proc.Receipts()) != 1 {
				t.Fatal("ApplyMessage changed the message or lost the receipt")
			}
			if tc.check != nil {
				tc.check(t, res, &receipt.Receipt)
			}
		})
	}
}

// TestProcessOptionsExecutionGasCap: after Amsterdam a validated message
// gets at most params.MaxTxGas for execution (EIP-8037); without validation
// the whole gas limit, as eth_simulateV1 without validation.
func TestProcessOptionsExecutionGasCap(t *testing.T) {
	config := *params.MergedTestChainConfig
	config.AmsterdamTime = new(uint64)
	exec := chain.NewExecutor(&config)
	const limit = 25_000_000
	for _, tc := range []struct {
		name   string
		opts   chain.ProcessOptions
		capped bool
	}{
		{"validated", chain.ProcessOptions{VM: vm.Config{NoBaseFee: true}}, true},
		{"no validation", chain.ProcessOptions{NoValidation: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent, header := optChain()
			header.SlotNumber = new(uint64)
			state := chain.NewStateDB(emptyBackend{})
			gasCode := common.HexToAddress("0x9a5")
			state.SetCode(gasCode, optReturnCode(vm.GAS), tracing.CodeChangeUnspecified)
			proc := exec.NewBlockProcessorWith(header, parent, common.Hash{}, state, headerList{parent, header}, tc.opts)
			tx, msg := optMessage(gasCode, 0, 0, nil)
			msg.GasLimit = limit
			msg.SkipGasLimitCapCheck()
			_, res, err := proc.ApplyMessage(tx, msg)
			if err != nil || res.Failed() {
				t.Fatalf("err %v, result %+v", err, res)
			}
			if exe := proc.ExecutionGasUsed(); exe == 0 || exe > res.UsedGas || proc.BlockGasUsed() < exe {
				t.Fatalf("execution gas used %d, block gas used %d, message used %d", exe, proc.BlockGasUsed(), res.UsedGas)
			}
			gas := new(big.Int).SetBytes(res.Return()).Uint64()
			if capped := gas < params.MaxTxGas; capped != tc.capped || gas < params.MaxTxGas-100_000 {
				t.Fatalf("GAS read %d at the start (cap %d, limit %d): capped=%v, want %v", gas, params.MaxTxGas, limit, capped, tc.capped)
			}
		})
	}
}

// TestProcessOptionsDAOFork: the DAO fork block moves the drained balances
// unless the block is simulated (NoDAOFork).
func TestProcessOptionsDAOFork(t *testing.T) {
	config := *params.MergedTestChainConfig
	config.DAOForkSupport, config.DAOForkBlock = true, big.NewInt(1)
	exec := chain.NewExecutor(&config)
	drained := params.DAODrainList()[0]
	for _, tc := range []struct {
		name  string
		opts  chain.ProcessOptions
		moved bool
	}{
		{"import", chain.ProcessOptions{}, true},
		{"simulated", chain.ProcessOptions{NoDAOFork: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent, header := optChain()
			state := chain.NewStateDB(emptyBackend{})
			state.SetBalance(drained, uint256.NewInt(100))
			exec.NewBlockProcessorWith(header, parent, common.Hash{}, state, headerList{parent, header}, tc.opts)
			left, refund := state.GetBalance(drained).Uint64(), state.GetBalance(params.DAORefundContract).Uint64()
			if moved := left == 0 && refund == 100; moved != tc.moved || (!moved && left != 100) {
				t.Fatalf("drained account holds %d, refund contract %d; moved want %v", left, refund, tc.moved)
			}
		})
	}
}

// TestSystemCalls: the system calls that open and close a block run with
// the VM tracer unless UntracedSystemCalls detaches it (only for them), and
// EIP-2935 records the header's ParentHash (the parent's own hash when the
// header has none) without hashing the parent again.
func TestSystemCalls(t *testing.T) {
	var enters []common.Address
	hooks := &tracing.Hooks{OnEnter: func(depth int, _ byte, _, to common.Address, _ []byte, _ uint64, _ *big.Int) {
		if depth == 0 {
			enters = append(enters, to)
		}
	}}
	system := []common.Address{params.BeaconRootsAddress, params.HistoryStorageAddress, params.WithdrawalQueueAddress, params.ConsolidationQueueAddress}
	claimed := common.HexToHash("0x7e57")
	for _, tc := range []struct {
		name       string
		untraced   bool
		parentHash func(parent *types.Header) common.Hash // the header's ParentHash
		wantEnters []common.Address
		wantStored func(parent *types.Header) common.Hash // EIP-2935's slot for the parent
	}{
		{
			name: "traced", parentHash: (*types.Header).Hash,
			wantEnters: []common.Address{system[0], system[1], optContract, system[2], system[3]},
			wantStored: (*types.Header).Hash,
		},
		{
			name: "untraced system calls", untraced: true, parentHash: (*types.Header).Hash,
			wantEnters: []common.Address{optContract},
			wantStored: (*types.Header).Hash,
		},
		{
			name: "parent hash from the header", parentHash: func(*types.Header) common.Hash { return claimed },
			wantEnters: []common.Address{system[0], system[1], optContract, system[2], system[3]},
			wantStored: func(*types.Header) common.Hash { return claimed },
		},
		{
			name: "header without a parent hash", parentHash: func(*types.Header) common.Hash { return common.Hash{} },
			wantEnters: []common.Address{system[0], system[1], optContract, system[2], system[3]},
			wantStored: (*types.Header).Hash,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enters = nil
			parent, header := optChain()
			header.ParentHash = tc.parentHash(parent)
			state := chain.NewStateDB(emptyBackend{})
			for addr, code := range map[common.Address][]byte{
				params.BeaconRootsAddress: params.BeaconRootsCode, params.HistoryStorageAddress: params.HistoryStorageCode,
				params.WithdrawalQueueAddress: params.WithdrawalQueueCode, params.ConsolidationQueueAddress: params.ConsolidationQueueCode,
				optContract: optLogCode,
			} {
				state.SetCode(addr, code, tracing.CodeChangeUnspecified)
			}
			opts := chain.ProcessOptions{NoValidation: true, VM: vm.Config{Tracer: hooks}, UntracedSystemCalls: tc.untraced}
			proc := chain.NewExecutor(params.MergedTestChainConfig).NewBlockProcessorWith(header, parent, common.Hash{}, state, headerList{parent, header}, opts)
			tx, msg := optMessage(optContract, 0, 0, nil)
			if _, res, err := proc.ApplyMessage(tx, msg); err != nil || res.Failed() {
				t.Fatalf("message: %v %+v", err, res)
			}
			requests, err := proc.Finish(types.Withdrawals{}, nil)
			if err != nil || len(requests) != 0 {
				t.Fatalf("finish: %v, %d requests", err, len(requests))
			}
			if !slices.Equal(enters, tc.wantEnters) {
				t.Fatalf("tracer saw calls %v, want %v", enters, tc.wantEnters)
			}
			if proc.EVM().Config.Tracer != hooks {
				t.Fatal("the tracer was not put back")
			}
			slot := common.BigToHash(new(big.Int).SetUint64((header.Number.Uint64() - 1) % params.HistoryServeWindow))
			if got, want := state.GetState(params.HistoryStorageAddress, slot), tc.wantStored(parent); got != want {
				t.Fatalf("EIP-2935 stored %s for the parent, want %s", got.Hex(), want.Hex())
			}
		})
	}
}
