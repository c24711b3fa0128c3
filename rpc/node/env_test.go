package node_test

import (
	"crypto/ecdsa"
	"io"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/ethclient"
	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"github.com/holiman/uint256"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/pendingtest"
	"github.com/tipnode/tipnode/pending/sequencer"
	"github.com/tipnode/tipnode/pending/stream"
	"github.com/tipnode/tipnode/rpc/eth"
	"github.com/tipnode/tipnode/rpc/node"
	"github.com/tipnode/tipnode/store"
)

// env is a dev chain (ten funded keys) with a node's sequencer, driven by
// a ManualClock, and its RPC server on 127.0.0.1:0; the harness's Tx,
// Tick and Seal act on the node's pool and sequencer.
type env struct {
	*pendingtest.Harness
	t    testing.TB
	api  *eth.API
	url  string
	node *node.Node
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, envOptions{})
}

// envOptions vary newEnv.
type envOptions struct {
	// pool configures the pool (zero: the defaults).
	pool sequencer.PoolConfig
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
	h := pendingtest.New(t, pendingtest.Options{Keys: 10, External: true}) // the node opens its own writer
	keys := opts.keys
	if keys == nil {
		keys = pendingtest.Keys(h.Accs)
	}
	n := startSequencerNodeCfg(t, h.DB, h.Genesis, h.Clock, opts.pool, keys, opts.dev, opts.stream)
	h.Attach(n.Pending, n.Pool, n.Sequencer)
	return &env{Harness: h, t: t, api: n.API, url: "http://" + n.Server.Addr().String(), node: n}
}

// startSequencerNode starts a node with the default sequencer, the given
// pool limits and node-held keys, and an RPC server on 127.0.0.1:0 over db
// (no writer may run on it), stopped at the end of the test.
func startSequencerNode(t *testing.T, db *store.DB, g *chain.Genesis, clock pending.Clock, pool sequencer.PoolConfig, keys []*ecdsa.PrivateKey) *node.Node {
	t.Helper()
	return startSequencerNodeCfg(t, db, g, clock, pool, keys, false, false)
}

func startSequencerNodeCfg(t testing.TB, db *store.DB, g *chain.Genesis, clock pending.Clock, pool sequencer.PoolConfig, keys []*ecdsa.PrivateKey, dev, withStream bool) *node.Node {
	t.Helper()
	cfg := node.DefaultConfig()
	if withStream {
		cfg.Stream = &stream.PublisherConfig{}
	}
	cfg.Server.Addr = "127.0.0.1:0"
	cfg.Pool = pool
	cfg.DevKeys = keys
	seqCfg := sequencer.DefaultConfig()
	seqCfg.Dev = dev
	cfg.Sequencer = &seqCfg
	n := startNode(t, cfg, db, g, clock, zerolog.New(io.Discard))
	return n
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

// pairRuntime: with empty calldata returns (slot0, slot1); otherwise
// writes calldata[0:32] to slots 0 and 1 and logs it as LOG1 topic.
var pairRuntime = common.FromHex("36601557" + "600054600052" + "600154602052" + "60406000f3" + "5b" + "600035806000558060015560006000a100")

// numberTimeInit returns (NUMBER, TIMESTAMP) as the "deployed code" of a
// creation call.
var numberTimeInit = common.FromHex("43600052426020526040" + "6000f3")

func u256(v int64) *uint256.Int { return uint256.NewInt(uint64(v)) }

func uint256FromBig(b *big.Int) *uint256.Int { return uint256.MustFromBig(b) }

// startNode creates and starts a node, stopped at the end of the test (an
// error of that Stop fails it).
func startNode(t testing.TB, cfg node.Config, db *store.DB, g *chain.Genesis, clock pending.Clock, log zerolog.Logger, opts ...node.Option) *node.Node {
	t.Helper()
	n, err := node.New(cfg, db, g, clock, log, opts...)
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
