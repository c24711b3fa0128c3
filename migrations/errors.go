package migrations

import "errors"

var (
	// ErrInvalidList: a migration list is not exactly one migration per
	// version 1..N with a name and a step function.
	ErrInvalidList = errors.New("invalid migration list")
	// ErrStepFailed: a migration step returned an error; the store stays at
	// the last committed step and the next Run resumes from there.
	ErrStepFailed = errors.New("migration step failed")
)
