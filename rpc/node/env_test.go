package node_test

import (
	"crypto/ecdsa"
	"io"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/params"
	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"github.com/holiman/uint256"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/devnet"
	"github.com/tipnode/tipnode/pending/stream"
	"github.com/tipnode/tipnode/rpc/eth"
	"github.com/tipnode/tipnode/rpc/node"
	"github.com/tipnode/tipnode/store"
)

const genesisTime = 1_700_000_000

// env is a dev chain with a sequencer driven by a ManualClock and an RPC
// server on 127.0.0.1:0.
type env struct {
	t      testing.TB
	db     *store.DB
	g      *chain.Genesis
	clock  *pending.ManualClock
	mgr    *pending.Manager
	pool   *pending.Pool
	seq    *pending.Sequencer
	api    *eth.API
	url    string
	accs   []devnet.Account
	signer types.Signer
	nonces map[common.Address]uint64
	cfg    pending.Config
	node   *node.Node
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, envOptions{})
}

// envOptions vary newEnv.
type envOptions struct {
	// pool configures the pool (zero: the defaults).
	pool pending.PoolConfig
	// keys are the node-held accounts: nil = the ten dev accounts (as
	// `tipnode dev`), empty = none (as `tipnode run`).
	keys []*ecdsa.PrivateKey
	// dev serves the dev chain's methods (as `tipnode dev`).
	dev bool
	// stream serves the pre-confirmation stream (as `tipnode dev`).
	stream bool
}

func newEnvWith(t testing.TB, opts envOptions) *env {
	t.Helper()
	accs, err := devnet.Accounts(devnet.Mnemonic, 10)
	if err != nil {
		t.Fatal(err)
	}
	addrs := make([]common.Address, len(accs))
	for i, a := range accs {
		addrs[i] = a.Address
	}
	spec, err := devnet.Genesis(devnet.GenesisConfig{ChainID: 1337, Accounts: addrs, Timestamp: genesisTime})
	if err != nil {
		t.Fatal(err)
	}
	db, g, w := chaintest.InitStore(t, spec)
	w.Stop() // the node opens its own writer
	clock := pending.NewManualClock(time.Unix(genesisTime+10, 0))
	keys := opts.keys
	if keys == nil {
		for _, a := range accs {
			keys = append(keys, a.Key)
		}
	}
	n := startSequencerNodeCfg(t, db, g, clock, opts.pool, keys, opts.dev, opts.stream)
	mgr, pool, seq, api, srv := n.Pending, n.Pool, n.Sequencer, n.API, n.Server
	return &env{t: t, db: db, g: g, clock: clock, mgr: mgr, pool: pool, seq: seq, api: api,
		url: "http://" + srv.Addr().String(), accs: accs, signer: types.LatestSigner(g.Config),
		nonces: make(map[common.Address]uint64), cfg: pending.DefaultConfig(), node: n}
}

// startSequencerNode starts a node with the default sequencer, the given
// pool limits and node-held keys, and an RPC server on 127.0.0.1:0 over db
// (no writer may run on it), stopped at the end of the test.
func startSequencerNode(t *testing.T, db *store.DB, g *chain.Genesis, clock pending.Clock, pool pending.PoolConfig, keys []*ecdsa.PrivateKey) *node.Node {
	t.Helper()
	return startSequencerNodeCfg(t, db, g, clock, pool, keys, false, false)
}

func startSequencerNodeCfg(t testing.TB, db *store.DB, g *chain.Genesis, clock pending.Clock, pool pending.PoolConfig, keys []*ecdsa.PrivateKey, dev, withStream bool) *node.Node {
	t.Helper()
	cfg := node.DefaultConfig()
	if withStream {
		cfg.Stream = &stream.PublisherConfig{}
	}
	cfg.Server.Addr = "127.0.0.1:0"
	cfg.Pool = pool
	cfg.DevKeys = keys
	seqCfg := pending.DefaultConfig()
	seqCfg.Dev = dev
	cfg.Sequencer = &seqCfg
	n, err := node.New(cfg, db, g, clock, zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Stop(); err != nil {
			t.Errorf("node stop: %v", err)
		}
	})
	return n
}

// tick advances the clock by n pre-confirmation intervals and waits until
// the sequencer has handled them.
func (e *env) tick(n int) {
	e.t.Helper()
	for range n {
		e.clock.Advance(e.cfg.PreconfInterval)
	}
	e.seq.Sync()
	if err := e.seq.Err(); err != nil {
		e.t.Fatal(err)
	}
}

// toSeal advances to (and through) the next seal.
func (e *env) toSeal() {
	e.t.Helper()
	cur := e.mgr.Current().Header().Number.Uint64()
	for i := 0; i < 100 && e.mgr.Current().Header().Number.Uint64() == cur; i++ {
		e.tick(1)
	}
	if e.mgr.Current().Header().Number.Uint64() == cur {
		e.t.Fatal("no seal after 100 intervals")
	}
}

func (e *env) client() *ethclient.Client {
	e.t.Helper()
	c, err := gethrpc.Dial(e.url)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(c.Close)
	return ethclient.NewClient(c)
}

// tx signs a dynamic-fee transaction from account i with the next nonce.
func (e *env) tx(i int, to *common.Address, value *big.Int, gas uint64, data []byte) *types.Transaction {
	e.t.Helper()
	key := e.accs[i].Key
	addr := e.accs[i].Address
	n := e.nonces[addr]
	e.nonces[addr] = n + 1
	return signTx(e.t, e.signer, key, &types.DynamicFeeTx{
		ChainID: e.g.Config.ChainID, Nonce: n, GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(10 * params.GWei),
		Gas: gas, To: to, Value: value, Data: data,
	})
}

func signTx(t testing.TB, signer types.Signer, key *ecdsa.PrivateKey, inner types.TxData) *types.Transaction {
	tx, err := types.SignNewTx(key, signer, inner)
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

// pairRuntime: with empty calldata returns (slot0, slot1); otherwise
// writes calldata[0:32] to slots 0 and 1 and logs it as LOG1 topic.
var pairRuntime = common.FromHex("36601557" + "600054600052" + "600154602052" + "60406000f3" + "5b" + "600035806000558060015560006000a100")

// deployCode wraps runtime in minimal init code.
func deployCode(runtime []byte) []byte {
	if len(runtime) > 255 {
		panic("runtime too long")
	}
	init := []byte{0x60, byte(len(runtime)), 0x80, 0x60, 0x0b, 0x60, 0x00, 0x39, 0x60, 0x00, 0xf3}
	return append(init, runtime...)
}

// numberTimeInit returns (NUMBER, TIMESTAMP) as the "deployed code" of a
// creation call.
var numberTimeInit = common.FromHex("43600052426020526040" + "6000f3")

func u256(v int64) *uint256.Int { return uint256.NewInt(uint64(v)) }

func uint256FromBig(b *big.Int) *uint256.Int { return uint256.MustFromBig(b) }
