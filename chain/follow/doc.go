// Package follow makes a node follow the canonical chain of an upstream
// Ethereum JSON-RPC node (go-ethereum, another tipnode, any node serving
// the standard eth_ methods): catch-up from the store's head, live heads,
// reorgs, the upstream's safe and finalized tags. Every block is verified
// and executed by the same importer as `tipnode import`
// (chain.Executor.ExecuteBlock) and written through the node's single
// chain.Writer, so readers and subscribers see followed blocks exactly as
// they see imported or sealed ones. It imports chain and store only (never
// pending or rpc): the pending layer follows the writer's head events by
// itself.
//
// # Model
//
// A Follower runs sessions, one upstream connection each (go-ethereum's
// RPC client over http(s) or ws(s)). A session checks the upstream's chain
// id and block 0 against the store's, and for a store initialised from a
// state dump at block N (store.Anchor) the upstream's block N (a mismatch
// stops following; N is finalized from the start, so no reorg crosses
// it), then
// repeatedly syncs to the upstream's head and waits for the next one: a
// newHeads notification on websockets (with a slow poll as a safety net),
// a poll of eth_getBlockByNumber("latest") every PollInterval on http.
//
// Sync to a target head T, with our head H:
//
//   - T is above H: catch-up. Blocks H+1..T are fetched in JSON-RPC
//     batches of FetchBatch, FetchParallel batches in flight (bounded
//     memory), delivered in order and imported one by one, each one atomic
//     write with its own Head. Raw blocks (debug_getRawBlock) are asked for
//     first; when the upstream refuses them (and JSON works) the session
//     uses eth_getBlockByNumber with full transactions (uncles fetched with
//     eth_getUncleByBlockHashAndIndex). If block H+1 does not build on H,
//     it is a reorg.
//   - T is our head: nothing to do.
//   - T is our block at its height, below H: the upstream rewound, or its
//     head lags. Its block at our height H tells: missing, its canonical
//     chain is shorter than ours, a reorg with an empty new branch: once
//     the upstream kept T as its head for a PollInterval (an upstream that
//     rewinds to build a new branch at once is then followed by one atomic
//     reorg onto that branch), our blocks above T are unwound in one write (chain.Writer.UnwindTo: one
//     head event with the removed blocks and their logs), within MaxReorg
//     and never below our finalized block (else the errors below); our
//     head H itself, its head only lags (a stale answer): nothing to do;
//     another block, it moved meanwhile: look again.
//   - Otherwise, a reorg: the common ancestor is found by comparing the
//     upstream's headers with ours walking down from min(H, T), at most
//     MaxReorg blocks below H (deeper: ErrReorgTooDeep) and never across
//     our finalized block (ErrReorgBelowFinalized); both stop following
//     with an error naming both heads. The upstream's branch above the
//     ancestor (up to FetchBatch blocks above H) is fetched and handed to
//     chain.Writer.Reorg, which verifies and executes it on the ancestor's
//     state in memory and commits the unwind and the branch in ONE store
//     batch with ONE head event (readers see the old chain or the new one,
//     never a mix; logs subscribers get the removed logs, then the new
//     blocks). Then catch-up continues to T.
//
// After each batch and at the head, the upstream's safe and finalized
// blocks become ours when we hold them canonically and they are not below
// our finalized block (chain.Writer.SetTags); each is read as one
// header answer, number and hash from one response.
//
// Headers (block 0, the anchor, heads, tags, the reorg walk) are read with
// go-ethereum's eth_getHeaderByNumber: a node whose history starts late (a
// tipnode initialised from a state dump or a snapshot, a go-ethereum with
// pruned history) answers it for the headers it holds, where
// eth_getBlockByNumber answers "pruned history unavailable" (4444). An
// upstream that refuses the method is asked eth_getBlockByNumber(n, false)
// instead (decided by the first header call of a connection). So a chain
// of anchored nodes, each following the one before and each joined from a
// snapshot of the one before (dump → node → snapshot → node → …), reaches
// the tip: a node needs from its upstream only block 0's and its anchor's
// headers and the blocks above its own head.
//
// FetchAnchor (anchor.go) gives `tipnode init --state` the headers, block
// and receipts of the anchor block N from an upstream.
//
// What is verified: every header's fields hash to the hash the upstream
// announced; every transaction to its announced hash; parent linkage;
// header rules; transactions, uncles and withdrawals roots; re-execution:
// gas used, receipts root, logs bloom, blob gas, requests hash. What is
// not: state roots (tipnode keeps flat state and no trie), so an upstream
// lying about a state root is not detected; proof-of-work seals; the
// beacon chain's consensus (the upstream's choice of head is trusted).
//
// # Faults
//
// Transient (ErrUpstream, ErrBadResponse, ErrUnknownBlock, failed store
// writes): the session ends, nothing more is written, a warning names the
// error, tipnode_follow_upstream_errors_total counts it, and the follower
// reconnects after a backoff that starts at BackoffMin, doubles up to
// BackoffMax and starts over after a successful sync. A block that fails
// verification is fetched again once (after the backoff); failing again
// it is a divergence (ErrDivergence, naming the block and the mismatching
// field): following stops. Fatal errors (see isFatal) stop following and
// set tipnode_follow_stopped; the node keeps serving the chain it has.
// Among them ErrUpstreamPruned: the upstream answered "pruned history
// unavailable" for a block or header this node needs (its history starts
// above our head): it never will serve it, so following stops at once
// with an error (logged at error level, Follower.Err, Start's error when
// the first check meets it, tipnode_follow_upstream_errors_total{kind=
// "pruned"}) naming the upstream, the request and its answer, and saying
// what to do (another upstream, or a new snapshot of this one), instead
// of retrying for ever.
// Nothing is ever half-written: each block, and each reorg, is one batch,
// so a kill -9 at any moment leaves the store at a block (or reorg)
// boundary and a restart resumes from the store's head.
//
// # Concurrency
//
// One goroutine runs the sessions; catch-up fetches run on helper
// goroutines that only hand blocks over. Writes go through chain.Writer
// (its goroutine). Status, Err and Done are safe for concurrent use.
// Start/Stop; the chain.Clock (polling, backoff, progress) is injectable and
// tests drive a chain.ManualClock.
package follow
