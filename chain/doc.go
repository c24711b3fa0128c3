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
//     storage wipes.
//   - Executor / BlockProcessor (executor.go) drive go-ethereum's
//     core.ApplyMessage, core.PreExecution (EIP-4788 beacon root, EIP-2935
//     parent hash), core.PostExecution (withdrawals, EIP-6110 deposits,
//     EIP-7002 / EIP-7251 request queues) and the consensus engine's Finalize
//     (beacon wrapping ethash: block and uncle rewards before the merge).
//     Receipts are built here (status, cumulative gas, blob gas, logs, bloom).
//   - StateRoot (stateroot.go) hashes a flat state with trie.StackTrie. It is
//     used for pre-Byzantium receipts, which carry the post-transaction state
//     root, and by tests as an oracle against header roots. Block import does
//     not otherwise compute state roots: tipnode keeps flat state, no trie.
//
// go-ethereum symbols used: vm.NewEVM / vm.StateDB / vm.BlockContext,
// core.ApplyMessage, core.TransactionToMessage, core.NewGasPool,
// core.NewEVMBlockContext, core.PreExecution, core.PostExecution,
// core.Genesis (genesis JSON and block 0), consensus/beacon + ethash.NewFaker
// (rewards and header rules; the proof-of-work seal is not verified),
// misc.ApplyDAOHardFork, types.* (blocks, receipts, DeriveSha, blooms,
// requests hash), trie.NewStackTrie, params.ChainConfig.
//
// # Import
//
// Importer.Execute verifies a block against the store's latest block:
// parent linkage, header rules (engine.VerifyHeader), transactions root,
// uncles hash, withdrawals root, then executes it and checks gas used, blob
// gas used, receipts root, logs bloom and (from Prague) the requests hash. A
// failing block returns an error wrapping ErrInvalidBlock that names the block
// and the mismatch; nothing is written. Importer.Write stores the block,
// receipts and state diff in one atomic store batch.
//
// # Concurrency
//
// Executor is immutable and safe for concurrent use. A StateDB and a
// BlockProcessor belong to one goroutine. Backends must be safe for
// concurrent reads (store views and pending snapshots are).
//
// Known limits: the RIPEMD-160 touch quirk of mainnet block 2,675,119 is not
// reproduced (the dev and conformance chains never hit it); Amsterdam
// (block-level access lists) is not supported.
package chain
