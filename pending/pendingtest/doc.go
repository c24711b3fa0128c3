// Package pendingtest is test support for the packages around the
// pre-confirmation pipeline: an in-process sequencer (store, dev genesis,
// writer, manager, pool and sequencer on a manual clock, funded dev keys)
// with helpers to sign and pool transactions, advance pre-confirmation
// intervals and seal. It is imported only by tests (_test.go files); the
// node never links it.
//
// Dependencies: it imports store, chain (and chain/chaintest), pending,
// chain/devnet and pending/stream (the optional publisher), never rpc
// (cmd -> rpc -> {pending, chain} -> store). A node's tests (rpc/node) use
// it in External mode: the node wires its own writer, manager, pool and
// sequencer on the harness's store and hands them to Attach.
// Tests of package pending itself use it from the external test package
// pending_test (an internal test of package pending cannot import it: that
// would be a cycle; pending/stream's likewise from stream_test).
//
// Concurrency: a Harness is used from the test's goroutine; Recorder is
// safe to add to from the manager's publication callbacks.
package pendingtest
