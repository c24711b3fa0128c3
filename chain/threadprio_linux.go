//go:build linux

package chain

import "golang.org/x/sys/unix"

// lowerThreadPriority raises the calling OS thread's nice value by n (a
// lower priority for the kernel's scheduler). Raising one's own nice value
// needs no privilege; lowering it back would, which is why callers run it on
// a thread that exits with its goroutine. Best effort: an error leaves the
// priority as it was.
func lowerThreadPriority(n int) error {
	tid := unix.Gettid()
	cur, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
	if err != nil {
		return err
	}
	// The raw getpriority system call returns 20 - nice.
	return unix.Setpriority(unix.PRIO_PROCESS, tid, 20-cur+n)
}
