// Package remotestate is the upstream side of `tipnode dev --fork URL[@BLOCK]`: a
// dev chain on top of another chain's state at a fork block F.
//
// # Model
//
// Init makes a forked store (store.AnchorWrite.Fork): anchored at F with
// header F, the 256 headers before it and block 0's header from the
// upstream (follow.FetchAnchor), the chain id of the upstream (or the one
// given), its chain config, and as its only state the dev accounts: their
// upstream account at F with the dev balance. Blocks the dev chain seals
// continue from F+1.
//
// The chain config is the dev chain's rules (every fork through Osaka
// active) for an L1 upstream, and the upstream's own for an OP Stack one
// (a Chain: its OP fork times and EIP-1559 constants, kept in the store
// with their OP members, so a restart runs OP rules). DetectChain finds
// it, in order: the genesis spec of a tipnode upstream (tipnode_genesis),
// the OP chain preset of its chain id (chain/op/preset), the chain config
// geth and op-geth serve (debug_chainConfig); the caller may give it
// instead (NewChain) and refuses an OP Stack upstream (HasL1Block: code at
// the L1Block predeploy) whose config is not found.
//
// Source is the store.ForkSource the running node gives the store
// (DB.SetForkSource): every account or slot the store has no version of
// is asked for at F, once. An account is one JSON-RPC batch of
// eth_getBalance, eth_getTransactionCount and eth_getCode (one round
// trip); a slot one eth_getStorageAt. Concurrent requests for the same
// entity share one fetch (singleflight); at most Config.MaxInFlight
// requests run at once. The store keeps what was fetched and persists it
// as versions at F, so the upstream is asked for each entity once per data
// directory.
//
// # Errors
//
// A failed fetch is an error naming the upstream, the entity and the
// block (wrapped by the store in store.ErrUpstream, which the RPC layer
// answers with -32000): never a zero value.
//
// # Concurrency
//
// Source is safe for concurrent use; Close releases its client.
package remotestate
