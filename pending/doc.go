// Package pending is tipnode's pre-confirmed state: immutable snapshots of
// the pending block, the Builder that produces them, the Manager that
// publishes them and opens every read of the node, the transaction pool,
// and the embedded Sequencer (one driver of the Builder).
//
// # Model
//
// A Snapshot is the pending block as of one pre-confirmation: the anchor
// (the canonical block it sits on, with its hash), the pending header
// (its own number, timestamp, base fee, coinbase, prev-randao, gas limit),
// the pre-confirmed transactions and receipts, and a list of copy-on-write
// diff layers (newest first) over the store's state at the anchor. Reads
// go newest layer -> older layers -> store (overlay.go); within a layer a
// wipe hides older storage, then the layer's own slots apply.
//
// A pending block may also sit on a pending parent (a stream follower,
// pending/replica, keeps a window of blocks ahead of the canonical chain):
// its Parent is then the parent block's final snapshot (Builder.Finish:
// the block sealed in memory, with its sealed header and hash and a last
// layer holding the post-block system calls), the parent's layers lie
// under its own, and its anchor is the canonical block the chain of
// pending parents bottoms out on. Its BLOCKHASH context resolves the
// parents' sealed headers first (Read.PendingHeaders). Snapshot.Rebased
// re-anchors such a chain on a canonical block that is one of its pending
// parents (same number and hash) without re-executing anything.
//
// A new snapshot adds one layer (the StateDB.TakeDiff of the interval) in
// front of the previous snapshot's layers and shares all of them; older
// layers are never written again. To keep reads shallow, pushLayer merges
// the front layer with the one behind it while that one is not more than
// twice its size, into a new layer (binary-counter style): build cost is
// proportional to the new diff plus amortised O(log n) merging, and the
// read depth stays O(log n).
//
// # Producers: Builder and drivers
//
// The Builder (builder.go) has no policy: a driver opens a block on a
// canonical chain.Head (Open) or on a pending parent (OpenOn) with the
// header it chose (NextHeader is the
// sequencer's policy: timestamps, coinbase, gas-limit target, derived
// beacon root), adds transactions with the shared chain.Executor (the same
// one block import uses), cuts snapshots and hands them to
// Manager.Publish, and seals the block into one store.BlockWrite that it
// hands to chain.Writer.Seal (or, for a follower, finishes it in memory:
// Finish). The Sequencer is the driver that picks transactions from the
// Pool; the follower of a pre-confirmation stream (pending/replica) is
// another driver of the same Builder. A block may open with transactions
// (Open's opening transactions: an OP block's L1-info deposit and user
// deposits), which the index-0 snapshot then holds.
//
// The pending package stays chain-agnostic: what an OP chain's rules add
// to a block the sequencer builds comes from chain.Executor's producer
// seam (chain/producer.go): PrepareHeader completes NextHeader's template
// (OP base fee, Holocene/Jovian extraData, blob gas fields), OpeningTxs
// gives the L1-info deposit built from Config.Chain's synthetic L1 and the
// parent's L1Block state, SealHeader sets the Isthmus withdrawals root from
// the sealed state (the snapshot overlay enumerates an account's storage
// for it), and ExtraTxCost is the L1 data and operator fee the pool
// requires (Pool.UseChainCosts). Each is a no-op on an L1 chain.
//
// # Reads: Manager.Open
//
// Every read of the node (rpc's block selectors, the pool's validation)
// goes through Manager.Open: it loads the current snapshot, then the
// canonical Head with its shared store view (chain.Writer.OpenHead), and
// keeps the snapshot only if it is servable on that head: the pending
// block is above the head (pending is never older than latest: a
// snapshot the head reached is superseded) and its chain of pending
// parents meets the canonical chain at the head or below with the same
// hash. A stale snapshot (its chain unwound or replaced by a reorg) is
// never served on top of the wrong block: the read serves the head and
// tipnode_pending_stale_snapshots_total counts it (a superseded one is not
// counted). The same rule moves the pair on head events and guards
// Publish. Manager.Withdraw stops serving the current snapshot (a stream
// follower whose stream is down or stale). Errors are returned, never
// turned into "not found". A Read's header sources (Headers,
// PendingHeaders) are set by Open and never written after, so they cost
// no allocation per request and a Read may be shared (a batch's elements).
// A read at pending costs what one at latest does plus one overlay and,
// per state access, a walk of the snapshot's O(log n) layers (about
// 0.1-0.2 µs: BenchmarkPendingStorageRead; end to end BenchmarkPendingServe
// and BenchmarkPendingReads in rpc/node).
//
// # Concurrency and invariants
//
//   - Manager.Current is one atomic pointer load. Readers never lock;
//     Publish (an atomic store) never waits for readers. A reader keeps
//     its snapshot and head view for its whole request, across later
//     publications and writes.
//   - Publish is the only way a snapshot becomes current and the only place
//     pre-confirmation subscribers are notified, after the swap. The pool
//     notifies admitted transactions after admission. Both are chain.Feed
//     callbacks, run on the publishing goroutine: a client reacting to one
//     reads state at least that new. Callbacks must not block.
//   - The store has one writer, chain.Writer. The Sequencer's loop owns its
//     Builder; a seal is a synchronous chain.Writer.Seal whose Rebase (run
//     on the writer goroutine while the sequencer waits) opens the next
//     pending block on the new head and publishes it, before head
//     subscribers are told. Snapshots are thus published only after the
//     head that holds their anchor.
//   - Seal: BlockProcessor.Finish (no withdrawals, EIP-7002/7251 requests),
//     header totals, chaintypes.NewBlockWithRoots (the transactions and
//     receipts roots from the block's incremental tries, below), then ONE
//     store write (block, receipts, the state diff, tags
//     latest/safe/finalized: the sequencer's blocks are final). The rebase re-executes nothing. Empty blocks are sealed
//     on time too; an interval without new transactions publishes nothing.
//   - Durability: a pre-confirmation is a promise. Before the Sequencer
//     publishes a snapshot it journals what the snapshot adds (the pending
//     block's header with the first pre-confirmation, then its
//     transactions) through chain.Writer.JournalPendingEntries, fsynced. The
//     block's own store write drops the journal. A block's first journal
//     write includes its opening transactions (deposits); a block opened
//     with user deposits is journaled as soon as its seal returns. At
//     Start the Sequencer
//     rebuilds a journaled pending block that extends the head: the same
//     header, the same transactions replayed in order (hence the same
//     receipts), and seals it on time. Transactions admitted to the pool
//     but not yet pre-confirmed are not journaled: a crash loses them (the
//     client holds only their hash, no receipt).
//   - One CPU (GOMAXPROCS 1). The journal's fsync would block its
//     goroutine in a system call that keeps the only P, holding every
//     reader until it returns, and a goroutine that yields with
//     runtime.Gosched is rescheduled before the network is polled, so
//     requests arriving during an execution would wait for all of it
//     (BenchmarkSwapReaderDelay). Where the store waits for fsyncs in the
//     poller (store.DB.SyncsInPoller, Linux) and no EVM execution runs
//     (Writer.NeedsSpareP, set by the node), a pre-confirmation runs on
//     the loop's goroutine like a step: its execution yields every 100 µs
//     by waiting for the next network poll (chain/sched.NetYield), and the
//     journal's fsync lets reads run. Otherwise (an execution holding the
//     P would preempt only every 10 ms) the pre-confirmation's execution
//     and the seal that may follow it share a spare-P section
//     (Writer.WithSpareP). Without an execution, the seal too runs on the
//     loop's goroutine, after the swap's notifications have gone out:
//     building the block, then the writer's block write
//     (chain.Writer.Seal: staging, commit, state cache, the head's
//     publication and the rebase), with a yield to the network between
//     the parts, none longer than about 0.7 ms for a block of 200
//     transfers (its roots were derived by the steps, see below). A
//     raised section would not serve requests there: on one core the
//     kernel let the section's thread run out its slice before the thread
//     that polls the network (a trace: no request served during a 2.3 ms
//     build). The two Ps of a section share the one core by the kernel's
//     time slices, so such a section runs on a thread of its own at a
//     lower priority (chain.WriterConfig.SectionNice, --writer.nice; the
//     thread is kept for the next section), which a thread with a request
//     preempts, though not always at once. The steps between
//     pre-confirmations never take a section: a step executes what arrived
//     during a fraction of the interval, yielding as above when no
//     execution runs, and with runtime.Gosched once a millisecond when one
//     does (waiting for the network poll would then wait for the
//     execution's time slice and for sysmon's poll, up to 10 ms each).
//   - Transactions and receipts roots (roots.go): a snapshot derives its
//     TxRoot and ReceiptsRoot on first use, once (sync.Once), whoever asks
//     (the stream encoder at every pre-confirmation, a pending-block read,
//     a replica's check). The Builder's snapshots of one block share, per
//     list, an in-memory go-ethereum trie (trie.Trie, no database) holding
//     the longest prefix of the block's list asked so far, keyed rlp(i) as
//     types.DeriveSha keys it; a later snapshot extends it, under its
//     mutex, by the items it adds, and its Hash rehashes only the changed
//     paths: a swap's roots cost its new transactions, not the whole block
//     (BenchmarkSnapshotRoots), and so do the sealed block's (Seal). The
//     sequencer's next step derives the roots of the snapshot it published
//     (Sequencer.warmRoots), so that a seal, just before a swap, derives
//     only the last pre-confirmation's. A list that does not extend the trie's (an
//     older snapshot asked after a newer one; items not identical to the
//     ones hashed) is derived afresh with DeriveSha, outside the lock, and
//     leaves the trie alone. Roots always equal DeriveSha's over the
//     snapshot's lists (TestSnapshotRootsIncremental). Rebased copies share
//     their original's memo and trie; a new block (Open, OpenOn: also every
//     rebuild, rebase after a seal, unwind) starts a new trie.
//   - State roots (livetrie.go): every pending block keeps one live state
//     trie. Open and each cut apply the cut's own diff (the layer it
//     pushes) on the trie of the cut before it (the anchor's trie with the
//     pending parents' updates and the block's earlier cuts' updates
//     above), so a cut costs what it changed (BenchmarkTrieCut), and put
//     the root in the snapshot's header (with an OP block's withdrawals
//     root from Isthmus): every snapshot has its state root and BlockHash,
//     and eth_getProof at pending proves against it (Snapshot.StateTrie).
//     The cuts' updates are kept like the layers (squashed into the one
//     below while it is at most twice the size), never modified once a
//     snapshot holds them. Seal applies the tail (what was written since
//     the last cut, post-block system calls included) and squashes the
//     cuts' updates into the block's update (store.SquashTrieUpdates: the
//     same root and node versions as the whole diff's update,
//     TestLiveTrieRoots, TestTrieSquashMatchesBlockUpdate). The trie work
//     of a cut runs on the driver's goroutine before the snapshot is
//     published: it delays the cut's publication by its cost, never a
//     reader. A builder whose trie update fails keeps no live trie for
//     the rest of the block (zero roots; Seal computes the whole diff's
//     update as before). A fork keeps no trie: its snapshots and sealed
//     blocks carry the zero root.
//   - The parent beacon root of dev blocks is derived
//     (keccak256("tipnode beacon root" ‖ parent hash)); there is no beacon
//     chain.
//
// # Dev chain (dev.go, impersonate.go)
//
// With Config.Dev (tipnode dev only) the Sequencer takes dev requests on
// its loop goroutine, between ticks: state overrides (Builder.Override:
// applied after the block's transactions so far and finalised like a
// transaction, published at once, journaled as store.PendingOverride
// entries beside the transactions and replayed in order by recovery),
// impersonated transactions (a marker signature naming the sender,
// executed by a Builder with AllowImpersonation through go-ethereum's
// TransactionToMessage with DevSigner; journaled as transactions, so they
// survive a crash too), sealing on demand, a clock offset with re-timing
// of the open block (rebuilt under the new header with its transactions
// and overrides replayed, journaled afresh), and snapshots (in memory)
// whose Revert unwinds through chain.Writer.UnwindTo, clears the pool and
// rebuilds the snapshot's pending block. Blocks with impersonated
// transactions are not valid elsewhere (the sender does not recover).
// On an OP chain SendDeposit injects a user deposit: into the open block
// while it holds deposits only, else queued (in memory) for the next
// block's opening; re-timing rebuilds the L1-info deposit for the new
// timestamp and keeps the user deposits.
//
// # Pool
//
// Pool validates transactions against the pending state (or latest, when
// no sequencer runs) and keeps them per sender by nonce. Refusals wrap the
// sentinels of errors.go (chain id, sender, type, size, gas limits,
// intrinsic gas and EIP-7623 floor, fee cap vs tip, fee cap below the
// pending base fee — refused rather than queued — nonce too low / too far
// ahead, funds, replacement needing +PriceBump% fee cap and tip). Blob
// transactions come in their network form (up to PoolConfig.MaxBlobTxSize
// with the sidecar): blob count, blob fee cap against the pending blob base
// fee, commitments against the versioned hashes and the KZG proofs
// (go-ethereum's kzg4844; cell proofs from Osaka, an older sidecar is
// converted) are checked, and the pool keeps the sidecar while blocks hold
// the transaction without it. A transaction is visible the moment Add
// returns: Get finds it, and Nonces (taken before the state read) lets
// eth_getTransactionCount("pending") count the sender's pooled run. The
// sequencer takes executable runs (nonce = pending nonce, consecutive)
// ordered by effective tip, then arrival, at each of its Config.Steps
// execution steps per pre-confirmation interval (default 10: every 20 ms):
// a step executes what is executable then into the pending block without
// publishing it, and the interval's last step publishes all of it. Tip
// order therefore holds among the transactions one step takes, not across
// steps (Steps 1: across the interval). What a step executed stays in the
// pool (Get finds it) until it is published, and a replacement of it is
// refused (ErrNonceTooLow: its nonce is used). A dev request first
// publishes what steps executed. A transaction that does not fit
// (gas, blob gas under the block's maximum, a fee cap below a risen base or
// blob base fee) waits for a later block, one that fails to execute is
// dropped with a warning. The pool
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
