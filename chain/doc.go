// Package chain executes Ethereum blocks and messages with go-ethereum's EVM
// on tipnode's flat state, and imports verified blocks into the store.
//
// # The seam with go-ethereum
//
// All contact between go-ethereum's execution code and our state lives in
// this package:
//
//   - StateDB (statedb.go) is our own implementation of vm.StateDB over a
//     Backend (the store at one height, or the pending overlay). It keeps a
//     journal for call-frame reverts, applies EIP-158/161 empty-account
//     removal and SELFDESTRUCT deletion in Finalise, and hands out complete
//     state diffs (BlockDiff for the store, TakeDiff for copy-on-write
//     pending layers): balances, nonces, code, storage, account deletions and
//     storage wipes. StateDBs may share a CodeCache (codecache.go): code by
//     hash, read from a backend once, then shared (never modified), and a
//     JournalPool: a StateDB given one takes its journal from it and
//     Release gives the journal back cleared. With
//     SetHooks (hooks.go) it reports state changes to go-ethereum's
//     tracing.Hooks as go-ethereum's hooked state does (balance, nonce,
//     code, storage, logs, self-destructs at Finalise): go-ethereum's
//     tracers (eth/tracers) run on it unchanged.
//   - Executor / BlockProcessor (executor.go; SetTracer traces the
//     transactions applied next, framed by OnTxStart / OnTxEnd) drive go-ethereum's
//     core.ApplyMessage, the system calls core.PreExecution makes
//     (EIP-4788 beacon root, EIP-2935 parent hash, the latter from the
//     header's ParentHash instead of hashing the parent again),
//     core.PostExecution (withdrawals, EIP-6110 deposits,
//     EIP-7002 / EIP-7251 request queues) and the consensus engine's Finalize
//     (beacon wrapping ethash: block and uncle rewards before the merge).
//     Receipts are built here (status, cumulative gas, blob gas, logs, bloom).
//   - StateRoot (stateroot.go) hashes a flat state with trie.StackTrie. It is
//     used for pre-Byzantium receipts, which carry the post-transaction state
//     root, and by tests as an oracle against header roots.
//   - VerifyStateRoot (stateverify.go) computes a block's state trie update
//     (store.StateTrie.Update of its diff on the parent's trie) and checks
//     the header's state root, and on OP from Isthmus its withdrawals root,
//     against it: ExecuteBlock and Writer.Reorg verify every imported and
//     followed block so before anything is written. ExportRLP writes
//     canonical blocks in the geth export format.
//
// go-ethereum symbols used: vm.NewEVM / vm.StateDB / vm.BlockContext,
// core.ApplyMessage, core.TransactionToMessage, core.NewGasPool,
// core.NewEVMBlockContext, core.ProcessBeaconBlockRoot,
// core.ProcessParentBlockHash, core.PostExecution,
// core.Genesis (genesis JSON and block 0), consensus/beacon + ethash.NewFaker
// (rewards and header rules; the proof-of-work seal is not verified),
// misc.ApplyDAOHardFork, types.* (headers, signed transactions, receipts,
// DeriveSha, blooms, requests hash), trie.NewStackTrie, params.ChainConfig.
//
// A local block producer (pending's Sequencer) asks the chain's rules
// through the producer seam (producer.go): PrepareHeader, OpeningTxs,
// SealHeader and ExtraTxCost apply the OP rules on an OP chain (base fee,
// extraData, blob gas fields, the L1-info deposit from a synthetic L1
// origin, the Isthmus withdrawals root computed from state with
// StateDB.StorageRoot, the L1 data and operator fee a pool requires) and
// change nothing on L1; ProducerConfig carries the producer's choices.
//
// Blocks, their transactions and receipts are store/chaintypes values: a
// block's transaction is a *types.Transaction or an OP Stack deposit
// (*chaintypes.Deposit). BlockProcessor.ApplyTx dispatches on the kind; a chain
// whose rules have no deposits refuses one as an invalid transaction.
//
// # Import
//
// Executor.ExecuteBlock verifies a block against its parent (the head it
// will be written on): parent linkage, header rules (engine.VerifyHeader),
// transactions root, uncles hash, withdrawals root, then executes it and
// checks gas used, blob gas used, receipts root, logs bloom and (from
// Prague) the requests hash. A failing block returns an error wrapping
// ErrInvalidBlock that names the block and the mismatch; a failed read
// returns the read error (never "invalid"). Nothing is written.
//
// # One writer, one Head
//
// Writer (writer.go) owns every store write of a running node — block
// import (Import, ImportRLP), blocks sealed by a local driver (Seal),
// unwinds (UnwindTo), reorgs (Reorg, reorg.go), tag moves (SetTags) —
// serialised on its own goroutine; each block is one atomic store batch,
// and a reorg (the unwind and the whole new branch) is one batch too: it
// executes the new branch on the ancestor's state with the branch's diffs
// stacked in memory (overlay.go), then commits and publishes once, so a
// reader sees the old chain or the new one, never a mix. Its HeadEvent
// carries the removed blocks, their logs (RemovedLogs, read before the
// write) and the added blocks. After each write it opens a store view, publishes an
// immutable Head (head.go: head, safe and finalized headers, the last
// HeadWindow canonical headers and that view, shared by reference count;
// an unwind or reorg below the window's first block refills the window
// from the view, so it always holds the newest min(HeadWindow, head+1)
// headers) with one atomic store, runs the calling driver's Rebase (the pending
// layer moves onto the new head) and then sends a HeadEvent (added and
// removed blocks) on its Feed. Readers call OpenHead: two atomic
// operations, never a lock, never Pebble for latest/safe/finalized or a
// recent number, and the view they get holds exactly the chain of the
// Head (a reorg after it does not show through). InitGenesis writes block 0
// before a Writer is opened (from a Genesis held in memory); ReadGenesis
// is the streaming reader of a genesis JSON for one of any size: the alloc
// goes account by account and slot by slot to a visitor, never into a map
// (chain/genesisinit builds the store from it). Feed (feed.go) is the node's one event
// mechanism: synchronous, non-blocking callbacks on the publisher's
// goroutine.
//
// Header lookups (HeaderSource) return errors: a missing header wraps
// store.ErrNotFound; a failed read is an error, and inside the EVM
// (BLOCKHASH, engine rules) it is recorded on the StateDB so the execution
// is not trusted.
//
// # Concurrency
//
// Executor is immutable and safe for concurrent use, and so are a CodeCache
// and a JournalPool.
// A StateDB and a BlockProcessor belong to one goroutine. Backends must be
// safe for concurrent reads (store views and pending snapshots are). Writer methods
// are safe for concurrent use (they queue on the writer goroutine); Head
// values are immutable.
//
// Clock (clock.go) is the one time source of the node's background loops
// (pending's pool and sequencer, chain/follow's follower): SystemClock in
// production, ManualClock in tests (tickers delivered in order by
// Advance, timers fired when due; no test sleeps).
//
// Known limits: the RIPEMD-160 touch quirk of mainnet block 2,675,119 is not
// reproduced (the dev and conformance chains never hit it); Amsterdam
// (block-level access lists) is not supported.
package chain
