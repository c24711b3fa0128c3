package node

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto/kzg4844"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/follow"
	"github.com/tipnode/tipnode/chain/statesync"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/replica"
	"github.com/tipnode/tipnode/pending/sequencer"
	"github.com/tipnode/tipnode/pending/stream"
	"github.com/tipnode/tipnode/rpc"
	"github.com/tipnode/tipnode/rpc/eth"
	"github.com/tipnode/tipnode/store"
)

// Config is everything a node is built from. Data only: start from
// DefaultConfig, check with Validate.
type Config struct {
	// Server is the JSON-RPC transport (listener, limits, CORS).
	Server rpc.Config
	// API configures the Ethereum methods (gas cap, EVM timeout, logs and
	// simulation limits, fee cap).
	API eth.APIConfig
	// Pool bounds the transaction pool.
	Pool sequencer.PoolConfig
	// Writer tunes the store's single writer (the priority of its write
	// sections on a one-CPU node).
	Writer chain.WriterConfig
	// Sequencer, when non-nil, runs the embedded sequencer with these
	// settings (pre-confirmations and block sealing). Default nil.
	Sequencer *sequencer.Config
	// DevKeys are the keys of the node-held accounts (`tipnode dev` passes
	// its dev accounts, chain/devnet): eth_accounts lists them and
	// eth_sendTransaction, eth_signTransaction, eth_sign, personal_sign
	// and eth_signTypedData_v4 sign with them. Default none (eth_accounts
	// is [] and the signing methods are refused).
	DevKeys []*ecdsa.PrivateKey
	// PreloadKZG loads go-ethereum's KZG trusted setup in the background
	// once Start has the server running, so that the first blob transaction is verified at once
	// instead of waiting for the setup (seconds). Default false; the CLI
	// sets it for chains that schedule Cancun.
	PreloadKZG bool
	// Follow, when non-nil, follows an upstream node's chain into the
	// store with these settings (chain/follow). Default nil. Exclusive
	// with Sequencer: one of them writes the chain.
	Follow *follow.Config
	// Stream, when non-nil, serves the pre-confirmation stream at
	// /preconfirmations on the RPC listener (ws://HOST:PORT/preconfirmations)
	// with these settings (pending/stream; zero fields take its defaults):
	// every snapshot the node's Manager publishes, whoever drives it (the
	// sequencer, or a replica's stream follower re-publishing what it
	// validated). Default nil (off).
	Stream *stream.PublisherConfig
	// Snapshot, when non-nil, serves the state at the finalized block
	// (latest when nothing is finalized) as a snapshot stream on GET
	// /snapshot (chain/statesync), for `tipnode init --snapshot-from`.
	// Default nil (off).
	Snapshot *statesync.Config
	// TxForward, when non-nil, makes eth_sendRawTransaction check the
	// transaction locally (no account state) and forward it to the
	// sequencer at TxForward.URL instead of pooling it (eth.Forwarder).
	// Default nil. Exclusive with Sequencer.
	TxForward *eth.ForwardConfig
	// Preconf, when non-nil, follows a sequencer's pre-confirmation
	// stream (a read replica: `pending` replays the sequencer's pending
	// blocks). Requires Follow (canonical blocks come from the upstream).
	// Default nil.
	Preconf *PreconfConfig
	// Metrics serves Prometheus metrics on /metrics of the RPC listener.
	// Default false.
	Metrics bool
	// ReadOnly serves a store opened read-only (store.Config.ReadOnly):
	// no sequencer (Validate refuses one) and no transaction submission
	// (eth_sendRawTransaction answers that the node has no pool).
	// Default false.
	ReadOnly bool
	// StopTimeout bounds the graceful stop of the RPC server. Default 15 s.
	StopTimeout time.Duration
}

// PreconfConfig is a replica's pre-confirmation stream: the websocket
// client (URL, ping, idle timeout, backoff) and the driver that replays
// the messages (max age, window).
type PreconfConfig struct {
	Client  stream.ClientConfig
	Replica replica.Config
}

// DefaultPreconfConfig returns the documented defaults (URL unset).
func DefaultPreconfConfig() PreconfConfig {
	return PreconfConfig{Client: stream.DefaultClientConfig(), Replica: replica.DefaultConfig()}
}

// DefaultConfig returns the documented defaults (no sequencer, no
// metrics).
func DefaultConfig() Config {
	return Config{
		Server:      rpc.DefaultConfig(),
		API:         eth.DefaultAPIConfig(),
		Pool:        sequencer.DefaultPoolConfig(),
		Writer:      chain.DefaultWriterConfig(),
		StopTimeout: 15 * time.Second,
	}
}

// Validate checks every part.
func (c Config) Validate() error {
	if err := c.API.Validate(); err != nil {
		return err
	}
	if err := c.Pool.WithDefaults().Validate(); err != nil {
		return err
	}
	if err := c.Writer.Validate(); err != nil {
		return err
	}
	if c.Sequencer != nil {
		if err := c.Sequencer.Validate(); err != nil {
			return err
		}
	}
	if c.Follow != nil {
		if c.Sequencer != nil {
			return fmt.Errorf("%w: a node follows an upstream or runs the sequencer, not both", ErrConfig)
		}
		if err := c.Follow.WithDefaults().Validate(); err != nil {
			return err
		}
	}
	if c.Stream != nil {
		if err := c.Stream.WithDefaults().Validate(); err != nil {
			return err
		}
	}
	if c.TxForward != nil {
		if c.Sequencer != nil {
			return fmt.Errorf("%w: a node runs the sequencer or forwards transactions to one, not both", ErrConfig)
		}
		if err := c.TxForward.WithDefaults().Validate(); err != nil {
			return err
		}
	}
	if c.Preconf != nil {
		if c.Follow == nil {
			return fmt.Errorf("%w: following a pre-confirmation stream needs an upstream to follow (Follow)", ErrConfig)
		}
		if err := c.Preconf.Client.Validate(); err != nil {
			return err
		}
		if err := c.Preconf.Replica.Validate(); err != nil {
			return err
		}
	}
	if c.StopTimeout <= 0 {
		return fmt.Errorf("%w: stop timeout must be > 0", ErrConfig)
	}
	if c.ReadOnly && c.Sequencer != nil {
		return fmt.Errorf("%w: a read-only node cannot run the sequencer (it writes blocks)", ErrConfig)
	}
	return nil
}

// Node is one tipnode over one store: the single writer, the pending
// manager that opens every read, the pool, the optional sequencer, the
// Ethereum API and the JSON-RPC server. New wires them; Start starts them
// in dependency order and Stop stops them in reverse.
type Node struct {
	Genesis      *chain.Genesis
	Writer       *chain.Writer
	Pending      *pending.Manager
	Pool         *sequencer.Pool
	Sequencer    *sequencer.Sequencer // nil without Config.Sequencer
	Follower     *follow.Follower     // nil without Config.Follow
	Stream       *stream.Publisher    // nil without Config.Stream
	Forwarder    *eth.Forwarder       // nil without Config.TxForward
	Replica      *replica.Driver      // nil without Config.Preconf
	StreamClient *stream.Client       // nil without Config.Preconf
	API          *eth.API
	Server       *rpc.Server
	// Registry holds the node's metrics (nil without Config.Metrics).
	Registry *prometheus.Registry

	cfg Config
	db  *store.DB
	log zerolog.Logger
}

// Option varies New beyond Config (behaviour, not data: tests' clocks).
type Option func(*options)

type options struct {
	followClock chain.Clock
}

// WithFollowClock drives the follower's polling, backoff and progress
// with c (tests pass a chain.ManualClock). Default: the wall clock.
func WithFollowClock(c chain.Clock) Option { return func(o *options) { o.followClock = c } }

// New assembles a node on db (which holds g's genesis). clock drives the
// pool and the sequencer (nil: the wall clock; tests pass a
// pending.ManualClock).
func New(cfg Config, db *store.DB, g *chain.Genesis, clock pending.Clock, log zerolog.Logger, opts ...Option) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if a := db.Anchor(); a.Fork != "" && (cfg.Snapshot != nil || cfg.Follow != nil) {
		// A fork holds only what it wrote or fetched: a snapshot of it
		// would give a replica zeros for the rest, and it has no chain to
		// follow but its own.
		return nil, fmt.Errorf("%w: the store is a fork of %s: it cannot serve snapshots (it does not hold the upstream's state) or follow a chain", ErrConfig, a.Fork)
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if clock == nil {
		clock = pending.SystemClock{}
	}
	exec := g.Executor()
	if db.Anchor().Fork != "" {
		exec = exec.ForFork()
	}
	w, err := chain.NewWriter(db, exec, cfg.Writer, log)
	if err != nil {
		return nil, err
	}
	n := &Node{Genesis: g, Writer: w, cfg: cfg, db: db, log: log}
	var metrics *pending.Metrics
	var next pending.HeaderParams
	if cfg.Sequencer != nil {
		next = cfg.Sequencer.HeaderParams()
	}
	if cfg.Metrics {
		n.Registry = prometheus.NewRegistry()
		n.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		metrics = pending.NewMetrics(n.Registry, func() float64 { return n.Pending.SnapshotAge() })
	}
	n.Pending = pending.NewManager(w, g.Config, next, clock, metrics)
	if n.Pool, err = sequencer.NewPool(cfg.Pool, g.Config, n.Pending, clock, metrics, log); err != nil {
		w.Stop()
		return nil, err
	}
	n.Pool.UseChainCosts(exec) // OP: the L1 data and operator fees must be payable
	apiCfg := cfg.API
	apiCfg.Preconfirmations = cfg.Sequencer != nil || cfg.Preconf != nil // a replica publishes the sequencer's, replayed
	var pool eth.TxPool                                                  // none on a read-only node
	if !cfg.ReadOnly {
		pool = n.Pool
	}
	if cfg.TxForward != nil && !cfg.ReadOnly {
		if n.Forwarder, err = eth.NewForwarder(*cfg.TxForward, n.Pool, clock.Now, log); err != nil {
			w.Stop()
			return nil, err
		}
		n.Forwarder.Follow(n.Pending, w)
		pool = n.Forwarder
	}
	apiCfg.Accounts = cfg.DevKeys
	if n.API, err = eth.NewAPI(apiCfg, g, exec, n.Pending, w, pool, log); err != nil {
		w.Stop()
		return nil, err
	}
	if db.SyncsInPoller() {
		// Pre-confirmations and journal writes take a spare P only while
		// EVM executions run or wait (chain.Writer.SetSpareWhen).
		w.SetSpareWhen(n.API.Executions().Busy)
	}
	if n.Server, err = rpc.NewServer(cfg.Server, log); err != nil {
		w.Stop()
		return nil, err
	}
	n.API.Register(n.Server)
	if a := db.Anchor(); a.Fork != "" {
		// A fork (tipnode dev --fork): what the store does not hold at or
		// below the fork block is the upstream's.
		if err := n.API.ForwardBelowFork(n.Server, a.Fork, a.State); err != nil {
			w.Stop()
			return nil, err
		}
	}
	n.Server.SetErrorMapper(n.API.MapError)
	n.Server.SetBatchScope(n.API.BatchScope)
	if n.Registry != nil {
		n.Registry.MustRegister(n.Server.Collector(), n.API.Executions().Collector("evm"), n.API.SyncWaits().Collector("txsync"), n.API.FilterCollector(), storeCollector{db})
		n.Server.Handle("GET /metrics", promhttp.HandlerFor(n.Registry, promhttp.HandlerOpts{}))
	}
	if cfg.Stream != nil {
		var sm *stream.Metrics
		if n.Registry != nil {
			sm = stream.NewPublisherMetrics(n.Registry)
		}
		if n.Stream, err = stream.NewPublisher(*cfg.Stream, n.Pending, clock, sm, log); err != nil {
			w.Stop()
			return nil, err
		}
		n.Server.HandleStream("GET /preconfirmations", n.Stream)
	}
	if cfg.Snapshot != nil {
		h, err := statesync.NewHandler(*cfg.Snapshot, snapshotSource(w), log)
		if err != nil {
			w.Stop()
			return nil, err
		}
		n.Server.HandleStream("GET /snapshot", h)
	}
	if cfg.Sequencer != nil {
		if n.Sequencer, err = sequencer.New(*cfg.Sequencer, w, exec, n.Pool, n.Pending, clock, metrics, log); err != nil {
			w.Stop()
			return nil, err
		}
		if cfg.Sequencer.Dev {
			n.API.RegisterDev(n.Server, n.Sequencer)
		}
	}
	if cfg.Follow != nil {
		var fm *follow.Metrics
		if n.Registry != nil {
			fm = follow.NewMetrics(n.Registry)
		}
		if n.Follower, err = follow.New(*cfg.Follow, w, g, o.followClock, fm, log); err != nil {
			w.Stop()
			return nil, err
		}
		f := n.Follower
		n.API.SetSyncProgress(func() (eth.SyncProgress, bool) {
			s := f.Status()
			return eth.SyncProgress{StartingBlock: hexutil.Uint64(s.StartingBlock), CurrentBlock: hexutil.Uint64(s.CurrentBlock),
				HighestBlock: hexutil.Uint64(s.HighestBlock)}, s.Syncing
		})
	}
	if cfg.Preconf != nil {
		var rm *replica.Metrics
		var cm *stream.ClientMetrics
		if n.Registry != nil {
			rm, cm = replica.NewMetrics(n.Registry), stream.NewClientMetrics(n.Registry)
		}
		if n.Replica, err = replica.New(cfg.Preconf.Replica, w, exec, n.Pending, clock, rm, log); err != nil {
			w.Stop()
			return nil, err
		}
		if n.StreamClient, err = stream.NewClient(cfg.Preconf.Client, n.Replica, clock, cm, log); err != nil {
			w.Stop()
			return nil, err
		}
	}
	return n, nil
}

// Start starts the writer, the sequencer (which publishes its first
// snapshot before returning) or the follower (which checks the upstream's
// chain id and genesis before returning, then follows in the background)
// with, on a replica, the pre-confirmation driver and its stream client
// (they run on the node's pending clock), and then the RPC server; with
// PreloadKZG, the KZG setup loads in the background once the server runs.
func (n *Node) Start() error {
	n.Writer.Start()
	if n.Stream != nil {
		n.Stream.Start() // before any driver publishes: the stream starts at an index 0
	}
	if n.Sequencer != nil {
		if err := n.Sequencer.Start(); err != nil {
			n.stopStream()
			n.Writer.Stop()
			return err
		}
	}
	if n.Follower != nil {
		if err := n.Follower.Start(); err != nil {
			n.stopStream()
			n.Writer.Stop()
			return err
		}
	}
	if n.Replica != nil {
		n.Replica.Start()
		n.StreamClient.Start()
	}
	if err := n.Server.Start(); err != nil {
		var err2 error
		if n.Sequencer != nil {
			err2 = n.Sequencer.Stop()
		}
		n.stopReplica()
		if n.Follower != nil {
			n.Follower.Stop()
		}
		n.stopStream()
		n.Writer.Stop()
		return errors.Join(err, err2)
	}
	if n.cfg.PreloadKZG {
		// The first use loads the setup: about 2 s of CPU, started once
		// the node serves so that it does not delay the start.
		go kzg4844.BlobToCommitment(new(kzg4844.Blob))
	}
	return nil
}

// Wait blocks until ctx ends (nil) or the sequencer stops on a fault (its
// error). A sequencer stopped because the store refused its write for lack
// of disk space (store.ErrDiskFull, the free-space guard) is not the end
// of the node: Wait logs why writes stopped and keeps serving reads until
// ctx ends; the fault is then Stop's error.
func (n *Node) Wait(ctx context.Context) error {
	var seqDone <-chan struct{}
	if n.Sequencer != nil {
		seqDone = n.Sequencer.Done()
	}
	select {
	case <-ctx.Done():
		return nil
	case <-seqDone:
		if full := n.db.DiskFull(); full != nil {
			n.log.Error().Err(full).Msg("writes stopped: the sequencer cannot seal on a full disk; serving reads only (free space and restart)")
			<-ctx.Done()
			return nil
		}
		return n.Sequencer.Err()
	}
}

// WritesStopped returns why the node's writer no longer writes: the store's
// disk-full refusal (store.ErrDiskFull) when the free-space guard stopped
// the latest write, else nil.
func (n *Node) WritesStopped() error { return n.db.DiskFull() }

// Stop shuts down in order: the RPC server stops accepting and finishes
// in-flight requests (stream subscribers are closed with 1001), then the sequencer stops (sealing a pending block
// that holds pre-confirmed transactions, in one atomic write through the
// writer) or the stream client, the replica driver and the follower (its
// write in progress finishes), then the
// writer. The caller closes the store afterwards.
func (n *Node) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.StopTimeout)
	defer cancel()
	err := n.Server.Stop(ctx)
	if n.Sequencer != nil {
		err = errors.Join(err, n.Sequencer.Stop())
	}
	n.stopReplica()
	if n.Follower != nil {
		n.Follower.Stop()
	}
	n.stopStream()
	if n.Forwarder != nil {
		n.Forwarder.Close()
	}
	n.API.CloseFork()
	n.Writer.Stop()
	return err
}

// stopStream stops the stream publisher, if any.
func (n *Node) stopStream() {
	if n.Stream != nil {
		n.Stream.Stop()
	}
}

// stopReplica stops the stream client (no more messages) and then the
// driver.
func (n *Node) stopReplica() {
	if n.Replica != nil {
		n.StreamClient.Stop()
		n.Replica.Stop()
	}
}

// snapshotSource serves snapshots at the writer's finalized block, or its
// latest when nothing above genesis is finalized (a dev chain's
// sequencer finalizes nothing).
func snapshotSource(w *chain.Writer) statesync.Source {
	return func() (store.View, uint64, error) {
		h, view, err := w.OpenHead()
		if err != nil {
			return nil, 0, err
		}
		n := h.Finalized().Number.Uint64()
		if n == 0 {
			n = h.Number()
		}
		return view, n, nil
	}
}
