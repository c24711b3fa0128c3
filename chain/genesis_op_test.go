package chain_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
)

// opGenesis is an OP chain's genesis in op-geth's format, every fork
// through Karst at 0 and no blobSchedule (OP genesis files have none).
const opGenesis = `{"config":{"chainId":901,"homesteadBlock":0,"eip150Block":0,"eip155Block":0,"eip158Block":0,
"byzantiumBlock":0,"constantinopleBlock":0,"petersburgBlock":0,"istanbulBlock":0,"muirGlacierBlock":0,"berlinBlock":0,
"londonBlock":0,"arrowGlacierBlock":0,"grayGlacierBlock":0,"mergeNetsplitBlock":0,"terminalTotalDifficulty":0,
"shanghaiTime":0,"cancunTime":0,"pragueTime":0,"bedrockBlock":0,"regolithTime":0,"canyonTime":0,"deltaTime":0,
"ecotoneTime":0,"fjordTime":0,"graniteTime":0,"holoceneTime":0,"isthmusTime":0,"jovianTime":0,"karstTime":0,
"optimism":{"eip1559Elasticity":6,"eip1559Denominator":50,"eip1559DenominatorCanyon":250}},
"gasLimit":"0x1c9c380","difficulty":"0x0","baseFeePerGas":"0x3b9aca00","timestamp":"0x0","extraData":"0x000000000000000000000000000000000000000000",
"alloc":{"4200000000000000000000000000000000000016":{"balance":"0x0","code":"0x00","storage":{"0x01":"0x05"}},
"f39fd6e51aad88f6f4ce6ab8827279cfffb92266":{"balance":"0xde0b6b3a7640000"}}}`

// TestOPGenesis: an OP genesis (no blobSchedule) parses, runs the L1 forks
// its OP forks stand for, has the message passer's storage root as its
// withdrawals root (Isthmus at genesis), and a store keeps its OP config.
func TestOPGenesis(t *testing.T) {
	g, err := chain.ParseGenesis([]byte(opGenesis))
	if err != nil {
		t.Fatal(err)
	}
	if g.OP == nil || !g.OP.IsKarst(0) || !g.Config.IsOsaka(common.Big0, 0) || !g.Config.IsPrague(common.Big0, 0) {
		t.Fatalf("OP config %+v / forks not applied", g.OP)
	}
	h := g.Block.Header()
	root, _ := chain.SlotsRoot(map[common.Hash]common.Hash{common.HexToHash("0x01"): common.HexToHash("0x05")})
	if h.WithdrawalsHash == nil || *h.WithdrawalsHash != root || root == types.EmptyRootHash {
		t.Fatalf("withdrawals root %v, want the message passer's storage root %s", h.WithdrawalsHash, root)
	}
	if h.RequestsHash == nil || *h.RequestsHash != types.EmptyRequestsHash {
		t.Fatalf("requests hash %v", h.RequestsHash)
	}
	if g.Executor().OP() == nil {
		t.Fatal("the executor does not run OP rules")
	}
	db := chaintest.OpenStore(t)
	if err := chain.InitGenesis(db, g); err != nil {
		t.Fatal(err)
	}
	view, err := db.View()
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	loaded, err := chain.LoadGenesis(view)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.OP == nil || *loaded.OP.KarstTime != 0 || loaded.OP.EIP1559DenominatorCanyon != 250 || loaded.Block.Hash() != g.Block.Hash() {
		t.Fatalf("stored config lost the OP part: %+v", loaded.OP)
	}
	if loaded.Executor().OP() == nil {
		t.Fatal("a reopened store does not run OP rules")
	}
	// An L1 genesis has no OP part.
	if l1 := chaintest.Genesis(t); l1.OP != nil || l1.Executor().OP() != nil {
		t.Fatal("an L1 genesis reads as OP")
	}
}

// TestStoredConfigKeepsOP: the chain config an init at a recent block
// stores (init --state) keeps the OP part. go-ethereum's ChainConfig alone
// has none: a store given json.Marshal(g.Config) reopened as an L1 chain.
func TestStoredConfigKeepsOP(t *testing.T) {
	g, err := chain.ParseGenesisConfig([]byte(opGenesis))
	if err != nil {
		t.Fatal(err)
	}
	stored, err := g.StoredConfig()
	if err != nil {
		t.Fatal(err)
	}
	back, err := chain.ParseChainConfig(stored)
	if err != nil {
		t.Fatal(err)
	}
	if back.OP == nil || back.OP.KarstTime == nil || back.OP.EIP1559DenominatorCanyon != 250 || !back.Config.IsOsaka(common.Big0, 0) {
		t.Fatalf("stored config lost the OP part: %s", stored)
	}
	plain, _ := json.Marshal(g.Config)
	if l1, err := chain.ParseChainConfig(plain); err != nil || l1.OP != nil {
		t.Fatalf("go-ethereum's config alone: %v %v (the OP part is expected to be missing)", l1.OP, err)
	}
	// An L1 genesis stores go-ethereum's config.
	l1, err := chain.ParseGenesisConfig([]byte(`{"config":{"chainId":1,"homesteadBlock":0}}`))
	if err != nil {
		t.Fatal(err)
	}
	if s, err := l1.StoredConfig(); err != nil || !strings.Contains(string(s), `"chainId":1`) {
		t.Fatalf("L1: %s %v", s, err)
	}
}

// TestOPGenesisBlobSchedule: an OP genesis that sets a blobSchedule is
// refused, as op-geth refuses it (init and the config-only parse alike),
// naming the member; the store's chain config (the applied one, which
// carries the no-blobs schedule ApplyTo gives the L1 forks) still loads.
// (L1 genesis files with a blobSchedule, the dev chain's, parse in every
// L1 test.)
func TestOPGenesisBlobSchedule(t *testing.T) {
	withSchedule := strings.Replace(opGenesis, `"optimism":{`,
		`"blobSchedule":{"cancun":{"target":3,"max":6,"baseFeeUpdateFraction":3338477},"prague":{"target":6,"max":9,"baseFeeUpdateFraction":5007716}},"optimism":{`, 1)
	if withSchedule == opGenesis {
		t.Fatal("no blobSchedule added")
	}
	for name, parse := range map[string]func([]byte) (*chain.Genesis, error){"ParseGenesis": chain.ParseGenesis, "ParseGenesisConfig": chain.ParseGenesisConfig} {
		_, err := parse([]byte(withSchedule))
		if !errors.Is(err, chain.ErrGenesis) || !strings.Contains(err.Error(), "blobSchedule") {
			t.Errorf("%s: %v, want ErrGenesis naming blobSchedule", name, err)
		}
		nullSchedule := strings.Replace(opGenesis, `"optimism":{`, `"blobSchedule":null,"optimism":{`, 1)
		if _, err := parse([]byte(nullSchedule)); err != nil {
			t.Errorf("%s: a null blobSchedule: %v", name, err)
		}
	}
	g, err := chain.ParseGenesis([]byte(opGenesis))
	if err != nil {
		t.Fatal(err)
	}
	stored, err := g.StoredConfig()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(stored), "blobSchedule") {
		t.Fatalf("the stored config carries no schedule: %s", stored)
	}
	if _, err := chain.ParseChainConfig(stored); err != nil {
		t.Fatalf("the stored config: %v", err)
	}
}
