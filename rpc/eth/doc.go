// Package eth implements tipnode's Ethereum JSON-RPC methods (eth_*, net_*,
// web3_* and the eth_subscribe kinds) on top of package rpc's transport,
// reading through the pending Manager (canonical head, store view and, when
// a driver publishes, the pending snapshot) and executing on the chain
// package's EVM.
//
// # Model
//
// API (api.go) holds the executor, the pending Manager every read opens
// through, the chain's Heads (the store's single writer: current head and
// head events) and the pool. NewAPI validates an APIConfig
// (DefaultAPIConfig gives the documented defaults); API.Register installs
// every method on an rpc.Server from one explicit list of per-file register
// functions, and API.MapError must be installed with Server.SetErrorMapper.
// Package rpc/node does this wiring for the CLI and tests:
//
//	api, err := eth.NewAPI(cfg, genesis, exec, mgr, writer, pool, log)
//	api.Register(srv)
//	srv.SetErrorMapper(api.MapError)
//
// Method groups, one file each, named by namespace: eth_state.go (balance,
// code, nonce, storage), eth_call.go, harness.go (the call harness shared by
// eth_call, eth_estimateGas, eth_createAccessList, eth_callBundle,
// eth_simulateV1 and debug_traceCall: state and block context, the EVM
// under APIConfig.EVMTimeout) and callmsg.go (call defaults and fee
// semantics), eth_estimate.go, eth_accesslist.go, eth_simulate*.go
// (eth_simulate_decode.go decodes eth_simulateV1's payload mostly without
// encoding/json; eth_simulate_json.go writes its result without reflection and
// returns it as an rpc.RawResult), eth_chain.go and marshal.go (blocks, transactions, receipts in
// go-ethereum's JSON shapes), eth_logs.go and heads.go (eth_getLogs,
// newHeads/logs subscriptions), eth_fees.go, eth_config.go, eth_send.go,
// eth_pending.go (pre-confirmation subscriptions), eth_flashblocks.go
// (Base's newFlashblocks / newFlashblockTransactions), eth_sendsync.go
// (eth_sendRawTransactionSync: a registry of waiters by hash, registered
// before the submission, woken by the pre-confirmation and head feeds),
// eth_filters.go (polled filters fed like subscriptions, expired lazily on the
// API's clock), txpool_content.go (txpool_*), eth_callbundle.go
// (eth_callBundle), net_identity.go (net_listening, net_peerCount,
// web3_sha3, rpc_modules), tipnode_genesis.go
// (tipnode_genesis, eth_syncing's source), debug_raw.go (debug_getRawBlock,
// debug_getRawHeader, debug_getRawReceipts, debug_getRawTransaction),
// debug_trace.go and trace_meter.go (debug_traceTransaction,
// debug_traceCall, debug_traceBlockByNumber / ByHash with go-ethereum's
// tracers: blocks re-executed on their parent's state, pre-confirmed
// transactions on the pending block's; the output bound and the meters of
// the native tracers; JavaScript only with APIConfig.JSTracers), eth_accounts.go
// (node-held accounts: eth_accounts, eth_sendTransaction,
// eth_signTransaction, eth_sign, personal_sign, eth_signTypedData_v4 with
// the keys of APIConfig.Accounts; none outside `tipnode dev`), dev.go (the
// dev chain's anvil_* / hardhat_* / evm_* methods, installed by RegisterDev
// on `tipnode dev` only, served by the sequencer's dev controls; an
// impersonated sender's eth_sendTransaction goes there too). Impersonated
// transactions show their sender through txSender (marshal.go).
//
// Pool visibility: a transaction is in the pool when Add returns, and it
// leaves the pool only after the snapshot holding it was published. So
// eth_getTransactionByHash looks in the pool before it opens its read, and
// eth_getTransactionCount("pending") takes the sender's pooled nonces
// before its state read (sequencer.Pool.Nonces): a client sending several
// transactions in a row sees each at once and never reuses a nonce.
//
// Decoders of outside input live here too, since only the methods use them:
// BlockSelector (selector.go), Word and CallArgs (types.go), StateOverride
// and BlockOverrides (overrides.go), LogFilter (eth_logs.go), EIP-712
// typed data (decodeTypedData, eth_accounts.go), the tracing methods'
// configs (traceConfig, debug_trace.go). Each has a fuzz target.
// The call object takes a reflection-free path for its common flat shape
// (decodeCallArgsFast, callargs_decode.go) and encoding/json for anything
// else, so results and errors are encoding/json's (FuzzCallArgsDecoders). Argument errors are -32602 naming the argument (rpc.Params).
//
// # Invariants
//
// Every read opens one pending.Read (Manager.Open): the canonical Head
// (latest, safe, finalized and the recent window, in memory), the shared
// store view holding exactly that chain, and the pending snapshot only when
// its anchor hash is canonical there (a stale one is never served on top of
// the wrong block). API.Resolve turns a BlockSelector into a ReadContext on
// such a read; methods without a selector (transaction lookups, eth_getLogs,
// fee suggestions, subscription catch-up) open one directly. One request
// therefore never mixes two heights, two chains or two snapshots; successive
// requests of a batch may see successive ones. The caller closes the
// ReadContext / Read.
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
// # Forks
//
// On a fork (`tipnode dev --fork`, a store whose Anchor.Fork names an
// upstream), ForwardBelowFork wraps every non-inline method (fork.go): a
// local answer of pruned history (a block, its receipts or logs, or state
// below the fork's headers) is the upstream's answer to the same request,
// and the by-hash lookups that find nothing here ask the upstream too,
// keeping only answers at or below the fork block. The state itself is
// fetched by the store (store.ForkSource, chain/remotestate); its failures are
// store.ErrUpstream, answered -32000 with the upstream and the entity.
//
// # Concurrency
//
// API is safe for concurrent use; each handler call runs on the transport's
// goroutine for it. Per-request state (views, StateDBs, EVMs) is never
// shared. Shared state is small: the pending snapshot and the head are
// atomic pointers owned by their producers; the suggested-tip cache
// (eth_fees.go, one value per head hash) has its own mutex; the executions'
// JUMPDEST-analysis and code caches (by code hash, so never stale) are
// concurrent caches shared by every call's EVM and StateDB.
//
// Executions (eth_call, eth_estimateGas, eth_createAccessList,
// eth_simulateV1, eth_callBundle, debug_trace*) go through one rpc.Limiter (API.Executions): at most
// APIConfig.MaxExecutions run at once (default half the CPUs), at most
// ExecutionQueue wait, each at most ExecutionWait; beyond that they are
// refused with -32005 "… try again later". Every other method is
// registered without it and never waits behind EVM work, and the CPUs left
// over keep the sequencer's pre-confirmations and seals on time. An
// admitted execution runs under APIConfig.EVMTimeout on top of the
// transport's request deadline, cancels the EVM when the context ends, and
// holds its slot until the EVM has stopped.
//
// Head events (chain.Writer's chain.Feed) never block the writer: each
// newHeads/logs subscription's callback only records the latest head (with
// a reference on its view) and the events that removed blocks, and wakes
// the subscription's goroutine, which catches up on skipped canonical
// blocks from that view. When blocks of its chain were removed (a reorg,
// an unwind), a logs subscription first sends their logs with
// removed=true (carried by the event: the blocks are gone from the store),
// then the new branch's. Pre-confirmation subscriptions
// (eth_pending.go, eth_flashblocks.go) are notified on the pending layer's
// publisher goroutine; rpc.Subscription.Notify never blocks either.
// Polled filters (eth_filters.go) are fed the same way into bounded buffers
// under a per-filter mutex; waiting eth_sendRawTransactionSync calls hold
// no execution slot (their own limiter, API.SyncWaits) and are woken, not
// served, by the feed callbacks.
package eth
