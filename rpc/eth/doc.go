// Package eth implements tipnode's Ethereum JSON-RPC methods (eth_*, net_*,
// web3_* and the eth_subscribe kinds) on top of package rpc's transport,
// reading the store, executing on the chain package's EVM and, when a
// sequencer runs, reading the pending layer.
//
// # Model
//
// API (api.go) holds the store, the executor and, once SetPending is called,
// the pending layer. NewAPI validates an APIConfig (DefaultAPIConfig gives
// the documented defaults); API.Register installs every method on an
// rpc.Server from one explicit list of per-file register functions, and
// API.MapError must be installed with Server.SetErrorMapper:
//
//	api, err := eth.NewAPI(eth.DefaultAPIConfig(), db, genesis, pool, log)
//	api.Register(srv)
//	srv.SetErrorMapper(api.MapError)
//	api.SetPending(mgr)         // optional: `pending` reads pre-confirmed state
//	api.NotifyNewHead(header)   // after each stored head (feeds newHeads / logs)
//
// Method groups, one file each: eth_state.go (balance, code, nonce,
// storage), eth_call.go and callmsg.go (call defaults and fee semantics
// shared by eth_call, eth_estimateGas, eth_createAccessList and
// eth_simulateV1), eth_estimate.go, eth_accesslist.go, simulate*.go,
// eth_chain.go and marshal.go (blocks, transactions, receipts in
// go-ethereum's JSON shapes), eth_logs.go and heads.go (eth_getLogs,
// newHeads/logs subscriptions), eth_fees.go, eth_config.go, eth_send.go,
// eth_pending.go (pre-confirmation subscriptions).
//
// Decoders of outside input live here too, since only the methods use them:
// BlockSelector (selector.go), Word and CallArgs (types.go), StateOverride
// and BlockOverrides (overrides.go), LogFilter (eth_logs.go). Each has a fuzz
// target. Argument errors are -32602 naming the argument (rpc.Params).
//
// # Invariants
//
// Every state read goes through API.Resolve, which turns a BlockSelector
// into a ReadContext: one store view (a Pebble snapshot) per request and,
// for `pending`, one snapshot pointer loaded once — BEFORE the view is
// opened, so the view always holds the snapshot's anchor. One request
// therefore never mixes two heights or two snapshots; successive requests of
// a batch may see successive snapshots. The caller closes the ReadContext.
// Methods that need the pending snapshot and a view without a selector
// (transaction lookups, eth_getLogs) use snapshotAndView, which keeps the
// same order.
//
// A block the node does not have is -32000 "header not found" for state
// methods and a null result for block/transaction getters, as go-ethereum
// answers.
//
// Errors: JSON-RPC codes come only from package rpc's constants and
// constructors. This package's sentinels are in errors.go; MapError gives
// the mapped ones their codes, and errors detected with a specific code are
// returned as *rpc.Error directly.
//
// # Concurrency
//
// API is safe for concurrent use; each handler call runs on the transport's
// goroutine for it. Per-request state (views, StateDBs, EVMs) is never
// shared. Shared state is small and guarded: the pending source is an atomic
// pointer (SetPending may be called while serving), the head feed (heads.go)
// and the suggested-tip cache (eth_fees.go, one value per head hash) have
// their own mutexes.
//
// Executions (eth_call, eth_estimateGas, eth_createAccessList,
// eth_simulateV1) run under APIConfig.EVMTimeout on top of the transport's
// request deadline, and cancel the EVM when the context ends.
//
// NotifyNewHead never blocks: each newHeads/logs subscription has its own
// goroutine that keeps only the latest announced head and catches up on
// skipped canonical blocks from the store. Pre-confirmation subscriptions
// (eth_pending.go) are notified on the pending layer's publisher goroutine;
// rpc.Subscription.Notify never blocks either.
package eth
