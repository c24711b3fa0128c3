// Package statesync serves a node's state at one block as a stream, and
// joins a new store from such a stream (`tipnode run --snapshot.serve`,
// `tipnode init --snapshot-from URL`): a replica of a tipnode network
// starts at the network's recent block instead of replaying its history.
//
// # Stream
//
// "tipnode-snapshot/1\n", then frames: a type byte, a uvarint length (at
// most MaxFrame) and the payload:
//
//	'C' chain config (JSON)            once, first
//	'G' genesis spec, next 64 KiB      as many as needed
//	'H' header (RLP)                   block 0's, then ascending up to the anchor block N (N-256..N)
//	'B' body of N (RLP), 'R' its receipts (chaintypes.EncodeStored)   when the source holds them
//	'A' account: address, nonce BE8, balance (32), code hash (32)
//	'S' slot: address, slot (32), value (32)      after its account
//	'K' code: hash (32), code                      once per hash
//	'E' SHA-256 of every byte before this frame   last
//
// # Serving
//
// Handler serves the stream at the node's finalized block (latest when
// nothing is finalized) from one store view, so the state, headers and
// tags are of one instant. At most Config.MaxStreams streams run at once
// (more get HTTP 503); the stream is written through a bounded buffer on
// the hijacked connection, each write with a deadline (a reader that
// stalls longer is disconnected) and the whole stream with another.
//
// # Joining
//
// Join reads a stream into an empty store through store.StateImport (all
// or nothing: one ingestion): the checksum must match, and when header N
// carries a real state root (a followed chain; tipnode's own sequencer
// seals blocks with a zero root) the state's root computed with
// go-ethereum's StackTrie (statedump.Builder) must equal it.
package statesync
