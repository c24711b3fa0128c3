//go:build unix

package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// sharedLock takes a POSIX read lock on the lock file name, opened
// read-only. A missing lock file (a store never opened for writing) is not
// locked.
func sharedLock(name string) (io.Closer, error) {
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return io.NopCloser(nil), nil
	}
	if err != nil {
		return nil, err
	}
	lk := syscall.Flock_t{Type: syscall.F_RDLCK, Whence: io.SeekStart}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s for reading (is a writer running on this store?): %w", name, err)
	}
	return f, nil // closing the file releases the lock
}
