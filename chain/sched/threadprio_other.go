//go:build !linux

package sched

// lowerThreadPriority does nothing outside Linux, where threads have no
// nice value of their own.
func lowerThreadPriority(int) error { return nil }
