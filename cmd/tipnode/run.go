package main

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/devnet"
	"github.com/tipnode/tipnode/chain/follow"
	"github.com/tipnode/tipnode/chain/op"
	"github.com/tipnode/tipnode/chain/op/preset"
	"github.com/tipnode/tipnode/chain/remotestate"
	"github.com/tipnode/tipnode/chain/statesync"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/sequencer"
	"github.com/tipnode/tipnode/pending/stream"
	"github.com/tipnode/tipnode/rpc"
	"github.com/tipnode/tipnode/rpc/eth"
	"github.com/tipnode/tipnode/rpc/node"
	"github.com/tipnode/tipnode/store"
)

// NodeFlags are the serving settings shared by `run` and `dev`.
type NodeFlags struct {
	HTTPAddr  string
	Sequencer bool
	// Dev (not a flag: set by `tipnode dev`) serves the dev chain's
	// anvil_* / hardhat_* / evm_* methods (sequencer.Config.Dev).
	Dev             bool
	PreconfInterval time.Duration
	PreconfSteps    int
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
	ReadOnly        bool // run --readonly: serve without writing

	// Limits against slow and abusive clients (rpc.Config) and of EVM
	// executions (eth.APIConfig).
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	HTTPIdleTimeout   time.Duration
	WSIdleTimeout     time.Duration
	WSMaxQueueMiB     int64
	MaxOutputMiB      int64
	MaxConns          int
	MaxConnsPerIP     int
	ConnReserve       int
	ConnReservePerIP  int
	MaxCallsPerIP     int
	EVMConcurrency    int
	EVMQueue          int
	EVMWait           time.Duration
	TxSyncTimeout     time.Duration
	TxSyncMaxTimeout  time.Duration

	// MemoryLimitMiB is the Go soft memory limit (--memory.limit; 0 =
	// automatic, negative = none); heapCaches (not a flag: set from the
	// store flags) is what the store's caches hold on the Go heap.
	MemoryLimitMiB int64
	// GCPercent is the garbage collector's target (--memory.gcpercent;
	// 0 = GOGC as the environment sets it).
	GCPercent int
	// WriterNice is --writer.nice (chain.WriterConfig.SectionNice).
	WriterNice int
	heapCaches int64
	JSTracers  bool
	// Profile is the Go profiles' listener (--pprof.*).
	Profile ProfileConfig

	preloadKZG bool // set by serveUntilDone, not a flag
	opChain    bool // the chain has OP rules (set by serveUntilDone, not a flag)

	// The synthetic L1 origin of an OP chain's sequencer (--op.*).
	OPL1BaseFee         string
	OPL1BlobBaseFee     string
	OPBaseFeeScalar     uint64
	OPBlobBaseFeeScalar uint64
	OPOperatorFeeScalar uint64
	OPOperatorFeeConst  uint64
	OPDAFootprintScalar uint64
	OPL1BlockTime       time.Duration
	OPMinBaseFee        uint64
	// opBatcherHash is the L1-info deposit's batcher hash (not a flag:
	// an OP fork continues its upstream's, continueL1).
	opBatcherHash common.Hash
	// opEIP1559 are the Holocene eip1559Params (denominator, elasticity)
	// of each header (not a flag: zero = the chain's constants; an OP
	// fork continues its upstream's, continueL1).
	opEIP1559 [2]uint32
	// Follow mode (run only).
	FollowRPC       string
	FollowMaxReorg  uint64
	FollowPoll      time.Duration
	FollowBatch     int
	FollowParallel  int
	FollowNoGzip    bool
	FollowTxForward string        // follow: sequencer URL transactions are forwarded to ("" = --follow.rpc, "none" = pool locally)
	FollowPreconf   string        // --follow.preconf: the sequencer's stream (a read replica)
	FollowMaxAge    time.Duration // --follow.preconf.maxage

	// The pre-confirmation stream (/preconfirmations).
	Stream        bool
	SnapshotServe bool
	StreamQueue   int
	StreamMaxSubs int
	StreamRoots   string
}

func (f *NodeFlags) register(fs *flag.FlagSet, dev bool) {
	seq := sequencer.DefaultConfig()
	api := eth.DefaultAPIConfig()
	fs.StringVar(&f.HTTPAddr, "http.addr", rpc.DefaultAddr, "JSON-RPC listen address (HTTP and websocket)")
	if !dev {
		fs.BoolVar(&f.Sequencer, "sequencer", false, "run the embedded sequencer on top of the store (pre-confirmations and block sealing)")
		fc := follow.DefaultConfig()
		fs.StringVar(&f.FollowRPC, "follow.rpc", "", "follow the chain of this upstream JSON-RPC node (http(s):// polled, ws(s):// subscribed)")
		fs.Uint64Var(&f.FollowMaxReorg, "follow.maxreorg", fc.MaxReorg, "follow: deepest reorg followed (blocks); a deeper one stops following")
		fs.DurationVar(&f.FollowPoll, "follow.poll", fc.PollInterval, "follow: upstream head polling interval (http; ws polls 4x slower as a safety net)")
		fs.IntVar(&f.FollowBatch, "follow.batch", fc.FetchBatch, "follow: blocks per upstream request during catch-up")
		fs.IntVar(&f.FollowParallel, "follow.parallel", fc.FetchParallel, "follow: upstream requests in flight during catch-up")
		fs.StringVar(&f.FollowTxForward, "follow.txforward", "", "follow: forward eth_sendRawTransaction to this sequencer URL (http(s):// or ws(s)://; default the --follow.rpc URL; \"none\" = keep them in the local pool)")
		pc := node.DefaultPreconfConfig()
		fs.StringVar(&f.FollowPreconf, "follow.preconf", "", "follow: the sequencer's pre-confirmation stream (ws(s)://HOST:PORT/preconfirmations); pending replays it (a read replica)")
		fs.DurationVar(&f.FollowMaxAge, "follow.preconf.maxage", pc.Replica.MaxAge, "follow: stream silent longer than this: pending answers the canonical head until the next message")
		fs.BoolVar(&f.FollowNoGzip, "follow.nogzip", false, "follow: ask an http(s) upstream for uncompressed answers (less CPU on loopback or a fast LAN, more bytes)")
	}
	sc := stream.DefaultPublisherConfig()
	fs.BoolVar(&f.Stream, "stream", dev, "serve the pre-confirmation stream on ws://HTTP.ADDR/preconfirmations (with --sequencer, or on a replica)")
	fs.IntVar(&f.StreamQueue, "stream.queue", sc.SendQueue, "stream: messages that may wait for one subscriber; a slower one is dropped (close 1008)")
	fs.IntVar(&f.StreamMaxSubs, "stream.maxsubscribers", sc.MaxSubscribers, "stream: most subscribers at once (HTTP 503 beyond)")
	fs.StringVar(&f.StreamRoots, "stream.roots", sc.Roots, "stream: each pre-confirmation carries its state root and block hash (on), or zeros (off, as OP subblocks; a sequencer then computes no root per pre-confirmation, only at each seal)")
	fs.DurationVar(&f.PreconfInterval, "preconf.interval", seq.PreconfInterval, "sequencer: pre-confirmation interval")
	fs.IntVar(&f.PreconfSteps, "preconf.steps", seq.Steps, "sequencer: execution steps per pre-confirmation interval (pooled transactions executed every interval/steps, published at the interval; 1: only at the interval, tip order over the whole interval)")
	fs.DurationVar(&f.BlockTime, "block.time", seq.BlockTime, "sequencer: block time (a multiple of --preconf.interval)")
	fs.Uint64Var(&f.GasLimit, "gaslimit", 0, "sequencer: desired block gas limit (0 = keep the parent's)")
	fs.StringVar(&f.Coinbase, "coinbase", "", "sequencer: fee recipient of sealed blocks (default the zero address; on an OP chain the SequencerFeeVault 0x4200…0011)")
	l1 := op.DefaultSyntheticL1()
	fs.StringVar(&f.OPL1BaseFee, "op.l1.basefee", l1.BaseFee.String(), "OP sequencer: L1 base fee (wei) of the synthetic L1 origin in each block's L1-info deposit")
	fs.StringVar(&f.OPL1BlobBaseFee, "op.l1.blobbasefee", l1.BlobBaseFee.String(), "OP sequencer: L1 blob base fee (wei)")
	fs.Uint64Var(&f.OPBaseFeeScalar, "op.l1.basefeescalar", uint64(l1.BaseFeeScalar), "OP sequencer: Ecotone L1 base fee scalar")
	fs.Uint64Var(&f.OPBlobBaseFeeScalar, "op.l1.blobbasefeescalar", uint64(l1.BlobBaseFeeScalar), "OP sequencer: Ecotone L1 blob base fee scalar")
	fs.Uint64Var(&f.OPOperatorFeeScalar, "op.operatorfee.scalar", uint64(l1.OperatorFeeScalar), "OP sequencer: operator fee scalar (Jovian: fee = gas * scalar * 100 + constant)")
	fs.Uint64Var(&f.OPOperatorFeeConst, "op.operatorfee.constant", l1.OperatorFeeConstant, "OP sequencer: operator fee constant (wei)")
	fs.Uint64Var(&f.OPDAFootprintScalar, "op.dafootprintscalar", uint64(l1.DAFootprintGasScalar), "OP sequencer: Jovian DA footprint gas scalar (1..65535)")
	fs.DurationVar(&f.OPL1BlockTime, "op.l1.blocktime", time.Duration(l1.BlockTime)*time.Second, "OP sequencer: the synthetic L1 origin advances by one block per this much L2 time (whole seconds)")
	fs.Uint64Var(&f.OPMinBaseFee, "op.minbasefee", 0, "OP sequencer: Jovian minimum base fee (wei) in each header's extraData")
	fs.Uint64Var(&f.GasCap, "rpc.gascap", api.GasCap, "gas cap of eth_call / eth_estimateGas / eth_simulateV1")
	fs.DurationVar(&f.EVMTimeout, "rpc.evmtimeout", api.EVMTimeout, "time limit of one eth_call / eth_estimateGas / eth_simulateV1 / debug_trace* request")
	fs.DurationVar(&f.RequestTimeout, "rpc.timeout", rpc.DefaultRequestTimeout, "time limit of one JSON-RPC message")
	fs.BoolVar(&f.Metrics, "metrics", dev, "serve Prometheus metrics on /metrics of the RPC listener")
	fs.BoolVar(&f.SnapshotServe, "snapshot.serve", false, "serve the state at the finalized block (latest when none) as a snapshot stream on GET /snapshot of the RPC listener, for 'tipnode init --snapshot-from' (at most 2 streams at once)")
	fs.StringVar(&f.CORSDomains, "http.corsdomain", "", "comma-separated browser origins allowed to call the HTTP endpoint (\"*\" = any)")
	fs.IntVar(&f.BatchLimit, "rpc.batchlimit", rpc.DefaultMaxBatch, "most requests in one JSON-RPC batch")
	fs.Uint64Var(&f.LogsRange, "rpc.logsrange", api.LogsRangeLimit, "largest block range of one eth_getLogs")

	fs.DurationVar(&f.ReadHeaderTimeout, "http.readheadertimeout", rpc.DefaultReadHeaderTimeout, "time limit for a request's headers (slowloris clients are closed)")
	fs.DurationVar(&f.ReadTimeout, "http.readtimeout", rpc.DefaultReadTimeout, "time limit for a whole request, headers and body (408 after it)")
	fs.DurationVar(&f.HTTPIdleTimeout, "http.idletimeout", rpc.DefaultIdleTimeout, "keep-alive connections idle this long are closed")
	fs.DurationVar(&f.WSIdleTimeout, "ws.idletimeout", rpc.DefaultWSIdleTimeout, "websockets without a request, a running request or a subscription for this long are closed")
	fs.Int64Var(&f.WSMaxQueueMiB, "ws.maxqueue", rpc.DefaultWSMaxQueuedBytes>>20, "MiB of output one websocket may have queued; a client over it is disconnected (slow consumer)")
	fs.Int64Var(&f.MaxOutputMiB, "rpc.maxoutput", rpc.DefaultMaxQueuedOutput>>20, "MiB of output the node holds for all clients; over it the websocket holding most is disconnected (also bounds one debug_trace* answer, at most 25 MiB)")
	fs.IntVar(&f.MaxConns, "rpc.maxconns", rpc.DefaultMaxConns, "open connections (HTTP and websocket)")
	fs.IntVar(&f.MaxConnsPerIP, "rpc.maxconnsperip", rpc.DefaultMaxConnsPerIP, "open connections of one client address (IPv6: one /64); raise it behind a reverse proxy")
	fs.IntVar(&f.ConnReserve, "rpc.connreserve", 0, "the last connections kept for addresses holding fewer than --rpc.connreserve.perip (0 = --rpc.maxconns/10)")
	fs.IntVar(&f.ConnReservePerIP, "rpc.connreserve.perip", rpc.DefaultConnReservePerIP, "see --rpc.connreserve")
	fs.IntVar(&f.MaxCallsPerIP, "rpc.maxcallsperip", rpc.DefaultMaxCallsPerIP, "calls (batch elements included) one client address runs at once; more wait their turn (EVM executions have their own limit)")
	fs.IntVar(&f.EVMConcurrency, "rpc.evmconcurrency", 0, "eth_call / eth_estimateGas / eth_createAccessList / eth_simulateV1 / eth_callBundle / debug_trace* executions running at once (0 = every CPU, half of them with --sequencer or on tipnode dev)")
	fs.Int64Var(&f.MemoryLimitMiB, "memory.limit", 0, "Go soft memory limit in MiB: the garbage collector works harder near it and freed memory goes back to the system (0 = --cache.state + 1024, -1 = none)")
	fs.IntVar(&f.GCPercent, "memory.gcpercent", defaultGCPercent, "Go garbage collector target: the heap may grow this % over the live data before a collection (debug.SetGCPercent; Go's default is 100; 0 = leave GOGC as the environment sets it). Higher spends less CPU on collections per request and more memory, bounded by --memory.limit")
	fs.IntVar(&f.WriterNice, "writer.nice", chain.DefaultWriterConfig().SectionNice, "on a node limited to one CPU: nice value added to the thread of each store write, pre-confirmation and seal, so that reads preempt them (0 = off, 0-19)")
	fs.IntVar(&f.EVMQueue, "rpc.evmqueue", api.ExecutionQueue, "executions waiting for a slot; more are refused with -32005")
	fs.DurationVar(&f.EVMWait, "rpc.evmwait", api.ExecutionWait, "longest wait of an execution for a slot before -32005")
	fs.DurationVar(&f.TxSyncTimeout, "rpc.txsync.defaulttimeout", api.TxSyncTimeout, "eth_sendRawTransactionSync: wait for the receipt when the call gives no (valid) timeout")
	fs.DurationVar(&f.TxSyncMaxTimeout, "rpc.txsync.maxtimeout", api.TxSyncMaxTimeout, "eth_sendRawTransactionSync: longest timeout a call may ask for (a longer one gets the default)")
	fs.BoolVar(&f.JSTracers, "rpc.jstracers", api.JSTracers, "allow JavaScript tracers in debug_trace* (always bounded by --rpc.evmtimeout)")
	f.Profile.register(fs)
}

func (f *NodeFlags) sequencerConfig() (sequencer.Config, error) {
	c := sequencer.DefaultConfig()
	c.PreconfInterval, c.Steps, c.BlockTime, c.GasLimit, c.Dev = f.PreconfInterval, f.PreconfSteps, f.BlockTime, f.GasLimit, f.Dev
	// --stream.roots=off: the pre-confirmations compute no state root (the
	// stream would carry zeros); the seals still do.
	c.NoPendingRoots = f.StreamRoots == stream.RootsOff
	switch {
	case f.Coinbase == "" && f.opChain:
		c.Coinbase = op.SequencerFeeVault
	case f.Coinbase == "":
	case !common.IsHexAddress(f.Coinbase):
		return c, fmt.Errorf("--coinbase %q is not an address", f.Coinbase)
	default:
		c.Coinbase = common.HexToAddress(f.Coinbase)
	}
	pc, err := f.producerConfig()
	if err != nil {
		return c, err
	}
	c.Chain = &pc
	return c, c.Validate()
}

// producerConfig is the OP sequencer's synthetic L1 origin from the
// --op.* flags (range checks here; the values' rules in its Validate).
func (f *NodeFlags) producerConfig() (chain.ProducerConfig, error) {
	pc := chain.DefaultProducerConfig()
	wei := func(name, v string) (*big.Int, error) {
		n, ok := new(big.Int).SetString(v, 10)
		if !ok || n.Sign() < 0 || n.BitLen() > 256 {
			return nil, fmt.Errorf("--%s %q: want a decimal number of wei (0 to 2^256-1)", name, v)
		}
		return n, nil
	}
	var err error
	if pc.L1.BaseFee, err = wei("op.l1.basefee", f.OPL1BaseFee); err != nil {
		return pc, err
	}
	if pc.L1.BlobBaseFee, err = wei("op.l1.blobbasefee", f.OPL1BlobBaseFee); err != nil {
		return pc, err
	}
	for _, u := range []struct {
		name string
		v    uint64
		max  uint64
	}{{"op.l1.basefeescalar", f.OPBaseFeeScalar, math.MaxUint32}, {"op.l1.blobbasefeescalar", f.OPBlobBaseFeeScalar, math.MaxUint32},
		{"op.operatorfee.scalar", f.OPOperatorFeeScalar, math.MaxUint32}, {"op.dafootprintscalar", f.OPDAFootprintScalar, math.MaxUint16}} {
		if u.v > u.max {
			return pc, fmt.Errorf("--%s %d: at most %d", u.name, u.v, u.max)
		}
	}
	if f.OPL1BlockTime < time.Second || f.OPL1BlockTime%time.Second != 0 {
		return pc, fmt.Errorf("--op.l1.blocktime %s: want whole seconds, at least 1s", f.OPL1BlockTime)
	}
	pc.L1.BaseFeeScalar, pc.L1.BlobBaseFeeScalar = uint32(f.OPBaseFeeScalar), uint32(f.OPBlobBaseFeeScalar)
	pc.L1.OperatorFeeScalar, pc.L1.OperatorFeeConstant = uint32(f.OPOperatorFeeScalar), f.OPOperatorFeeConst
	pc.L1.DAFootprintGasScalar = uint16(f.OPDAFootprintScalar)
	pc.L1.BlockTime = uint64(f.OPL1BlockTime / time.Second)
	pc.MinBaseFee = f.OPMinBaseFee
	pc.L1.BatcherHash = f.opBatcherHash
	pc.EIP1559Denominator, pc.EIP1559Elasticity = f.opEIP1559[0], f.opEIP1559[1]
	return pc, pc.Validate()
}

// nodeConfig turns the flags into the node's Config.
func (f *NodeFlags) nodeConfig() (node.Config, error) {
	cfg := node.DefaultConfig()
	// --stream.roots=off also turns off a sequencer's per-pre-confirmation
	// root without --stream (sequencerConfig): checked here, not only by
	// the publisher's config.
	if f.StreamRoots != stream.RootsOn && f.StreamRoots != stream.RootsOff {
		return cfg, fmt.Errorf("--stream.roots %q: want %s or %s", f.StreamRoots, stream.RootsOn, stream.RootsOff)
	}
	cfg.API.GasCap, cfg.API.EVMTimeout, cfg.API.ClientVersion = f.GasCap, f.EVMTimeout, "tipnode/v"+version
	cfg.API.LogsRangeLimit = f.LogsRange
	cfg.API.MaxExecutions, cfg.API.ExecutionQueue, cfg.API.ExecutionWait = f.EVMConcurrency, f.EVMQueue, f.EVMWait
	if f.EVMConcurrency == 0 {
		cfg.API.MaxExecutions = eth.DefaultMaxExecutions(f.Sequencer)
	}
	cfg.API.TxSyncTimeout, cfg.API.TxSyncMaxTimeout = f.TxSyncTimeout, f.TxSyncMaxTimeout
	cfg.API.JSTracers = f.JSTracers
	// One trace answer fits in one response and in the node's output budget.
	cfg.API.TraceMaxOutput = int(min(f.MaxOutputMiB<<20, rpc.DefaultMaxResponseBytes))
	cfg.Server.Addr, cfg.Server.RequestTimeout, cfg.Server.MaxBatch = f.HTTPAddr, f.RequestTimeout, f.BatchLimit
	cfg.Server.ReadHeaderTimeout, cfg.Server.ReadTimeout, cfg.Server.IdleTimeout = f.ReadHeaderTimeout, f.ReadTimeout, f.HTTPIdleTimeout
	cfg.Server.WSIdleTimeout, cfg.Server.WSMaxQueuedBytes, cfg.Server.MaxQueuedOutput = f.WSIdleTimeout, f.WSMaxQueueMiB<<20, f.MaxOutputMiB<<20
	cfg.Server.MaxConns, cfg.Server.MaxConnsPerIP = f.MaxConns, f.MaxConnsPerIP
	cfg.Server.ConnReserve, cfg.Server.ConnReservePerIP, cfg.Server.MaxCallsPerIP = f.ConnReserve, f.ConnReservePerIP, f.MaxCallsPerIP
	if err := cfg.Server.Validate(); err != nil {
		return cfg, err
	}
	for _, o := range strings.Split(f.CORSDomains, ",") {
		if o = strings.TrimSpace(o); o != "" {
			cfg.Server.CORSOrigins = append(cfg.Server.CORSOrigins, o)
		}
	}
	cfg.Metrics, cfg.ReadOnly = f.Metrics, f.ReadOnly
	cfg.Writer.SectionNice = f.WriterNice
	if err := cfg.Writer.Validate(); err != nil {
		return cfg, fmt.Errorf("--writer.nice: %w", err)
	}
	cfg.PreloadKZG = f.preloadKZG
	if f.Sequencer {
		seq, err := f.sequencerConfig()
		if err != nil {
			return cfg, err
		}
		cfg.Sequencer = &seq
	}
	if f.FollowRPC != "" {
		if f.Sequencer {
			return cfg, errors.New("--follow.rpc and --sequencer exclude each other: the chain is written by the upstream or by the sequencer")
		}
		fc := follow.DefaultConfig()
		fc.URL, fc.MaxReorg, fc.PollInterval = f.FollowRPC, f.FollowMaxReorg, f.FollowPoll
		fc.FetchBatch, fc.FetchParallel, fc.NoGzip = f.FollowBatch, f.FollowParallel, f.FollowNoGzip
		if err := fc.Validate(); err != nil {
			return cfg, err
		}
		cfg.Follow = &fc
		if fwd := f.FollowTxForward; fwd != "none" && !f.ReadOnly {
			if fwd == "" {
				fwd = f.FollowRPC
			}
			tf := eth.DefaultForwardConfig()
			tf.URL = fwd
			if err := tf.Validate(); err != nil {
				return cfg, fmt.Errorf("--follow.txforward: %w", err)
			}
			cfg.TxForward = &tf
		}
	} else if f.FollowTxForward != "" {
		return cfg, errors.New("--follow.txforward needs --follow.rpc (a sequencer pools its transactions itself)")
	}
	if f.Stream && !f.Sequencer && f.FollowRPC == "" {
		return cfg, errors.New("--stream needs --sequencer or --follow.rpc: without a pre-confirming driver there is nothing to stream")
	}
	if f.SnapshotServe {
		sc := statesync.DefaultConfig()
		cfg.Snapshot = &sc
	}
	if f.Stream {
		sc := stream.DefaultPublisherConfig()
		sc.SendQueue, sc.MaxSubscribers, sc.Roots = f.StreamQueue, f.StreamMaxSubs, f.StreamRoots
		if err := sc.Validate(); err != nil {
			return cfg, fmt.Errorf("--stream: %w", err)
		}
		cfg.Stream = &sc
	}
	if f.FollowPreconf != "" {
		if f.FollowRPC == "" {
			return cfg, errors.New("--follow.preconf needs --follow.rpc: a replica gets its canonical blocks from the upstream")
		}
		pc := node.DefaultPreconfConfig()
		pc.Client.URL, pc.Replica.MaxAge = f.FollowPreconf, f.FollowMaxAge
		cfg.Preconf = &pc
	}
	return cfg, cfg.Validate()
}

// startNode assembles and starts a node (its listener bound when it
// returns). keys are the node-held dev accounts (none on `run`). clock is
// the sequencer's and pool's time source (pending.SystemClock{} outside
// tests).
func startNode(f NodeFlags, keys []*ecdsa.PrivateKey, db *store.DB, g *chain.Genesis, clock pending.Clock, log zerolog.Logger) (*node.Node, error) {
	cfg, err := f.nodeConfig()
	if err != nil {
		return nil, err
	}
	cfg.DevKeys = keys
	n, err := node.New(cfg, db, g, clock, log)
	if err != nil {
		return nil, err
	}
	if err := n.Start(); err != nil {
		return nil, err
	}
	return n, nil
}

func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		sf StoreFlags
		lc LogConfig
		nf NodeFlags
	)
	sf.register(fs, datadirRequired)
	lc.register(fs)
	nf.register(fs, false)
	fs.BoolVar(&sf.ReadOnly, "readonly", false, "serve the store without writing to it (a read-only filesystem works): no sequencer, no transaction submission")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := lc.Validate(); err != nil {
		return err
	}
	if sf.DataDir == "" {
		return errors.New("--datadir is required")
	}
	if sf.ReadOnly && nf.Sequencer {
		return errors.New("--readonly cannot be combined with --sequencer: the sequencer writes blocks")
	}
	nf.ReadOnly = sf.ReadOnly
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	log := lc.logger(stderr)
	cfg := sf.config()
	cfg.MustExist = true // an empty or missing directory is not initialised: create nothing
	nf.heapCaches = cfg.StateCacheBytes
	db, err := openStore(cfg, log)
	if err != nil {
		return err
	}
	defer db.Close()
	g, err := loadChain(db, sf.DataDir)
	if err != nil {
		return err
	}
	if nf.FollowRPC != "" {
		sf.followerWindow(db, g)
	}
	return serveUntilDone(ctx, nf, nil, db, g, log, nil)
}

// serveUntilDone starts a node, calls started with the address its
// listener is bound to (nil: nothing to print), and serves until ctx ends
// or the sequencer fails.
func serveUntilDone(ctx context.Context, nf NodeFlags, keys []*ecdsa.PrivateKey, db *store.DB, g *chain.Genesis, log zerolog.Logger, started func(addr string)) error {
	if err := nf.Profile.Validate(); err != nil {
		return err
	}
	limit, err := memoryLimit(nf.MemoryLimitMiB, nf.heapCaches)
	if err != nil {
		return err
	}
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(limit))
	restoreGC, err := setGCPercent(nf.GCPercent)
	if err != nil {
		return err
	}
	defer restoreGC()
	if limit != math.MaxInt64 {
		log.Info().Int64("limitMiB", limit>>20).Msg("Go soft memory limit")
	}
	mr := newMemoryReturner(chain.SystemClock{}, log)
	mr.Start()
	defer mr.Stop()
	prof := newProfileServer(nf.Profile, log)
	if err := prof.Start(); err != nil {
		return err
	}
	defer prof.Stop()
	// The CLI's node loads the KZG setup up front when blob transactions
	// can come (in-process tests do not pay for it); OP chains have no blobs.
	nf.preloadKZG = g.Config.CancunTime != nil && g.OP == nil
	nf.opChain = g.OP != nil
	n, err := startNode(nf, keys, db, g, pending.SystemClock{}, log)
	if err != nil {
		return err
	}
	if started != nil {
		started(n.Server.Addr().String())
	}
	runErr := n.Wait(ctx)
	log.Info().Msg("shutting down")
	return errors.Join(runErr, n.Stop())
}

func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		sf       StoreFlags
		lc       LogConfig
		nf       NodeFlags
		chainID  uint64
		mnemonic string
		accounts int
		forkURL  string
		opStack  bool
		opChain  string
	)
	sf.register(fs, "data directory (default: a fresh temporary directory, deleted on exit)")
	lc.register(fs)
	nf.register(fs, true)
	fs.Uint64Var(&chainID, "chainid", devnet.DefaultChainID, "chain id of a new dev chain")
	fs.StringVar(&mnemonic, "mnemonic", devnet.Mnemonic, "BIP-39 mnemonic of the prefunded dev accounts")
	fs.IntVar(&accounts, "accounts", 10, "number of prefunded dev accounts (m/44'/60'/0'/0/i)")
	fs.StringVar(&forkURL, "fork", "", "fork the chain of this JSON-RPC upstream, URL[@BLOCK] (default block: its latest): blocks continue from the fork block, state the dev chain has not written is read from the upstream at that block (once, then kept in the data directory); the chain id is the upstream's unless --chainid is given. An OP Stack upstream is forked as an OP dev chain under its own chain config (see --chain): L1-info deposits continuing its L1 and fee parameters (--op.* override them), L1 data and operator fees, tipnode_sendDeposit; any other runs the dev chain's L1 rules")
	fs.BoolVar(&opStack, "op", false, "an OP Stack dev chain: every OP fork through Karst, L1-info deposits from a synthetic L1 (--op.* flags), L1 data and operator fees, tipnode_sendDeposit; with --fork: require an OP Stack upstream (an OP upstream is forked as OP without it)")
	fs.StringVar(&opChain, "chain", "", "with --fork: the OP Stack upstream's chain config, a preset ("+strings.Join(preset.Names(), ", ")+
		") or a genesis or chain config JSON file (geth --op-network NAME dumpgenesis); needed only when it is not found by itself (tipnode_genesis of a tipnode upstream, the preset of its chain id, debug_chainConfig of op-geth); its chain id must be the upstream's")
	if err := fs.Parse(args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	chainIDSet := set["chainid"]
	if err := lc.Validate(); err != nil {
		return err
	}
	if accounts < 1 || accounts > 1000 {
		return fmt.Errorf("--accounts %d: want 1..1000", accounts)
	}
	nf.Sequencer, nf.Dev = true, true
	log := lc.logger(stderr)
	if sf.DataDir == "" {
		dir, err := os.MkdirTemp("", "tipnode-dev-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		sf.DataDir = dir
	}
	nf.heapCaches = sf.config().StateCacheBytes
	db, err := openStore(sf.config(), log)
	if err != nil {
		return err
	}
	defer db.Close()
	accs, err := devnet.Accounts(mnemonic, accounts)
	if err != nil {
		return err
	}
	var g *chain.Genesis
	if forkURL != "" || db.Anchor().Fork != "" {
		fo := forkOptions{Target: forkURL, OP: opStack, Chain: opChain}
		if chainIDSet {
			fo.ChainID = new(big.Int).SetUint64(chainID)
		}
		var src *remotestate.Source
		if g, src, err = forkChain(ctx, db, fo, accs, sf.DataDir, log); err != nil {
			return err
		}
		defer src.Close()
		if g.OP != nil {
			// The fork's L1 carries on the upstream's: the --op.* values
			// not given are the head block's.
			fh, err := forkL1(db, g)
			if err != nil {
				return fmt.Errorf("OP fork: %w", err)
			}
			nf.continueL1(fh, set)
		}
	} else if opChain != "" {
		return errors.New("--chain needs --fork: it names the chain config of an OP Stack upstream (a new dev chain is --op)")
	} else if g, err = devChain(db, chainID, accs, opStack, time.Now(), log); err != nil {
		return err
	}
	keys := make([]*ecdsa.PrivateKey, len(accs))
	for i, a := range accs {
		keys[i] = a.Key
	}
	// The banner comes once the listener is bound: a busy port fails
	// before anything is printed.
	return serveUntilDone(ctx, nf, keys, db, g, log, func(addr string) {
		printDevBanner(stdout, g, mnemonic, accs, addr, sf.DataDir)
		if a := db.Anchor(); a.Fork != "" {
			fmt.Fprintf(stdout, "Forked from %s at block %d: state the dev chain has not written is read from there (once, then kept in the data directory).\n\n", a.Fork, a.State)
		}
	})
}

// devChain returns the chain of a dev data directory, writing a fresh dev
// genesis (created at now; OP Stack's with opStack) when the store is
// empty.
func devChain(db *store.DB, chainID uint64, accs []devnet.Account, opStack bool, now time.Time, log zerolog.Logger) (*chain.Genesis, error) {
	if g, err := loadChain(db, ""); err == nil {
		if got := g.Config.ChainID.Uint64(); got != chainID {
			return nil, fmt.Errorf("the data directory holds a chain with id %d, not %d: pass --chainid %d or use another --datadir", got, chainID, got)
		}
		if (g.OP != nil) != opStack {
			kind := map[bool]string{true: "an OP Stack", false: "an L1"}
			return nil, fmt.Errorf("the data directory holds %s dev chain, not %s one: use another --datadir", kind[g.OP != nil], kind[opStack])
		}
		return g, nil
	}
	addrs := make([]common.Address, len(accs))
	for i, a := range accs {
		addrs[i] = a.Address
	}
	gc := devnet.GenesisConfig{ChainID: chainID, Accounts: addrs, Timestamp: uint64(now.Unix())}
	makeGenesis := devnet.Genesis
	if opStack {
		makeGenesis = devnet.OPGenesis
	}
	spec, err := makeGenesis(gc)
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
	log.Info().Str("genesis", g.Block.Hash().Hex()).Uint64("chainId", chainID).Bool("op", opStack).Msg("dev chain created")
	return g, nil
}

func printDevBanner(w io.Writer, g *chain.Genesis, mnemonic string, accs []devnet.Account, addr, dir string) {
	kind := "dev chain"
	if g.OP != nil {
		kind = "OP Stack dev chain"
	}
	fmt.Fprintf(w, "\ntipnode %s (chain id %d), data directory %s\n", kind, g.Config.ChainID, dir)
	fmt.Fprintf(w, "JSON-RPC: http://%s  (websocket: ws://%s)\n\n", addr, addr)
	fmt.Fprintf(w, "Prefunded accounts (mnemonic %q, m/44'/60'/0'/0/i):\n", mnemonic)
	for i, a := range accs {
		fmt.Fprintf(w, "(%d) %s  %s\n", i, a.Address.Hex(), a.KeyHex())
	}
	fmt.Fprintln(w, "\nThese keys are public knowledge: never use them on a real network.")
	fmt.Fprintln(w)
}
