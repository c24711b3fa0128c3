package eth

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"math/big"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/sequencer"
	"github.com/tipnode/tipnode/rpc"
	"github.com/tipnode/tipnode/store"
)

// APIConfig configures the Ethereum method handlers. Defaults are those of
// DefaultAPIConfig.
type APIConfig struct {
	// GasCap caps (and defaults) the gas of eth_call / eth_estimateGas /
	// eth_createAccessList, and is the shared gas budget of one
	// eth_simulateV1 request. Default 50,000,000.
	GasCap uint64
	// EVMTimeout bounds one eth_call / eth_estimateGas / eth_simulateV1
	// execution (the transport's RequestTimeout also applies). Default 5 s.
	EVMTimeout time.Duration
	// MaxExecutions bounds the EVM executions (eth_call, eth_estimateGas,
	// eth_createAccessList, eth_simulateV1 requests) running at once, so
	// that reads cannot take every CPU from the sequencer and from cheap
	// methods, which never wait for this limit. Default half the CPUs, at
	// least 1 (DefaultMaxExecutions(true): what a node running a sequencer
	// needs); a node without one may use every CPU
	// (DefaultMaxExecutions(false), as `tipnode run` chooses).
	MaxExecutions int
	// ExecutionQueue bounds the executions waiting for a slot; one more is
	// refused at once with -32005 "too many concurrent executions …".
	// Default 64.
	ExecutionQueue int
	// ExecutionWait bounds how long an execution waits for a slot before
	// it is refused with -32005 "no execution slot within …". Default 2 s.
	ExecutionWait time.Duration
	// LogsRangeLimit is the largest block range one eth_getLogs may scan.
	// Default 10,000 blocks.
	LogsRangeLimit uint64
	// LogsResultLimit caps the number of logs one eth_getLogs returns.
	// Default 20,000.
	LogsResultLimit int
	// SimulateMaxBlocks is the most blocks one eth_simulateV1 may produce,
	// counting gaps. Default 256.
	SimulateMaxBlocks uint64
	// SimulateMaxCallsPerBlock / SimulateMaxCalls cap eth_simulateV1 calls.
	// Defaults 5,000 and 10,000.
	SimulateMaxCallsPerBlock int
	SimulateMaxCalls         int
	// FeeHistoryMaxBlocks caps eth_feeHistory's block count. Default 1024.
	FeeHistoryMaxBlocks uint64
	// ClientVersion is returned by web3_clientVersion.
	ClientVersion string
	// Preconfirmations says a pending driver (the sequencer) publishes
	// pre-confirmations: the newPreconfirmations and pendingLogs
	// subscriptions are served. Without one they are refused. Default false.
	Preconfirmations bool
	// Accounts are the keys of the node-held accounts (`tipnode dev`'s dev
	// accounts), in eth_accounts order: eth_sendTransaction,
	// eth_signTransaction, eth_sign, personal_sign and eth_signTypedData_v4
	// sign with them. Default none: eth_accounts is [] and the signing
	// methods are refused (ErrNoAccounts).
	Accounts []*ecdsa.PrivateKey
	// TxFeeCap is the largest fee (gas * price, wei) eth_sendRawTransaction
	// accepts, a guard against fat-fingered prices; nil or 0 = no cap.
	// Default 1 ether (go-ethereum's default).
	TxFeeCap *big.Int
	// TxSyncTimeout is eth_sendRawTransactionSync's wait for a receipt
	// when the call gives no timeout (or an invalid one: zero, or above
	// TxSyncMaxTimeout). Default 2 s (EIP-7966's recommendation).
	TxSyncTimeout time.Duration
	// TxSyncMaxTimeout is the longest timeout a call may ask for. Default
	// 10 s. The wait also ends before the request's own deadline.
	TxSyncMaxTimeout time.Duration
	// TxSyncMaxWaiting bounds the eth_sendRawTransactionSync calls
	// waiting at once; one more is refused with -32005. Default 1024.
	TxSyncMaxWaiting int
	// FilterTimeout removes a filter (eth_newFilter and kin) not polled
	// for that long. Default 5 min (go-ethereum's).
	FilterTimeout time.Duration
	// FilterMax bounds the filters installed on the node, and
	// FilterMaxPerClient those of one client address; one more is
	// refused with -32005. Defaults 10,000 and 256.
	FilterMax          int
	FilterMaxPerClient int
	// FilterMaxBuffered bounds the items (hashes or logs) one filter holds
	// between two polls; beyond it the oldest are dropped. Default 10,000.
	FilterMaxBuffered int
	// TraceMaxOutput bounds the output of one debug_trace* answer (one
	// transaction's trace, or a whole block's), in bytes: a trace over it
	// is refused with -32005 and is not completed in memory. Default
	// 25 MiB (the transport's response limit); the CLI takes the smaller
	// of that and --rpc.maxoutput.
	TraceMaxOutput int
	// JSTracers allows JavaScript tracers (a debug_trace* "tracer" that is
	// not a built-in name is JavaScript code, run by go-ethereum's goja
	// tracer), always under EVMTimeout. Default false (refused).
	JSTracers bool
}

// DefaultAPIConfig returns the documented defaults.
// DefaultMaxExecutions is MaxExecutions' default: half the CPUs (at least
// one) when a local sequencer runs, whose intervals must not wait for the
// CPUs reads hold (its jitter target); every CPU on a node that only
// serves (a follower, a replica), where leaving cores idle only lowers the
// requests answered per second.
func DefaultMaxExecutions(sequencer bool) int {
	if sequencer {
		return max(1, runtime.NumCPU()/2)
	}
	return runtime.NumCPU()
}

func DefaultAPIConfig() APIConfig {
	return APIConfig{
		GasCap:                   50_000_000,
		EVMTimeout:               5 * time.Second,
		MaxExecutions:            DefaultMaxExecutions(true),
		ExecutionQueue:           64,
		ExecutionWait:            2 * time.Second,
		LogsRangeLimit:           10_000,
		LogsResultLimit:          20_000,
		SimulateMaxBlocks:        256,
		SimulateMaxCallsPerBlock: 5_000,
		SimulateMaxCalls:         10_000,
		FeeHistoryMaxBlocks:      1024,
		ClientVersion:            "tipnode",
		TxFeeCap:                 big.NewInt(params.Ether),
		TxSyncTimeout:            2 * time.Second,
		TxSyncMaxTimeout:         10 * time.Second,
		TxSyncMaxWaiting:         1024,
		FilterTimeout:            5 * time.Minute,
		FilterMax:                10_000,
		FilterMaxPerClient:       256,
		FilterMaxBuffered:        10_000,
		TraceMaxOutput:           rpc.DefaultMaxResponseBytes,
	}
}

// Validate checks the configuration.
func (c APIConfig) Validate() error {
	switch {
	case c.GasCap == 0:
		return errors.New("rpc.gascap must be > 0")
	case c.EVMTimeout <= 0:
		return errors.New("rpc.evmtimeout must be > 0")
	case c.MaxExecutions <= 0 || c.ExecutionQueue < 0 || c.ExecutionWait <= 0:
		return errors.New("execution limits: rpc.evmconcurrency and rpc.evmwait must be > 0, rpc.evmqueue >= 0")
	case c.LogsRangeLimit == 0 || c.LogsResultLimit <= 0:
		return errors.New("logs limits must be > 0")
	case c.SimulateMaxBlocks == 0 || c.SimulateMaxCallsPerBlock <= 0 || c.SimulateMaxCalls <= 0:
		return errors.New("simulate limits must be > 0")
	case c.FeeHistoryMaxBlocks == 0:
		return errors.New("fee history limit must be > 0")
	case c.TxSyncTimeout <= 0 || c.TxSyncMaxTimeout < c.TxSyncTimeout || c.TxSyncMaxWaiting <= 0:
		return errors.New("rpc.txsync: default timeout must be > 0 and <= the maximum timeout, waiting calls > 0")
	case c.FilterTimeout <= 0 || c.FilterMax <= 0 || c.FilterMaxPerClient <= 0 || c.FilterMaxBuffered <= 0:
		return errors.New("filter limits must be > 0")
	case c.TraceMaxOutput <= 0:
		return errors.New("trace output limit must be > 0")
	}
	for i, k := range c.Accounts {
		if k == nil {
			return fmt.Errorf("account %d has no key", i)
		}
	}
	return nil
}

// TxPool is the node's transaction pool (*sequencer.Pool) as the methods
// see it. Add validates a transaction (eth_sendRawTransaction,
// eth_sendTransaction) and returns an error describing why it was refused;
// a transaction is visible to Get and Nonces when Add returns, so
// eth_getTransactionByHash finds it and the pending nonce counts it at
// once.
type TxPool interface {
	Add(tx *types.Transaction) error
	// Get returns a pooled transaction (nil when absent).
	Get(hash common.Hash) *types.Transaction
	// Nonces returns a copy of the sender's pooled nonces; it must be
	// taken before the sender's state nonce is read (see
	// sequencer.Pool.Nonces).
	Nonces(addr common.Address) sequencer.PooledNonces
}

// Heads gives the head events of the node's store writer (*chain.Writer):
// newHeads and logs subscriptions follow them.
type Heads interface {
	SubscribeHeads(fn func(*chain.HeadEvent)) (unsubscribe func())
}

// API implements the Ethereum JSON-RPC methods. Every read goes through
// the pending Manager's Open (one canonical head, its store view, and the
// pending snapshot when it sits on that chain); head events come from the
// writer. Safe for concurrent use.
type API struct {
	cfg APIConfig
	// fork is the upstream fallback of a fork (fork.go; nil otherwise).
	fork    *forkUpstream
	exec    *chain.Executor
	genesis *chain.Genesis
	// chainIDJSON is eth_chainId's answer, encoded once (read-only: the
	// server copies a RawResult into each response).
	chainIDJSON rpc.RawResult
	reads       *pending.Manager
	chain       Heads
	pool        TxPool
	log         zerolog.Logger
	// gasPrice caches the suggested tip of the current head (eth_fees.go).
	gasPrice gasPriceCache
	// execs bounds concurrent EVM executions (MaxExecutions).
	execs *rpc.Limiter
	// syncWaits bounds the eth_sendRawTransactionSync calls waiting
	// (TxSyncMaxWaiting), txWaits are those calls by hash (eth_sendsync.go).
	syncWaits *rpc.Limiter
	txWaits   txWaiters
	// accounts maps the addresses of APIConfig.Accounts to their keys.
	accounts map[common.Address]*ecdsa.PrivateKey
	// sendMu makes eth_sendTransaction choose a nonce and pool the
	// transaction before the next one chooses (eth_accounts.go).
	sendMu sync.Mutex
	// dev and imp are the dev chain's control and impersonated accounts
	// (dev.go); nil unless RegisterDev was called.
	dev DevChain
	imp *impersonation
	// jumpDests is go-ethereum's bounded, concurrent cache of JUMPDEST
	// analyses by code hash, shared by every call's EVM (callEVM).
	jumpDests vm.JumpDestCache
	// codes is the contract code cache of every call's StateDB
	// (newStateDB): the code a call runs is shared, not copied out of the
	// store's cache on every call.
	codes *chain.CodeCache
	// journals are the StateDB journals calls reuse (newStateDB; a call
	// that Releases its StateDB gives its journal back).
	journals *chain.JournalPool
	// filters are the installed filters (eth_filters.go); now is their clock
	// (nil: time.Now), replaced by tests.
	filters filters
	now     func() time.Time
	// flash is the flashblocks subscriptions' shared encodings, and
	// flashBlocks newFlashblocks' encoder (eth_flashblocks.go).
	flash       flashCache
	flashBlocks flashBlocks
	// modules are rpc_modules' namespaces (net_identity.go).
	modules modules
	// syncProgress is eth_syncing's source (tipnode_genesis.go).
	syncProgress atomic.Pointer[func() (SyncProgress, bool)]
}

// NewAPI returns the method handlers reading through reads, with head
// events from heads. pool may be nil (then eth_sendRawTransaction is
// refused).
func NewAPI(cfg APIConfig, g *chain.Genesis, exec *chain.Executor, reads *pending.Manager, heads Heads, pool TxPool, log zerolog.Logger) (*API, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	accs := make(map[common.Address]*ecdsa.PrivateKey, len(cfg.Accounts))
	for _, k := range cfg.Accounts {
		accs[crypto.PubkeyToAddress(k.PublicKey)] = k
	}
	execs, err := rpc.NewLimiter(cfg.MaxExecutions, cfg.ExecutionQueue, cfg.ExecutionWait)
	if err != nil {
		return nil, err
	}
	syncWaits, err := rpc.NewLimiter(cfg.TxSyncMaxWaiting, 0, time.Second)
	if err != nil {
		return nil, err
	}
	return &API{cfg: cfg, exec: exec, genesis: g, chainIDJSON: quantityJSON(g.Config.ChainID), reads: reads, chain: heads, pool: pool, log: log.With().Str("component", "eth").Logger(), accounts: accs, execs: execs, syncWaits: syncWaits, jumpDests: core.NewJumpDestCache(), codes: chain.NewCodeCache(codeCacheBytes), journals: chain.NewJournalPool()}, nil
}

// codeCacheBytes bounds API.codes (a few thousand contracts of a typical
// size).
const codeCacheBytes = 32 << 20

// newStateDB is a StateDB for an execution (eth_call and its kin,
// eth_simulateV1) on backend, reading code through the API's code cache.
func (a *API) newStateDB(backend chain.Backend) *chain.StateDB {
	st := chain.NewStateDB(backend)
	st.SetCodeCache(a.codes)
	st.SetJournalPool(a.journals)
	return st
}

// Executions is the limiter of EVM executions (its Stats and Collector).
func (a *API) Executions() *rpc.Limiter { return a.execs }

// SyncWaits is the limiter of waiting eth_sendRawTransactionSync calls.
func (a *API) SyncWaits() *rpc.Limiter { return a.syncWaits }

// open opens one consistent read (see pending.Manager.Open).
// Within a batch (BatchScope), every element gets the batch's one read.
func (a *API) open(ctx context.Context) (*pending.Read, error) {
	if sc, ok := ctx.Value(batchScopeKey{}).(*batchScope); ok {
		return sc.read(a.reads)
	}
	return a.reads.Open()
}

// head is the canonical head a request sees (the batch's, in a batch).
func (a *API) head(ctx context.Context) (*chain.Head, error) {
	if _, ok := ctx.Value(batchScopeKey{}).(*batchScope); ok {
		r, err := a.open(ctx)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		return r.Head, nil
	}
	return a.reads.Head(), nil
}

// batchScopeKey keys the batchScope in a batch's context.
type batchScopeKey struct{}

// batchScope is one batch's read, opened by the first element that reads
// and shared by all (one head, one view, one pending snapshot), closed when
// the batch is done.
type batchScope struct {
	once sync.Once
	r    *pending.Read
	err  error
}

// read returns the batch's read; closing it is a no-op (the scope closes
// the shared one).
func (sc *batchScope) read(m *pending.Manager) (*pending.Read, error) {
	sc.once.Do(func() { sc.r, sc.err = m.Open() })
	if sc.err != nil {
		return nil, sc.err
	}
	return &pending.Read{Head: sc.r.Head, View: sharedView{sc.r.View}, Snapshot: sc.r.Snapshot}, nil
}

// sharedView is a batch's view handed to one element: its Close does
// nothing (the batch closes the view).
type sharedView struct{ store.View }

func (sharedView) Close() error { return nil }

// BatchScope gives a JSON-RPC batch one consistent read: every element sees
// the same canonical head and pending snapshot (install it with
// rpc.Server.SetBatchScope). release closes the read.
func (a *API) BatchScope(ctx context.Context) (context.Context, func()) {
	sc := &batchScope{}
	return context.WithValue(ctx, batchScopeKey{}, sc), func() {
		if sc.r != nil {
			sc.r.Close()
		}
	}
}

// Executor returns the chain executor.
func (a *API) Executor() *chain.Executor { return a.exec }

// Register installs every method on the server. Each group of methods lives
// in its own file with its own register function; this is the one list of
// them.
func (a *API) Register(s *rpc.Server) {
	for _, register := range []func(*rpc.Server){
		a.registerAccessList,  // eth_accesslist.go
		a.registerAccounts,    // eth_accounts.go
		a.registerBundle,      // eth_callbundle.go
		a.registerCall,        // eth_call.go
		a.registerChain,       // eth_chain.go
		a.registerConfig,      // eth_config.go
		a.registerEstimate,    // eth_estimate.go
		a.registerFees,        // eth_fees.go
		a.registerFilters,     // eth_filters.go
		a.registerFlashblocks, // eth_flashblocks.go
		a.registerLogs,        // eth_logs.go
		a.registerNet,         // net_identity.go
		a.registerPending,     // eth_pending.go
		a.registerRaw,         // debug_raw.go
		a.registerSend,        // eth_send.go
		a.registerSendSync,    // eth_sendsync.go
		a.registerState,       // eth_state.go
		a.registerProof,       // eth_proof.go
		a.registerSimulate,    // eth_simulate.go
		a.registerTipnode,     // tipnode_genesis.go
		a.registerTrace,       // debug_trace.go
		a.registerTxPool,      // txpool_content.go
	} {
		register(s)
	}
	a.modules.add("eth", "net", "web3", "rpc", "debug", "tipnode", "txpool")
}

// ReadContext is what a block selector resolves to (API.Resolve): the header
// whose post-state (or, for pending, whose pre-confirmed state) is read, that
// state, the ancestors' headers, and the one read they all come from. It is
// not a block: it carries no body. Close releases the read.
type ReadContext struct {
	Read *pending.Read
	View store.View // Read.View
	// Header is the selected block's; for pending the pending header's
	// execution context (Snapshot.ExecHeader: it never waits for the
	// snapshot's state root, and its Root may not be computed yet;
	// pendingBlock presents the pending block with its root).
	Header  *types.Header
	Pending *pending.Snapshot  // non-nil when the selector resolved to the pending layer
	Headers chain.HeaderSource // resolves ancestors (BLOCKHASH)
	state   chain.Backend
	hash    common.Hash // Header's hash when known without hashing (latest: the head's); else zero
}

// Hash is the selected block's hash: the in-memory head's for `latest`,
// otherwise computed (once per ReadContext). At pending it is the hash the
// pending block sealed with exactly its transactions has (Snapshot.BlockHash,
// what tipnode's stream announces; it waits for the state root), or, on a
// node that computes no state root for it, the hash of the pending block
// as eth_getBlockByNumber presents it (zero state root, as such a node
// seals it); never the hash of Header, the execution context.
func (rc *ReadContext) Hash() common.Hash {
	if rc.hash == (common.Hash{}) {
		if s := rc.Pending; s != nil {
			if rc.hash = s.BlockHash(); rc.hash == (common.Hash{}) {
				rc.hash = pendingBlock(s).Hash()
			}
		} else {
			rc.hash = rc.Header.Hash()
		}
	}
	return rc.hash
}

// State returns the state to read or execute on: the post-state of Header
// (for pending: the pre-confirmed state, on top of the anchor).
func (rc *ReadContext) State() chain.Backend { return rc.state }

// Close releases the read.
func (rc *ReadContext) Close() { rc.Read.Close() }

// Resolve turns a selector into a consistent ReadContext: one read (head,
// view, and for pending the snapshot verified to sit on that head's
// chain). Tags and recent numbers resolve from the in-memory head. The
// caller must Close it.
func (a *API) Resolve(ctx context.Context, sel BlockSelector) (*ReadContext, error) {
	r, err := a.open(ctx)
	if err != nil {
		return nil, err
	}
	rc, err := a.resolve(r, sel)
	if err != nil {
		r.Close()
		return nil, err
	}
	return rc, nil
}

// resolveParam decodes the block selector at position i of p (the
// "block" parameter) and resolves it (Resolve). The caller must Close the
// ReadContext.
func (a *API) resolveParam(ctx context.Context, p rpc.Params, i int) (*ReadContext, error) {
	sel, err := DecodeSelector(p, i, "block")
	if err != nil {
		return nil, err
	}
	return a.Resolve(ctx, sel)
}

func (a *API) resolve(r *pending.Read, sel BlockSelector) (*ReadContext, error) {
	headers := r.Headers()
	view := r.View
	var number uint64
	switch {
	case sel.Hash != nil:
		n, err := view.NumberByHash(*sel.Hash)
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("%w: block %s", errBlockNotFound, sel.Hash.Hex())
		}
		if err != nil {
			return nil, err
		}
		if sel.RequireCanonical {
			canon, err := headers.HeaderByNumber(n)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return nil, err
			}
			if err != nil || canon.Hash() != *sel.Hash {
				return nil, fmt.Errorf("%w: block %s is not canonical", errBlockNotFound, sel.Hash.Hex())
			}
		}
		h, err := view.Header(n, *sel.Hash)
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("%w: %v", errBlockNotFound, err)
		}
		if err != nil {
			return nil, err
		}
		return a.atHeader(r, headers, h)
	case sel.Number != nil:
		number = *sel.Number
	default:
		switch sel.Tag {
		case TagPending:
			if r.Snapshot != nil {
				st, err := r.PendingState()
				if err != nil {
					return nil, err
				}
				return &ReadContext{Read: r, View: view, Header: r.Snapshot.ExecHeader(), Pending: r.Snapshot, Headers: r.PendingHeaders(), state: st}, nil
			}
			return a.atHeader(r, headers, r.Head.Header())
		case TagEarliest:
			// The oldest block whose history the store holds (0, or the
			// anchor of a store initialised from a state dump), as
			// go-ethereum answers with pruned history.
			number = view.Anchor().History
		case TagSafe:
			return a.atHeader(r, headers, r.Head.Safe())
		case TagFinalized:
			return a.atHeader(r, headers, r.Head.Finalized())
		default: // latest
			rc, err := a.atHeader(r, headers, r.Head.Header())
			if err == nil {
				rc.hash = r.Head.Hash()
			}
			return rc, err
		}
	}
	h, err := headers.HeaderByNumber(number)
	if errors.Is(err, store.ErrNotFound) {
		if number < view.Anchor().History {
			return nil, fmt.Errorf("block %d: %w", number, store.ErrPrunedHistory)
		}
		return nil, fmt.Errorf("%w: block %d", errBlockNotFound, number)
	}
	if err != nil {
		return nil, err
	}
	return a.atHeader(r, headers, h)
}

func (a *API) atHeader(r *pending.Read, headers chain.HeaderSource, h *types.Header) (*ReadContext, error) {
	st, err := r.View.StateAt(h.Number.Uint64())
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: state of block %d: %v", errBlockNotFound, h.Number.Uint64(), err)
	}
	if err != nil {
		return nil, err
	}
	return &ReadContext{Read: r, View: r.View, Header: h, Headers: headers, state: st}, nil
}
