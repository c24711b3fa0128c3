// Package node assembles a tipnode from its parts, in one place for the CLI
// and for tests: the store's single writer (chain.Writer), the pending
// Manager that opens every read, the transaction pool, the optional
// embedded sequencer (a driver of the pending Builder) or follower of an
// upstream node (chain/follow; one of the two writes the chain), the
// Ethereum API (rpc/eth) and the JSON-RPC server (rpc). Config is data
// only: the dev accounts' keys of `tipnode dev` come in as Config.DevKeys
// (none on `run`), like every other setting. On a forked store
// (Anchor.Fork) the API forwards what the store does not hold at or below
// the fork block to the upstream (eth.API.ForwardBelowFork); the caller
// gives the store its state source (store.DB.SetForkSource, chain/remotestate).
//
// # Wiring and events
//
// The writer publishes the canonical Head after each store write and sends
// a chain.HeadEvent; the API's newHeads/logs subscriptions follow it. The
// sequencer publishes snapshots through Manager.Publish, which notifies
// pre-confirmation subscribers; the pool notifies admitted transactions.
// All three are chain.Feed values: the node's one event mechanism.
//
// # Lifecycle
//
// New builds everything and starts nothing. Start starts the writer, then
// the sequencer (its first snapshot is published before Start returns) or
// the follower (the upstream's chain id and genesis are checked before
// Start returns: a mismatch fails Start; an unreachable upstream does not,
// the follower retries), then the server. Stop reverses it: server
// (in-flight requests finish), sequencer (a pending block with
// pre-confirmed transactions is sealed) or follower, writer. The caller
// owns the store and closes it after Stop.
//
// A follower that stops on a fatal error (a reorg too deep, a divergence)
// does not stop the node: it keeps serving the chain it has (Wait does not
// return; Follower.Err and the tipnode_follow_stopped metric say why).
// Without a driver the pending layer is the head: the Manager follows the
// writer's head events, reorgs included. The follower's metrics are
// registered on the node's registry; eth_syncing reports its catch-up.
//
// # Pre-confirmation stream and transaction forwarding
//
// With Config.Stream the node serves /preconfirmations through
// HandleStream: a stream.Publisher subscribed to the Manager before any
// driver starts (so the stream opens at an index 0), whatever drives the
// Manager (the sequencer; a replica's stream follower). Its subscribers
// count against the server's connection limits and are closed with 1001
// when the server stops. With Config.TxForward (a follower)
// eth_sendRawTransaction goes to an eth.Forwarder instead of the pool: the
// pool's stateless checks (sequencer.Pool.Check), then the raw bytes to the
// sequencer; accepted transactions count in the pending nonce until a
// published snapshot or an imported block holds them.
//
// # Full disk and read-only stores
//
// The store's free-space guard (store.Config.MinFreeBytes) refuses a write
// before it starts. When it refuses the sequencer's seal, the sequencer
// stops on that fault, and Wait keeps the node serving reads instead of
// returning: it logs why writes stopped (WritesStopped), the metrics show
// it (tipnode_store_disk_full, tipnode_store_writes_refused_total), and
// Stop returns the fault. Config.ReadOnly serves a store opened read-only:
// no sequencer, no transaction submission.
//
// # Metrics
//
// With Config.Metrics, Registry holds the Go and process collectors, the
// pending layer's metrics, the transport's limits (rpc.Server.Collector),
// the EVM execution limiter (class="evm") and the store's free-space guard.
package node
