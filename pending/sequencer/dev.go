package sequencer

// The dev chain's controls (tipnode dev: anvil_*, hardhat_* and evm_*
// methods). Each runs on the sequencer's loop goroutine (the pending.Builder's
// owner), between two ticks, so it never races a pre-confirmation or a
// seal:
//
//   - Override (setBalance, setNonce, setCode, setStorageAt) applies a
//     state change to the open pending block after its transactions so far
//     (pending.Builder.Override), journals it beside them (store.PendingOverride,
//     fsynced like a pre-confirmation: it survives a crash and is replayed
//     in order) and publishes a snapshot: `pending` shows it at once,
//     `latest` once the block is sealed (its state diff holds it).
//   - SendImpersonated executes a transaction carrying the marker signature
//     of Impersonate at once as the next transaction of the open block
//     (journaled and published like a pre-confirmation; the pool is not
//     involved).
//   - Mine seals now (N blocks, optionally interval seconds apart), taking
//     executable pool transactions first as a tick would.
//   - IncreaseTime / SetNextBlockTimestamp move the sequencer's clock by an
//     offset (kept in memory: a restart forgets it, blocks keep their
//     timestamps) and re-time the open block: it is rebuilt under the new
//     timestamp, its transactions and overrides replayed in order and
//     journaled afresh (a transaction that reads the timestamp may get
//     another receipt; one that no longer executes fails the call and the
//     block is kept as it was).
//   - Snapshot / Revert: a snapshot is the head block plus the open
//     block's header, transactions and overrides and the time offset (in
//     memory: a restart forgets snapshots); Revert unwinds the store to
//     the head block (chain.Writer.UnwindTo: exact), empties the pool,
//     rebuilds the open block as it was and drops that snapshot and every
//     later one.
//   - Mining mode (evm_setAutomine, evm_setIntervalMining): interval
//     mining is the sequencer's normal behaviour (a pre-confirmation every
//     PreconfInterval, a seal every BlockTime; SetIntervalMining changes
//     the block time). Automine pre-confirms and seals as soon as the pool
//     admits a transaction (one block per wake-up: transactions admitted
//     together may share a block). Manual (automine off, or interval 0)
//     does nothing on its own: transactions wait in the pool until Mine.
//     Ticks are ignored in both. A block keeps the timestamp it was
//     opened with (after the previous seal, or set by the time methods).
//   - Reset (anvil_reset) unwinds the store to genesis (a fork: to its
//     fork block, the store's anchor), empties the pool,
//     forgets snapshots and the time offset, and opens an empty block.
//   - SendDeposit (OP chains) injects an L1→L2 deposit: into the pending
//     block while it holds deposits only, else at the head of the next
//     block's deposits.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/op"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// devSnapshot is what Revert goes back to.
type devSnapshot struct {
	id     uint64
	number uint64
	hash   common.Hash
	header *types.Header
	txs    chaintypes.Txs
	ovs    []store.PendingOverride
	offset time.Duration
}

// devReq is a dev-chain operation for the loop goroutine. fatal: the
// error is the sequencer's fault (store write, state read), not the
// caller's.
type devReq struct {
	fn   func() (err error, fatal bool)
	done chan error
}

// dev runs fn on the loop goroutine and returns its error. Without
// Config.Dev it is refused.
func (s *Sequencer) dev(fn func() (error, bool)) error {
	if !s.cfg.Dev {
		return fmt.Errorf("%w: dev methods are only served by a dev chain", ErrDev)
	}
	r := devReq{fn: fn, done: make(chan error, 1)}
	select {
	case s.devc <- r:
	case <-s.done:
		return ErrStopped
	}
	select {
	case err := <-r.done:
		return err
	case <-s.done:
		return ErrStopped
	}
}

// now is the sequencer's clock with the dev time offset.
func (s *Sequencer) now() time.Time { return s.clock.Now().Add(s.offset) }

// journal durably records what the open block added since the last journal
// write: its header (fresh: with the first write of the block, replacing
// any older journal), the new transactions from block index firstTx, and
// the last len(ovs) overrides of s.ovs.
func (s *Sequencer) journal(firstTx int, txs chaintypes.Txs, ovs []store.PendingOverride) error {
	if !s.journaled && firstTx > 0 {
		// The block's first journal write: its opening transactions (index
		// 0: deposits) are part of it.
		txs = append(slices.Clone(s.b.Transactions()[:firstTx]), txs...)
		firstTx = 0
	}
	err := s.w.JournalPendingEntries(store.PendingAppend{
		Header: s.b.Header(), Fresh: !s.journaled,
		FirstTx: firstTx, Txs: txs,
		FirstOverride: len(s.ovs) - len(ovs), Overrides: ovs,
	})
	if err == nil {
		s.journaled, s.journaledOvs = true, len(s.ovs)
	}
	return err
}

// Override applies a dev-chain state change to the pending block (see the
// file comment). The position (o.At) is set here.
func (s *Sequencer) Override(o store.PendingOverride) error {
	return s.dev(func() (error, bool) {
		o.At = uint64(s.b.Len())
		if err := s.b.Override(o); err != nil {
			return err, errors.Is(err, chain.ErrStateRead) || !errors.Is(err, pending.ErrOverride)
		}
		s.ovs = append(s.ovs, o)
		return s.publishDev(), true
	})
}

// publishDev cuts, journals and publishes what a dev operation added to the
// open block. Its error is a fault of the sequencer.
func (s *Sequencer) publishDev() error {
	now := s.clock.Now()
	snap := s.b.Cut(now)
	if snap == nil {
		return nil
	}
	if err := s.journal(len(snap.Transactions())-len(snap.NewTransactions()), snap.NewTransactions(), s.ovs[s.journaledOvs:]); err != nil {
		return fmt.Errorf("journal dev change of block %d: %w", snap.Header().Number, err)
	}
	s.mgr.Publish(snap)
	return nil
}

// SendImpersonated executes tx (carrying the marker signature of
// Impersonate) as the next transaction of the pending block and publishes
// it; its receipt is returned. A transaction that cannot be included
// (nonce, funds, gas) is refused with an error wrapping ErrDev and
// changes nothing.
func (s *Sequencer) SendImpersonated(tx *types.Transaction) (*chaintypes.Receipt, error) {
	if _, ok := pending.ImpersonatedSender(tx); !ok {
		return nil, fmt.Errorf("%w: transaction %s has no impersonation marker", ErrDev, tx.Hash())
	}
	var r *chaintypes.Receipt
	err := s.dev(func() (error, bool) {
		var err error
		if r, err = s.b.Add(tx); err != nil {
			if errors.Is(err, chain.ErrStateRead) {
				return err, true
			}
			return fmt.Errorf("%w: %v", ErrDev, err), false
		}
		return s.publishDev(), true
	})
	return r, err
}

// Mine seals n blocks now (anvil_mine, evm_mine): before each seal the
// executable pool transactions are taken as a tick would; with interval >
// 0 each block after the first is timestamped interval seconds after the
// one before. ctx ending stops between two blocks (the blocks sealed stay).
// It returns the number of blocks sealed.
func (s *Sequencer) Mine(ctx context.Context, n uint64, interval uint64) (uint64, error) {
	var mined uint64
	err := s.dev(func() (error, bool) {
		for mined < n {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("%w: mined %d of %d blocks: %v", ErrDev, mined, n, err), false
			}
			if mined > 0 && interval > 0 {
				parent := s.b.Parent()
				if err, fatal := s.retime(time.Unix(int64(parent.Time+interval), 0)); err != nil {
					return err, fatal
				}
			}
			if err := s.preconfirm(); err != nil {
				return err, true
			}
			if err := s.seal(true); err != nil {
				return err, true
			}
			mined++
		}
		return nil, false
	})
	return mined, err
}

// IncreaseTime moves the sequencer's clock forward by d (evm_increaseTime)
// and re-times the pending block to the new time; it returns the total
// offset.
func (s *Sequencer) IncreaseTime(d time.Duration) (time.Duration, error) {
	var total time.Duration
	err := s.dev(func() (error, bool) {
		s.offset += d
		total = s.offset
		return s.retime(s.now())
	})
	return total, err
}

// SetNextBlockTimestamp gives the pending block timestamp ts
// (evm_setNextBlockTimestamp, evm_mine's timestamp): ts must be after the
// latest block's. Later blocks follow on from ts (the clock offset is set
// to ts - now).
func (s *Sequencer) SetNextBlockTimestamp(ts uint64) error {
	return s.dev(func() (error, bool) { return s.setNextTimestamp(ts) })
}

func (s *Sequencer) setNextTimestamp(ts uint64) (error, bool) {
	if parent := s.b.Parent(); ts <= parent.Time {
		return fmt.Errorf("%w: timestamp %d is not after the latest block's (%d, block %d)", ErrDev, ts, parent.Time, parent.Number), false
	}
	t := time.Unix(int64(ts), 0)
	s.offset = t.Sub(s.clock.Now())
	return s.retime(t)
}

// MineAt seals one block with timestamp ts (evm_mine with a timestamp).
func (s *Sequencer) MineAt(ctx context.Context, ts uint64) error {
	if err := s.SetNextBlockTimestamp(ts); err != nil {
		return err
	}
	_, err := s.Mine(ctx, 1, 0)
	return err
}

// retime rebuilds the open block with the header pending.NextHeader gives at t.
func (s *Sequencer) retime(t time.Time) (error, bool) {
	tmpl, err := s.nextHeader(s.b.Parent(), t)
	if err != nil {
		return err, true
	}
	if tmpl.Time == s.b.Header().Time {
		return nil, false
	}
	return s.rebuild(tmpl, s.b.Transactions(), s.ovs)
}

// rebuild replaces the open block by one with header tmpl (on the same
// head) holding txs and overrides ovs replayed in order, journals it
// afresh and publishes it. If a transaction no longer executes, the open
// block stays as it was and the error (wrapping ErrDev) says which.
func (s *Sequencer) rebuild(tmpl *types.Header, txs chaintypes.Txs, ovs []store.PendingOverride) (error, bool) {
	head, view, err := s.w.OpenHead()
	if err != nil {
		return err, true
	}
	if tmpl.ParentHash != head.Hash() {
		view.Close()
		return fmt.Errorf("%w: pending block %d does not extend the head %d", chain.ErrNotOnHead, tmpl.Number, head.Number()), true
	}
	nb := s.cfg.newBuilder(s.exec)
	now := s.clock.Now()
	// The opening transactions: the derived ones made afresh for tmpl (an
	// OP block's L1-info deposit carries its time's L1 origin), the user
	// deposits kept.
	derived, err := s.derivedTxs(view, head.Header(), tmpl)
	if err != nil {
		view.Close()
		return err, true
	}
	k := leadingDeposits(txs)
	opening := derived
	for _, tx := range txs[:k] {
		if !s.exec.IsOpeningTx(tx) {
			opening = append(opening, tx)
		}
	}
	if _, err := nb.Open(head, view, tmpl, now, opening...); err != nil {
		view.Close()
		return err, true
	}
	if err := replay(nb, txs[k:], ovs); err != nil {
		nb.Close()
		return fmt.Errorf("%w: cannot rebuild pending block %d at timestamp %d: %v", ErrDev, tmpl.Number, tmpl.Time, err), errors.Is(err, chain.ErrStateRead)
	}
	snap := nb.Cut(now)
	if snap == nil {
		snap = nb.Current()
	}
	old := s.b
	s.b = nb
	old.Close()
	s.ovs = slices.Clone(ovs)
	s.derived = len(derived)
	s.journaled, s.journaledOvs = false, 0
	if nb.Len() > s.derived || len(ovs) > 0 {
		err = s.journal(0, nb.Transactions(), s.ovs)
	} else {
		err = s.w.DropPendingJournal() // the old block's, if it had one
	}
	if err != nil {
		return fmt.Errorf("journal rebuilt pending block %d: %w", tmpl.Number, err), true
	}
	s.mgr.Publish(snap)
	return nil, false
}

// replay applies txs and the overrides ovs (each after the block's first
// At transactions) to b's open block, in order; txs follow the block's
// opening transactions.
func replay(b *pending.Builder, txs chaintypes.Txs, ovs []store.PendingOverride) error {
	i := 0
	add := func(upto int) error {
		for ; b.Len() < upto && i < len(txs); i++ {
			if _, err := b.Add(txs[i]); err != nil {
				return fmt.Errorf("transaction %s: %w", txs[i].Hash().Hex(), err)
			}
		}
		return nil
	}
	for k, o := range ovs {
		if err := add(int(o.At)); err != nil {
			return err
		}
		if err := b.Override(o); err != nil {
			return fmt.Errorf("override %d: %w", k, err)
		}
	}
	return add(math.MaxInt) // the rest
}

// Snapshot records the dev chain's state (evm_snapshot): the head block,
// the pending block's header, transactions and overrides, and the time
// offset. It returns the snapshot's id (1, 2, ...).
func (s *Sequencer) Snapshot() (uint64, error) {
	var id uint64
	err := s.dev(func() (error, bool) {
		s.nextSnap++
		id = s.nextSnap
		head := s.b.Current().Head()
		s.snaps = append(s.snaps, devSnapshot{
			id: id, number: head.Number(), hash: head.Hash(), header: types.CopyHeader(s.b.Header()),
			txs: slices.Clone(s.b.Transactions()), ovs: slices.Clone(s.ovs), offset: s.offset,
		})
		return nil, false
	})
	return id, err
}

// Revert goes back to snapshot id (evm_revert): the store is unwound to its
// head block, the pool emptied, the pending block rebuilt as it was, and
// that snapshot and every later one dropped. An unknown id returns false.
func (s *Sequencer) Revert(id uint64) (bool, error) {
	var ok bool
	err := s.dev(func() (error, bool) {
		i := slices.IndexFunc(s.snaps, func(d devSnapshot) bool { return d.id == id })
		if i < 0 {
			return nil, false
		}
		sn := s.snaps[i]
		s.snaps = s.snaps[:i]
		head := s.w.Head()
		if head.Number() < sn.number {
			return fmt.Errorf("%w: snapshot %d is at block %d, above the head %d", ErrDev, id, sn.number, head.Number()), false
		}
		dropped := s.pool.Clear()
		if head.Number() > sn.number {
			// The rebase opens an empty block on the unwound head; rebuild
			// below puts the snapshot's pending block back.
			if err := s.w.UnwindTo(sn.number, s.openBlock); err != nil {
				return fmt.Errorf("revert to snapshot %d: %w", id, err), true
			}
		}
		if h := s.w.Head(); h.Hash() != sn.hash {
			return fmt.Errorf("%w: block %d of snapshot %d is no longer canonical", ErrDev, sn.number, id), false
		}
		s.offset = sn.offset
		if err, fatal := s.rebuild(sn.header, sn.txs, sn.ovs); err != nil {
			return err, fatal
		}
		s.log.Info().Uint64("snapshot", id).Uint64("block", sn.number).Int("poolDropped", dropped).Msg("reverted to snapshot")
		ok = true
		return nil, false
	})
	return ok, err
}

// wakeAuto asks the loop to automine (never blocks; wake-ups coalesce).
func (s *Sequencer) wakeAuto() {
	select {
	case s.autoc <- struct{}{}:
	default:
	}
}

// automine pre-confirms the executable pool transactions and seals them
// into a block (on the loop goroutine), when automine is on.
func (s *Sequencer) automine() error {
	if !s.auto.Load() {
		return nil
	}
	if err := s.preconfirm(); err != nil {
		return err
	}
	if s.b.Len() == 0 {
		return nil
	}
	return s.seal(true)
}

// SetAutomine turns automine on (a block as soon as a transaction is
// pooled; transactions already pooled are mined at once) or off (manual
// mining: nothing happens until Mine or SetIntervalMining), as anvil's
// evm_setAutomine.
func (s *Sequencer) SetAutomine(on bool) error {
	return s.dev(func() (error, bool) {
		s.auto.Store(on)
		if on {
			s.manual = false
			s.wakeAuto()
		} else {
			s.manual = true
		}
		return nil, false
	})
}

// Automine reports whether automine is on.
func (s *Sequencer) Automine() bool { return s.auto.Load() }

// SetIntervalMining turns automine off and seals a block every d (rounded
// up to whole pre-confirmation intervals), pre-confirming every interval
// in between (evm_setIntervalMining); d = 0 is manual mining.
func (s *Sequencer) SetIntervalMining(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%w: negative mining interval %s", ErrDev, d)
	}
	return s.dev(func() (error, bool) {
		s.auto.Store(false)
		if d == 0 {
			s.manual = true
			return nil, false
		}
		s.manual = false
		s.perBlock = max(1, int((d+s.cfg.PreconfInterval-1)/s.cfg.PreconfInterval))
		return nil, false
	})
}

// Reset brings the dev chain back to its genesis (anvil_reset): the store
// is unwound to block 0 (an anchored store, a fork: to its anchor block),
// the pool emptied, snapshots and the time offset
// forgotten, and an empty pending block opened. The mining mode stays.
func (s *Sequencer) Reset() error {
	return s.dev(func() (error, bool) {
		dropped := s.pool.Clear()
		s.snaps, s.offset = nil, 0
		// Genesis, or the anchor block of an anchored store (a fork's
		// fork block: the state fetched from its upstream is kept).
		base := uint64(0)
		if _, view, err := s.w.OpenHead(); err == nil {
			base = view.Anchor().State
			view.Close()
		}
		if s.w.Head().Number() > base {
			if err := s.w.UnwindTo(base, s.openBlock); err != nil {
				return fmt.Errorf("reset to block %d: %w", base, err), true
			}
		}
		// An empty block on genesis (dropping the journal of the one open).
		s.queued, s.queuedGas = nil, 0
		tmpl, err := s.nextHeader(s.b.Parent(), s.now())
		if err != nil {
			return err, true
		}
		if err, fatal := s.rebuild(tmpl, nil, nil); err != nil {
			return err, fatal
		}
		s.log.Info().Int("poolDropped", dropped).Uint64("block", base).Msg("dev chain reset")
		return nil, false
	})
}

// MaxDepositData bounds the calldata of one dev deposit (SendDeposit).
const MaxDepositData = 128 << 10

// SendDeposit injects an L1→L2 deposit (OP chains; an L1 user deposit
// without an L1): d's source hash is set here (a user-deposit source hash
// over a tipnode-made L1 block hash, unique per request). The deposit
// joins the pending block's deposits when that block holds no sequenced
// transaction yet (pre-confirmed, journaled and published at once);
// otherwise it opens the next block, beside its L1-info deposit, and is
// journaled when that block opens (a crash before then loses it, as it
// loses a pooled transaction). It returns the deposit and the number of
// the block it goes into. A deposit is refused (ErrDev) on an L1 chain,
// with more than MaxDepositData bytes of data, or when the deposits
// already waiting for the block leave no room for its gas.
func (s *Sequencer) SendDeposit(f chaintypes.DepositFields) (*chaintypes.Deposit, uint64, error) {
	if s.exec.OP() == nil {
		return nil, 0, fmt.Errorf("%w: deposits exist only on OP Stack chains", ErrDev)
	}
	if len(f.Data) > MaxDepositData {
		return nil, 0, fmt.Errorf("%w: deposit data of %d bytes exceeds %d", ErrDev, len(f.Data), MaxDepositData)
	}
	if f.Mint != nil && (f.Mint.Sign() < 0 || f.Mint.BitLen() > 128) {
		return nil, 0, fmt.Errorf("%w: mint %v out of range (0 to 2^128-1 wei)", ErrDev, f.Mint)
	}
	if f.Value != nil && (f.Value.Sign() < 0 || f.Value.BitLen() > 256) {
		return nil, 0, fmt.Errorf("%w: value %v out of range", ErrDev, f.Value)
	}
	var (
		dep    *chaintypes.Deposit
		number uint64
	)
	err := s.dev(func() (error, bool) {
		s.depositSeq++
		l1 := crypto.Keccak256Hash([]byte("tipnode dev deposit"), s.b.Header().ParentHash[:],
			binary.BigEndian.AppendUint64(nil, uint64(s.clock.Now().UnixNano())))
		f.SourceHash = op.UserDepositSourceHash(l1, s.depositSeq)
		f.IsSystemTx = false
		dep = chaintypes.NewDeposit(f)
		if s.b.Len() == leadingDeposits(s.b.Transactions()) {
			// No sequenced transaction yet: the deposit joins this block's.
			if _, err := s.b.Add(dep); err != nil {
				if errors.Is(err, chain.ErrStateRead) {
					return err, true
				}
				return fmt.Errorf("%w: deposit: %v", ErrDev, err), false
			}
			number = s.b.Header().Number.Uint64()
			return s.publishDev(), true
		}
		limit := s.b.Header().GasLimit
		if f.Gas > limit || s.queuedGas+f.Gas > limit-min(limit, op.SystemTxGas) {
			return fmt.Errorf("%w: deposit gas %d does not fit the next block (gas limit %d, %d already queued for it)", ErrDev, f.Gas, limit, s.queuedGas), false
		}
		s.queued = append(s.queued, dep)
		s.queuedGas += f.Gas
		number = s.b.Header().Number.Uint64() + 1
		return nil, false
	})
	if err != nil {
		return nil, 0, err
	}
	s.log.Info().Str("deposit", dep.Hash().Hex()).Str("from", f.From.Hex()).Stringer("mint", dep.MintValue()).Uint64("block", number).Msg("deposit injected")
	return dep, number, nil
}
