package remotestate

import "errors"

var (
	// ErrConfig: Config.Validate failed.
	ErrConfig = errors.New("invalid fork configuration")
	// ErrFetch: the upstream failed a request or answered something that
	// does not decode (the error names the upstream and what was asked).
	ErrFetch = errors.New("fork fetch failed")
	// ErrNotFork: the data directory holds a chain that is not a fork of
	// the upstream asked for.
	ErrNotFork = errors.New("not a fork")
)
