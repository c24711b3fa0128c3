// Package replica is the read replica's driver of the pending Builder: it
// replays a sequencer's pre-confirmation stream (package stream; the
// Driver is the stream client's Sink) on the replica's own state and
// publishes the snapshots through the node's pending.Manager, so that
// `pending` on the replica answers what it answers on the sequencer. The
// canonical chain arrives separately (chain/follow imports it through
// chain.Writer); the driver watches the Writer's head events.
//
// # Model
//
// A window of pending blocks ahead of the canonical head (Config.Window,
// default 5): the newest one is open (receiving messages), the older ones
// are closed and finished in memory (pending.Builder.Finish: sealed
// header and hash, post-block system calls), each the pending parent of
// the next (pending.Builder.OpenOn: its state is the parent's layers, its
// BLOCKHASH context resolves the parents' sealed headers). Each entry
// keeps what the stream said (base, transactions, last totals) so that it
// can be rebuilt on another parent. An entry whose parent is unknown (not
// in the window, not the head) waits unbuilt; its messages are recorded.
//
// # Rules
//
//   - Sequence (sequence.go, pure): per block number and index. Index k+1
//     of the open block appends; index 0 of a new block opens it; the open
//     block's last message again is a duplicate (ignored, no
//     notification); a gap, a lower index, a payload id changing mid-block
//     or a malformed index 0 drop the open block (pending answers the
//     canonical head) and the driver waits for the next index 0; index 0
//     with a new payload id restarts the block; index > 0 of a block not
//     started, a block at or below the canonical head, beyond the window,
//     or already closed is dropped. Every message is counted by verdict.
//     The newest block beyond the window is held from its index 0 (at
//     most 1024 messages) and replayed once the head comes within the
//     window (a replica catching up serves it as soon as its parent is
//     canonical).
//   - Execution: only a message's new transactions run (Builder.Add); the
//     cumulative gas used and the receipts root over all the block's
//     receipts so far must equal the message's, else the block is
//     dropped, both values logged and counted, and nothing of it is
//     published. When block N+1 opens, pending N is finished and its hash
//     must equal N+1's announced parent hash, else the window is dropped
//     and N+1 waits for canonical N. The unverifiable parts of a message
//     (state root, block hash, metadata beyond the block number) are
//     never trusted. Metadata receipts and balances (rollup-boost,
//     op-rbuilder) are compared with the replica's execution after it
//     is published (crosscheck.go): counted and logged, never served.
//   - Index 0 may carry transactions (an OP block's L1-info and user
//     deposits): they run at open and the snapshot stays index 0
//     (pending.Builder.CutOpen), so indexes match the stream's.
//   - OP chains (the executor's OP rules): the header's base fee must be
//     op.CalcBaseFee of the parent and its extraData the fork's form, else
//     the block is refused (mismatch base_fee / extra_data); blob gas
//     fields per op.BlobGasFields; from Isthmus the withdrawals root is
//     index 0's diff.withdrawals_root (header.go).
//   - Header of a block: number, parent hash, timestamp, fee recipient,
//     prev-randao, gas limit, base fee, extra data and beacon root from
//     index 0's base; post-merge constants, withdrawals root, excess blob
//     gas (from the parent) and the requests-hash placeholder derived as
//     pending.NextHeader derives them on the sequencer (header.go).
//   - Canonical blocks: when the head reaches the window, the blocks at or
//     below it leave it. If the next block's announced parent is the new
//     head and it was built on that very block (same hash), it and the
//     ones above are re-anchored on the head without re-executing
//     (Snapshot.Rebased, made current with Manager.Reanchor: subscribers
//     and a relay's stream are not notified twice); if it was not built
//     (its parent was missing or different), the window is rebuilt on the
//     head (transactions re-executed, cut where the stream's messages
//     were, verified again, and every cut published in order, so a relay
//     streams the block from index 0 with the sequencer's bytes); if it announces another parent, or
//     the head moved by a reorg, the window is dropped. The Manager never
//     serves a snapshot whose chain of pending parents does not meet the
//     canonical chain by hash, nor one at or below the head, so a read in
//     between is never wrong, only possibly the canonical head.
//   - Liveness: Down (from the client) drops the window; no message for
//     Config.MaxAge (default 2 s, on the injectable clock) withdraws the
//     snapshot (pending.Manager.Withdraw); in both cases `pending` answers
//     the canonical head and tipnode_replica_fallback is 1 until the next
//     message (after staleness the window, if any, is served again at
//     once; after Down the next block must open).
//
// # Concurrency
//
// One goroutine (Start .. Stop) owns the Builder and the window. Payload
// and Down (the client's goroutine) queue events (Config.Queue, then they
// block); head events only wake the loop (never block the writer); the
// loop re-reads the Writer's head before every event. Publish is an atomic
// swap in the Manager; readers never wait for the driver.
package replica
