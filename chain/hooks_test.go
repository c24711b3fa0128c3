package chain_test

import (
	"context"
	"fmt"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// State hooks against go-ethereum's hooked state: the chains of the
// differential test (SELFDESTRUCT with storage before and after EIP-6780,
// re-creation, EIP-158 removals, value sent to a destroyed account) are
// traced transaction by transaction on go-ethereum's StateDB wrapped in
// state.NewHookedState, and on ours through BlockProcessor.SetTracer; the
// sequences of hook calls (balance, nonce and code changes with their
// reasons, storage changes, logs, transaction start and end) must be
// identical.

// hookRecorder records every state hook call as a line of text.
type hookRecorder struct{ ev []string }

func (r *hookRecorder) add(format string, args ...any) {
	r.ev = append(r.ev, fmt.Sprintf(format, args...))
}

func (r *hookRecorder) hooks() *tracing.Hooks {
	return &tracing.Hooks{
		OnTxStart: func(vm *tracing.VMContext, tx *types.Transaction, from common.Address) {
			r.add("start %s from %s", tx.Hash(), from)
		},
		OnTxEnd: func(rc *types.Receipt, err error) {
			if rc == nil {
				r.add("end error %v", err)
				return
			}
			r.add("end status %d gas %d logs %d", rc.Status, rc.GasUsed, len(rc.Logs))
		},
		OnBalanceChange: func(a common.Address, prev, cur *big.Int, why tracing.BalanceChangeReason) {
			r.add("balance %s %v -> %v (%d)", a, prev, cur, why)
		},
		OnNonceChangeV2: func(a common.Address, prev, cur uint64, why tracing.NonceChangeReason) {
			r.add("nonce %s %d -> %d (%d)", a, prev, cur, why)
		},
		OnCodeChangeV2: func(a common.Address, prevHash common.Hash, prev []byte, hash common.Hash, code []byte, why tracing.CodeChangeReason) {
			r.add("code %s %s (%d) -> %s (%d) (%d)", a, prevHash, len(prev), hash, len(code), why)
		},
		OnStorageChange: func(a common.Address, slot, prev, cur common.Hash) {
			r.add("storage %s %s %s -> %s", a, slot, prev, cur)
		},
		OnLog: func(l *types.Log) { r.add("log %s %v %x %d", l.Address, l.Topics, l.Data, l.Index) },
	}
}

func TestStateHooksAgainstGeth(t *testing.T) {
	for _, tc := range gethCases() {
		t.Run(tc.name, func(t *testing.T) { runHooksDifferential(t, tc.config, tc.engine) })
	}
}

func runHooksDifferential(t *testing.T, config *params.ChainConfig, engine consensus.Engine) {
	gg := newGethGenesis(config, engine)
	killer, factory, empty, child := killerAddr, factoryAddr, emptyAddr, childAddr
	send := gg.send
	script := []func(b *core.BlockGen){
		func(b *core.BlockGen) { send(b, &factory, 0, childInit) },
		func(b *core.BlockGen) { send(b, &child, 5, nil); send(b, &killer, 0, nil); send(b, &empty, 0, nil) },
		func(b *core.BlockGen) { send(b, &child, 0, []byte{1}) }, // child selfdestructs
		func(b *core.BlockGen) { send(b, &factory, 0, childInit) },
		func(b *core.BlockGen) { send(b, &killer, 0, []byte{1}); send(b, &killer, 3, nil) },
		// created and destroyed in one transaction: factory creates child,
		// whose init code runs; then a call makes it selfdestruct (EIP-6780:
		// deleted only when created in the same transaction: here not).
		func(b *core.BlockGen) { send(b, &child, 0, []byte{1}) },
	}
	_, blocks, _ := core.GenerateChainWithGenesis(gg.gspec, engine, len(script), func(i int, b *core.BlockGen) { script[i](b) })

	// go-ethereum's archive of the chain.
	gdb := rawdb.NewMemoryDatabase()
	bc, err := core.NewBlockChain(gdb, gg.gspec, engine, core.DefaultConfig().WithArchive(true))
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Stop()
	if n, err := bc.InsertChain(blocks); err != nil {
		t.Fatalf("go-ethereum import of block %d: %v", n, err)
	}
	// Ours.
	db, g, im := gg.initStore(t)
	for _, b := range blocks {
		if err := im.ImportBlock(chaintypes.FromEthBlock(b)); err != nil {
			t.Fatalf("import block %d: %v", b.NumberU64(), err)
		}
	}
	view, err := db.View()
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	exec := chain.NewExecutor(g.Config)
	headers := chain.ViewHeaders{View: view}

	events := 0
	for _, b := range blocks {
		parent := bc.GetBlock(b.ParentHash(), b.NumberU64()-1)
		signer := types.MakeSigner(config, b.Number(), b.Time())

		// go-ethereum: system calls untraced, then each transaction on the
		// hooked state, as its tracing API runs them.
		want := &hookRecorder{}
		gst, err := bc.StateAt(parent.Root(), parent.Number(), parent.Time())
		if err != nil {
			t.Fatal(err)
		}
		bctx := core.NewEVMBlockContext(b.Header(), bc, nil)
		core.PreExecution(context.Background(), b.BeaconRoot(), parent.Header(), config, vm.NewEVM(bctx, gst, config, vm.Config{}), b.Number(), b.Time())
		h := want.hooks()
		evm := vm.NewEVM(bctx, state.NewHookedState(gst, h), config, vm.Config{Tracer: h})
		gp := core.NewGasPool(b.GasLimit())
		for i, tx := range b.Transactions() {
			msg, err := core.TransactionToMessage(tx, signer, b.BaseFee())
			if err != nil {
				t.Fatal(err)
			}
			gst.SetTxContext(tx.Hash(), i, uint32(i+1))
			if _, _, err := core.ApplyTransactionWithEVM(context.Background(), msg, gp, gst, b.Number(), b.Hash(), b.Time(), tx, evm); err != nil {
				t.Fatalf("go-ethereum block %d tx %d: %v", b.NumberU64(), i, err)
			}
		}

		// Ours: the block processor with the recorder as its tracer.
		got := &hookRecorder{}
		st := chain.NewStateDB(stateAt(t, view, b.NumberU64()-1))
		proc := exec.NewBlockProcessor(b.Header(), parent.Header(), b.Hash(), st, headers, vm.Config{})
		proc.SetTracer(got.hooks())
		for i, tx := range b.Transactions() {
			if _, err := proc.ApplyTransaction(tx); err != nil {
				t.Fatalf("block %d tx %d: %v", b.NumberU64(), i, err)
			}
		}

		if len(want.ev) != len(got.ev) {
			t.Errorf("block %d: %d hook calls, go-ethereum %d", b.NumberU64(), len(got.ev), len(want.ev))
		}
		for i := 0; i < len(want.ev) && i < len(got.ev); i++ {
			if want.ev[i] != got.ev[i] {
				t.Errorf("block %d: hook call %d:\n  got  %s\n  want %s", b.NumberU64(), i, got.ev[i], want.ev[i])
				break
			}
		}
		events += len(want.ev)
	}
	if events == 0 {
		t.Fatal("no hook calls recorded")
	}
	t.Logf("%d blocks, %d hook calls equal to go-ethereum's hooked state", len(blocks), events)
}
