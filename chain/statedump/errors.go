package statedump

import "errors"

// Sentinel errors of Load; each is wrapped with the line(s) and values
// concerned.
var (
	// ErrMalformed: the dump is not valid JSON of a known format, or a
	// field has the wrong type or encoding.
	ErrMalformed = errors.New("malformed state dump")
	// ErrDuplicate: an account or a slot is given twice.
	ErrDuplicate = errors.New("duplicate entry in state dump")
	// ErrNoAddress: an account without its address (geth writes only the
	// hashed key when it recorded no preimage).
	ErrNoAddress = errors.New("account without address")
	// ErrMismatch: an account's code hash, hashed key or storage root does
	// not match its contents.
	ErrMismatch = errors.New("account contents do not match")
	// ErrRootLine: the dump's own root differs from the expected root.
	ErrRootLine = errors.New("state dump is of another state root")
	// ErrRootMismatch: the state root computed from the dump differs from
	// the expected root (an account missing, or the wrong block).
	ErrRootMismatch = errors.New("state root mismatch")
	// ErrSink: the Sink refused an entry.
	ErrSink = errors.New("state dump sink")
)
