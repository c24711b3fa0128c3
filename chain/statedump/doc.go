// Package statedump reads a state dump (go-ethereum's `geth dump`, its
// line-per-account `--iterative` form, or reth's `init-state` JSONL) as a
// stream, verifies it against the state root it must produce, and hands
// its accounts, slots and code to a Sink (the store's StateImport).
//
// # Model
//
// Load makes two passes, both in bounded memory:
//
//  1. Parse: the dump is decoded token by token (no account or storage map
//     is ever held whole). Each account becomes one record, each slot
//     another, added to an external sort (store/extsort) keyed by the
//     hashed address, then (for slots) the hashed slot, with the line
//     number the record came from. Code goes to the Sink at once (it is
//     keyed by its hash).
//  2. Verify and emit: the sorted records come out in trie order: per
//     account, its record, then its slots. Slots feed a storage StackTrie
//     (go-ethereum's), whose root completes the account, which feeds the
//     account StackTrie; the Sink gets the account and its slots. The
//     account trie's root is the dump's state root.
//
// Refusals name what is wrong: a malformed line its line number; an
// account or slot given twice, an account without address or with a
// storage root or code hash that does not match, the lines; a first
// line's root that differs from the expected root, both roots; the
// computed root that differs, both roots. The Sink may have received
// entries before a refusal: it must be all or nothing itself (the
// store's StateImport is: nothing reaches the store before Commit).
//
// Builder does the second pass for entries that do not come from a JSON
// dump (a peer's snapshot stream, chain/statesync; a genesis alloc,
// chain/genesisinit): Account, Storage (or Slot, which keeps a zero value
// until the sort so that a repeated slot is refused) and Code in any
// order, then Finish.
//
// ReadHeaders reads the anchor's headers from an RLP file (`geth export`).
//
// # Formats
//
// An account object has "balance" (decimal, or hex with 0x), "nonce"
// (number, or string), optional "code" (hex), "codeHash", "root" (the
// storage root), "key" (the hashed address), "storage" (slot -> value,
// hex with or without 0x, leading zeros optional) and "address". The
// address is required (geth writes it only for accounts whose preimage it
// recorded: run geth with --cache.preimages). The stream is either one
// object {"root":…, "accounts": {address: account, …}} (`geth dump`) or
// a first line {"root":…} and then one account object per line.
package statedump
