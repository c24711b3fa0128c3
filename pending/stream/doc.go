// Package stream is the pre-confirmation stream: the message format
// (Payload, the flashblocks FlashblocksPayloadV1 JSON shape), its encoding
// from published pending snapshots, its decoding from websocket frames,
// the publisher that serves it at /preconfirmations, and the client a
// replica follows it with.
//
// It imports pending and chain; nothing in pending imports it.
package stream
