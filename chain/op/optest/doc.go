// Package optest is test support for OP Stack execution: it reads the kona
// stateless-execution fixtures (real OP Sepolia blocks with the trie nodes
// of their parent state, ../shared/op/kona beside the repository or the
// directory named by TIPNODE_OP) and lets a test execute a block on that
// partial state and compute the resulting state root.
//
// Model:
//   - Load / Parse read block-N.tar.gz in memory: fixture.json (rollup
//     configuration, parent header, payload attributes, expected block
//     hash) and kv/000004.log, a RocksDB write-ahead log in the LevelDB log
//     format whose WriteBatches hold keccak256(value) -> value preimages
//     (LogRecords, DecodeBatch, Preimages). Every checksum and every
//     key = keccak256(value) is checked.
//   - Fixture.State is a read-only view of the parent state (the method set
//     of chain.Backend) walking go-ethereum's trie over the preimages.
//   - Fixture.PostStateRoot applies a block's store.StateDiff to the same
//     partial trie with go-ethereum's trie and returns the new root, to be
//     compared (through the block hash) with the real block.
//
// Invariants: the trie is partial; a node or code the map does not hold is
// an error wrapping ErrMissing that names the hash and path, never a zero
// value. Absent accounts read (nil, nil) and absent slots zero, as in the
// store.
//
// Concurrency: a Fixture is read-only after Load and may be shared. A State
// serialises its reads with a mutex (go-ethereum's trie caches resolved
// nodes in place). PostStateRoot builds fresh tries on every call.
//
// The package must not import chain (chain's tests import it).
package optest
