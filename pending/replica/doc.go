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
//     of the open block appends; index 0 of a new block opens it; index 0
//     with a new payload id restarts the block (a rebuilt payload: what
//     the old build pre-confirmed is revoked); an index the open block had
//     already, same payload id, is compared with what that index said then
//     (transactions, gas used, receipts root; on index 0 the base):
//     identical is a duplicate (a relay replaying the block after a
//     reconnect), ignored; different is a rebuilt payload that reused the
//     id: index 0 restarts the block, a later index freezes it, unless it
//     is a recut (below). A gap, a
//     payload id changing mid-block or a malformed index 0 freeze the open
//     block: what it pre-confirmed so far (a prefix of the sequencer's
//     block) stays served, it takes no more messages, and the next block
//     opening on it waits for it to be canonical (then is rebuilt on it).
//     Index > 0 of a block not started, a block at or below the canonical
//     head, beyond the window, or already closed is dropped. A message
//     without metadata (a trimmed producer) belongs to the open block of
//     its payload id. Every message is counted by verdict.
//     The newest block beyond the window is held from its index 0 (at
//     most 1024 messages) and replayed once the head comes within the
//     window (a replica catching up serves it as soon as its parent is
//     canonical).
//   - Recut (verdict resume): a message of the open block at an index it
//     had (index 0 also under another payload id) that re-announces what
//     the block holds, cut elsewhere: on index 0 the same base, and
//     transactions that continue the block's from where that index began
//     (a prefix of them; on a later index possibly all and new ones). A
//     sequencer that restarted re-emits its journaled block so (tipnode's
//     puts all the block's leading deposits in index 0, the rest in index
//     1), and a relay passes it on. Nothing pre-confirmed is revoked, so
//     `pending` does not go back: the block keeps serving all it holds
//     while the stream re-covers it, each covering message's gas used and
//     receipts root checked against the block's receipts where it ends
//     (a disagreement drops the block: mismatch), and what goes beyond is
//     executed as usual. A covering message holding another transaction
//     where the block held a pre-confirmed one revokes it: the block is
//     rebuilt as the stream now has it (resets_total revoked, logged
//     once), and pending goes back there.
//   - Execution: only a message's new transactions run (Builder.Add); the
//     cumulative gas used and the receipts root over all the block's
//     receipts so far must equal the message's, else the block is
//     dropped, both values logged and counted, and nothing of it is
//     published (diff.blob_gas_used, when sent, must equal the block's
//     blob gas used, on OP from Jovian its DA footprint). The unverifiable
//     parts of a message (state root, block hash, withdrawals root: OP
//     subblocks send them zero; metadata beyond the block number) are
//     never trusted.
//   - State roots: the builder defers them (pending.Builder.DeferRoots):
//     a message's snapshot is published as soon as its transactions are
//     executed and its gas used, receipts root and blob gas verified, and
//     its state root (a store with a state trie) is computed afterwards,
//     when no event waits (settleRoots), or earlier by a reader that
//     needs it (the pending block's stateRoot and hash, eth_getProof at
//     pending: they wait for it, never see it missing). An announced
//     non-zero state_root and block_hash (a tipnode sequencer's stream)
//     is compared with the replica's own then (verifyRoots), and before
//     the block is finished and built on (the next block's index 0) or
//     rebuilt: a disagreement drops the block like any other mismatch
//     (mismatches_total state_root / block_hash, logged once), after it
//     was served for the time the root took. Zero announced values (OP
//     subblocks, flashblocks, --stream.roots=off) are not checked; the
//     replica computes its roots all the same (the block hash it checks
//     the next block's parent hash against).
//   - Block boundaries (pending never goes backwards): when block N+1's
//     index 0 arrives, pending N is finished in memory (Builder.Finish) and
//     N+1 is built on it at once. Its sealed hash is exact when its header
//     carries a state root (the state commitment), or when the canonical
//     chain carries none (an upstream computing no roots, tipnode's own
//     sequencer) or cannot show it yet (the head is the genesis): then it
//     must equal N+1's announced parent hash. When a freshly finished N
//     seals to another (every message of N verified, so the likely cause
//     is a lost tail: N's last messages dropped, or delivered after N+1's
//     index 0, which the stream cannot tell from a disagreement), N is
//     frozen (frozen_blocks_total incomplete): served as far as it got,
//     N+1 waits for canonical N and is rebuilt on it; canonical N of the
//     announced hash with the same transactions as N is the
//     disagreement, counted then (mismatch parent_hash), more
//     transactions the loss (logged at info). Otherwise (no state root
//     computed here, the stream's block_hash zero) N adopts the announced
//     hash (pending.Snapshot.Adopted: N+1's header, BLOCKHASH context and
//     rebase resolve N by it) and is verified when canonical N arrives:
//     N's sealed header, with the canonical state root in place of its
//     zero one, must hash to the canonical hash, which covers its
//     transactions, receipts root, gas used, bloom, withdrawals root and
//     blob gas (verifyCanonical; tipnode_replica_adopted_parents_total
//     counts adopted, verified, mismatch). A disagreement is logged once
//     and counted (mismatches_total canonical_<field>, resets_total
//     canonical_mismatch): what was built on N is withdrawn and rebuilt
//     on canonical N. If N+1 does not verify on an adopted N (N's last
//     messages never came: a block abandoned without its last index), N+1
//     keeps serving its last verified snapshot, records its messages and
//     is rebuilt on canonical N (resets_total adopted_parent). The normal
//     case logs at debug only.
//   - Lagoon's post-execution transaction (diff.post_exec_tx, 0x7D) is
//     recognised, not executed: the block that carries one is not
//     replicated (tipnode_replica_unsupported_blocks_total{reason=
//     "post_exec_tx"}, logged once); pending answers up to its parent and
//     the next block waits for it to be canonical. Metadata receipts and balances (rollup-boost,
//     op-rbuilder) are compared with the replica's execution after it
//     is published (crosscheck.go): counted and logged, never served.
//   - Index 0 may carry transactions (an OP block's L1-info and user
//     deposits): they run at open and the snapshot stays index 0
//     (pending.Builder.CutOpen), so indexes match the stream's.
//   - OP chains (the executor's OP rules): the header's base fee must be
//     op.CalcBaseFee of the parent and its extraData the fork's form, else
//     the block is refused (mismatch base_fee / extra_data); blob gas
//     fields per op.BlobGasFields; from Isthmus the pending header's
//     withdrawals root is the node's own, never the stream's: the parent's
//     (the message passer's storage root as of the parent's sealed header)
//     until the block is finished, when the executor's SealHeader computes
//     it from the block's own state as the sequencer's seal does
//     (header.go).
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
//   - Liveness: Down (from the client) keeps the window (what it
//     pre-confirmed stays true) and the stream resumes where it resumes
//     (the sequence rules above). The client calls Alive whenever the
//     server answered its ping (stream.Liveness, every 500 ms): a
//     sequencer with nothing to pre-confirm is silent until its next
//     block's index 0 (seconds with long block times, an hour with
//     interval mining), and its stream is not stale for that. No message
//     and no answered ping for Config.MaxAge (default 2 s, on the
//     injectable clock) withdraws the
//     snapshot (pending.Manager.Withdraw): `pending` answers the canonical
//     head and tipnode_replica_fallback is 1 until the next message, when
//     the window, if any, is served again at once.
//
// # Concurrency
//
// One goroutine (Start .. Stop) owns the Builder and the window. Payload
// and Down (the client's goroutine) queue events (Config.Queue, then they
// block); head events only wake the loop (never block the writer); the
// loop re-reads the Writer's head before every event, and computes the
// deferred state root of the current snapshot when no event waits. Publish
// is an atomic swap in the Manager; readers never wait for the driver,
// except one that needs a state root not computed yet: it waits for the
// driver's computation of it, or does it itself.
package replica
