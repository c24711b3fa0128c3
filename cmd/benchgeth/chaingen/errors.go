package chaingen

import "errors"

// Sentinel errors of chaingen; returned errors wrap them with detail.
var (
	// ErrConfig: a Config field is out of range (see Config.Validate).
	ErrConfig = errors.New("invalid chain generator config")
	// ErrManifest: a manifest file is missing, unreadable or was written
	// for another Config.
	ErrManifest = errors.New("bad chain manifest")
)
