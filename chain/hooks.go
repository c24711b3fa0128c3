package chain

import (
	"bytes"
	"math/big"
	"slices"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"
)

// State hooks: go-ethereum's tracers (eth/tracers: the struct logger and the
// native tracers) learn of state changes through the tracing.Hooks of the
// state they run on. go-ethereum wraps its own StateDB in a hooked state;
// ours calls the hooks itself, with the same rules:
//
//   - OnBalanceChange on every non-zero AddBalance / SubBalance (previous
//     and new balance, the reason given by the EVM);
//   - OnNonceChangeV2 (else OnNonceChange) on every SetNonce;
//   - OnCodeChangeV2 (else OnCodeChange) on SetCode when the code hash
//     changes;
//   - OnStorageChange on SetState when the value changes;
//   - OnLog after AddLog (the log has its transaction fields);
//   - at Finalise, for each account self-destructed in the transaction, in
//     address order: its balance burnt (before Amsterdam), its nonce reset
//     and its code removed (unless it had none).
//
// Overrides (SetBalance, ReplaceStorage) are not hooked: they are applied
// before the traced execution, as go-ethereum applies them on the state
// under its hooked wrapper. Reverted changes are not reported again
// (go-ethereum's hooked state does not either: tracers see reverts through
// OnExit).

// SetHooks makes the StateDB report state changes to h (nil: none). The
// hooks are called on the executing goroutine.
func (s *StateDB) SetHooks(h *tracing.Hooks) { s.hooks = h }

// Hooks returns the hooks set by SetHooks.
func (s *StateDB) Hooks() *tracing.Hooks { return s.hooks }

func (s *StateDB) balanceHook(addr common.Address, prev, cur *uint256.Int, reason tracing.BalanceChangeReason) {
	if s.hooks.OnBalanceChange != nil {
		s.hooks.OnBalanceChange(addr, prev.ToBig(), cur.ToBig(), reason)
	}
}

func (s *StateDB) nonceHook(addr common.Address, prev, cur uint64, reason tracing.NonceChangeReason) {
	if s.hooks.OnNonceChangeV2 != nil {
		s.hooks.OnNonceChangeV2(addr, prev, cur, reason)
	} else if s.hooks.OnNonceChange != nil {
		s.hooks.OnNonceChange(addr, prev, cur)
	}
}

func (s *StateDB) codeHook(addr common.Address, prev, code []byte, reason tracing.CodeChangeReason) {
	if s.hooks.OnCodeChangeV2 == nil && s.hooks.OnCodeChange == nil {
		return
	}
	prevHash, codeHash := crypto.Keccak256Hash(prev), crypto.Keccak256Hash(code)
	if prevHash == codeHash {
		return
	}
	if s.hooks.OnCodeChangeV2 != nil {
		s.hooks.OnCodeChangeV2(addr, prevHash, prev, codeHash, code, reason)
	} else {
		s.hooks.OnCodeChange(addr, prevHash, prev, codeHash, code)
	}
}

// destructHooks reports the accounts self-destructed in the transaction
// that Finalise is about to delete.
func (s *StateDB) destructHooks(rules params.Rules) {
	h := s.hooks
	if h.OnBalanceChange == nil && h.OnNonceChangeV2 == nil && h.OnNonceChange == nil && h.OnCodeChangeV2 == nil && h.OnCodeChange == nil {
		return
	}
	var gone []common.Address
	for addr := range s.dirties {
		if ref := s.objects[addr]; ref != nil && !ref.dead && ref.obj != nil && ref.obj.selfDestructed {
			gone = append(gone, addr)
		}
	}
	slices.SortFunc(gone, func(a, b common.Address) int { return bytes.Compare(a[:], b[:]) })
	for _, addr := range gone {
		o := s.objects[addr].obj
		// EIP-8246 (Amsterdam) keeps a self-destructed account's balance.
		if !rules.IsAmsterdam && h.OnBalanceChange != nil && !o.data.Balance.IsZero() {
			h.OnBalanceChange(addr, o.data.Balance.ToBig(), new(big.Int), tracing.BalanceDecreaseSelfdestructBurn)
		}
		s.nonceHook(addr, o.data.Nonce, 0, tracing.NonceChangeSelfdestruct)
		if o.data.CodeHash == types.EmptyCodeHash {
			continue // initcode that self-destructed: no code to remove
		}
		code := s.loadCode(o)
		if h.OnCodeChangeV2 != nil {
			h.OnCodeChangeV2(addr, o.data.CodeHash, code, types.EmptyCodeHash, nil, tracing.CodeChangeSelfDestruct)
		} else if h.OnCodeChange != nil {
			h.OnCodeChange(addr, o.data.CodeHash, code, types.EmptyCodeHash, nil)
		}
	}
}
