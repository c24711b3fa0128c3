package preset

import "errors"

// Errors of the package; each returned error wraps one with the chain, the
// field and both values.
var (
	// ErrUnknown: no preset has the name (the message lists them).
	ErrUnknown = errors.New("unknown chain preset")
	// ErrMismatch: a genesis, chain config or store is not the preset's
	// chain (another chain id, a differing config field, another genesis
	// hash).
	ErrMismatch = errors.New("not the preset's chain")
	// ErrPreset: an embedded preset is malformed (a defect of the build).
	ErrPreset = errors.New("malformed chain preset")
)
