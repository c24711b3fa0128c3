// Package ethtests runs the blockchain tests of the public ethereum/tests
// suite (../shared/ethtests beside the repository, or the directory named by
// TIPNODE_ETHTESTS) against tipnode's own genesis and import paths: each
// test's genesis is built from its pre-state as `tipnode init --genesis`
// builds one, and its blocks are imported one by one as `tipnode import`
// imports them (chain.Writer.ImportRLP), on an in-memory Pebble store.
//
// # Model
//
// A Fixture is one test: network (a fork or fork transition, whose chain
// config is go-ethereum's tests.Forks entry), genesis, blocks (some that
// must be refused: expectException), lastblockhash and postState (or only
// postStateHash). Run checks, in order: block 0's hash; every valid block
// imported and made head; every invalid block refused with nothing of it
// written (the head unchanged, its hash unknown to the store); the head is
// lastblockhash; the state root of the final flat state is the head's root
// (and postStateHash); the flat state is exactly postState.
//
// # Invariants
//
// A test runs on a store of its own and shares nothing with other tests:
// tests run in parallel. Nothing here is used by the node; the package
// exists for its test (TestBlockchainSuite), which skips, saying so, when
// the suite's files are absent.
//
// # Concurrency
//
// Run is safe to call from several goroutines (each call opens its own
// store and writer).
package ethtests
