package chain_test

import (
	"crypto/ecdsa"
	"encoding/json"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus"
	"github.com/ethereum/go-ethereum/consensus/beacon"
	"github.com/ethereum/go-ethereum/consensus/ethash"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// Differential test: go-ethereum's own block generator (full StateDB over a
// Merkle trie) builds chains that exercise the hard parts of a state diff —
// SELFDESTRUCT with storage (pre- and post-Cancun), re-creation at the same
// address with CREATE2, EIP-158 removal of touched empty accounts, slot
// clearing — and tipnode imports them. The flat state at every height must
// hash to the state root go-ethereum computed: any missing balance, nonce,
// code, slot, deletion or wipe changes the root.

var (
	// killer: empty calldata -> SSTORE(4, 1); any calldata -> SELFDESTRUCT(caller).
	killerCode = common.FromHex("361560075733ff5b600160045500")
	// childInit: SSTORE(0, NUMBER), then returns killerCode as runtime.
	childInit = append(common.FromHex("43600055600e6010600039600e6000f3"), killerCode...)
	// factory: CREATE2(value 0, calldata as init code, salt 0).
	factoryCode = common.FromHex("36600060003760003660006000f500")

	// Accounts of gethGenesis: the test contracts, an existing empty account,
	// and the child that factory creates from childInit.
	killerAddr  = common.HexToAddress("0x000000000000000000000000000000000000c111")
	factoryAddr = common.HexToAddress("0x000000000000000000000000000000000000fac7")
	emptyAddr   = common.HexToAddress("0x000000000000000000000000000000000000e3e3")
	childAddr   = crypto.CreateAddress2(factoryAddr, common.Hash{}, crypto.Keccak256(childInit))
)

func londonPoW() *params.ChainConfig {
	return &params.ChainConfig{
		ChainID: big.NewInt(1337), HomesteadBlock: big.NewInt(0), EIP150Block: big.NewInt(0),
		EIP155Block: big.NewInt(0), EIP158Block: big.NewInt(0), ByzantiumBlock: big.NewInt(0),
		ConstantinopleBlock: big.NewInt(0), PetersburgBlock: big.NewInt(0), IstanbulBlock: big.NewInt(0),
		MuirGlacierBlock: big.NewInt(0), BerlinBlock: big.NewInt(0), LondonBlock: big.NewInt(0),
		Ethash: new(params.EthashConfig),
	}
}

// gethCases are the rule sets the go-ethereum generated chains run under.
func gethCases() []struct {
	name   string
	config *params.ChainConfig
	engine consensus.Engine
} {
	return []struct {
		name   string
		config *params.ChainConfig
		engine consensus.Engine
	}{
		{"london-pow (full SELFDESTRUCT)", londonPoW(), ethash.NewFaker()},
		{"osaka-pos (EIP-6780)", params.MergedTestChainConfig, beacon.New(ethash.NewFaker())},
	}
}

func TestDifferentialStateAgainstGeth(t *testing.T) {
	for _, tc := range gethCases() {
		t.Run(tc.name, func(t *testing.T) { runDifferential(t, tc.config, tc.engine) })
	}
}

// gethGenesis is a genesis for go-ethereum's chain maker: a funded sender,
// the test contracts, an empty account and the system contracts (so
// post-Cancun/Prague system calls run as on a real chain), with a helper
// that sends signed transactions from the sender.
type gethGenesis struct {
	gspec  *core.Genesis
	engine consensus.Engine
	key    *ecdsa.PrivateKey
	sender common.Address
}

func newGethGenesis(config *params.ChainConfig, engine consensus.Engine) *gethGenesis {
	key, _ := crypto.HexToECDSA("b71c71a67e1177ad4e901695e1b4b9ee17ae16c6668d313eac2f96dbcda3f291")
	sender := crypto.PubkeyToAddress(key.PublicKey)
	alloc := types.GenesisAlloc{
		sender:      {Balance: new(big.Int).Mul(big.NewInt(1000), big.NewInt(params.Ether))},
		killerAddr:  {Code: killerCode, Balance: big.NewInt(7), Storage: map[common.Hash]common.Hash{{31: 1}: {31: 1}, {31: 2}: {31: 2}, {31: 3}: {31: 3}}},
		factoryAddr: {Code: factoryCode, Balance: new(big.Int)},
		emptyAddr:   {Balance: new(big.Int)}, // exists, empty: removed once touched (EIP-158)
	}
	alloc[params.BeaconRootsAddress] = types.Account{Code: params.BeaconRootsCode, Nonce: 1, Balance: new(big.Int)}
	alloc[params.HistoryStorageAddress] = types.Account{Code: params.HistoryStorageCode, Nonce: 1, Balance: new(big.Int)}
	alloc[params.WithdrawalQueueAddress] = types.Account{Code: params.WithdrawalQueueCode, Nonce: 1, Balance: new(big.Int)}
	alloc[params.ConsolidationQueueAddress] = types.Account{Code: params.ConsolidationQueueCode, Nonce: 1, Balance: new(big.Int)}
	gspec := &core.Genesis{Config: config, Alloc: alloc, GasLimit: 30_000_000, BaseFee: big.NewInt(params.InitialBaseFee), Difficulty: big.NewInt(1)}
	if config.TerminalTotalDifficulty != nil {
		gspec.Difficulty = big.NewInt(0)
	}
	return &gethGenesis{gspec: gspec, engine: engine, key: key, sender: sender}
}

// send adds a signed dynamic-fee transaction from the sender to b.
func (g *gethGenesis) send(b *core.BlockGen, to *common.Address, value int64, data []byte) {
	config := g.gspec.Config
	fee := new(big.Int).Add(new(big.Int).Mul(b.BaseFee(), big.NewInt(2)), big.NewInt(params.GWei))
	tx := types.MustSignNewTx(g.key, types.LatestSigner(config), &types.DynamicFeeTx{
		ChainID: config.ChainID, Nonce: b.TxNonce(g.sender), GasTipCap: big.NewInt(params.GWei), GasFeeCap: fee,
		Gas: 300_000, To: to, Value: big.NewInt(value), Data: data,
	})
	b.AddTx(tx)
}

// initStore returns a fresh store holding this genesis as block 0, and an
// importer on it.
func (g *gethGenesis) initStore(t *testing.T) (*store.DB, *chain.Genesis, *chain.Writer) {
	t.Helper()
	spec, err := json.Marshal(g.gspec)
	if err != nil {
		t.Fatal(err)
	}
	return chaintest.InitStore(t, spec)
}

// stateAt returns the state reader of view at height n.
func stateAt(t testing.TB, view store.View, n uint64) store.StateReader {
	t.Helper()
	r, err := view.StateAt(n)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// checkRoots checks that the flat state of view at every height n hashes to
// headers[n].Root, the root go-ethereum computed over its trie.
func checkRoots(t *testing.T, view store.View, headers []*types.Header) {
	t.Helper()
	for n, h := range headers {
		if root := flatRoot(t, view, uint64(n)); root != h.Root {
			t.Errorf("block %d: flat state root %s, go-ethereum %s", n, root.Hex(), h.Root.Hex())
		}
	}
}

func runDifferential(t *testing.T, config *params.ChainConfig, engine consensus.Engine) {
	gg := newGethGenesis(config, engine)
	var (
		killer  = killerAddr
		factory = factoryAddr
		empty   = emptyAddr
		ghost   = common.HexToAddress("0x000000000000000000000000000000000000905d")
		child   = childAddr
		send    = gg.send
	)
	script := []func(b *core.BlockGen){
		func(b *core.BlockGen) { send(b, &factory, 0, childInit) },                          // 1: create child (slot0 = 1)
		func(b *core.BlockGen) { send(b, &child, 5, nil); send(b, &killer, 0, nil) },        // 2: child slot4 = 1; killer slot4 = 1
		func(b *core.BlockGen) { send(b, &empty, 0, nil); send(b, &ghost, 0, nil) },         // 3: touch empty (removed), ghost (never created)
		func(b *core.BlockGen) { send(b, &child, 0, []byte{1}) },                            // 4: child selfdestructs (pre-Cancun: wiped+deleted)
		func(b *core.BlockGen) { send(b, &factory, 0, childInit) },                          // 5: re-create child at the same address
		func(b *core.BlockGen) { send(b, &killer, 0, []byte{1}); send(b, &killer, 3, nil) }, // 6: killer selfdestructs, then gets value
		func(b *core.BlockGen) { send(b, &child, 0, nil) },                                  // 7: child slot4 = 1 again
		func(b *core.BlockGen) {}, // 8: empty block
	}
	_, blocks, _ := core.GenerateChainWithGenesis(gg.gspec, engine, len(script), func(i int, b *core.BlockGen) { script[i](b) })

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
	headers := []*types.Header{g.Block.Header()}
	for _, b := range blocks {
		headers = append(headers, b.Header())
	}
	checkRoots(t, view, headers)
	// Spot checks that make the scenario's intent explicit.
	slot4 := common.Hash{31: 4}
	read := func(n uint64, addr common.Address, slot common.Hash) common.Hash {
		v, err := stateAt(t, view, n).Storage(addr, slot)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	exists := func(n uint64, addr common.Address) bool {
		acc, err := stateAt(t, view, n).Account(addr)
		if err != nil {
			t.Fatal(err)
		}
		return acc != nil
	}
	if !exists(2, empty) || exists(3, empty) || exists(3, ghost) {
		t.Error("EIP-158: the touched empty account must be removed at block 3, the ghost never created")
	}
	if read(2, child, slot4) != (common.Hash{31: 1}) {
		t.Error("child slot 4 not set at block 2")
	}
	if config.IsCancun(big.NewInt(4), blocks[3].Time()) {
		if !exists(4, child) || read(4, child, slot4) != (common.Hash{31: 1}) {
			t.Error("EIP-6780: a pre-existing contract's SELFDESTRUCT must keep it and its storage")
		}
	} else {
		if exists(4, child) || read(4, child, slot4) != (common.Hash{}) {
			t.Error("pre-Cancun SELFDESTRUCT must delete the child and wipe its storage at block 4")
		}
		if read(5, child, slot4) != (common.Hash{}) || read(5, child, common.Hash{}) != (common.Hash{31: 5}) {
			t.Error("re-created child must start with fresh storage (slot0 = 5, slot4 = 0)")
		}
		if read(6, killer, common.Hash{31: 1}) != (common.Hash{}) || read(5, killer, common.Hash{31: 1}) != (common.Hash{31: 1}) {
			t.Error("killer's genesis storage must read until block 5 and be wiped from block 6")
		}
	}
}
