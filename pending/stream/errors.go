package stream

import "errors"

// Sentinel errors of the stream package (publisher side). Errors returned
// wrap one of these (errors.Is) with the detail.
var (
	// ErrEncode: a snapshot could not be encoded into a message (a
	// transaction that does not marshal).
	ErrEncode = errors.New("stream: cannot encode pre-confirmation")
	// ErrConfig: an invalid publisher configuration.
	ErrConfig = errors.New("stream: invalid configuration")
)
