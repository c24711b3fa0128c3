package op

import (
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/params"
)

// Precompile addresses the OP rules touch.
var (
	Bn256PairingAddr = common.BytesToAddress([]byte{0x08})
	BLSG1MSMAddr     = common.BytesToAddress([]byte{0x0c})
	BLSG2MSMAddr     = common.BytesToAddress([]byte{0x0e})
	BLSPairingAddr   = common.BytesToAddress([]byte{0x0f})
	P256VerifyAddr   = common.BytesToAddress([]byte{0x01, 0x00})
)

// Input size limits of the OP precompiles (bytes), by the fork that set them.
const (
	GraniteBn256PairingMax = 112_687 // granite/exec-engine.md
	JovianBn256PairingMax  = 81_984  // 427 pairs
	KarstBn256PairingMax   = 57_600  // 300 pairs

	IsthmusBLSG1MSMMax   = 513_760
	IsthmusBLSG2MSMMax   = 488_448
	IsthmusBLSPairingMax = 235_008
	JovianBLSG1MSMMax    = 288_960 // 1806 pairs
	JovianBLSG2MSMMax    = 278_784 // 968 pairs
	JovianBLSPairingMax  = 156_672 // 408 pairs

	// RIP7212P256VerifyGas is P256VERIFY's price from Fjord until Karst;
	// Karst (Osaka) takes EIP-7951's 6900 with go-ethereum's Osaka set.
	RIP7212P256VerifyGas = 3450
)

// limited is a go-ethereum precompile behind an input size limit: an input
// longer than max fails (consuming the call's gas, as every precompile
// error does); otherwise the wrapped precompile prices and runs it.
type limited struct {
	inner vm.PrecompiledContract
	max   int
	name  string
}

func (l *limited) RequiredGas(input []byte) uint64 { return l.inner.RequiredGas(input) }

func (l *limited) Run(input []byte) ([]byte, error) {
	if len(input) > l.max {
		return nil, fmt.Errorf("%w: %s takes at most %d bytes, got %d", ErrPrecompileInput, l.name, l.max, len(input))
	}
	return l.inner.Run(input)
}

func (l *limited) Name() string { return l.inner.Name() }

// repriced is a go-ethereum precompile with another fixed gas price.
type repriced struct {
	inner vm.PrecompiledContract
	gas   uint64
}

func (r *repriced) RequiredGas([]byte) uint64        { return r.gas }
func (r *repriced) Run(input []byte) ([]byte, error) { return r.inner.Run(input) }
func (r *repriced) Name() string                     { return r.inner.Name() }

// Precompiles returns the precompile set of an OP block at time t, for
// evm.SetPrecompiles. rules are go-ethereum's rules for the block (from the
// ChainConfig that ApplyTo prepared), whose set is the base: Berlin before
// Ecotone, Cancun from Ecotone, Prague from Isthmus, Osaka from Karst. On
// top of it:
//   - Fjord: P256VERIFY at 0x100 (RIP-7212, 3450 gas) until Karst, where
//     Osaka's own (EIP-7951, 6900 gas) stays;
//   - Granite: bn256Pairing input at most 112,687 bytes; Jovian 81,984;
//     Karst 57,600;
//   - Isthmus: BLS12-381 G1 MSM / G2 MSM / pairing inputs at most 513,760 /
//     488,448 / 235,008 bytes; Jovian 288,960 / 278,784 / 156,672.
//
// The map is fresh: the caller may keep it for the block.
func Precompiles(cfg *Config, rules params.Rules, t uint64) vm.PrecompiledContracts {
	set := vm.ActivePrecompiledContracts(rules)
	if cfg.IsFjord(t) && !cfg.IsKarst(t) {
		set[P256VerifyAddr] = &repriced{inner: vm.PrecompiledContractsP256Verify[P256VerifyAddr], gas: RIP7212P256VerifyGas}
	}
	limit := func(addr common.Address, max int, name string) {
		inner, ok := set[addr]
		if !ok {
			return // not in the base set (a config inconsistent with the OP forks)
		}
		if l, ok := inner.(*limited); ok {
			inner = l.inner
		}
		set[addr] = &limited{inner: inner, max: max, name: name}
	}
	switch {
	case cfg.IsKarst(t):
		limit(Bn256PairingAddr, KarstBn256PairingMax, "bn256Pairing")
	case cfg.IsJovian(t):
		limit(Bn256PairingAddr, JovianBn256PairingMax, "bn256Pairing")
	case cfg.IsGranite(t):
		limit(Bn256PairingAddr, GraniteBn256PairingMax, "bn256Pairing")
	}
	switch {
	case cfg.IsJovian(t):
		limit(BLSG1MSMAddr, JovianBLSG1MSMMax, "BLS12-381 G1 MSM")
		limit(BLSG2MSMAddr, JovianBLSG2MSMMax, "BLS12-381 G2 MSM")
		limit(BLSPairingAddr, JovianBLSPairingMax, "BLS12-381 pairing")
	case cfg.IsIsthmus(t):
		limit(BLSG1MSMAddr, IsthmusBLSG1MSMMax, "BLS12-381 G1 MSM")
		limit(BLSG2MSMAddr, IsthmusBLSG2MSMMax, "BLS12-381 G2 MSM")
		limit(BLSPairingAddr, IsthmusBLSPairingMax, "BLS12-381 pairing")
	}
	return set
}

// ExtraWarmAddresses are the OP precompiles that go-ethereum's
// vm.ActivePrecompiles(rules) does not list: P256VERIFY from Fjord until
// Karst. core.ApplyMessage warms only go-ethereum's list (EIP-2929), so the
// StateDB's Prepare must add these to the access list too, or a call to
// 0x100 pays the cold-account price that op-geth does not charge.
func ExtraWarmAddresses(cfg *Config, t uint64) []common.Address {
	if cfg.IsFjord(t) && !cfg.IsKarst(t) {
		return []common.Address{P256VerifyAddr}
	}
	return nil
}

// compile-time checks: the wrappers are precompiles.
var (
	_ vm.PrecompiledContract = (*limited)(nil)
	_ vm.PrecompiledContract = (*repriced)(nil)
)
