// Package stream is the pre-confirmation stream: the message format
// (Payload, the flashblocks FlashblocksPayloadV1 JSON shape), its encoding
// from published pending snapshots, its decoding from websocket frames,
// the publisher that serves it at /preconfirmations, and the client a
// replica follows it with.
//
// It imports pending and chain; nothing in pending imports it.
//
// # Decoding (decode.go)
//
// Decode turns one websocket frame into a *Payload: text frames hold JSON,
// binary frames hold JSON or brotli-compressed JSON (what the flashblocks
// websocket proxy sends), told apart by the first non-whitespace byte and
// by falling back to brotli when JSON does not parse. Frame and
// decompressed output are bounded (DefaultMaxMessageBytes, or the
// client's MaxMessageBytes). Validation is structural only (required
// fields, index a JSON integer <= MaxIndex, base exactly on index 0 and
// consistent with metadata.block_number, no withdrawals); unknown keys,
// such as the receipts and balances older producers put in metadata, are
// ignored and never trusted. Sequence rules (gaps, duplicates, blocks)
// belong to the replica driver; Payload.Txs decodes the transactions.
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
