//go:build linux

package sched

import "golang.org/x/sys/unix"

// threadNice is the calling OS thread's nice value.
func threadNice() (int, error) {
	p, err := unix.Getpriority(unix.PRIO_PROCESS, unix.Gettid())
	// The raw getpriority system call returns 20 - nice.
	return 20 - p, err
}

// lowerThreadPriority raises the calling OS thread's nice value by n (a
// lower priority for the kernel's scheduler). Raising one's own nice value
// needs no privilege; lowering it back would, which is why callers run it on
// a thread locked to one goroutine for good (lowThreads in SpareP). Best effort: an error leaves the
// priority as it was.
func lowerThreadPriority(n int) error {
	cur, err := threadNice()
	if err != nil {
		return err
	}
	return unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), cur+n)
}
