package sequencer

import (
	"errors"
	"fmt"
	"math/big"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus/misc/eip4844"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto/kzg4844"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/pending"
)

// PoolConfig configures the transaction pool. Zero fields take the defaults
// of DefaultPoolConfig when passed through WithDefaults.
type PoolConfig struct {
	// MaxTxSize is the largest accepted encoded transaction (blob
	// transactions: see MaxBlobTxSize). Default 128 KiB.
	MaxTxSize uint64
	// MaxBlobTxSize is the largest accepted blob transaction in its network
	// form (with the sidecar: blobs, commitments and proofs). Default 1 MiB
	// (go-ethereum's RPC limit), room for six blobs with cell proofs.
	MaxBlobTxSize uint64
	// PriceBump is the percentage by which a replacement must raise both the
	// fee cap and the tip of the pooled transaction it replaces. Default 10.
	PriceBump uint64
	// MaxTxs bounds the number of pooled transactions. Default 10,000.
	MaxTxs int
	// MaxBytes bounds the total encoded size of the pooled transactions
	// (blob transactions with their sidecars), so that MaxTxs transactions
	// of MaxTxSize cannot take gigabytes. It must be at least MaxTxSize.
	// Default 64 MiB.
	MaxBytes uint64
	// MaxNonceGap is how far above the sender's pending nonce a transaction's
	// nonce may be (it waits in the pool until the gap is filled). Also the
	// most transactions one sender may have pooled. Default 64.
	MaxNonceGap uint64
	// Lifetime is how long a transaction may wait in the pool (a nonce gap
	// never filled, a fee cap below a risen base fee...) before it is
	// evicted, so stuck transactions cannot fill the pool for good.
	// Default 3h (go-ethereum's default).
	Lifetime time.Duration
}

// DefaultPoolConfig returns the documented defaults.
func DefaultPoolConfig() PoolConfig {
	return PoolConfig{MaxTxSize: 128 << 10, MaxBlobTxSize: 1 << 20, PriceBump: 10, MaxTxs: 10_000, MaxBytes: 64 << 20, MaxNonceGap: 64, Lifetime: 3 * time.Hour}
}

// WithDefaults fills zero fields with the defaults.
func (c PoolConfig) WithDefaults() PoolConfig {
	d := DefaultPoolConfig()
	if c.MaxTxSize == 0 {
		c.MaxTxSize = d.MaxTxSize
	}
	if c.MaxBlobTxSize == 0 {
		c.MaxBlobTxSize = d.MaxBlobTxSize
	}
	if c.Lifetime == 0 {
		c.Lifetime = d.Lifetime
	}
	if c.PriceBump == 0 {
		c.PriceBump = d.PriceBump
	}
	if c.MaxTxs == 0 {
		c.MaxTxs = d.MaxTxs
	}
	if c.MaxNonceGap == 0 {
		c.MaxNonceGap = d.MaxNonceGap
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = d.MaxBytes
	}
	return c
}

// Validate checks the configuration (after WithDefaults).
func (c PoolConfig) Validate() error {
	switch {
	case c.MaxTxSize < 1024:
		return fmt.Errorf("%w: pool max tx size %d below 1 KiB", ErrConfig, c.MaxTxSize)
	case c.MaxTxs <= 0:
		return fmt.Errorf("%w: pool max txs must be > 0", ErrConfig)
	case c.MaxBlobTxSize < c.MaxTxSize:
		return fmt.Errorf("%w: pool max blob tx size %d below the max tx size %d", ErrConfig, c.MaxBlobTxSize, c.MaxTxSize)
	case c.MaxBytes < c.MaxTxSize:
		return fmt.Errorf("%w: pool max bytes %d below the max tx size %d", ErrConfig, c.MaxBytes, c.MaxTxSize)
	case c.Lifetime < time.Second:
		return fmt.Errorf("%w: pool lifetime %v below one second", ErrConfig, c.Lifetime)
	case c.PriceBump > 1000:
		return fmt.Errorf("%w: price bump %d%% is absurd", ErrConfig, c.PriceBump)
	}
	return nil
}

type poolTx struct {
	tx      *types.Transaction
	sender  common.Address
	arrival time.Time
	// executed: a sequencer step executed it into the pending block, not
	// published yet (Pool.executed). Written under Pool.mu by the
	// sequencer's loop, which alone also reads it without the lock.
	executed bool
}

// Pool holds transactions submitted with eth_sendRawTransaction, per sender
// in nonce order. Add validates against the pending state (the pending.Manager's
// current snapshot, or latest when no sequencer runs); the sequencer takes
// executable transactions from it every pre-confirmation interval. Without a
// sequencer the pool only holds transactions. Safe for concurrent use.
type Pool struct {
	cfg     PoolConfig
	chain   *params.ChainConfig
	exec    *chain.Executor // the chain's extra costs (OP: L1 data and operator fees); nil: none
	signer  types.Signer
	mgr     *pending.Manager
	clock   pending.Clock
	metrics *pending.Metrics
	log     zerolog.Logger

	mu      sync.Mutex
	all     map[common.Hash]*poolTx
	bytes   uint64 // encoded size of all
	senders map[common.Address]map[uint64]*poolTx

	txFeed chain.Feed[*types.Transaction]
	// admissions counts the transactions pooled so far (a sequencer step
	// with nothing new to execute does nothing, Sequencer.step).
	admissions atomic.Uint64
}

// NewPool returns an empty pool validating against mgr.
func NewPool(cfg PoolConfig, config *params.ChainConfig, mgr *pending.Manager, clock pending.Clock, metrics *pending.Metrics, log zerolog.Logger) (*Pool, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if clock == nil {
		clock = pending.SystemClock{}
	}
	return &Pool{
		cfg: cfg, chain: config, signer: types.LatestSigner(config), mgr: mgr, clock: clock,
		metrics: metrics, log: log.With().Str("component", "txpool").Logger(),
		all:     make(map[common.Hash]*poolTx),
		senders: make(map[common.Address]map[uint64]*poolTx),
	}, nil
}

// UseChainCosts makes Add also require what exec's chain charges beyond
// gas and value (chain.Executor.ExtraTxCost: on an OP chain the L1 data
// fee and the operator fee at the pending state). Call it before the pool
// is used (node wiring).
func (p *Pool) UseChainCosts(exec *chain.Executor) { p.exec = exec }

// Len is the number of pooled transactions.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.all)
}

// Get returns a pooled transaction (nil when absent).
func (p *Pool) Get(hash common.Hash) *types.Transaction {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ptx := p.all[hash]; ptx != nil {
		return ptx.tx
	}
	return nil
}

// Content returns the pooled transactions per sender in nonce order (only
// sender's when sender is not nil): copies, for txpool_content and kin.
func (p *Pool) Content(sender *common.Address) map[common.Address][]*types.Transaction {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[common.Address][]*types.Transaction)
	for addr, q := range p.senders {
		if sender != nil && addr != *sender {
			continue
		}
		list := make([]*types.Transaction, 0, len(q))
		for _, ptx := range q {
			list = append(list, ptx.tx)
		}
		sort.Slice(list, func(i, j int) bool { return list[i].Nonce() < list[j].Nonce() })
		out[addr] = list
	}
	return out
}

// PooledNonces is a copy of one sender's pooled nonces (Pool.Nonces).
type PooledNonces map[uint64]struct{}

// Next returns the first nonce at or above from that is not pooled. With
// from = the sender's nonce in the pending state it is the sender's pending
// nonce: the nonce its next transaction must take.
func (n PooledNonces) Next(from uint64) uint64 {
	for {
		if _, ok := n[from]; !ok {
			return from
		}
		from++
	}
}

// Nonces returns a copy of the nonces addr has pooled. Take it BEFORE
// reading the sender's nonce in the pending state: a transaction leaves the
// pool only after the snapshot holding it was published, so a state read
// after the copy counts every transaction the copy misses, and
// Nonces(addr).Next(stateNonce) never hands out a nonce already taken.
func (p *Pool) Nonces(addr common.Address) PooledNonces {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.senders[addr]
	out := make(PooledNonces, len(q))
	for n := range q {
		out[n] = struct{}{}
	}
	return out
}

// SubscribeTxs calls fn with every transaction admitted from now on, on the
// goroutine of Add, after admission. fn must not block.
func (p *Pool) SubscribeTxs(fn func(*types.Transaction)) (unsubscribe func()) {
	return p.txFeed.Subscribe(fn)
}

// Add validates tx and pools it. The error wraps one of the sentinels in
// errors.go and explains the refusal.
func (p *Pool) Add(tx *types.Transaction) error {
	arrival := p.clock.Now()
	ptx, err := p.validate(tx)
	if err == nil {
		ptx.arrival = arrival
		err = p.insert(ptx)
	}
	if err != nil {
		p.metrics.PoolRejected(rejectReason(err))
		p.log.Debug().Str("tx", tx.Hash().Hex()).Err(err).Msg("transaction refused")
		return err
	}
	p.log.Debug().Str("tx", tx.Hash().Hex()).Str("from", ptx.sender.Hex()).Uint64("nonce", tx.Nonce()).Msg("transaction pooled")
	p.txFeed.Send(tx)
	return nil
}

func (p *Pool) validate(tx *types.Transaction) (*poolTx, error) {
	hash := tx.Hash()
	p.mu.Lock()
	_, known := p.all[hash]
	p.mu.Unlock()
	if known {
		return nil, fmt.Errorf("%w: %s", ErrAlreadyKnown, hash.Hex())
	}
	header, state, release, err := p.mgr.State()
	if err != nil {
		return nil, err
	}
	defer release()
	from, rules, err := p.check(tx, header)
	if err != nil {
		return nil, err
	}
	acc, err := state.Account(from)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", pending.ErrNoState, err)
	}
	var nonce uint64
	balance := new(big.Int)
	if acc != nil {
		nonce, balance = acc.Nonce, acc.Balance.ToBig()
	}
	if tx.Nonce() < nonce {
		return nil, fmt.Errorf("%w: address %s, tx nonce %d, pending nonce %d", ErrNonceTooLow, from.Hex(), tx.Nonce(), nonce)
	}
	if tx.Nonce() > nonce+p.cfg.MaxNonceGap {
		return nil, fmt.Errorf("%w: address %s, tx nonce %d, pending nonce %d (at most %d ahead)", ErrNonceTooHigh, from.Hex(), tx.Nonce(), nonce, p.cfg.MaxNonceGap)
	}
	if cost := tx.Cost(); balance.Cmp(cost) < 0 {
		return nil, fmt.Errorf("%w: address %s, balance %s, cost %s (overshot %s)", ErrInsufficientFunds, from.Hex(), balance, cost, new(big.Int).Sub(cost, balance))
	}
	if p.exec != nil {
		extra, err := p.exec.ExtraTxCost(tx, header, state)
		if errors.Is(err, chain.ErrStateRead) {
			return nil, fmt.Errorf("%w: %v", pending.ErrNoState, err)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrTxTypeNotSupported, err)
		}
		if cost := new(big.Int).Add(tx.Cost(), extra); extra.Sign() > 0 && balance.Cmp(cost) < 0 {
			return nil, fmt.Errorf("%w: address %s, balance %s, cost %s with the L1 data and operator fees (%s wei; overshot %s)",
				ErrInsufficientFunds, from.Hex(), balance, cost, extra, new(big.Int).Sub(cost, balance))
		}
	}
	if tx.Type() == types.BlobTxType {
		// Last: the KZG proofs are the expensive part.
		if tx, err = p.validateBlobs(tx, header, rules); err != nil {
			return nil, err
		}
	}
	return &poolTx{tx: tx, sender: from}, nil
}

// Check applies the checks that need no account state to tx against the
// pending block's header (or the next block's, without a snapshot): size,
// chain id, signature (it returns the sender), fee fields, transaction type
// active on the fork, gas against the block and per-transaction limits,
// init code size, intrinsic gas and the EIP-7623 floor, fee cap against the
// base fee. A node that forwards transactions to a sequencer checks them
// with it. Refusals wrap the sentinels of errors.go, as Add's.
func (p *Pool) Check(tx *types.Transaction) (common.Address, error) {
	header, _, release, err := p.mgr.State()
	if err != nil {
		return common.Address{}, err
	}
	defer release()
	from, _, err := p.check(tx, header)
	return from, err
}

// check is Check against header.
func (p *Pool) check(tx *types.Transaction, header *types.Header) (common.Address, params.Rules, error) {
	var from common.Address
	rules := p.chain.Rules(header.Number, true, header.Time)
	limit := p.cfg.MaxTxSize
	if tx.Type() == types.BlobTxType {
		limit = p.cfg.MaxBlobTxSize
	}
	if size := tx.Size(); size > limit {
		return from, rules, fmt.Errorf("%w: transaction size %d, limit %d", ErrOversized, size, limit)
	}
	if tx.Type() != types.LegacyTxType || tx.Protected() {
		if tx.ChainId().Cmp(p.chain.ChainID) != 0 {
			return from, rules, fmt.Errorf("%w: have %d, want %d", ErrChainID, tx.ChainId(), p.chain.ChainID)
		}
	}
	from, err := types.Sender(p.signer, tx)
	if err != nil {
		return from, rules, fmt.Errorf("%w: %v", ErrInvalidSender, err)
	}
	if tx.GasFeeCap().BitLen() > 256 || tx.GasTipCap().BitLen() > 256 {
		return from, rules, fmt.Errorf("%w: fee values exceed 256 bits", ErrFeeCapTooLow)
	}
	if tx.GasFeeCap().Cmp(tx.GasTipCap()) < 0 {
		return from, rules, fmt.Errorf("%w: tip %s, fee cap %s", ErrTipAboveFeeCap, tx.GasTipCap(), tx.GasFeeCap())
	}
	switch tx.Type() {
	case types.AccessListTxType:
		if !rules.IsBerlin {
			return from, rules, fmt.Errorf("%w: access-list transactions need Berlin", ErrTxTypeNotSupported)
		}
	case types.DynamicFeeTxType:
		if !rules.IsLondon {
			return from, rules, fmt.Errorf("%w: dynamic-fee transactions need London", ErrTxTypeNotSupported)
		}
	case types.BlobTxType:
		if !rules.IsCancun {
			return from, rules, fmt.Errorf("%w: blob transactions need Cancun", ErrTxTypeNotSupported)
		}
	case types.SetCodeTxType:
		if !rules.IsPrague {
			return from, rules, fmt.Errorf("%w: set-code transactions need Prague", ErrTxTypeNotSupported)
		}
		if len(tx.SetCodeAuthorizations()) == 0 {
			return from, rules, fmt.Errorf("%w: set-code transaction without authorizations", ErrTxTypeNotSupported)
		}
	}
	if tx.Gas() > header.GasLimit {
		return from, rules, fmt.Errorf("%w: gas %d, block gas limit %d", ErrGasLimit, tx.Gas(), header.GasLimit)
	}
	if rules.IsOsaka && tx.Gas() > params.MaxTxGas {
		return from, rules, fmt.Errorf("%w: gas %d above the per-transaction cap %d (EIP-7825)", ErrGasLimit, tx.Gas(), params.MaxTxGas)
	}
	if tx.To() == nil && rules.IsShanghai && len(tx.Data()) > params.MaxInitCodeSize {
		return from, rules, fmt.Errorf("%w: init code of %d bytes, limit %d", ErrOversized, len(tx.Data()), params.MaxInitCodeSize)
	}
	value, _ := uint256.FromBig(tx.Value())
	intrinsic, err := core.IntrinsicGas(tx.Data(), tx.AccessList(), tx.SetCodeAuthorizations(), from, tx.To(), value, rules)
	if err != nil {
		return from, rules, fmt.Errorf("%w: %v", ErrIntrinsicGas, err)
	}
	if tx.Gas() < intrinsic {
		return from, rules, fmt.Errorf("%w: gas %d, minimum needed %d", ErrIntrinsicGas, tx.Gas(), intrinsic)
	}
	if rules.IsPrague {
		floor, err := core.FloorDataGas(rules, from, tx.To(), value, tx.Data(), tx.AccessList())
		if err != nil {
			return from, rules, fmt.Errorf("%w: %v", ErrIntrinsicGas, err)
		}
		if tx.Gas() < floor {
			return from, rules, fmt.Errorf("%w: gas %d, calldata floor %d (EIP-7623)", ErrIntrinsicGas, tx.Gas(), floor)
		}
	}
	if header.BaseFee != nil && tx.GasFeeCap().Cmp(header.BaseFee) < 0 {
		return from, rules, fmt.Errorf("%w: max fee per gas %s, base fee of pending block %d is %s", ErrFeeCapTooLow, tx.GasFeeCap(), header.Number, header.BaseFee)
	}
	return from, rules, nil
}

// validateBlobs checks a blob transaction in its network form against the
// pending block's header: the blob count (at least one, at most the
// per-transaction limit of EIP-7594 from Osaka and the block's maximum),
// the blob fee cap against the pending blob base fee (refused, not queued,
// like the fee cap), the sidecar's commitments against the versioned
// hashes, and its KZG proofs with go-ethereum's kzg4844: blob proofs
// (sidecar version 0) before Osaka, cell proofs (version 1) from Osaka. A
// version-0 sidecar sent once Osaka is active is converted to version 1 (its
// cell proofs computed), as go-ethereum's eth_sendRawTransaction does. It
// returns the transaction to pool (the converted one, or tx).
func (p *Pool) validateBlobs(tx *types.Transaction, header *types.Header, rules params.Rules) (*types.Transaction, error) {
	hashes := tx.BlobHashes()
	maxBlobs := 0
	if bcfg := p.chain.BlobConfig(p.chain.LatestFork(header.Time)); bcfg != nil {
		maxBlobs = bcfg.Max
	}
	if rules.IsOsaka && maxBlobs > params.BlobTxMaxBlobs {
		maxBlobs = params.BlobTxMaxBlobs
	}
	switch {
	case len(hashes) == 0:
		return nil, fmt.Errorf("%w: blob transaction without blobs", ErrBlobSidecar)
	case len(hashes) > maxBlobs:
		return nil, fmt.Errorf("%w: %d blobs, at most %d per transaction", ErrBlobSidecar, len(hashes), maxBlobs)
	}
	if header.ExcessBlobGas != nil {
		blobFee := eip4844.CalcBlobFee(p.chain, header)
		if tx.BlobGasFeeCap().Cmp(blobFee) < 0 {
			return nil, fmt.Errorf("%w: max fee per blob gas %s, blob base fee of pending block %d is %s", ErrBlobFeeCapTooLow, tx.BlobGasFeeCap(), header.Number, blobFee)
		}
	}
	sc := tx.BlobTxSidecar()
	if sc == nil {
		return nil, fmt.Errorf("%w: no sidecar: send blob transactions in their network form (with blobs, commitments and proofs)", ErrBlobSidecar)
	}
	if len(sc.Blobs) != len(hashes) {
		return nil, fmt.Errorf("%w: %d blobs for %d versioned hashes", ErrBlobSidecar, len(sc.Blobs), len(hashes))
	}
	if err := sc.ValidateBlobCommitmentHashes(hashes); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBlobSidecar, err)
	}
	want := types.BlobSidecarVersion0
	if rules.IsOsaka {
		want = types.BlobSidecarVersion1
	}
	if sc.Version == types.BlobSidecarVersion0 && want == types.BlobSidecarVersion1 {
		sc = sc.Copy()
		if err := sc.ToV1(); err != nil {
			return nil, fmt.Errorf("%w: computing cell proofs: %v", ErrBlobSidecar, err)
		}
		tx = tx.WithBlobTxSidecar(sc)
	}
	if sc.Version != want {
		return nil, fmt.Errorf("%w: sidecar version %d, the pending block's fork takes version %d", ErrBlobSidecar, sc.Version, want)
	}
	switch sc.Version {
	case types.BlobSidecarVersion0:
		if len(sc.Proofs) != len(sc.Blobs) {
			return nil, fmt.Errorf("%w: %d proofs for %d blobs", ErrBlobSidecar, len(sc.Proofs), len(sc.Blobs))
		}
		for i := range sc.Blobs {
			if err := kzg4844.VerifyBlobProof(&sc.Blobs[i], sc.Commitments[i], sc.Proofs[i]); err != nil {
				return nil, fmt.Errorf("%w: blob %d: %v", ErrBlobSidecar, i, err)
			}
		}
	default:
		if len(sc.Proofs) != len(sc.Blobs)*kzg4844.CellProofsPerBlob {
			return nil, fmt.Errorf("%w: %d cell proofs for %d blobs (want %d per blob)", ErrBlobSidecar, len(sc.Proofs), len(sc.Blobs), kzg4844.CellProofsPerBlob)
		}
		if err := kzg4844.VerifyCellProofs(sc.Blobs, sc.Commitments, sc.Proofs); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBlobSidecar, err)
		}
	}
	return tx, nil
}

// insert adds a validated transaction, replacing a same-nonce one if the
// price bump allows.
func (p *Pool) insert(ptx *poolTx) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	hash := ptx.tx.Hash()
	if _, known := p.all[hash]; known {
		return fmt.Errorf("%w: %s", ErrAlreadyKnown, hash.Hex())
	}
	queue := p.senders[ptx.sender]
	size := ptx.tx.Size()
	if old := queue[ptx.tx.Nonce()]; old != nil {
		if old.executed {
			// Its nonce is used in the pending block already, published
			// at the next pre-confirmation: a replacement would be
			// dropped as stale there, after it was accepted here.
			return fmt.Errorf("%w: %s with nonce %d is already executed into the pending block",
				ErrNonceTooLow, old.tx.Hash().Hex(), old.tx.Nonce())
		}
		if !p.outbids(ptx.tx, old.tx) {
			return fmt.Errorf("%w: replacing %s needs fee cap and tip at least %d%% higher (have %s/%s, pooled %s/%s)",
				ErrReplaceUnderpriced, old.tx.Hash().Hex(), p.cfg.PriceBump,
				ptx.tx.GasFeeCap(), ptx.tx.GasTipCap(), old.tx.GasFeeCap(), old.tx.GasTipCap())
		}
		if p.bytes-old.tx.Size()+size > p.cfg.MaxBytes {
			return fmt.Errorf("%w: %d bytes pooled", ErrPoolFull, p.bytes)
		}
		delete(p.all, old.tx.Hash())
		p.bytes -= old.tx.Size()
		p.log.Debug().Str("old", old.tx.Hash().Hex()).Str("new", hash.Hex()).Msg("transaction replaced")
	} else {
		if len(p.all) >= p.cfg.MaxTxs || p.bytes+size > p.cfg.MaxBytes {
			p.expireLocked()
		}
		if len(p.all) >= p.cfg.MaxTxs {
			return fmt.Errorf("%w: %d transactions pooled", ErrPoolFull, len(p.all))
		}
		if p.bytes+size > p.cfg.MaxBytes {
			return fmt.Errorf("%w: %d bytes pooled", ErrPoolFull, p.bytes)
		}
		if uint64(len(queue)) >= p.cfg.MaxNonceGap {
			return fmt.Errorf("%w: sender %s has %d transactions pooled", ErrPoolFull, ptx.sender.Hex(), len(queue))
		}
	}
	if queue == nil {
		queue = make(map[uint64]*poolTx)
		p.senders[ptx.sender] = queue
	}
	queue[ptx.tx.Nonce()] = ptx
	p.all[hash] = ptx
	p.bytes += size
	p.admissions.Add(1)
	p.metrics.PoolAdded(len(p.all))
	return nil
}

// executed marks txs as executed into the pending block by a sequencer
// step and not published yet: they stay pooled and cannot be replaced.
func (p *Pool) executed(txs []*poolTx) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ptx := range txs {
		ptx.executed = true
	}
}

// admitted is the number of transactions pooled so far (replacements
// included).
func (p *Pool) admitted() uint64 { return p.admissions.Load() }

func (p *Pool) outbids(newTx, old *types.Transaction) bool {
	bump := func(v *big.Int) *big.Int {
		b := new(big.Int).Mul(v, big.NewInt(int64(100+p.cfg.PriceBump)))
		return b.Div(b.Add(b, big.NewInt(99)), big.NewInt(100)) // round up
	}
	return newTx.GasFeeCap().Cmp(bump(old.GasFeeCap())) >= 0 && newTx.GasTipCap().Cmp(bump(old.GasTipCap())) >= 0
}

// pending returns, per sender, the pooled transactions sorted by nonce
// (copies; the pool may change meanwhile).
func (p *Pool) pending() map[common.Address][]*poolTx {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expireLocked()
	out := make(map[common.Address][]*poolTx, len(p.senders))
	for addr, q := range p.senders {
		list := make([]*poolTx, 0, len(q))
		for _, ptx := range q {
			list = append(list, ptx)
		}
		sort.Slice(list, func(i, j int) bool { return list[i].tx.Nonce() < list[j].tx.Nonce() })
		out[addr] = list
	}
	return out
}

// expireLocked evicts transactions older than Lifetime. p.mu is held.
func (p *Pool) expireLocked() {
	cutoff := p.clock.Now().Add(-p.cfg.Lifetime)
	var old []*poolTx
	for _, ptx := range p.all {
		if ptx.arrival.Before(cutoff) {
			old = append(old, ptx)
		}
	}
	if len(old) > 0 {
		p.removeLocked(old...)
		p.log.Debug().Int("txs", len(old)).Stringer("lifetime", p.cfg.Lifetime).Msg("expired pooled transactions")
	}
}

// remove drops transactions (included, stale or invalid). A transaction
// that was replaced meanwhile is left alone.
func (p *Pool) remove(txs ...*poolTx) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.removeLocked(txs...)
}

func (p *Pool) removeLocked(txs ...*poolTx) {
	for _, ptx := range txs {
		hash := ptx.tx.Hash()
		if _, ok := p.all[hash]; !ok {
			continue
		}
		delete(p.all, hash)
		p.bytes -= ptx.tx.Size()
		q := p.senders[ptx.sender]
		if cur := q[ptx.tx.Nonce()]; cur != nil && cur.tx.Hash() == hash {
			delete(q, ptx.tx.Nonce())
		}
		if len(q) == 0 {
			delete(p.senders, ptx.sender)
		}
	}
	p.metrics.PoolSized(len(p.all))
}

func rejectReason(err error) string {
	for _, r := range []struct {
		err  error
		name string
	}{
		{ErrAlreadyKnown, "known"}, {ErrChainID, "chain_id"}, {ErrInvalidSender, "sender"},
		{ErrTxTypeNotSupported, "type"}, {ErrOversized, "oversized"}, {ErrGasLimit, "gas_limit"},
		{ErrIntrinsicGas, "intrinsic_gas"}, {ErrTipAboveFeeCap, "tip_above_fee_cap"},
		{ErrFeeCapTooLow, "fee_cap"}, {ErrNonceTooLow, "nonce_low"}, {ErrNonceTooHigh, "nonce_high"},
		{ErrInsufficientFunds, "funds"}, {ErrReplaceUnderpriced, "underpriced"}, {ErrPoolFull, "full"},
		{ErrBlobSidecar, "blob_sidecar"}, {ErrBlobFeeCapTooLow, "blob_fee_cap"},
	} {
		if errors.Is(err, r.err) {
			return r.name
		}
	}
	return "other"
}

// Clear drops every pooled transaction (the dev chain's evm_revert) and
// returns how many there were.
func (p *Pool) Clear() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	all := make([]*poolTx, 0, len(p.all))
	for _, ptx := range p.all {
		all = append(all, ptx)
	}
	p.removeLocked(all...)
	return len(all)
}
