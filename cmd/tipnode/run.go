package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/devnet"
	"github.com/tipnode/tipnode/rpc"
	"github.com/tipnode/tipnode/rpc/eth"
	"github.com/tipnode/tipnode/store"
)

// NodeFlags are the serving settings shared by `run` and `dev`.
type NodeFlags struct {
	HTTPAddr        string
	Sequencer       bool
	PreconfInterval time.Duration
	BlockTime       time.Duration
	GasLimit        uint64
	Coinbase        string
	GasCap          uint64
	EVMTimeout      time.Duration
	RequestTimeout  time.Duration
	Metrics         bool
	CORSDomains     string
	BatchLimit      int
	LogsRange       uint64
}

func (f *NodeFlags) register(fs *flag.FlagSet, dev bool) {
	seq := pending.DefaultConfig()
	api := eth.DefaultAPIConfig()
	fs.StringVar(&f.HTTPAddr, "http.addr", rpc.DefaultAddr, "JSON-RPC listen address (HTTP and websocket)")
	if !dev {
		fs.BoolVar(&f.Sequencer, "sequencer", false, "run the embedded sequencer on top of the store (pre-confirmations and block sealing)")
	}
	fs.DurationVar(&f.PreconfInterval, "preconf.interval", seq.PreconfInterval, "sequencer: pre-confirmation interval")
	fs.DurationVar(&f.BlockTime, "block.time", seq.BlockTime, "sequencer: block time (a multiple of --preconf.interval)")
	fs.Uint64Var(&f.GasLimit, "gaslimit", 0, "sequencer: desired block gas limit (0 = keep the parent's)")
	fs.StringVar(&f.Coinbase, "coinbase", "0x0000000000000000000000000000000000000000", "sequencer: fee recipient of sealed blocks")
	fs.Uint64Var(&f.GasCap, "rpc.gascap", api.GasCap, "gas cap of eth_call / eth_estimateGas / eth_simulateV1")
	fs.DurationVar(&f.EVMTimeout, "rpc.evmtimeout", api.EVMTimeout, "time limit of one eth_call / eth_estimateGas / eth_simulateV1")
	fs.DurationVar(&f.RequestTimeout, "rpc.timeout", rpc.DefaultRequestTimeout, "time limit of one JSON-RPC message")
	fs.BoolVar(&f.Metrics, "metrics", dev, "serve Prometheus metrics on /metrics of the RPC listener")
	fs.StringVar(&f.CORSDomains, "http.corsdomain", "", "comma-separated browser origins allowed to call the HTTP endpoint (\"*\" = any)")
	fs.IntVar(&f.BatchLimit, "rpc.batchlimit", rpc.DefaultMaxBatch, "most requests in one JSON-RPC batch")
	fs.Uint64Var(&f.LogsRange, "rpc.logsrange", api.LogsRangeLimit, "largest block range of one eth_getLogs")
}

func (f *NodeFlags) sequencerConfig() (pending.Config, error) {
	c := pending.DefaultConfig()
	c.PreconfInterval, c.BlockTime, c.GasLimit = f.PreconfInterval, f.BlockTime, f.GasLimit
	if !common.IsHexAddress(f.Coinbase) {
		return c, fmt.Errorf("--coinbase %q is not an address", f.Coinbase)
	}
	c.Coinbase = common.HexToAddress(f.Coinbase)
	return c, c.Validate()
}

// node is a running tipnode: RPC server, pool and optional sequencer over
// one store.
type node struct {
	srv  *rpc.Server
	api  *eth.API
	pool *pending.Pool
	mgr  *pending.Manager
	seq  *pending.Sequencer // nil without --sequencer
	log  zerolog.Logger
}

// startNode wires and starts a node. clock is the sequencer's and pool's
// time source (pending.SystemClock{} outside tests).
func startNode(f NodeFlags, db *store.DB, g *chain.Genesis, clock pending.Clock, log zerolog.Logger) (*node, error) {
	apiCfg := eth.DefaultAPIConfig()
	apiCfg.GasCap, apiCfg.EVMTimeout, apiCfg.ClientVersion = f.GasCap, f.EVMTimeout, "tipnode/v"+version
	apiCfg.LogsRangeLimit = f.LogsRange
	srvCfg := rpc.DefaultConfig()
	srvCfg.Addr, srvCfg.RequestTimeout, srvCfg.MaxBatch = f.HTTPAddr, f.RequestTimeout, f.BatchLimit
	for _, o := range strings.Split(f.CORSDomains, ",") {
		if o = strings.TrimSpace(o); o != "" {
			srvCfg.CORSOrigins = append(srvCfg.CORSOrigins, o)
		}
	}
	var seqCfg pending.Config
	if f.Sequencer {
		var err error
		if seqCfg, err = f.sequencerConfig(); err != nil {
			return nil, err
		}
	}

	mgr := pending.NewManager(db, g.Config, clock)
	var (
		reg     *prometheus.Registry
		metrics *pending.Metrics
	)
	if f.Metrics {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		metrics = pending.NewMetrics(reg, mgr.SnapshotAge)
	}
	pool, err := pending.NewPool(pending.DefaultPoolConfig(), g.Config, mgr, clock, metrics, log)
	if err != nil {
		return nil, err
	}
	api, err := eth.NewAPI(apiCfg, db, g, pool, log)
	if err != nil {
		return nil, err
	}
	srv, err := rpc.NewServer(srvCfg, log)
	if err != nil {
		return nil, err
	}
	api.Register(srv)
	srv.SetErrorMapper(api.MapError)
	if reg != nil {
		srv.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	}
	n := &node{srv: srv, api: api, pool: pool, mgr: mgr, log: log}
	if f.Sequencer {
		seqCfg.Metrics = metrics
		seqCfg.OnSeal = func(b *types.Block, _ types.Receipts) { api.NotifyNewHead(b.Header()) }
		seq, err := pending.New(seqCfg, db, api.Executor(), pool, clock, log)
		if err != nil {
			return nil, err
		}
		if err := seq.Start(); err != nil {
			return nil, err
		}
		api.SetPending(mgr)
		n.seq = seq
	}
	if err := srv.Start(); err != nil {
		if n.seq != nil {
			n.seq.Stop()
		}
		return nil, err
	}
	return n, nil
}

// wait blocks until ctx ends or the sequencer fails.
func (n *node) wait(ctx context.Context) error {
	var seqDone <-chan struct{}
	if n.seq != nil {
		seqDone = n.seq.Done()
	}
	select {
	case <-ctx.Done():
		return nil
	case <-seqDone:
		return n.seq.Err()
	}
}

// stop shuts down in order: the RPC server stops accepting and finishes
// in-flight requests, then the sequencer stops (sealing a pending block that
// holds pre-confirmed transactions, in one atomic write). The caller closes
// the store afterwards.
func (n *node) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	err := n.srv.Stop(ctx)
	if n.seq != nil {
		err = errors.Join(err, n.seq.Stop())
	}
	return err
}

func runRun(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var (
		sf StoreFlags
		lc LogConfig
		nf NodeFlags
	)
	sf.register(fs)
	lc.register(fs)
	nf.register(fs, false)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := lc.Validate(); err != nil {
		return err
	}
	if sf.DataDir == "" {
		return errors.New("--datadir is required")
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	log := lc.logger(os.Stderr)
	db, err := openStore(sf.config(), log)
	if err != nil {
		return err
	}
	defer db.Close()
	g, err := loadChain(db)
	if err != nil {
		return err
	}
	return serveUntilDone(ctx, nf, db, g, log)
}

func serveUntilDone(ctx context.Context, nf NodeFlags, db *store.DB, g *chain.Genesis, log zerolog.Logger) error {
	n, err := startNode(nf, db, g, pending.SystemClock{}, log)
	if err != nil {
		return err
	}
	runErr := n.wait(ctx)
	log.Info().Msg("shutting down")
	return errors.Join(runErr, n.stop())
}

func runDev(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	var (
		sf       StoreFlags
		lc       LogConfig
		nf       NodeFlags
		chainID  uint64
		mnemonic string
		accounts int
	)
	sf.register(fs)
	lc.register(fs)
	nf.register(fs, true)
	fs.Uint64Var(&chainID, "chainid", devnet.DefaultChainID, "chain id of a new dev chain")
	fs.StringVar(&mnemonic, "mnemonic", devnet.Mnemonic, "BIP-39 mnemonic of the prefunded dev accounts")
	fs.IntVar(&accounts, "accounts", 10, "number of prefunded dev accounts (m/44'/60'/0'/0/i)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := lc.Validate(); err != nil {
		return err
	}
	if accounts < 1 || accounts > 1000 {
		return fmt.Errorf("--accounts %d: want 1..1000", accounts)
	}
	nf.Sequencer = true
	log := lc.logger(os.Stderr)
	if sf.DataDir == "" {
		dir, err := os.MkdirTemp("", "tipnode-dev-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		sf.DataDir = dir
	}
	db, err := openStore(sf.config(), log)
	if err != nil {
		return err
	}
	defer db.Close()
	accs, err := devnet.Accounts(mnemonic, accounts)
	if err != nil {
		return err
	}
	g, err := devChain(db, chainID, accs, time.Now(), log)
	if err != nil {
		return err
	}
	printDevBanner(os.Stdout, g, mnemonic, accs, nf.HTTPAddr, sf.DataDir)
	return serveUntilDone(ctx, nf, db, g, log)
}

// devChain returns the chain of a dev data directory, writing a fresh dev
// genesis (created at now) when the store is empty.
func devChain(db *store.DB, chainID uint64, accs []devnet.Account, now time.Time, log zerolog.Logger) (*chain.Genesis, error) {
	if g, err := loadChain(db); err == nil {
		if got := g.Config.ChainID.Uint64(); got != chainID {
			return nil, fmt.Errorf("the data directory holds a chain with id %d, not %d: pass --chainid %d or use another --datadir", got, chainID, got)
		}
		return g, nil
	}
	addrs := make([]common.Address, len(accs))
	for i, a := range accs {
		addrs[i] = a.Address
	}
	spec, err := devnet.Genesis(devnet.GenesisConfig{ChainID: chainID, Accounts: addrs, Timestamp: uint64(now.Unix())})
	if err != nil {
		return nil, err
	}
	g, err := chain.ParseGenesis(spec)
	if err != nil {
		return nil, err
	}
	if err := chain.InitGenesis(db, g); err != nil {
		return nil, err
	}
	log.Info().Str("genesis", g.Block.Hash().Hex()).Uint64("chainId", chainID).Msg("dev chain created")
	return g, nil
}

func printDevBanner(w io.Writer, g *chain.Genesis, mnemonic string, accs []devnet.Account, addr, dir string) {
	fmt.Fprintf(w, "\ntipnode dev chain (chain id %d), data directory %s\n", g.Config.ChainID, dir)
	fmt.Fprintf(w, "JSON-RPC: http://%s  (websocket: ws://%s)\n\n", addr, addr)
	fmt.Fprintf(w, "Prefunded accounts (mnemonic %q, m/44'/60'/0'/0/i):\n", mnemonic)
	for i, a := range accs {
		fmt.Fprintf(w, "(%d) %s  %s\n", i, a.Address.Hex(), a.KeyHex())
	}
	fmt.Fprintln(w, "\nThese keys are public knowledge: never use them on a real network.")
	fmt.Fprintln(w)
}

func newFlagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("tipnode", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}
