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
	// ErrChain: the fork's chain config cannot be found or contradicts
	// the upstream or the flags (the error says what was tried or what
	// differs).
	ErrChain = errors.New("fork chain config")
)
