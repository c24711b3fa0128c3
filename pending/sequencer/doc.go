// Package sequencer is tipnode's embedded block producer: the Sequencer,
// a driver of package pending's Builder, its transaction Pool, and the
// dev-chain features of tipnode dev. It imports pending, chain and store;
// pending never imports it.
//
// # Model
//
// The Sequencer owns one pending.Builder. It opens the pending block on
// the canonical head with the header pending.NextHeader gives for its
// Config (completed by chain.Executor's producer seam: an OP block's
// header fields and its L1-info deposit), executes pooled transactions
// into it at Config.Steps steps per pre-confirmation interval, cuts a
// snapshot at the interval's end and hands it to pending.Manager.Publish,
// and every BlockTime seals the block through Writer.Seal (one store
// write, then the rebase opens the next block). Its errors wrap the
// sentinels of errors.go (and pending's ErrNoState, ErrOverride).
//
// # Concurrency and invariants
//
//   - The store has one writer, chain.Writer. The Sequencer's loop owns its
//     Builder; a seal is a synchronous chain.Writer.Seal whose Rebase (run
//     on the writer goroutine while the sequencer waits) opens the next
//     pending block on the new head and publishes it, before head
//     subscribers are told. Snapshots are thus published only after the
//     head that holds their anchor.
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
//   - Pending state roots: every cut updates the pending block's live
//     state trie before its snapshot is published (pending's livetrie.go),
//     so each pre-confirmation carries its state root and block hash.
//     Config.NoPendingRoots (--stream.roots=off) skips that work
//     (pending.Builder.SkipCutRoots: no root, zero in the stream); the
//     seal then computes the block's roots from its whole diff
//     (BenchmarkPreconfirmRoots measures the difference).
//   - The parent beacon root of dev blocks is derived
//     (keccak256("tipnode beacon root" ‖ parent hash)); there is no beacon
//     chain.
//
// # Dev chain (dev.go; the marker signature: pending's impersonate.go)
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
package sequencer
