// Package chaingen generates the benchmark chain of cmd/benchgeth and the
// request files its workloads draw from.
//
// # Model
//
// The chain is post-merge from genesis with every fork through Osaka active
// at block 0 (the four system contracts deployed). Its genesis alloc holds
// Config.Tokens copies of BenchToken (contracts/BenchToken.sol, an ERC-20
// whose balances mapping is slot 0) and one Multicall
// (contracts/Multicall.sol), both as checked-in runtime bytecode. Holder i
// (an address derived from i, see Holder) has a balance on every token, so
// the genesis has Config.Slots balance slots spread over the tokens. A few
// sender accounts (fixed keys, see SenderKey) hold ether and tokens.
//
// go-ethereum's chain maker (core.GenerateChain) then builds Config.Blocks
// blocks of Config.TxsPerBlock transactions: ERC-20 transfers, half of them
// to a new holder (a new slot), the rest to existing holders, and every
// tenth an ether transfer to a new account.
//
// # Memory
//
// The state lives on disk, so a 10M-slot chain fits a 24 GiB machine (about
// 5 GB at most): the genesis state is committed into a temporary
// go-ethereum database (Pebble, hash-scheme tries) under the output
// directory with go-ethereum's statedb, in chunks of 1M slots in trie-key
// order, each committed and reopened at its root (core.Genesis.Commit
// builds the whole trie and its node sets in memory at once: past 20 GB at
// 10M slots); the
// genesis block is go-ethereum's Genesis.ToBlock with that root. The chain
// maker then reads and commits every block's state there, and the database
// is removed when Generate returns (also on error). genesis.json is
// streamed (WriteGenesisJSON: json.Marshal's bytes without the whole
// document or a copy of a token's storage in memory). The alloc maps are
// held from the genesis build until their slots are in the state and
// dropped then. Every long phase (genesis build and write, state commit,
// blocks) logs its progress with the elapsed time.
//
// Requests for every workload (Workloads) are sampled from that state with a
// seeded PCG: random holders and slots of every token, random past blocks.
//
// # Determinism
//
// The same Config gives byte-identical files: keys, addresses, balances and
// timestamps are fixed functions of the Config, signatures are RFC 6979
// deterministic, JSON objects are written with sorted keys and the request
// sampler is seeded by Config.Seed.
//
// # Concurrency
//
// Generate and WriteRequests are plain functions with no shared state; they
// may run concurrently on different output directories.
package chaingen
