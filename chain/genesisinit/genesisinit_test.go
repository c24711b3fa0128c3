package genesisinit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/chain/devnet"
	"github.com/tipnode/tipnode/chain/genesisinit"
	"github.com/tipnode/tipnode/chain/op/optest"
	"github.com/tipnode/tipnode/store"
)

// opGenesis is an OP chain's genesis in op-geth's format (as chain's
// TestOPGenesis): every fork through Karst at 0, Isthmus at genesis, so
// block 0's withdrawals root is the message passer's storage root.
const opGenesis = `{"config":{"chainId":901,"homesteadBlock":0,"eip150Block":0,"eip155Block":0,"eip158Block":0,
"byzantiumBlock":0,"constantinopleBlock":0,"petersburgBlock":0,"istanbulBlock":0,"muirGlacierBlock":0,"berlinBlock":0,
"londonBlock":0,"arrowGlacierBlock":0,"grayGlacierBlock":0,"mergeNetsplitBlock":0,"terminalTotalDifficulty":0,
"shanghaiTime":0,"cancunTime":0,"pragueTime":0,"bedrockBlock":0,"regolithTime":0,"canyonTime":0,"deltaTime":0,
"ecotoneTime":0,"fjordTime":0,"graniteTime":0,"holoceneTime":0,"isthmusTime":0,"jovianTime":0,"karstTime":0,
"optimism":{"eip1559Elasticity":6,"eip1559Denominator":50,"eip1559DenominatorCanyon":250}},
"gasLimit":"0x1c9c380","difficulty":"0x0","baseFeePerGas":"0x3b9aca00","timestamp":"0x0","extraData":"0x000000000000000000000000000000000000000000",
"alloc":{"4200000000000000000000000000000000000016":{"balance":"0x0","code":"0x00","storage":{"0x01":"0x05"}},
"f39fd6e51aad88f6f4ce6ab8827279cfffb92266":{"balance":"0xde0b6b3a7640000"}}}`

// edgeGenesis exercises what go-ethereum's account decoder accepts:
// address keys with and without 0x (upper-case 0X too), decimal and hex
// balances and nonces (quoted or bare), short and empty storage words, a
// null and a zero slot value, a null storage, code, an ignored secretKey,
// member names in other cases and an empty account.
const edgeGenesis = `{"config":{"chainId":1337,"homesteadBlock":0,"eip150Block":0,"eip155Block":0,"eip158Block":0,
"byzantiumBlock":0,"constantinopleBlock":0,"petersburgBlock":0,"istanbulBlock":0,"berlinBlock":0,"londonBlock":0,
"mergeNetsplitBlock":0,"terminalTotalDifficulty":0,"shanghaiTime":0,"cancunTime":0,
"blobSchedule":{"cancun":{"target":3,"max":6,"baseFeeUpdateFraction":3338477}}},
"ALLOC":{
 "0x1000000000000000000000000000000000000001":{"balance":"1000000000000000000","nonce":"7"},
 "1000000000000000000000000000000000000002":{"Balance":"0xff","NONCE":"0x10","code":"0x6001600055","storage":{"0x01":"0x02","":"0x03","0x07":"","0x08":"0x","0x04":null,"05":"0x00","0x0000000000000000000000000000000000000000000000000000000000000006":"0xffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"}},
 "0X1000000000000000000000000000000000000003":{"balance":12345,"nonce":3,"secretKey":"0x01","storage":null},
 "1000000000000000000000000000000000000004":{"balance":""},
 "1000000000000000000000000000000000000005":{"balance":"0x0","code":"0x6001600055","Storage":{"0x0a":"0x0b"}}
},
"gasLimit":"30000000","difficulty":"0","timestamp":"0x10","extraData":"0x01","baseFeePerGas":"0x7"}`

// opPasserGenesis is opGenesis with many slots in the L2ToL1MessagePasser
// (their hashed order differs from their given order).
func opPasserGenesis() string {
	var slots []string
	for i := 1; i <= 40; i++ {
		slots = append(slots, fmt.Sprintf(`"0x%02x":"0x%064x"`, i, i*7+1))
	}
	return strings.Replace(opGenesis, `"storage":{"0x01":"0x05"}`, `"storage":{`+strings.Join(slots, ",")+`}`, 1)
}

// manySlotsGenesis is the edge genesis with a contract of 8,000 slots:
// the sorts spill (1 MiB buffers in these tests) and the spec takes many
// chunks, the last one short.
func manySlotsGenesis() string {
	var slots []string
	for i := 1; i <= 8000; i++ {
		slots = append(slots, fmt.Sprintf(`"0x%064x":"0x%06x"`, i*977, i))
	}
	contract := `"2000000000000000000000000000000000000002":{"balance":"0x1","code":"0x6001","storage":{` + strings.Join(slots, ",") + `}},`
	return strings.Replace(edgeGenesis, `"ALLOC":{`, `"ALLOC":{`+contract, 1)
}

// genesisSpecs are the genesis files the tests use: the conformance
// chain's (skipped without it), the dev and OP dev genesis, the OP test
// genesis and the edge cases above.
func genesisSpecs() map[string]func(t *testing.T) []byte {
	accs := []common.Address{common.HexToAddress("0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"), common.HexToAddress("0x70997970c51812dc3a010c7d01b50e0d17dc79c8")}
	fixed := func(s string) func(*testing.T) []byte { return func(*testing.T) []byte { return []byte(s) } }
	return map[string]func(t *testing.T) []byte{
		"edge":      fixed(edgeGenesis),
		"op":        fixed(opGenesis),
		"opPasser":  fixed(opPasserGenesis()),
		"manySlots": fixed(manySlotsGenesis()),
		"dev": func(t *testing.T) []byte {
			spec, err := devnet.Genesis(devnet.GenesisConfig{ChainID: 1337, Accounts: accs})
			if err != nil {
				t.Fatal(err)
			}
			return spec
		},
		"opDev": func(t *testing.T) []byte {
			spec, err := devnet.OPGenesis(devnet.GenesisConfig{ChainID: 901, Accounts: accs, Balance: big.NewInt(1)})
			if err != nil {
				t.Fatal(err)
			}
			return spec
		},
		"conformance": func(t *testing.T) []byte {
			spec, err := os.ReadFile(filepath.Join(chaintest.Dir(t), "chain", "genesis.json"))
			if err != nil {
				t.Fatal(err)
			}
			return spec
		},
	}
}

// dumpStore reads every key of db.
func dumpStore(t *testing.T, db *store.DB) map[string]string {
	t.Helper()
	out := make(map[string]string)
	if err := db.RawScan(nil, nil, func(k, v []byte) error {
		out[string(k)] = string(v)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func streamInit(t *testing.T, db *store.DB, spec []byte) (*chain.Genesis, genesisinit.Stats, error) {
	t.Helper()
	return genesisinit.Init(context.Background(), db, bytes.NewReader(spec),
		genesisinit.Config{TempDir: filepath.Join(t.TempDir(), "tmp"), MemBytes: 1 << 20})
}

// TestInit: for every genesis the tests use, the streamed
// init gives go-ethereum's block 0 (ToBlock on the whole alloc, with the
// OP Isthmus withdrawals root) and writes, key by key, the store
// InitGenesis writes; a second init with the same genesis is a no-op and
// with another one refused.
func TestInit(t *testing.T) {
	for name, read := range genesisSpecs() {
		t.Run(name, func(t *testing.T) {
			spec := read(t)
			full, err := chain.ParseGenesis(spec)
			if err != nil {
				t.Fatal(err)
			}
			want := chaintest.OpenStore(t)
			if err := chain.InitGenesis(want, full); err != nil {
				t.Fatal(err)
			}
			db := chaintest.OpenStore(t)
			g, stats, err := streamInit(t, db, spec)
			if err != nil {
				t.Fatal(err)
			}
			if g.Block.Hash() != full.Block.Hash() {
				t.Fatalf("block 0 %s, go-ethereum's %s\nstreamed %+v\nwant %+v", g.Block.Hash(), full.Block.Hash(), g.Block.Header(), full.Block.Header())
			}
			if int(stats.Accounts) != len(full.Core.Alloc) {
				t.Fatalf("%d accounts read, the alloc has %d", stats.Accounts, len(full.Core.Alloc))
			}
			got, exp := dumpStore(t, db), dumpStore(t, want)
			for k, v := range exp {
				if gv, ok := got[k]; !ok {
					t.Errorf("key %x missing", k)
				} else if gv != v {
					t.Errorf("key %x: %x, InitGenesis wrote %x", k, gv, v)
				}
			}
			for k := range got {
				if _, ok := exp[k]; !ok {
					t.Errorf("extra key %x", k)
				}
			}
			if len(got) == 0 {
				t.Fatal("empty store")
			}
			// The store reads as a genesis store.
			if a := db.Anchor(); a != (store.Anchor{}) {
				t.Fatalf("anchor %+v", a)
			}
			view, err := db.View()
			if err != nil {
				t.Fatal(err)
			}
			loaded, err := chain.LoadGenesis(view)
			if err != nil || loaded.Block.Hash() != full.Block.Hash() || (loaded.OP == nil) != (full.OP == nil) {
				t.Fatalf("LoadGenesis: %v %v", err, loaded)
			}
			spec2, err := view.GenesisSpec()
			view.Close()
			if err != nil || !bytes.Equal(spec2, spec) {
				t.Fatalf("stored spec: %v (%d bytes, want %d)", err, len(spec2), len(spec))
			}
			// Again: a no-op; another genesis: refused.
			if _, _, err := streamInit(t, db, spec); err != nil {
				t.Fatalf("second init with the same genesis: %v", err)
			}
			var members map[string]json.RawMessage
			if err := json.Unmarshal(spec, &members); err != nil {
				t.Fatal(err)
			}
			members["gasLimit"] = json.RawMessage(`"0x1234567"`)
			other, err := json.Marshal(members)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := streamInit(t, db, other); !errors.Is(err, store.ErrGenesisMismatch) {
				t.Fatalf("init with another genesis: %v", err)
			}
		})
	}
}

// TestInitImport: the conformance chain imports on a store
// initialised by the streamed init (every block's state root checked).
func TestInitImport(t *testing.T) {
	dir := chaintest.Dir(t)
	spec, err := os.ReadFile(filepath.Join(dir, "chain", "genesis.json"))
	if err != nil {
		t.Fatal(err)
	}
	db := chaintest.OpenStore(t)
	g, _, err := streamInit(t, db, spec)
	if err != nil {
		t.Fatal(err)
	}
	w, err := chain.NewWriter(db, g.Executor(), chain.DefaultWriterConfig(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	w.Start()
	defer w.Stop()
	f, err := os.Open(filepath.Join(dir, "chain", "chain.rlp"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stats, err := w.ImportRLP(f, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Head == nil || stats.Head.Hash().Hex() != chaintest.HeadHash {
		t.Fatalf("head %v, want %s", stats.Head, chaintest.HeadHash)
	}
}

// TestInitRefusals: a repeated account or slot is refused by
// the streamed init and nothing is written; so is a genesis of block 1.
func TestInitRefusals(t *testing.T) {
	const head = `{"config":{"chainId":1},"gasLimit":"0x1","difficulty":"0x0",`
	for _, spec := range []string{
		head + `"alloc":{"1000000000000000000000000000000000000001":{"balance":"0x1"},"0x1000000000000000000000000000000000000001":{"balance":"0x2"}}}`,
		head + `"alloc":{"1000000000000000000000000000000000000001":{"balance":"0x1","storage":{"0x01":"0x01","0x0001":"0x02"}}}}`,
		head + `"alloc":{"1000000000000000000000000000000000000001":{"balance":"0x1","storage":{"0x01":"0x01","0x0001":""}}}}`,
		head + `"number":"0x1","alloc":{}}`,
	} {
		db := chaintest.OpenStore(t)
		if _, _, err := streamInit(t, db, []byte(spec)); !errors.Is(err, chain.ErrGenesis) {
			t.Fatalf("%s: %v", spec, err)
		}
		if got := dumpStore(t, db); len(got) > 1 { // the schema version of a fresh store at most
			t.Fatalf("%d keys written after a refusal", len(got))
		}
	}
}

// TestInitRealOPChains: tipnode init --genesis of every real OP chain
// genesis in ../shared/op/chains (op-geth's dumpgenesis: no deltaTime,
// Karst scheduled, the full predeploy alloc) gives the genesis block hash
// op-geth computes, and the store reopens with the chain's OP forks. OP
// Mainnet's (no alloc, Bedrock at block 105,235,063) is refused at genesis
// with the way to start, nothing written, while its chain config is
// accepted for an init at a recent block.
func TestInitRealOPChains(t *testing.T) {
	for _, c := range optest.Chains(t) {
		t.Run(c.Name, func(t *testing.T) {
			spec, err := os.ReadFile(c.Path)
			if err != nil {
				t.Fatal(err)
			}
			cfgOnly, err := chain.ParseGenesisConfig(spec)
			if err != nil {
				t.Fatalf("chain config refused: %v", err)
			}
			if cfgOnly.OP == nil || cfgOnly.OP.KarstTime == nil && c.Name != "worldchain-mainnet" {
				t.Fatalf("OP config not read: %+v", cfgOnly.OP)
			}
			db := chaintest.OpenStore(t)
			g, _, err := streamInit(t, db, spec)
			if c.GenesisHash == (common.Hash{}) {
				// A chain that starts before Bedrock.
				if !errors.Is(err, chain.ErrPreBedrock) || !strings.Contains(err.Error(), "--state.from") ||
					!strings.Contains(err.Error(), "--snapshot-from") || !strings.Contains(err.Error(), "bedrockBlock") {
					t.Fatalf("init of a pre-Bedrock genesis: %v", err)
				}
				if _, perr := chain.ParseGenesis(spec); !errors.Is(perr, chain.ErrPreBedrock) {
					t.Fatalf("ParseGenesis: %v", perr)
				}
				view, verr := db.View()
				if verr != nil {
					t.Fatal(verr)
				}
				defer view.Close()
				if _, herr := view.CanonicalHash(0); !errors.Is(herr, store.ErrNotFound) {
					t.Fatalf("a refused init wrote block 0: %v", herr)
				}
				return
			}
			if err != nil {
				t.Fatalf("init: %v", err)
			}
			if got := g.Block.Hash(); got != c.GenesisHash {
				t.Fatalf("genesis hash %s, op-geth's %s", got, c.GenesisHash)
			}
			if g.Config.ChainID.Uint64() != c.ChainID {
				t.Fatalf("chain id %v, want %d", g.Config.ChainID, c.ChainID)
			}
			view, err := db.View()
			if err != nil {
				t.Fatal(err)
			}
			defer view.Close()
			loaded, err := chain.LoadGenesis(view)
			if err != nil || loaded.Block.Hash() != c.GenesisHash || loaded.OP == nil {
				t.Fatalf("reopened: %v %v", err, loaded)
			}
			if !equalTimes(loaded.OP.JovianTime, cfgOnly.OP.JovianTime) || !equalTimes(loaded.OP.KarstTime, cfgOnly.OP.KarstTime) ||
				!equalTimes(loaded.OP.IsthmusTime, cfgOnly.OP.IsthmusTime) || loaded.OP.EIP1559DenominatorCanyon != cfgOnly.OP.EIP1559DenominatorCanyon {
				t.Fatalf("stored OP config %+v, given %+v", loaded.OP, cfgOnly.OP)
			}
		})
	}
}

func equalTimes(a, b *uint64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
