package store

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// The genesis spec is stored in chunks of genesisSpecChunk bytes under 'G'
// keys (schema.go says why).

// stageGenesisSpec stages spec as chunks 0..n-1 into b.
func stageGenesisSpec(b *pebble.Batch, spec []byte) error {
	for i := 0; i*genesisSpecChunk < len(spec) || i == 0; i++ {
		end := min(len(spec), (i+1)*genesisSpecChunk)
		if err := b.Set(genesisSpecKey(uint32(i)), spec[i*genesisSpecChunk:end], nil); err != nil {
			return err
		}
	}
	return nil
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
