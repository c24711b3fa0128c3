//go:build !linux

package store

import (
	"errors"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// pollSyncer exists on Linux only (pollsync_linux.go): elsewhere syncs are
// plain blocking system calls.
type pollSyncer struct{}

func newPollSyncer() (*pollSyncer, error) {
	return nil, errors.New("store: syncs through the poller need Linux AIO")
}

func (*pollSyncer) close() {}

// pollSyncFS is never built off Linux (newPollSyncer fails).
type pollSyncFS struct {
	vfs.FS
	s *pollSyncer
}
