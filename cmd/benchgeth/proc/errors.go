package proc

import "errors"

// Sentinel errors of proc; returned errors wrap them with detail.
var (
	// ErrStat: /proc/PID/stat or /proc/PID/status could not be parsed.
	ErrStat = errors.New("unreadable /proc stat")
)
