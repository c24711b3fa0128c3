// Package followtest runs a real go-ethereum node in process (its
// ethclient/simulated backend with a simulated beacon) with HTTP and
// websocket endpoints on loopback, as the upstream of follower tests, and
// gives the genesis spec that initialises a tipnode store for its chain.
// Test support only.
package followtest

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	gethnode "github.com/ethereum/go-ethereum/node"
	"github.com/ethereum/go-ethereum/params"
)

// Geth is a running go-ethereum node.
type Geth struct {
	*simulated.Backend
	// HTTP and WS are its endpoints (the same port).
	HTTP, WS string
	// Spec is its genesis in go-ethereum's JSON (for chain.ParseGenesis).
	Spec []byte
}

// Options vary StartGeth.
type Options struct {
	// Alloc funds accounts and deploys code at genesis.
	Alloc types.GenesisAlloc
	// NoDebug leaves the debug namespace (debug_getRawBlock) off the
	// endpoints: followers then fetch JSON blocks.
	NoDebug bool
	// GasLimit of the blocks (0: go-ethereum's default).
	GasLimit uint64
	// Preimages makes go-ethereum record the preimages of hashed keys, so
	// that its state dumps (debug_dumpBlock) name addresses and slots.
	Preimages bool
}

// StartGeth starts a go-ethereum node, closed at the end of the test.
func StartGeth(t testing.TB, opts Options) *Geth {
	t.Helper()
	modules := []string{"eth", "net", "web3"}
	if !opts.NoDebug {
		modules = append(modules, "debug")
	}
	var lastErr error
	for range 5 { // the free port may be taken between choosing and binding it
		port := freePort(t)
		var spec []byte
		var specErr error
		options := []func(*gethnode.Config, *ethconfig.Config){
			func(nc *gethnode.Config, ec *ethconfig.Config) {
				nc.HTTPHost, nc.HTTPPort, nc.HTTPModules = "127.0.0.1", port, modules
				nc.WSHost, nc.WSPort, nc.WSModules = "127.0.0.1", port, modules
				nc.HTTPVirtualHosts = []string{"*"}
				nc.WSOrigins = []string{"*"}
			},
		}
		if opts.Preimages {
			options = append(options, func(_ *gethnode.Config, ec *ethconfig.Config) { ec.Preimages = true })
		}
		if opts.GasLimit != 0 {
			options = append(options, simulated.WithBlockGasLimit(opts.GasLimit))
		}
		options = append(options, func(_ *gethnode.Config, ec *ethconfig.Config) {
			g := *ec.Genesis
			if g.Difficulty == nil { // what go-ethereum assumes for a merged chain; the JSON requires it
				g.Difficulty = new(big.Int)
			}
			spec, specErr = json.Marshal(&g)
		})
		b, err := newBackend(opts.Alloc, options)
		if err != nil {
			lastErr = err
			continue
		}
		if specErr != nil {
			b.Close()
			t.Fatal(specErr)
		}
		t.Cleanup(func() { b.Close() })
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		return &Geth{Backend: b, HTTP: "http://" + addr, WS: "ws://" + addr, Spec: spec}
	}
	t.Fatalf("go-ethereum node did not start: %v", lastErr)
	return nil
}

// newBackend is simulated.NewBackend, which panics when the node cannot
// start (a port taken): the panic becomes an error.
func newBackend(alloc types.GenesisAlloc, options []func(*gethnode.Config, *ethconfig.Config)) (b *simulated.Backend, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return simulated.NewBackend(alloc, options...), nil
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Genesis returns the go-ethereum genesis of spec (for tests that need
// its alloc or config).
func Genesis(t testing.TB, spec []byte) *core.Genesis {
	t.Helper()
	g := new(core.Genesis)
	if err := json.Unmarshal(spec, g); err != nil {
		t.Fatal(err)
	}
	return g
}

// Accounts is how many funded test accounts Fund allocates.
const Accounts = 10

// Key returns the key of funded test account i (0 <= i < Accounts).
func Key(i int) *ecdsa.PrivateKey {
	k, err := crypto.ToECDSA(crypto.Keccak256([]byte{'f', 'o', 'l', 'l', 'o', 'w', byte(i)}))
	if err != nil {
		panic(err)
	}
	return k
}

// Address returns the address of funded test account i.
func Address(i int) common.Address { return crypto.PubkeyToAddress(Key(i).PublicKey) }

// Logger emits LOG1 with calldata[0:32] as its topic; Store writes
// calldata[0:32] to slot calldata[32:64]; Killer self-destructs to the
// caller when called with calldata, else writes slot 1 = 1. LoggerCode etc.
// are their runtimes.
var (
	LoggerCode = common.FromHex("600035600060" + "00a100")
	StoreCode  = common.FromHex("6000356020355500")
	KillerCode = common.FromHex("361560075733ff5b600160015500")
)

// Fund is an alloc with the test accounts funded (1e24 wei each).
func Fund() types.GenesisAlloc {
	a := types.GenesisAlloc{}
	for i := range Accounts {
		a[Address(i)] = types.Account{Balance: new(big.Int).Mul(big.NewInt(1e6), big.NewInt(params.Ether))}
	}
	return a
}

// Tx signs a dynamic-fee transaction from account i with nonce (chain id
// 1337).
func Tx(t testing.TB, i int, nonce uint64, to *common.Address, value *big.Int, gas uint64, data []byte) *types.Transaction {
	t.Helper()
	tx, err := types.SignNewTx(Key(i), types.LatestSigner(params.AllDevChainProtocolChanges), &types.DynamicFeeTx{
		ChainID: params.AllDevChainProtocolChanges.ChainID, Nonce: nonce, GasTipCap: big.NewInt(2 * params.GWei),
		GasFeeCap: big.NewInt(100 * params.GWei), Gas: gas, To: to, Value: value, Data: data,
	})
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

// Send sends txs to g and commits blocks until all of them are mined (the
// node may also mine others: transactions of a branch a Fork dropped come
// back to its pool). It returns the hash of the last block committed.
func (g *Geth) Send(t testing.TB, txs ...*types.Transaction) common.Hash {
	t.Helper()
	ctx := context.Background()
	for _, tx := range txs {
		if err := g.Client().SendTransaction(ctx, tx); err != nil {
			t.Fatalf("send tx %d: %v", tx.Nonce(), err)
		}
	}
	for range 20 {
		hash := g.Commit()
		mined := true
		for _, tx := range txs {
			from, err := types.Sender(types.LatestSigner(params.AllDevChainProtocolChanges), tx)
			if err != nil {
				t.Fatal(err)
			}
			nonce, err := g.Client().NonceAt(ctx, from, nil)
			if err != nil {
				t.Fatal(err)
			}
			if nonce <= tx.Nonce() {
				mined = false
				break
			}
		}
		if mined {
			return hash
		}
	}
	t.Fatalf("%d transactions not mined after 20 blocks", len(txs))
	return common.Hash{}
}
