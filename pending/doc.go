// Package pending is tipnode's pre-confirmed state: immutable snapshots of
// the pending block, the Builder that produces them, the Manager that
// publishes them and opens every read of the node. The embedded sequencer
// (one driver of the Builder) and its transaction pool are in
// pending/sequencer, the stream follower (another) in pending/replica.
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
// Finish). The Sequencer (pending/sequencer) is the driver that picks
// transactions from its Pool; the follower of a pre-confirmation stream (pending/replica) is
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
//   - Manager.Current is one atomic pointer load. Readers never lock
//     (except to wait for, or compute, a deferred state root: below);
//     Publish (an atomic store) never waits for readers. A reader keeps
//     its snapshot and head view for its whole request, across later
//     publications and writes.
//   - Publish is the only way a snapshot becomes current and the only place
//     pre-confirmation subscribers are notified, after the swap. The pool
//     notifies admitted transactions after admission. Both are chain.Feed
//     callbacks, run on the publishing goroutine: a client reacting to one
//     reads state at least that new. Callbacks must not block.
//   - Seal: BlockProcessor.Finish (no withdrawals, EIP-7002/7251 requests),
//     header totals, chaintypes.NewBlockWithRoots (the transactions and
//     receipts roots from the block's incremental tries, below), then ONE
//     store write (block, receipts, the state diff, tags
//     latest/safe/finalized: the sequencer's blocks are final). The rebase re-executes nothing. Empty blocks are sealed
//     on time too; an interval without new transactions publishes nothing.
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
//     (Snapshot.WarmRoots, from Sequencer.warmRoots), so that a seal, just before a swap, derives
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
//     TestLiveTrieRoots, TestTrieSquashMatchesBlockUpdate). On an eager
//     builder (the sequencer's) the trie work of a cut runs on the
//     driver's goroutine before the snapshot is published: it delays the
//     cut's publication by its cost, never a reader. A builder whose trie
//     update fails keeps no live trie for the rest of the block (zero
//     roots; Seal computes the whole diff's update as before). A fork
//     keeps no trie: its snapshots and sealed blocks carry the zero root.
//   - Deferred state roots (Builder.DeferRoots, the stream follower's
//     builder): a cut returns, and is published, before its root is
//     computed. It records its diff, its header and the previous cut's
//     trie (cutTrie); the first caller that needs the root computes it,
//     the previous cuts' first (Snapshot.StateRoot, Header, BlockHash,
//     StateTrie; the driver when it is idle, a reader of the pending
//     block or of a proof, the stream encoder of a relay, the seal), and
//     the others wait for it under the cut's mutex: once computed it
//     never changes, so a reader never sees a stale or zero root as the
//     snapshot's, only waits for the real one at most the cut's trie
//     work. Reads of the pending state and execution context
//     (Snapshot.ExecHeader: Header without its Root, never waiting) do
//     not wait. The cuts read their trie through the builder's view: the
//     builder computes every cut's root it left before it releases that
//     view (the next Open, Close), so a snapshot outliving its builder
//     still has its root. A failure is kept: the snapshot then has no
//     root (as on an eager builder), and the seal computes the block's
//     update from its whole diff (TestDeferredRoots).
//   - No pending roots (Builder.SkipCutRoots, the sequencer with
//     --stream.roots=off): the builder keeps no live trie, so no cut does
//     trie work (Builder.CutTries stays 0); its snapshots carry no state
//     root (zero, and on an OP chain from Isthmus a zero withdrawals root)
//     as on a fork, and Seal computes the block's update from its whole
//     diff, so the sealed header has its real roots
//     (sequencer.TestNoPendingRoots, BenchmarkPreconfirmRoots).
package pending
