// Package pending is tipnode's pre-confirmed state: immutable snapshots of
// the pending block, the transaction pool, and the embedded sequencer that
// builds, publishes and seals them.
//
// # Model
//
// A Snapshot is the pending block as of one pre-confirmation: the anchor
// (latest canonical block), the pending header (Number = anchor+1, its own
// timestamp, base fee, coinbase, prev-randao, gas limit; see NextHeader), the
// pre-confirmed transactions and receipts, and a list of copy-on-write diff
// layers (newest first) over the store's state at the anchor. Reads go
// newest layer -> older layers -> store (overlay.go); within a layer a wipe
// hides older storage, then the layer's own slots apply.
//
// A new snapshot adds one layer (the StateDB.TakeDiff of the interval) in
// front of the previous snapshot's layers and shares all of them; older
// layers are never written again. To keep reads shallow, pushLayer merges
// the front layer with the one behind it while that one is not more than
// twice its size, into a new layer (binary-counter style): build cost is proportional to the new
// diff plus amortised O(log n) merging, and the read depth stays O(log n).
//
// # Concurrency and invariants
//
//   - Manager.Current is one atomic pointer load. Readers never lock; the
//     sequencer's swap (atomic store) never waits for readers. A reader that
//     loaded a snapshot keeps a consistent view for its whole request even
//     across later swaps and seals (the store is versioned, so the anchor's
//     state stays readable).
//   - Subscribers (Manager.SubscribePreconfirmations / SubscribeSeals,
//     Pool.SubscribeTxs) are called after the swap / the store write /
//     pool admission, synchronously on the publishing goroutine, so a client
//     reacting to a notification reads state at least that new. Callbacks
//     must not block.
//   - The sequencer goroutine alone owns the pending block's StateDB and
//     BlockProcessor (one per block, kept across intervals, the same
//     chain.Executor as block import). It is the only store writer while it
//     runs.
//   - Seal: proc.Finish (no withdrawals, EIP-7002/7251 requests), header
//     totals, types.NewBlock, then ONE store.WriteBlock batch (block,
//     receipts, StateDiff from BlockDiff, tags latest/safe/finalized: the
//     sequencer's blocks are final). Then the pending layer rebases: a new
//     StateDB over the new block, without re-executing anything. Empty
//     blocks are sealed on time too; an interval without new transactions
//     publishes nothing.
//   - State roots: tipnode keeps flat state and does not compute Merkle
//     roots for the blocks it seals; their Root is the zero hash.
//   - The parent beacon root of dev blocks is derived
//     (keccak256("tipnode beacon root" ‖ parent hash)); there is no beacon
//     chain.
//
// # Pool
//
// Pool validates transactions against the pending state (or latest, when
// no sequencer runs) and keeps them per sender by nonce. Refusals wrap the
// sentinels of errors.go (chain id, sender, type, size, gas limits,
// intrinsic gas and EIP-7623 floor, fee cap vs tip, fee cap below the
// pending base fee — refused rather than queued — nonce too low / too far
// ahead, funds, replacement needing +PriceBump% fee cap and tip). Blob
// transactions are refused. The sequencer takes executable runs (nonce =
// pending nonce, consecutive) ordered by effective tip, then arrival;
// transactions that fail to execute are dropped with a warning. The pool
// is bounded (PoolConfig.MaxTxs transactions, MaxBytes encoded bytes,
// MaxNonceGap per sender); when full it refuses new transactions
// (ErrPoolFull) instead of evicting pooled ones, except those older than
// PoolConfig.Lifetime (default 3h), which are evicted at every
// pre-confirmation and whenever the pool is full.
//
// # Time
//
// The pool and the sequencer take a Clock. Tests drive a ManualClock and
// call Sequencer.Sync; nothing in the tests sleeps on wall time.
package pending
