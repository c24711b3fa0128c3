package load

import "errors"

// Sentinel errors of load; returned errors wrap them with detail.
var (
	// ErrConfig: a Config or Job field is out of range.
	ErrConfig = errors.New("invalid load config")
	// ErrBadResponse: a response is not the JSON-RPC message the Check
	// wants (counted as a failure, never returned by a run).
	ErrBadResponse = errors.New("bad response")
)
