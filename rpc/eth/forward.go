package eth

// Transaction forwarding: a node that does not sequence (a follower or a
// replica) checks eth_sendRawTransaction locally and forwards the raw
// bytes to the sequencer, returning its answer.

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/sequencer"
	"github.com/tipnode/tipnode/rpc"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// ForwardConfig configures transaction forwarding. Data only: zero fields
// take the defaults of DefaultForwardConfig (WithDefaults).
type ForwardConfig struct {
	// URL of the sequencer's JSON-RPC endpoint (http(s):// or ws(s)://).
	// Required.
	URL string
	// Timeout bounds one forward (connection included). Default 5 s.
	Timeout time.Duration
	// MaxInflight bounds the forwards running at once; one more is
	// refused at once with -32005. Default 64.
	MaxInflight int
	// TrackFor is how long a forwarded transaction counts in its sender's
	// pending nonce when it appears neither in a pre-confirmation nor in
	// a canonical block. Default 1 min.
	TrackFor time.Duration
	// MaxTracked bounds the forwarded transactions tracked; beyond it the
	// oldest are forgotten. Default 10,000.
	MaxTracked int
}

// DefaultForwardConfig returns the documented defaults (URL empty).
func DefaultForwardConfig() ForwardConfig {
	return ForwardConfig{Timeout: 5 * time.Second, MaxInflight: 64, TrackFor: time.Minute, MaxTracked: 10_000}
}

// WithDefaults fills zero fields.
func (c ForwardConfig) WithDefaults() ForwardConfig {
	d := DefaultForwardConfig()
	if c.Timeout == 0 {
		c.Timeout = d.Timeout
	}
	if c.MaxInflight == 0 {
		c.MaxInflight = d.MaxInflight
	}
	if c.TrackFor == 0 {
		c.TrackFor = d.TrackFor
	}
	if c.MaxTracked == 0 {
		c.MaxTracked = d.MaxTracked
	}
	return c
}

// Validate checks the configuration (after WithDefaults).
func (c ForwardConfig) Validate() error {
	u, err := url.Parse(c.URL)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%w: forward URL %q is not a URL", ErrForwardConfig, c.URL)
	}
	switch u.Scheme {
	case "http", "https", "ws", "wss":
	default:
		return fmt.Errorf("%w: forward URL %q: want http(s):// or ws(s)://", ErrForwardConfig, c.URL)
	}
	if c.Timeout <= 0 || c.MaxInflight <= 0 || c.TrackFor <= 0 || c.MaxTracked <= 0 {
		return fmt.Errorf("%w: forward timeout, inflight, track time and tracked count must be > 0", ErrForwardConfig)
	}
	return nil
}

// TxChecker checks a transaction without account state (*sequencer.Pool's
// Check): decoding is done, this is signature, chain id, intrinsic gas,
// fee cap against the base fee and the other stateless rules.
type TxChecker interface {
	Check(tx *types.Transaction) (common.Address, error)
}

// forwarded is one transaction the sequencer accepted from us.
type forwarded struct {
	tx      *types.Transaction
	from    common.Address
	expires time.Time
}

// Forwarder is the TxPool of a node without a sequencer: Add checks the
// transaction (TxChecker) and forwards its raw bytes to the sequencer
// with eth_sendRawTransaction, returning the sequencer's refusal as is
// (its JSON-RPC code, message and data) or a -32000 naming the sequencer
// when it cannot be reached. The transactions it accepted are tracked
// (Get finds them; Nonces counts them in the sender's pending nonce) until
// they appear in a published snapshot or a canonical block, or TrackFor
// passes. Safe for concurrent use.
type Forwarder struct {
	cfg   ForwardConfig
	check TxChecker
	now   func() time.Time
	log   zerolog.Logger
	sem   chan struct{}

	cmu    sync.Mutex
	client *gethrpc.Client

	mu       sync.Mutex
	byHash   map[common.Hash]*forwarded
	bySender map[common.Address]map[common.Hash]*forwarded
	order    []common.Hash // forwarding order, for MaxTracked and expiry

	unsub []func()

	// newPendingTransactions: every transaction announced once, when the
	// sequencer accepted our forward or when it first appears in a
	// published snapshot (seen bounds the memory of what was announced).
	txFeed chain.Feed[*types.Transaction]
	amu    sync.Mutex
	seen   map[common.Hash]struct{}
	seenQ  []common.Hash
}

// maxAnnounced bounds the hashes the Forwarder remembers having announced.
const maxAnnounced = 16_384

// NewForwarder returns a forwarder to cfg.URL. It connects on first use
// (an unreachable sequencer at start is not an error). now is the clock of
// the tracking (nil: time.Now).
func NewForwarder(cfg ForwardConfig, check TxChecker, now func() time.Time, log zerolog.Logger) (*Forwarder, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	return &Forwarder{cfg: cfg, check: check, now: now, sem: make(chan struct{}, cfg.MaxInflight),
		byHash: make(map[common.Hash]*forwarded), bySender: make(map[common.Address]map[common.Hash]*forwarded), log: log.With().Str("component", "txforward").Logger()}, nil
}

// Follow stops tracking the transactions of every snapshot mgr publishes
// and of every canonical block heads imports (their headers' bodies are
// read from the head's view).
func (f *Forwarder) Follow(mgr *pending.Manager, heads Heads) {
	f.unsub = append(f.unsub, mgr.SubscribePreconfirmations(func(s *pending.Snapshot) {
		f.forget(s.NewTransactions())
		for _, tx := range s.NewTransactions() {
			if t, ok := tx.(*types.Transaction); ok {
				f.announce(t)
			}
		}
	}))
	f.unsub = append(f.unsub, heads.SubscribeHeads(func(ev *chain.HeadEvent) {
		if len(ev.Added) == 0 || f.tracked() == 0 {
			return
		}
		view, ok := ev.Head.Acquire()
		if !ok {
			return
		}
		defer view.Close()
		for _, h := range ev.Added {
			if body, err := view.Body(h.Number.Uint64(), h.Hash()); err == nil {
				f.forget(body.Transactions)
			}
		}
	}))
}

// Close stops following and closes the connection to the sequencer.
func (f *Forwarder) Close() {
	for _, u := range f.unsub {
		u()
	}
	f.cmu.Lock()
	if f.client != nil {
		f.client.Close()
		f.client = nil
	}
	f.cmu.Unlock()
}

func (f *Forwarder) tracked() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.byHash)
}

func (f *Forwarder) forget(txs chaintypes.Txs) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, tx := range txs {
		f.drop(tx.Hash())
	}
}

// drop forgets one transaction (f.mu held).
func (f *Forwarder) drop(h common.Hash) {
	ft, ok := f.byHash[h]
	if !ok {
		return
	}
	delete(f.byHash, h)
	if m := f.bySender[ft.from]; m != nil {
		delete(m, h)
		if len(m) == 0 {
			delete(f.bySender, ft.from)
		}
	}
}

// dial returns the client, connecting if needed.
func (f *Forwarder) dial(ctx context.Context) (*gethrpc.Client, error) {
	f.cmu.Lock()
	defer f.cmu.Unlock()
	if f.client != nil {
		return f.client, nil
	}
	c, err := gethrpc.DialContext(ctx, f.cfg.URL)
	if err != nil {
		return nil, err
	}
	f.client = c
	return c, nil
}

// Add checks tx and forwards it (see Forwarder).
func (f *Forwarder) Add(tx *types.Transaction) error {
	from, err := f.check.Check(tx)
	if err != nil {
		return err
	}
	select {
	case f.sem <- struct{}{}:
		defer func() { <-f.sem }()
	default:
		return rpc.ErrLimit("too many transactions being forwarded to the sequencer (%d), try again later", f.cfg.MaxInflight)
	}
	raw, err := tx.MarshalBinary()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.cfg.Timeout)
	defer cancel()
	c, err := f.dial(ctx)
	if err == nil {
		var hash common.Hash
		err = c.CallContext(ctx, &hash, "eth_sendRawTransaction", hexutil.Bytes(raw))
	}
	if err != nil {
		var re gethrpc.Error
		if errors.As(err, &re) { // the sequencer's answer: pass it through
			out := &rpc.Error{Code: re.ErrorCode(), Message: re.Error()}
			var de gethrpc.DataError
			if errors.As(err, &de) {
				out.Data = de.ErrorData()
			}
			f.log.Debug().Str("tx", tx.Hash().Hex()).Int("code", out.Code).Str("message", out.Message).Msg("sequencer refused a forwarded transaction")
			return out
		}
		f.log.Warn().Str("tx", tx.Hash().Hex()).Str("sequencer", f.cfg.URL).Err(err).Msg("cannot forward a transaction")
		return rpc.ErrServer(fmt.Sprintf("%v (%s): %v", ErrForward, f.cfg.URL, err))
	}
	f.track(tx, from)
	f.announce(tx)
	return nil
}

// SubscribeTxs calls fn with every transaction that reaches the
// sequencer's pending state through this node's view of it (the
// newPendingTransactions feed of a forwarding node): a transaction this
// node forwarded, once the sequencer accepted it (what the sequencer's own
// pool announces at admission), and any other transaction when it first
// appears in a snapshot this node publishes (a replica's pre-confirmation
// stream). Each is announced once (of the last 16,384). fn runs on the
// goroutine of Add or of the publishing driver and must not block.
func (f *Forwarder) SubscribeTxs(fn func(*types.Transaction)) (unsubscribe func()) {
	return f.txFeed.Subscribe(fn)
}

// announce sends tx to the SubscribeTxs feed unless it was announced.
func (f *Forwarder) announce(tx *types.Transaction) {
	h := tx.Hash()
	f.amu.Lock()
	if _, ok := f.seen[h]; ok {
		f.amu.Unlock()
		return
	}
	if f.seen == nil {
		f.seen = make(map[common.Hash]struct{})
	}
	f.seen[h] = struct{}{}
	f.seenQ = append(f.seenQ, h)
	if len(f.seenQ) > maxAnnounced {
		delete(f.seen, f.seenQ[0])
		f.seenQ = f.seenQ[1:]
	}
	f.amu.Unlock()
	f.txFeed.Send(tx)
}

func (f *Forwarder) track(tx *types.Transaction, from common.Address) {
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	ft := &forwarded{tx: tx.WithoutBlobTxSidecar(), from: from, expires: now.Add(f.cfg.TrackFor)}
	f.drop(tx.Hash())
	f.byHash[tx.Hash()] = ft
	if f.bySender[from] == nil {
		f.bySender[from] = make(map[common.Hash]*forwarded)
	}
	f.bySender[from][tx.Hash()] = ft
	f.order = append(f.order, tx.Hash())
	// Drop the forgotten, the expired and the oldest beyond MaxTracked
	// from the front of the order (amortised O(1)).
	for len(f.order) > 0 {
		h := f.order[0]
		ft, ok := f.byHash[h]
		if ok && len(f.byHash) <= f.cfg.MaxTracked && now.Before(ft.expires) {
			break
		}
		f.drop(h)
		f.order = f.order[1:]
	}
	if len(f.order) > 2*len(f.byHash)+64 { // compact forgotten entries
		kept := f.order[:0]
		for _, h := range f.order {
			if _, ok := f.byHash[h]; ok {
				kept = append(kept, h)
			}
		}
		f.order = kept
	}
}

// Get returns a forwarded transaction still tracked (nil otherwise).
func (f *Forwarder) Get(hash common.Hash) *types.Transaction {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ft, ok := f.byHash[hash]; ok && f.now().Before(ft.expires) {
		return ft.tx
	}
	return nil
}

// Nonces returns the nonces addr has forwarded and still tracked (see
// sequencer.Pool.Nonces: take it before reading the pending state; a
// transaction is forgotten only after the snapshot or block holding it was
// published).
func (f *Forwarder) Nonces(addr common.Address) sequencer.PooledNonces {
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	out := sequencer.PooledNonces{}
	for _, ft := range f.bySender[addr] {
		if now.Before(ft.expires) {
			out[ft.tx.Nonce()] = struct{}{}
		}
	}
	return out
}
