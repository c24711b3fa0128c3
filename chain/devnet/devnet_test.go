package devnet

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/chain"
)

// The keys every Ethereum developer has (Hardhat / anvil defaults).
func TestAccountsMatchWellKnownKeys(t *testing.T) {
	accs, err := Accounts(Mnemonic, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		i    int
		addr string
		key  string
	}{
		{0, "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266", "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"},
		{1, "0x70997970C51812dc3A010C7d01b50e0d17dc79C8", "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d"},
		{9, "0xa0Ee7A142d267C1f36714E4a8F75612F20a79720", "0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6"},
	} {
		if got := accs[tc.i].Address; got != common.HexToAddress(tc.addr) {
			t.Errorf("account %d: address %s, want %s", tc.i, got.Hex(), tc.addr)
		}
		if got := accs[tc.i].KeyHex(); got != tc.key {
			t.Errorf("account %d: key %s, want %s", tc.i, got, tc.key)
		}
	}
}

func TestDeriveKeyRejectsBadPaths(t *testing.T) {
	seed, _ := Seed(Mnemonic, "")
	for _, p := range []string{"", "44'/60'", "m/x", "m/44''"} {
		if _, err := DeriveKey(seed, p); err == nil {
			t.Errorf("path %q accepted", p)
		}
	}
}

func TestGenesisParsesWithForksAndAlloc(t *testing.T) {
	accs, err := Accounts(Mnemonic, 10)
	if err != nil {
		t.Fatal(err)
	}
	addrs := make([]common.Address, len(accs))
	for i, a := range accs {
		addrs[i] = a.Address
	}
	spec, err := Genesis(GenesisConfig{ChainID: 1337, Accounts: addrs, Timestamp: 1_700_000_000})
	if err != nil {
		t.Fatal(err)
	}
	g, err := chain.ParseGenesis(spec)
	if err != nil {
		t.Fatal(err)
	}
	h := g.Block.Header()
	if !g.Config.IsOsaka(h.Number, h.Time) || !g.Config.IsPrague(h.Number, h.Time) {
		t.Fatal("Osaka/Prague not active at genesis")
	}
	if g.Config.ChainID.Uint64() != 1337 {
		t.Fatalf("chain id %d", g.Config.ChainID)
	}
	if h.BaseFee == nil || h.ExcessBlobGas == nil || h.RequestsHash == nil || h.WithdrawalsHash == nil {
		t.Fatalf("genesis header lacks fork fields: %+v", h)
	}
	d := g.Diff()
	for _, a := range addrs {
		if acc := d.Accounts[a]; acc == nil || acc.Balance.ToBig().Cmp(new(big.Int).Mul(big.NewInt(10_000), big.NewInt(params.Ether))) != 0 {
			t.Fatalf("account %s not prefunded", a)
		}
	}
	for _, a := range []common.Address{params.BeaconRootsAddress, params.HistoryStorageAddress, params.WithdrawalQueueAddress, params.ConsolidationQueueAddress} {
		if acc := d.Accounts[a]; acc == nil || len(d.Codes[acc.CodeHash]) == 0 {
			t.Fatalf("system contract %s missing", a)
		}
	}
}
