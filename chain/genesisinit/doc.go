// Package genesisinit initialises an empty store at genesis from a
// genesis JSON of any size in bounded memory (tipnode init --genesis
// FILE): chain.ReadGenesis streams the alloc, account by account and slot
// by slot, into a statedump.Builder, which sorts it on disk into trie
// order, computes the state root with go-ethereum's StackTrie and hands
// every entry to a store.StateImport anchored at block 0; the genesis spec
// streams into the same import as it is read. Block 0 is go-ethereum's
// ToBlock on the genesis without its alloc, with the streamed state root
// (and on an OP chain with Isthmus at genesis the L2ToL1MessagePasser's
// storage root, taken from the same stream). The import is one Pebble
// ingestion: the store is complete or untouched, and it is key for key
// the store chain.InitGenesis writes (an import at block 0 with block 0's
// body has anchor 0, 0 and writes no anchor key).
//
// It lives apart from chain because it uses chain/statedump, whose tests
// use chain. Memory: the two sorts' buffers (Config.MemBytes each) and
// one account's members apart from its storage.
package genesisinit
