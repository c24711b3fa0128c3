package eth

import (
	"errors"
	"fmt"
	"math/big"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/pending"
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
	// TxFeeCap is the largest fee (gas * price, wei) eth_sendRawTransaction
	// accepts, a guard against fat-fingered prices; nil or 0 = no cap.
	// Default 1 ether (go-ethereum's default).
	TxFeeCap *big.Int
}

// DefaultAPIConfig returns the documented defaults.
func DefaultAPIConfig() APIConfig {
	return APIConfig{
		GasCap:                   50_000_000,
		EVMTimeout:               5 * time.Second,
		LogsRangeLimit:           10_000,
		LogsResultLimit:          20_000,
		SimulateMaxBlocks:        256,
		SimulateMaxCallsPerBlock: 5_000,
		SimulateMaxCalls:         10_000,
		FeeHistoryMaxBlocks:      1024,
		ClientVersion:            "tipnode",
		TxFeeCap:                 big.NewInt(params.Ether),
	}
}

// Validate checks the configuration.
func (c APIConfig) Validate() error {
	switch {
	case c.GasCap == 0:
		return errors.New("rpc.gascap must be > 0")
	case c.EVMTimeout <= 0:
		return errors.New("rpc.evmtimeout must be > 0")
	case c.LogsRangeLimit == 0 || c.LogsResultLimit <= 0:
		return errors.New("logs limits must be > 0")
	case c.SimulateMaxBlocks == 0 || c.SimulateMaxCallsPerBlock <= 0 || c.SimulateMaxCalls <= 0:
		return errors.New("simulate limits must be > 0")
	case c.FeeHistoryMaxBlocks == 0:
		return errors.New("fee history limit must be > 0")
	}
	return nil
}

// PendingSource gives the current pre-confirmed snapshot. Current returns nil
// when the node runs without a pending layer (then `pending` = latest).
type PendingSource interface {
	Current() *pending.Snapshot
}

// TxPool accepts raw transactions (eth_sendRawTransaction). Add validates
// the transaction and returns an error describing why it was refused.
type TxPool interface {
	Add(tx *types.Transaction) error
}

// API implements the Ethereum JSON-RPC methods over the store, the executor
// and (optionally) the pending layer. Safe for concurrent use.
type API struct {
	cfg     APIConfig
	db      *store.DB
	exec    *chain.Executor
	genesis *chain.Genesis
	pending atomic.Pointer[PendingSource]
	pool    TxPool
	log     zerolog.Logger
	// heads fans new canonical heads out to the newHeads and logs
	// subscriptions (heads.go).
	heads headFeed
	// gasPrice caches the suggested tip of the current head (eth_fees.go).
	gasPrice gasPriceCache
}

// NewAPI returns the method handlers. pool may be nil (then
// eth_sendRawTransaction is refused); SetPending installs a pending layer.
func NewAPI(cfg APIConfig, db *store.DB, g *chain.Genesis, pool TxPool, log zerolog.Logger) (*API, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &API{cfg: cfg, db: db, exec: chain.NewExecutor(g.Config), genesis: g, pool: pool, log: log}, nil
}

// SetPending installs the pending layer source.
func (a *API) SetPending(p PendingSource) { a.pending.Store(&p) }

// snapshotAndView loads the current pending snapshot (nil without a
// pending layer) and THEN opens a store view. The order matters: a snapshot
// is published only after the store holds its anchor, so a view opened
// after loading it always contains the anchor and every block the snapshot
// has been rebased past; the reverse order could pair an old view with a
// snapshot anchored on a block the view does not have yet.
func (a *API) snapshotAndView() (*pending.Snapshot, store.View, error) {
	snap := a.currentPending()
	view, err := a.db.View()
	if err != nil {
		return nil, nil, err
	}
	return snap, view, nil
}

// currentPending returns the current snapshot or nil.
func (a *API) currentPending() *pending.Snapshot {
	p := a.pending.Load()
	if p == nil || *p == nil {
		return nil
	}
	return (*p).Current()
}

// Executor returns the chain executor.
func (a *API) Executor() *chain.Executor { return a.exec }

// Register installs every method on the server. Each group of methods lives
// in its own file with its own register function; this is the one list of
// them.
func (a *API) Register(s *rpc.Server) {
	for _, register := range []func(*rpc.Server){
		a.registerAccessList, // eth_accesslist.go
		a.registerCall,       // eth_call.go
		a.registerChain,      // eth_chain.go
		a.registerConfig,     // eth_config.go
		a.registerEstimate,   // eth_estimate.go
		a.registerFees,       // eth_fees.go
		a.registerLogs,       // eth_logs.go
		a.registerPending,    // eth_pending.go
		a.registerSend,       // eth_send.go
		a.registerState,      // eth_state.go
		a.registerSimulate,   // simulate.go
	} {
		register(s)
	}
}

// ReadContext is what a block selector resolves to (API.Resolve): the header
// whose post-state (or, for pending, whose pre-confirmed state) is read, that
// state, the ancestors' headers, and the one store view they all come from.
// It is not a block: it carries no body. Close releases the store view.
type ReadContext struct {
	View    store.View
	Header  *types.Header      // the selected block; for pending the pending header
	Pending *pending.Snapshot  // non-nil when the selector resolved to the pending layer
	Headers chain.HeaderSource // resolves ancestors (BLOCKHASH)
	state   chain.Backend
}

// State returns the state to read or execute on: the post-state of Header
// (for pending: the pre-confirmed state, on top of the anchor).
func (rc *ReadContext) State() chain.Backend { return rc.state }

// Close releases the view.
func (rc *ReadContext) Close() { rc.View.Close() }

// Resolve turns a selector into a consistent ReadContext: one store view
// and, for pending, one snapshot loaded once. The caller must Close it.
func (a *API) Resolve(sel BlockSelector) (*ReadContext, error) {
	var snap *pending.Snapshot
	if sel.Hash == nil && sel.Number == nil && sel.Tag == TagPending {
		snap = a.currentPending()
	}
	view, err := a.db.View()
	if err != nil {
		return nil, err
	}
	b, err := a.resolve(view, sel, snap)
	if err != nil {
		view.Close()
		return nil, err
	}
	return b, nil
}

func (a *API) resolve(view store.View, sel BlockSelector, snap *pending.Snapshot) (*ReadContext, error) {
	headers := chain.ViewHeaders{View: view}
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
			canon, err := view.CanonicalHash(n)
			if err != nil || canon != *sel.Hash {
				return nil, fmt.Errorf("%w: block %s is not canonical", errBlockNotFound, sel.Hash.Hex())
			}
		}
		number = n
		h, err := view.Header(n, *sel.Hash)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errBlockNotFound, err)
		}
		return a.atHeader(view, headers, h)
	case sel.Number != nil:
		number = *sel.Number
	default:
		switch sel.Tag {
		case TagPending:
			if snap != nil {
				base, err := view.StateAt(snap.Anchor().Number.Uint64())
				if err == nil {
					return &ReadContext{View: view, Header: snap.Header(), Pending: snap, Headers: headers, state: snap.State(base)}, nil
				}
				// The anchor is no longer readable (unwound): fall back to latest.
			}
			n, err := view.Tag(store.TagLatest)
			if err != nil {
				return nil, err
			}
			number = n
		case TagEarliest:
			number = 0
		case TagSafe:
			n, err := view.Tag(store.TagSafe)
			if err != nil {
				return nil, fmt.Errorf("%w: no safe block", errBlockNotFound)
			}
			number = n
		case TagFinalized:
			n, err := view.Tag(store.TagFinalized)
			if err != nil {
				return nil, fmt.Errorf("%w: no finalized block", errBlockNotFound)
			}
			number = n
		default: // latest
			n, err := view.Tag(store.TagLatest)
			if err != nil {
				return nil, err
			}
			number = n
		}
	}
	h := headers.HeaderByNumber(number)
	if h == nil {
		return nil, fmt.Errorf("%w: block %d", errBlockNotFound, number)
	}
	return a.atHeader(view, headers, h)
}

func (a *API) atHeader(view store.View, headers chain.HeaderSource, h *types.Header) (*ReadContext, error) {
	st, err := view.StateAt(h.Number.Uint64())
	if err != nil {
		return nil, fmt.Errorf("%w: state of block %d: %v", errBlockNotFound, h.Number.Uint64(), err)
	}
	return &ReadContext{View: view, Header: h, Headers: headers, state: st}, nil
}
