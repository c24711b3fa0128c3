package replica

import "errors"

// Sentinel errors of the replica driver. Errors are logged and counted by
// cause (a stream follower has no caller to return them to); the ones a
// caller sees wrap these.
var (
	// ErrConfig: a Config value is invalid.
	ErrConfig = errors.New("invalid replica configuration")
	// ErrSequence: a message breaks the per-block sequence (gap, lower
	// index, a restarted or malformed block); its block is dropped.
	ErrSequence = errors.New("pre-confirmation out of sequence")
	// ErrMismatch: re-executing a message's transactions gave other
	// cumulative totals (gas used, receipts root) or another parent hash
	// than the sequencer announced; the block is dropped, never served.
	ErrMismatch = errors.New("pre-confirmation does not match its execution")
	// ErrIncomplete: a pending block finished at the next block's index 0
	// sealed to another hash than the next block announces for it while
	// the hash is exact (sealedParent): its last messages may never have
	// come (lost, or delivered after the next block's index 0), which the
	// stream cannot tell from a disagreement until the canonical block
	// shows its transactions. The block is frozen, not dropped.
	ErrIncomplete = errors.New("pending block sealed to another hash than announced")
	// ErrExecution: a message's transaction does not decode or cannot be
	// included on the replica's state; the block is dropped.
	ErrExecution = errors.New("pre-confirmed transaction does not execute")
	// ErrStopped: the driver is not running.
	ErrStopped = errors.New("replica driver stopped")
)
