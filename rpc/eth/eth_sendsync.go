package eth

// eth_sendRawTransactionSync (EIP-7966): submit a signed transaction as
// eth_sendRawTransaction does, then wait for its receipt and return it.
//
// The receipt comes as soon as the transaction is pre-confirmed: on a
// sequencer at the next pre-confirmation interval; on a replica (whose
// pool forwards to the sequencer) when the pre-confirmation stream brings
// it; on a node without a pending layer when a block holding it is
// imported. It is then the receipt eth_getTransactionReceipt answers at
// that moment (a pre-confirmed one: see marshalReceipt's pending shape).
//
// No race: the waiter is registered (and the feeds subscribed) before the
// transaction is handed to the pool, and the receipt is looked up once
// after the submission before the first wait, so a receipt published at
// any moment after the send is seen. Wake-ups: a published snapshot wakes
// only the waiters of the hashes it pre-confirms (one map look-up per new
// transaction, on the publisher's goroutine, never blocking); a head event
// wakes every waiter (blocks are rare, and the waiter's own goroutine does
// the look-up). A waiting call holds no EVM execution slot and no
// per-client call slot: it is registered under its own Limiter
// (APIConfig.TxSyncMaxWaiting calls at once, more refused with -32005).
//
// Timeout: params[1] in milliseconds (a JSON number or a hex quantity);
// absent, zero or above APIConfig.TxSyncMaxTimeout it is
// APIConfig.TxSyncTimeout (EIP-7966: an invalid timeout takes the node's
// default). The wait also ends 50 ms before the request's own deadline
// (--rpc.timeout), so the client gets EIP-7966's code 4 "… wasn't
// processed in D." with the hash as data, not a transport timeout.

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/rpc"
)

// registerSendSync installs eth_sendRawTransactionSync under its own
// limiter of waiting calls.
func (a *API) registerSendSync(s *rpc.Server) {
	s.RegisterLimited("eth_sendRawTransactionSync", a.syncWaits, a.ethSendRawTransactionSync)
}

// syncDeadlineMargin is how long before the request's deadline the wait
// gives up, so the EIP-7966 timeout reaches the client instead of the
// transport's -32002.
const syncDeadlineMargin = 50 * time.Millisecond

// millis is a timeout in milliseconds: a JSON number or a hex quantity.
type millis uint64

func (m *millis) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var q hexutil.Uint64
		if err := json.Unmarshal(b, &q); err != nil {
			return err
		}
		*m = millis(q)
		return nil
	}
	n, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("timeout must be a non-negative integer (milliseconds) or a hex quantity, got %s", b)
	}
	*m = millis(n)
	return nil
}

// syncTimeout is the wait of one call for a requested timeout (0 = none).
func (a *API) syncTimeout(ms millis) time.Duration {
	d := time.Duration(ms) * time.Millisecond
	if ms == 0 || ms > millis(a.cfg.TxSyncMaxTimeout/time.Millisecond) {
		return a.cfg.TxSyncTimeout
	}
	return d
}

func (a *API) ethSendRawTransactionSync(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(2); err != nil {
		return nil, err
	}
	tx, err := decodeRawTx(p)
	if err != nil {
		return nil, err
	}
	var ms millis
	if _, err := p.DecodeOptional(1, "timeout", &ms); err != nil {
		return nil, err
	}
	timeout := a.syncTimeout(ms)
	hash := tx.Hash()

	// Register before submitting: nothing published after this is missed.
	w := a.txWaits.add(a, hash)
	defer a.txWaits.remove(hash, w)
	if err := a.submit(tx); err != nil {
		return nil, err
	}
	start := time.Now()
	wait := timeout
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl) - syncDeadlineMargin; left < wait {
			wait = max(left, 0)
		}
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	gapChecked := false
	for {
		r, err := a.receiptNow(ctx, hash)
		if err != nil || r != nil {
			return r, err
		}
		if !gapChecked {
			// A transaction behind a nonce gap will not execute until the
			// gap is filled: say so now (EIP-7966 code 5) rather than
			// waiting out the timeout.
			gapChecked = true
			if msg := a.nonceGap(ctx, tx); msg != "" {
				return nil, rpc.ErrTxSyncNotReady(msg, hash.Hex())
			}
		}
		select {
		case <-w:
		case <-timer.C:
			return nil, rpc.ErrTxSyncTimeout(time.Since(start).Round(time.Millisecond), hash.Hex())
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// receiptNow is eth_getTransactionReceipt's answer for hash now (nil when
// there is none yet).
func (a *API) receiptNow(ctx context.Context, hash common.Hash) (any, error) {
	t, release, err := a.findTx(ctx, hash)
	if err != nil {
		return nil, err
	}
	defer release()
	r, err := a.transactionReceipt(t)
	if err != nil {
		return nil, err
	}
	if m, ok := r.(map[string]any); ok && m != nil {
		return m, nil
	}
	return nil, nil
}

// nonceGap describes why tx cannot execute yet ("" when it can): its nonce
// is above the sender's next executable nonce (pre-confirmed state plus the
// pooled run).
func (a *API) nonceGap(ctx context.Context, tx *types.Transaction) string {
	from, err := types.Sender(types.LatestSignerForChainID(tx.ChainId()), tx)
	if err != nil {
		return ""
	}
	next, err := a.nonceAt(ctx, from, BlockSelector{Tag: TagPending})
	if err != nil || tx.Nonce() < next {
		return ""
	}
	return fmt.Sprintf("nonce gap: the sender's next nonce is %s, this transaction has %s", hexutil.EncodeUint64(next), hexutil.EncodeUint64(tx.Nonce()))
}

// txWaiters are the eth_sendRawTransactionSync calls waiting, by
// transaction hash. The feeds are subscribed on first use and stay
// subscribed for the API's life (a callback with no waiter returns at
// once).
type txWaiters struct {
	once sync.Once
	mu   sync.Mutex
	m    map[common.Hash][]chan struct{}
	n    int
}

// add registers a waiter for hash; its channel receives a wake-up
// (coalesced) whenever the receipt may have appeared.
func (t *txWaiters) add(a *API, hash common.Hash) chan struct{} {
	t.once.Do(func() {
		if a.reads != nil {
			a.reads.SubscribePreconfirmations(t.onSnapshot)
		}
		if a.chain != nil {
			a.chain.SubscribeHeads(t.onHead)
		}
	})
	ch := make(chan struct{}, 1)
	t.mu.Lock()
	if t.m == nil {
		t.m = make(map[common.Hash][]chan struct{})
	}
	t.m[hash] = append(t.m[hash], ch)
	t.n++
	t.mu.Unlock()
	return ch
}

// remove unregisters the waiter ch of hash.
func (t *txWaiters) remove(hash common.Hash, ch chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ws := t.m[hash]
	for i, w := range ws {
		if w == ch {
			ws = append(ws[:i], ws[i+1:]...)
			t.n--
			break
		}
	}
	if len(ws) == 0 {
		delete(t.m, hash)
	} else {
		t.m[hash] = ws
	}
}

// waiting is the number of registered waiters.
func (t *txWaiters) waiting() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// onSnapshot wakes the waiters of the transactions s pre-confirms.
func (t *txWaiters) onSnapshot(s *pending.Snapshot) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		return
	}
	for _, tx := range s.NewTransactions() {
		for _, ch := range t.m[tx.Hash()] {
			wake(ch)
		}
	}
}

// onHead wakes every waiter: a new canonical block may hold any of them.
func (t *txWaiters) onHead(*chain.HeadEvent) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, ws := range t.m {
		for _, ch := range ws {
			wake(ch)
		}
	}
}
