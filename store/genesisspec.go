package store

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// The genesis spec is stored in chunks of genesisSpecChunk bytes under 'G'
// keys (schema.go says why).

// specWriter cuts a genesis spec, written in pieces of any size, into
// the chunks 0..n-1 and hands each to add (which must copy it: the buffer
// is reused). finish adds the last chunk: short, or empty for an empty
// spec (a spec is always at least chunk 0). The one chunking of the spec:
// WriteGenesis's batch, the migration, and a state import (whole or
// streamed).
type specWriter struct {
	add    func(key, val []byte) error
	buf    []byte // the chunk being filled
	chunks uint32 // chunks added
}

func newSpecWriter(add func(key, val []byte) error) *specWriter {
	return &specWriter{add: add, buf: make([]byte, 0, genesisSpecChunk)}
}

func (w *specWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		take := min(len(p), genesisSpecChunk-len(w.buf))
		w.buf = append(w.buf, p[:take]...)
		p = p[take:]
		if len(w.buf) == genesisSpecChunk {
			if err := w.flush(); err != nil {
				return n - len(p), err
			}
		}
	}
	return n, nil
}

// flush adds the buffered chunk.
func (w *specWriter) flush() error {
	err := w.add(genesisSpecKey(w.chunks), w.buf)
	w.chunks++
	w.buf = w.buf[:0]
	return err
}

// finish adds the last (short or, for an empty spec, empty) chunk.
func (w *specWriter) finish() error {
	if len(w.buf) > 0 || w.chunks == 0 {
		return w.flush()
	}
	return nil
}

// stageGenesisSpec stages spec as chunks 0..n-1 into b.
func stageGenesisSpec(b *pebble.Batch, spec []byte) error {
	w := newSpecWriter(func(key, val []byte) error { return b.Set(key, val, nil) })
	if _, err := w.Write(spec); err != nil {
		return err
	}
	return w.finish()
}

// SetGenesisSpec stages spec in the chunked layout of FormatGenesisChunks
// (for the migration that rewrites the single-value spec of older stores).
func (rb *RawBatch) SetGenesisSpec(spec []byte) error { return stageGenesisSpec(rb.b, spec) }

// iterReader is what readGenesisSpec reads from (a snapshot or the DB).
type iterReader interface {
	NewIter(*pebble.IterOptions) (*pebble.Iterator, error)
}

// readGenesisSpec joins the chunks (ErrNotFound without any; ErrCorrupt
// for a gap or a short chunk before the last).
func readGenesisSpec(r iterReader) ([]byte, error) {
	lower := []byte{prefixGenesisSpc}
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(lower)})
	if err != nil {
		return nil, fmt.Errorf("genesis spec: %w", err)
	}
	var spec []byte
	n := uint32(0)
	for valid := it.First(); valid && err == nil; valid = it.Next() {
		var val []byte
		switch val, err = it.ValueAndErr(); {
		case err != nil:
		case string(it.Key()) != string(genesisSpecKey(n)):
			err = fmt.Errorf("%w: genesis spec chunk %x where chunk %d belongs", ErrCorrupt, it.Key(), n)
		case n > 0 && len(spec) != int(n)*genesisSpecChunk:
			err = fmt.Errorf("%w: genesis spec chunk %d follows a short chunk", ErrCorrupt, n)
		default:
			spec = append(spec, val...)
			n++
		}
	}
	if err = errors.Join(err, it.Error(), it.Close()); err != nil {
		return nil, fmt.Errorf("genesis spec: %w", err)
	}
	if n == 0 {
		return nil, fmt.Errorf("genesis spec: %w", ErrNotFound)
	}
	return spec, nil
}
