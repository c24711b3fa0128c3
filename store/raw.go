package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Raw access for schema migrations (package migrations) only. It bypasses
// every invariant of the typed API: keys and values are the layouts of
// schema.go. RawBatch commits are always fsynced, whatever SyncWrites says,
// because a migration step must be durable before the next one starts.

// RawBatch is an atomic batch of raw key changes.
type RawBatch struct {
	db      *DB
	b       *pebble.Batch
	version FormatVersion // format version recorded by this batch, FormatNone if none
	done    bool          // committed or closed: the pebble batch is released
}

// NewRawBatch starts a raw batch. It fails on a closed or read-only store.
func (db *DB) NewRawBatch() (*RawBatch, error) {
	if err := db.acquire(); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	if db.cfg.ReadOnly {
		return nil, ErrReadOnly
	}
	return &RawBatch{db: db, b: db.pdb.NewBatch()}, nil
}

// Set stages key = value (both copied).
func (rb *RawBatch) Set(key, value []byte) error { return rb.b.Set(key, value, nil) }

// Delete stages the deletion of key.
func (rb *RawBatch) Delete(key []byte) error { return rb.b.Delete(key, nil) }

// SetFormatVersion stages the recorded format version.
func (rb *RawBatch) SetFormatVersion(v FormatVersion) error {
	if err := rb.b.Set(keySchemaVersion, be8(uint64(v)), nil); err != nil {
		return err
	}
	rb.version = v
	return nil
}

// Len is the encoded size of the batch in bytes, to bound migration steps.
func (rb *RawBatch) Len() int { return rb.b.Len() }

// Commit applies the batch atomically and durably, then releases it.
func (rb *RawBatch) Commit() error {
	if rb.done {
		return fmt.Errorf("commit raw batch: %w", ErrClosed)
	}
	done, err := rb.db.beginWrite()
	if err != nil {
		return errors.Join(err, rb.Close())
	}
	defer done()
	if err := rb.b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("commit raw batch: %w", errors.Join(err, rb.Close()))
	}
	// A raw batch may rewrite anything: the state cache (and with it the
	// past cache) and the canonical cache start again empty
	// (it is only filled by Views, which a store being migrated refuses).
	epoch, latest, err := rb.db.readCachePosition()
	if err != nil {
		return fmt.Errorf("commit raw batch: %w", errors.Join(err, rb.Close()))
	}
	rb.db.state.reset(epoch, latest)
	rb.db.canon.reset()
	tm, err := readTrieMeta(rb.db.pdb)
	if err != nil {
		return fmt.Errorf("commit raw batch: %w", errors.Join(err, rb.Close()))
	}
	rb.db.trie.Store(&tm)
	if rb.version != FormatNone {
		rb.db.schema.Store(uint64(rb.version))
	}
	return rb.Close()
}

// Close discards an uncommitted batch; after Commit it is a no-op.
func (rb *RawBatch) Close() error {
	if rb.done {
		return nil
	}
	rb.done = true
	return rb.b.Close()
}

// RawGet returns a copy of the committed value of key; found is false if the
// key is absent.
func (db *DB) RawGet(key []byte) (value []byte, found bool, err error) {
	if err := db.acquire(); err != nil {
		return nil, false, err
	}
	defer db.mu.RUnlock()
	return getCopy(db.pdb, key)
}

// RawCompact compacts the key range [start, end) through every level, so
// that deleted values in it leave the sstables now rather than whenever
// Pebble would pick the range (a migration that deleted a large value).
func (db *DB) RawCompact(start, end []byte) error {
	if err := db.acquire(); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	if db.cfg.ReadOnly {
		return ErrReadOnly
	}
	if err := db.pdb.Compact(context.Background(), start, end, true); err != nil {
		return fmt.Errorf("compact store: %w", err)
	}
	return nil
}

// RawScan calls fn with every committed key in [lower, upper) in key order
// (upper nil = no bound). key and value are only valid during the call.
func (db *DB) RawScan(lower, upper []byte, fn func(key, value []byte) error) error {
	if err := db.acquire(); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	for valid := it.First(); valid && err == nil; valid = it.Next() {
		var v []byte
		if v, err = it.ValueAndErr(); err == nil {
			err = fn(it.Key(), v)
		}
	}
	return errors.Join(err, it.Error(), it.Close())
}
