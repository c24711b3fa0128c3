package pendingtest

import (
	"crypto/ecdsa"
	"math/big"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/chain/devnet"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/sequencer"
	"github.com/tipnode/tipnode/pending/stream"
	"github.com/tipnode/tipnode/store"
)

const (
	// ChainID is the dev chain's id.
	ChainID = 1337
	// GenesisTime is the dev genesis timestamp; the default clock starts
	// ten seconds later.
	GenesisTime = 1_700_000_000
	// maxSealTicks bounds Seal: no seal after that many intervals fails.
	maxSealTicks = 100
)

// Accounts returns the first n dev accounts of devnet.Mnemonic.
func Accounts(t testing.TB, n int) []devnet.Account {
	t.Helper()
	accs, err := devnet.Accounts(devnet.Mnemonic, n)
	if err != nil {
		t.Fatal(err)
	}
	return accs
}

// Keys returns the private keys of accs.
func Keys(accs []devnet.Account) []*ecdsa.PrivateKey {
	keys := make([]*ecdsa.PrivateKey, len(accs))
	for i, a := range accs {
		keys[i] = a.Key
	}
	return keys
}

// Spec returns the dev genesis (ChainID, GenesisTime) funding accs.
func Spec(t testing.TB, accs []devnet.Account) []byte {
	t.Helper()
	addrs := make([]common.Address, len(accs))
	for i, a := range accs {
		addrs[i] = a.Address
	}
	spec, err := devnet.Genesis(devnet.GenesisConfig{ChainID: ChainID, Accounts: addrs, Timestamp: GenesisTime})
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// NewClock returns a manual clock at GenesisTime + 10 s.
func NewClock() *pending.ManualClock { return pending.NewManualClock(time.Unix(GenesisTime+10, 0)) }

// InitCode wraps runtime (at most 255 bytes) in creation code that returns
// it: PUSH1 len DUP1 PUSH1 11 PUSH1 0 CODECOPY PUSH1 0 RETURN.
func InitCode(runtime []byte) []byte {
	if len(runtime) > 255 {
		panic("pendingtest: runtime longer than 255 bytes")
	}
	return append([]byte{0x60, byte(len(runtime)), 0x80, 0x60, 0x0b, 0x60, 0x00, 0x39, 0x60, 0x00, 0xf3}, runtime...)
}

// SignTx signs inner with key, failing the test on an error.
func SignTx(t testing.TB, signer types.Signer, key *ecdsa.PrivateKey, inner types.TxData) *types.Transaction {
	t.Helper()
	tx, err := types.SignNewTx(key, signer, inner)
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

// Options vary New. The zero value is a started sequencer with the
// default configuration on a dev chain funding one key.
type Options struct {
	// Keys is how many dev accounts the genesis funds (0: 1). Ignored
	// when Accounts is set.
	Keys int
	// Accounts are the funded accounts (nil: the first Keys dev accounts).
	Accounts []devnet.Account
	// Spec is the genesis JSON (nil: Spec(Accounts)).
	Spec []byte
	// Config is the sequencer's configuration (nil: sequencer.DefaultConfig()).
	Config *sequencer.Config
	// Pool is the pool's configuration (nil: sequencer.DefaultPoolConfig()).
	Pool *sequencer.PoolConfig
	// Clock drives the sequencer (nil: NewClock()).
	Clock *pending.ManualClock
	// OnPublish, if set, is subscribed to the manager's pre-confirmations
	// before the sequencer starts (it sees the first index 0).
	OnPublish func(*pending.Snapshot)
	// Publisher, if set, starts a stream publisher of the manager with
	// this configuration before the sequencer starts (after OnPublish
	// subscribed); it is stopped at the end of the test, after the
	// sequencer.
	Publisher *stream.PublisherConfig
	// External builds only the store, genesis, keys and clock: the
	// harness's writer is stopped and no sequencer is started, for a
	// caller that wires its own (a node) and hands it to Attach.
	External bool
	// TipCap and FeeCap are the fee caps of Tx (nil: 1 gwei and 10 gwei).
	TipCap, FeeCap *big.Int
}

// Harness is a dev chain in a fresh store with a sequencer driven by a
// manual clock. Its sequencer is stopped at the end of the test (an error
// of that Stop fails the test unless Crash abandoned it).
type Harness struct {
	T       testing.TB
	DB      *store.DB
	Genesis *chain.Genesis
	// Spec is the genesis JSON, for other stores of the same chain.
	Spec   []byte
	Writer *chain.Writer
	Mgr    *pending.Manager
	Pool   *sequencer.Pool
	Seq    *sequencer.Sequencer
	Clock  *pending.ManualClock
	Cfg    sequencer.Config
	Accs   []devnet.Account
	Signer types.Signer
	// Publisher is the stream publisher of Options.Publisher (or nil).
	Publisher *stream.Publisher

	opts    Options
	nonces  map[common.Address]uint64
	crashed bool
}

// New builds the chain and, unless opts.External, starts the sequencer.
func New(t testing.TB, opts Options) *Harness {
	t.Helper()
	if opts.Accounts == nil {
		k := opts.Keys
		if k == 0 {
			k = 1
		}
		opts.Accounts = Accounts(t, k)
	}
	if opts.Spec == nil {
		opts.Spec = Spec(t, opts.Accounts)
	}
	h := &Harness{T: t, Spec: opts.Spec, Accs: opts.Accounts, nonces: map[common.Address]uint64{}}
	h.DB, h.Genesis, h.Writer = chaintest.InitStore(t, opts.Spec)
	if opts.External {
		h.Writer.Stop()
		h.Writer = nil
	}
	h.start(opts)
	return h
}

// start sets the options' defaults and, unless External, starts a
// sequencer on h.Writer.
func (h *Harness) start(opts Options) {
	h.T.Helper()
	if opts.Config == nil {
		c := sequencer.DefaultConfig()
		opts.Config = &c
	}
	if opts.Pool == nil {
		p := sequencer.DefaultPoolConfig()
		opts.Pool = &p
	}
	if opts.Clock == nil {
		opts.Clock = NewClock()
	}
	if opts.TipCap == nil {
		opts.TipCap = big.NewInt(params.GWei)
	}
	if opts.FeeCap == nil {
		opts.FeeCap = big.NewInt(10 * params.GWei)
	}
	h.opts, h.Cfg, h.Clock, h.Signer = opts, *opts.Config, opts.Clock, types.LatestSigner(h.Genesis.Config)
	if opts.External {
		return
	}
	t := h.T
	h.Mgr = pending.NewManager(h.Writer, h.Genesis.Config, h.Cfg.HeaderParams(), h.Clock, nil)
	if opts.OnPublish != nil {
		h.Mgr.SubscribePreconfirmations(opts.OnPublish)
	}
	var err error
	if opts.Publisher != nil {
		if h.Publisher, err = stream.NewPublisher(*opts.Publisher, h.Mgr, nil, nil, zerolog.Nop()); err != nil {
			t.Fatal(err)
		}
		h.Publisher.Start()
		t.Cleanup(h.Publisher.Stop)
	}
	if h.Pool, err = sequencer.NewPool(*opts.Pool, h.Genesis.Config, h.Mgr, h.Clock, nil, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	h.Pool.UseChainCosts(h.Genesis.Executor())
	if h.Seq, err = sequencer.New(h.Cfg, h.Writer, h.Genesis.Executor(), h.Pool, h.Mgr, h.Clock, nil, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	if err := h.Seq.Start(); err != nil {
		t.Fatal(err)
	}
	seq := h.Seq
	t.Cleanup(func() {
		if err := seq.Stop(); err != nil && !h.crashed {
			t.Error(err)
		}
	})
}

// Attach hands an External harness the manager, pool and sequencer a
// caller wired on h.DB (a node's), for Tick, Seal and Send.
func (h *Harness) Attach(mgr *pending.Manager, pool *sequencer.Pool, seq *sequencer.Sequencer) {
	h.Mgr, h.Pool, h.Seq = mgr, pool, seq
}

// Crash stops the writer, so nothing more reaches the store, and abandons
// the sequencer: its Stop at the end of the test (which could only fail to
// seal) is not checked.
func (h *Harness) Crash() {
	h.crashed = true
	h.Writer.Stop()
}

// Restart starts a new writer and sequencer on h's store (after Crash),
// with h's options but clock and onPublish; it knows h's accounts and
// nonces.
func (h *Harness) Restart(clock *pending.ManualClock, onPublish func(*pending.Snapshot)) *Harness {
	h.T.Helper()
	opts := h.opts
	opts.Clock, opts.OnPublish = clock, onPublish
	n := &Harness{T: h.T, DB: h.DB, Genesis: h.Genesis, Spec: h.Spec, Accs: h.Accs, nonces: map[common.Address]uint64{}}
	for a, v := range h.nonces {
		n.nonces[a] = v
	}
	n.Writer = chaintest.StartWriter(h.T, h.DB, h.Genesis)
	n.start(opts)
	return n
}

// PerBlock is how many pre-confirmation intervals a block lasts.
func (h *Harness) PerBlock() int { return int(h.Cfg.BlockTime / h.Cfg.PreconfInterval) }

// Nonce is the nonce the next Tx of account i uses.
func (h *Harness) Nonce(i int) uint64 { return h.nonces[h.Accs[i].Address] }

// SetNonce sets the nonce the next Tx of account i uses.
func (h *Harness) SetNonce(i int, n uint64) { h.nonces[h.Accs[i].Address] = n }

// Tx signs a dynamic-fee transaction from account i with its next nonce
// (to nil: a creation of data) and the harness's fee caps.
func (h *Harness) Tx(i int, to *common.Address, value *big.Int, gas uint64, data []byte) *types.Transaction {
	h.T.Helper()
	acc := h.Accs[i]
	n := h.nonces[acc.Address]
	h.nonces[acc.Address] = n + 1
	return SignTx(h.T, h.Signer, acc.Key, &types.DynamicFeeTx{ChainID: h.Genesis.Config.ChainID, Nonce: n,
		GasTipCap: h.opts.TipCap, GasFeeCap: h.opts.FeeCap, Gas: gas, To: to, Value: value, Data: data})
}

// Send pools Tx(i, to, value, gas, data).
func (h *Harness) Send(i int, to *common.Address, value *big.Int, gas uint64, data []byte) *types.Transaction {
	h.T.Helper()
	tx := h.Tx(i, to, value, gas, data)
	if err := h.Pool.Add(tx); err != nil {
		h.T.Fatal(err)
	}
	return tx
}

// Transfer pools a plain transfer of 1 wei from account i to
// 0xbe<i>000….
func (h *Harness) Transfer(i int) *types.Transaction {
	return h.Send(i, &common.Address{0xbe, byte(i)}, big.NewInt(1), 21_000, nil)
}

// Deploy pools a creation from account i of InitCode(runtime) and returns
// it with the contract's address.
func (h *Harness) Deploy(i int, runtime []byte, gas uint64) (*types.Transaction, common.Address) {
	h.T.Helper()
	addr := crypto.CreateAddress(h.Accs[i].Address, h.Nonce(i))
	return h.Send(i, nil, new(big.Int), gas, InitCode(runtime)), addr
}

// Tick advances k pre-confirmation intervals and waits until the
// sequencer has handled them.
func (h *Harness) Tick(k int) {
	h.T.Helper()
	for range k {
		h.Clock.Advance(h.Cfg.PreconfInterval)
	}
	h.Seq.Sync()
	if err := h.Seq.Err(); err != nil {
		h.T.Fatal(err)
	}
}

// Seal ticks until the pending block is sealed and the next one opened
// (at most 100 intervals).
func (h *Harness) Seal() {
	h.T.Helper()
	cur := h.Mgr.Current().Header().Number.Uint64()
	for i := 0; i < maxSealTicks && h.Mgr.Current().Header().Number.Uint64() == cur; i++ {
		h.Tick(1)
	}
	if h.Mgr.Current().Header().Number.Uint64() == cur {
		h.T.Fatalf("no seal after %d intervals", maxSealTicks)
	}
}

// Recorder collects published snapshots (its Add is an OnPublish).
type Recorder struct {
	mu    sync.Mutex
	snaps []*pending.Snapshot
}

// Add records s.
func (r *Recorder) Add(s *pending.Snapshot) {
	r.mu.Lock()
	r.snaps = append(r.snaps, s)
	r.mu.Unlock()
}

// All returns the snapshots recorded so far.
func (r *Recorder) All() []*pending.Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*pending.Snapshot(nil), r.snaps...)
}

// Take returns the snapshots recorded since the last Take.
func (r *Recorder) Take() []*pending.Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.snaps
	r.snaps = nil
	return out
}
