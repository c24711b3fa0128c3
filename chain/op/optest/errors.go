package optest

import "errors"

var (
	// ErrLog is a write-ahead log whose record framing is malformed: a bad
	// checksum, a truncated or unknown record, fragments out of order.
	ErrLog = errors.New("malformed write-ahead log")
	// ErrBatch is an assembled log record that is not a well-formed
	// WriteBatch, or holds an entry kind this reader does not handle.
	ErrBatch = errors.New("malformed write batch")
	// ErrPreimage is a batch entry whose key is not keccak256 of its value.
	ErrPreimage = errors.New("entry is not a keccak256 preimage")
	// ErrFixture is a fixture archive or fixture.json that is incomplete or
	// inconsistent.
	ErrFixture = errors.New("invalid OP fixture")
	// ErrMissing is state the fixture's preimages do not reach: a trie node
	// or contract code the block was not expected to touch.
	ErrMissing = errors.New("not in the fixture's preimages")
	// ErrDiff is a state diff that cannot be applied to the parent state.
	ErrDiff = errors.New("state diff does not apply")
)
