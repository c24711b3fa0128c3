package store

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// removeRecycledWALs deletes, after a clean close whose flush left a single
// live and empty write-ahead log (flushAtClose), every other WAL file in
// the store's directory: obsolete logs Pebble keeps to recycle (up to
// MemTableStopWritesThreshold+1 of them, each as large as the memtable it
// last held). In a closed store they are only disk: the next open replays
// nothing below the live log and deletes them itself. Right after an
// import they were half of a small store's size on disk. The live log is
// the newest (a recycled log is renamed to a new, higher number when it is
// reused), so it is kept. Failures are logged: nothing depends on this.
func (db *DB) removeRecycledWALs() {
	fs := db.guard.fs
	if fs == nil {
		fs = vfs.Default
	}
	names, err := fs.List(db.cfg.Dir)
	if err != nil {
		db.log.Warn().Err(err).Msg("list the store directory for recycled write-ahead logs")
		return
	}
	type walFile struct {
		num  uint64
		name string
	}
	var logs []walFile
	for _, name := range names {
		num, ok := strings.CutSuffix(name, ".log")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(num, 10, 64)
		if err != nil {
			continue
		}
		logs = append(logs, walFile{n, name})
	}
	if len(logs) < 2 {
		return
	}
	slices.SortFunc(logs, func(a, b walFile) int { return cmp.Compare(a.num, b.num) })
	var removed int
	for _, l := range logs[:len(logs)-1] {
		name := fs.PathJoin(db.cfg.Dir, l.name)
		if err := fs.Remove(name); err != nil {
			db.log.Warn().Err(err).Str("file", name).Msg("remove a recycled write-ahead log")
			continue
		}
		removed++
	}
	db.log.Debug().Int("files", removed).Msg("removed recycled write-ahead logs at close")
}
