// Package chaintypes holds the block, transaction and receipt types tipnode
// stores, executes and serves: go-ethereum's own types, extended so that a
// block can carry OP Stack deposit transactions (type 0x7e), which
// go-ethereum's types.Transaction cannot hold (its TxData cannot be
// implemented outside its package).
//
// They are the chain vocabulary of every layer (store, chain, pending, rpc);
// the package sits under store because store, which imports no other
// tipnode package, encodes them, and every other layer imports store.
//
// Model:
//   - Tx is an interface. *types.Transaction satisfies it as is, so an L1
//     block's transactions are go-ethereum's own values with no wrapper and
//     no copy; *Deposit is the only other implementation. Code that needs a
//     signed transaction (sender recovery, signature fields) type-asserts
//     *types.Transaction; code that needs a deposit's fields asserts *Deposit.
//   - Block and Body mirror types.Block and types.Body with []Tx. Their RLP
//     encodings are byte for byte those of go-ethereum (a typed transaction
//     in a list is an RLP string holding type ‖ payload), so stores written
//     before this package existed read unchanged, and an L1 block's hash,
//     transactions root and size are go-ethereum's.
//   - Receipt is go-ethereum's receipt plus OP fields (nil on L1 chains).
//     Its storage encoding is go-ethereum's ReceiptForStorage when the OP
//     fields are nil, with one optional trailing element holding them
//     otherwise; its consensus encoding (Receipts.EncodeIndex, hashed into
//     the receipts root) adds depositNonce (Regolith) and
//     depositReceiptVersion (Canyon) to a deposit's receipt, as the OP
//     specification requires.
//
// Invariants: a Block is immutable once built (its hash and size are
// cached); Header() returns a copy. A Deposit is immutable; its hash is
// computed once at construction or decoding.
//
// Concurrency: Blocks and Deposits are safe for concurrent reads. Body and
// Receipt are plain containers, not safe for concurrent mutation.
//
// This package imports only go-ethereum and the standard library, so the
// store (which imports no other tipnode package) can hold these types.
package chaintypes
