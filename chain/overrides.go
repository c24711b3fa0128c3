package chain

import (
	"fmt"
	"maps"
	"slices"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"
)

// AccountOverride replaces parts of one account for a call or simulation.
// Every nil field keeps the account's value: overriding the balance keeps
// the nonce, code and storage (per field); StateDiff patches single slots
// and keeps the others; State replaces the whole storage.
type AccountOverride struct {
	Nonce            *uint64
	Code             *[]byte
	Balance          *uint256.Int
	State            map[common.Hash]common.Hash
	StateDiff        map[common.Hash]common.Hash
	MovePrecompileTo *common.Address
}

// OverrideError is a refused state override; Kind tells which rule.
type OverrideError struct {
	Kind OverrideErrorKind
	Msg  string
}

func (e *OverrideError) Error() string { return e.Msg }
func (e *OverrideError) Unwrap() error { return ErrOverride }

// OverrideErrorKind classifies override errors (the rpc layer maps them to
// the execution-API codes).
type OverrideErrorKind int

const (
	OverrideInvalid       OverrideErrorKind = iota // malformed (both state and stateDiff, ...)
	OverrideNotPrecompile                          // movePrecompileToAddress on a non-precompile
	OverrideMoveToSelf                             // moving a precompile onto itself
	OverrideMoveDuplicate                          // two moves to one address / target overridden
)

// ApplyStateOverrides applies overrides to state in address order, moving
// precompiles inside precompiles (which the caller installs on the EVM).
// Changes behave as if made by a transaction just before the call.
func ApplyStateOverrides(state *StateDB, overrides map[common.Address]AccountOverride, precompiles vm.PrecompiledContracts) error {
	return ApplyStateOverridesWith(state, overrides, precompiles, OverrideOptions{})
}

// OverrideOptions adjusts the rules of ApplyStateOverridesWith.
type OverrideOptions struct {
	// AllowSharedMoveTarget accepts two precompiles moved to the same
	// address (the later one in address order wins), as the reference
	// client's eth_simulateV1 does (recorded by the execution-apis
	// fixtures). Moving onto an overridden account is still refused.
	AllowSharedMoveTarget bool
}

// ApplyStateOverridesWith is ApplyStateOverrides with options.
func ApplyStateOverridesWith(state *StateDB, overrides map[common.Address]AccountOverride, precompiles vm.PrecompiledContracts, opts OverrideOptions) error {
	if len(overrides) == 0 {
		return nil
	}
	moved := make(map[common.Address]struct{})
	for _, addr := range slices.SortedFunc(maps.Keys(overrides), common.Address.Cmp) {
		ov := overrides[addr]
		if _, ok := moved[addr]; ok {
			return &OverrideError{OverrideMoveDuplicate, fmt.Sprintf("account %s has already been overridden by a precompile", addr.Hex())}
		}
		p, isPrecompile := precompiles[addr]
		if ov.MovePrecompileTo != nil {
			dst := *ov.MovePrecompileTo
			if !isPrecompile {
				return &OverrideError{OverrideNotPrecompile, fmt.Sprintf("account %s is not a precompile", addr.Hex())}
			}
			if dst == addr {
				return &OverrideError{OverrideMoveToSelf, fmt.Sprintf("account %s cannot be moved to itself", addr.Hex())}
			}
			if _, ok := overrides[dst]; ok {
				return &OverrideError{OverrideMoveDuplicate, fmt.Sprintf("account %s is already overridden", dst.Hex())}
			}
			if _, ok := moved[dst]; ok && !opts.AllowSharedMoveTarget {
				return &OverrideError{OverrideMoveDuplicate, fmt.Sprintf("account %s is already overridden", dst.Hex())}
			}
			precompiles[dst] = p
			moved[dst] = struct{}{}
		}
		if isPrecompile {
			delete(precompiles, addr)
		}
		if ov.State != nil && ov.StateDiff != nil {
			return &OverrideError{OverrideInvalid, fmt.Sprintf("account %s has both 'state' and 'stateDiff'", addr.Hex())}
		}
		if ov.Nonce != nil {
			state.SetNonce(addr, *ov.Nonce, tracing.NonceChangeUnspecified)
		}
		if ov.Code != nil {
			state.SetCode(addr, *ov.Code, tracing.CodeChangeUnspecified)
		}
		if ov.Balance != nil {
			state.SetBalance(addr, ov.Balance)
		}
		if ov.State != nil {
			state.ReplaceStorage(addr, ov.State)
		}
		for k, v := range ov.StateDiff {
			state.SetState(addr, k, v)
		}
	}
	// Empty rules: no EIP-158 removal of an overridden empty account.
	state.Finalise(params.Rules{})
	return nil
}
