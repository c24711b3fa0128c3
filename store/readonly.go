package store

import (
	"io"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// readOnlyFS is the filesystem of a store opened with Config.ReadOnly.
// Pebble's ReadOnly mode writes nothing except its directory lock, which it
// takes by creating the LOCK file for writing: that fails on a read-only
// filesystem (EROFS). readOnlyFS takes a shared (read) lock instead, on the
// operating system's filesystem, so a read-only open still excludes a
// writer of the same store in another process but needs no write access;
// on other filesystems (in-memory ones) it takes none.
type readOnlyFS struct{ vfs.FS }

func (fs readOnlyFS) Lock(name string) (io.Closer, error) {
	if fs.FS != vfs.Default {
		return io.NopCloser(nil), nil
	}
	return sharedLock(name)
}

func (fs readOnlyFS) Unwrap() vfs.FS { return fs.FS }
