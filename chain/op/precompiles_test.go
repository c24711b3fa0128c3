package op

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/params"
)

// forkRules returns the OP config of opChainConfig (Ecotone 10, Fjord 20,
// Granite 30, Holocene 40, Isthmus 50, Jovian 60, Karst 70) and go-ethereum's
// rules at time t on the mapped ChainConfig.
func forkRules(t *testing.T) (*Config, func(uint64) params.Rules) {
	t.Helper()
	cfg, err := ParseConfig([]byte(opChainConfig))
	if err != nil {
		t.Fatal(err)
	}
	pc := new(params.ChainConfig)
	if err := json.Unmarshal([]byte(opChainConfig), pc); err != nil {
		t.Fatal(err)
	}
	if err := cfg.ApplyTo(pc); err != nil {
		t.Fatal(err)
	}
	return cfg, func(tm uint64) params.Rules { return pc.Rules(big.NewInt(1), true, tm) }
}

func p256Input(t *testing.T) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256([]byte("tipnode"))
	r, s, err := ecdsa.Sign(rand.Reader, key, h[:])
	if err != nil {
		t.Fatal(err)
	}
	in := make([]byte, 160)
	copy(in, h[:])
	r.FillBytes(in[32:64])
	s.FillBytes(in[64:96])
	key.X.FillBytes(in[96:128])
	key.Y.FillBytes(in[128:160])
	return in
}

func TestPrecompilesP256(t *testing.T) {
	cfg, rules := forkRules(t)
	in := p256Input(t)
	cases := []struct {
		t       uint64
		present bool
		gas     uint64
	}{{0, false, 0}, {15, false, 0}, {20, true, 3450}, {65, true, 3450}, {70, true, params.P256VerifyGas}}
	for _, c := range cases {
		set := Precompiles(cfg, rules(c.t), c.t)
		p, ok := set[P256VerifyAddr]
		if ok != c.present {
			t.Fatalf("t=%d: P256VERIFY present %v", c.t, ok)
		}
		if !ok {
			continue
		}
		if g := p.RequiredGas(in); g != c.gas {
			t.Errorf("t=%d: gas %d, want %d", c.t, g, c.gas)
		}
		out, err := p.Run(in)
		if err != nil || len(out) != 32 || out[31] != 1 {
			t.Errorf("t=%d: valid signature: %x %v", c.t, out, err)
		}
		bad := append([]byte{}, in...)
		bad[0] ^= 1
		if out, err := p.Run(bad); err != nil || len(out) != 0 {
			t.Errorf("t=%d: invalid signature: %x %v", c.t, out, err)
		}
		// Warm in the access list exactly when go-ethereum's rules do not
		// list it.
		inGeth := false
		for _, a := range vm.ActivePrecompiles(rules(c.t)) {
			inGeth = inGeth || a == P256VerifyAddr
		}
		if extra := ExtraWarmAddresses(cfg, c.t); (len(extra) == 1) == inGeth {
			t.Errorf("t=%d: extra warm %v, go-ethereum lists it %v", c.t, extra, inGeth)
		}
	}
	if ExtraWarmAddresses(cfg, 15) != nil {
		t.Error("warm before Fjord")
	}
}

func TestPrecompileLimits(t *testing.T) {
	cfg, rules := forkRules(t)
	cases := []struct {
		t    uint64
		addr common.Address
		max  int // 0: no limit; the specs' figures
	}{
		{25, Bn256PairingAddr, 0},
		{60, BLSG1MSMAddr, 288_960},
		{60, BLSG2MSMAddr, 278_784},
		{60, BLSPairingAddr, 156_672},
		{30, Bn256PairingAddr, 112_687},
		{55, Bn256PairingAddr, 112_687},
		{60, Bn256PairingAddr, 81_984},
		{70, Bn256PairingAddr, 57_600},
		{50, BLSG1MSMAddr, 513_760},
		{50, BLSG2MSMAddr, 488_448},
		{50, BLSPairingAddr, 235_008},
		{60, BLSG1MSMAddr, 288_960},
		{70, BLSG2MSMAddr, 278_784},
		{70, BLSPairingAddr, 156_672},
	}
	for _, c := range cases {
		set := Precompiles(cfg, rules(c.t), c.t)
		p := set[c.addr]
		l, isLimited := p.(*limited)
		if c.max == 0 {
			if isLimited {
				t.Errorf("t=%d %s: limited before Granite", c.t, c.addr)
			}
			continue
		}
		if !isLimited || l.max != c.max {
			t.Errorf("t=%d %s: limit %v, want %d", c.t, c.addr, p, c.max)
			continue
		}
		over := make([]byte, c.max+1)
		if _, err := p.Run(over); !errors.Is(err, ErrPrecompileInput) {
			t.Errorf("t=%d %s: %d bytes: %v", c.t, c.addr, len(over), err)
		}
		// Priced as go-ethereum prices it, limit or not.
		if p.RequiredGas(over) != l.inner.RequiredGas(over) {
			t.Errorf("t=%d %s: gas differs from the wrapped precompile", c.t, c.addr)
		}
	}
	// BLS precompiles are absent before Isthmus (Prague).
	if _, ok := Precompiles(cfg, rules(45), 45)[BLSG1MSMAddr]; ok {
		t.Error("BLS before Isthmus")
	}
	// go-ethereum's shared sets are not modified.
	if _, ok := vm.PrecompiledContractsPrague[BLSG1MSMAddr].(*limited); ok {
		t.Error("Precompiles changed go-ethereum's Prague set")
	}
}

// TestKarstBn256PairingBoundary runs the Karst pairing on 300 and 301 pairs
// of points at infinity: 300 pass through to go-ethereum (a true pairing),
// 301 are refused by the limit.
func TestKarstBn256PairingBoundary(t *testing.T) {
	cfg, rules := forkRules(t)
	p := Precompiles(cfg, rules(70), 70)[Bn256PairingAddr]
	out, err := p.Run(make([]byte, 300*192))
	if err != nil || len(out) != 32 || out[31] != 1 {
		t.Fatalf("300 pairs: %x %v", out, err)
	}
	if _, err := p.Run(make([]byte, 301*192)); !errors.Is(err, ErrPrecompileInput) {
		t.Fatalf("301 pairs: %v", err)
	}
	// Jovian still takes 301 pairs.
	pj := Precompiles(cfg, rules(60), 60)[Bn256PairingAddr]
	if _, err := pj.Run(make([]byte, 301*192)); err != nil {
		t.Fatalf("jovian 301 pairs: %v", err)
	}
}
