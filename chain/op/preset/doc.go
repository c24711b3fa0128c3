// Package preset holds the OP Stack chain presets of `tipnode init
// --chain NAME`, as op-geth's --op-network and op-reth's --chain give them:
// one JSON file per chain in chains/, embedded, each saying where its
// numbers come from (the superchain registry as op-geth v1.101702.3 embeds
// it, the chain config as op-geth builds it from the registry, the
// predeploy addresses of the OP specification).
//
// # Model
//
// A Preset is the chain id, the chain config in op-geth's genesis format
// (the OP fork times through Karst, the EIP-1559 constants; exactly what
// `geth --op-network NAME dumpgenesis` writes), the block the chain's
// execution starts at (block 0, or OP Mainnet's Bedrock block
// 105,235,063) with its hash, and the predeploy addresses. A preset holds
// no genesis state: a chain that starts at genesis is initialised from its
// genesis file (checked against the preset: the same chain config, the
// genesis hash the preset gives), or, like every chain, at a recent block
// (init --state, --snapshot-from).
//
// # Invariants
//
// Every embedded preset parses and validates (All); names and aliases are
// unique; its config passes the same checks as a genesis file's
// (chain.ParseChainConfig) and its chain id is the config's.
//
// # Concurrency
//
// Presets are read-only values; every function is safe for concurrent use.
package preset
