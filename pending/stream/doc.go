// Package stream is the pre-confirmation stream: the message format
// (Payload, the flashblocks FlashblocksPayloadV1 JSON shape), its encoding
// from published pending snapshots, its decoding from websocket frames,
// the publisher that serves it at /preconfirmations, and the client a
// replica follows it with.
//
// It imports pending and chain; nothing in pending imports it.
//
// # Encoding (encode.go)
//
// Encode maps one published *pending.Snapshot to one Payload: index 0
// carries Base (the pending header's context); every message carries a
// Diff with only the snapshot's NewTransactions (EIP-2718, blob
// transactions without sidecar) and the block's cumulative gas used, blob
// gas used, logs bloom and receipts root (DeriveSha over all the block's
// receipts so far; Snapshot.ReceiptsRoot derives it from the previous
// snapshot's, at the cost of the new receipts), the snapshot's state root
// and block hash (zero without a state trie, or with PublisherConfig.Roots
// off; a sequencer with roots off computes none: sequencer
// Config.NoPendingRoots, its withdrawals root on an OP chain from Isthmus
// being zero too), no withdrawals. The
// payload id is derived from Base alone (PayloadIDOf documents the
// formula), so a replica re-publishing a block it validated produces the
// sequencer's ids.
//
// # Publisher (publisher.go)
//
// The Publisher subscribes to a Manager (any driver: the Sequencer, or a
// replica's stream follower). The Manager's callback only appends the
// snapshot to a queue (bounded by MaxBacklog): the driver never waits for
// encoding or for subscribers. One goroutine encodes each snapshot once
// (JSON bytes shared by all subscribers) and, under one mutex, appends it
// to the open block's messages (from index 0) and offers it to every
// subscriber's bounded channel without blocking. A new subscriber is
// registered under the same mutex with the open block's messages already
// in its channel, so it sees index 0..k and then every live message: no
// gap, no duplicate. A subscriber whose channel is full is removed there
// and its connection goroutine sends close 1008 "slow subscriber: …"
// (queued messages are not sent). Each connection has one writer (the
// ServeHTTP goroutine: messages, pings, the close frame) and one reader
// (pongs, the client's close). A snapshot that does not continue the open
// block (a gap, a block whose index 0 was not seen) is not streamed; the
// stream resumes at the next index 0. A snapshot that encodes to exactly a
// message already sent for the open block (same id, index and bytes) is
// not sent again (counted skipped "republished").
// # Decoding (decode.go)
//
// Decode turns one websocket frame into a *Payload: text frames hold JSON,
// binary frames hold JSON or brotli-compressed JSON (what the flashblocks
// websocket proxy sends), told apart by the first non-whitespace byte and
// by falling back to brotli when JSON does not parse. Frame and
// decompressed output are bounded (DefaultMaxMessageBytes, or the
// client's MaxMessageBytes). Validation is structural only (required
// fields, index a JSON integer <= MaxIndex, base exactly on index 0 and
// consistent with metadata.block_number, no withdrawals); unknown keys are
// ignored. OP subblocks (the OP specs' subblocks.md: the same shape with
// state_root, block_hash and withdrawals_root zero, withdrawals empty,
// blob_gas_used the DA footprint, Lagoon's post_exec_tx kept in
// Diff.PostExecTx) and the real rollup-boost / op-rbuilder format are
// taken unchanged: metadata absent (Metadata.Absent), or without receipts
// or balances, or with an access_list (ignored);
// base omitted or null after index 0, blob_gas_used absent or present, and
// metadata.receipts (keyed by transaction hash, op-alloy's receipt JSON,
// internally tagged {"type":"0x7e",...} or the older externally tagged
// {"Deposit":{...}}) and metadata.new_account_balances, kept as received
// and parsed on demand (metadata.go): a replica may cross-check them
// against its own execution, never serve them. Sequence rules (gaps,
// duplicates, blocks) belong to the replica driver; Payload.Txs decodes
// the transactions (signed ones and OP deposits).
//
// # Client (client.go)
//
// A Client follows one stream URL and feeds a Sink. One loop goroutine
// dials (backoff MinBackoff doubling to MaxBackoff, reset once a
// connection delivered a message or a pong), calls the Sink, and on every
// PingInterval tick pings and checks liveness (PongTimeout since the
// unanswered ping, IdleTimeout since the last message); per connection a
// reader goroutine reads and decodes up to readAhead messages ahead and
// records pongs. Invariants: Sink calls come from the loop only, in
// arrival order; Down is called once per outage (every lost connection,
// and a failed first attempt), never by Stop; Stop cancels dials and
// reads and returns once the loop and reader have ended. Frames that do
// not decode are counted and skipped: the driver sees the hole. All timing
// uses the injected pending.Clock (tests drive a ManualClock).
//
// streamtest holds a scriptable stream Server and a fault-injection Proxy
// (drop, duplicate, reorder, delay, cut, stall) for tests.
package stream
