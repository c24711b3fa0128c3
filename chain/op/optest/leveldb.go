package optest

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// The LevelDB log format (RocksDB's write-ahead log uses it unchanged for
// its legacy record types): the file is a sequence of 32 KiB blocks, each
// holding records
//
//	masked crc32c(type ‖ payload) (4, LE) | payload length (2, LE) | type (1) | payload
//
// A record never straddles a block: a logical record that does not fit is
// cut into FIRST, MIDDLE… and LAST fragments. When fewer than 7 bytes remain
// in a block they are a zero trailer and the next record starts in the next
// block.
const (
	logBlockSize  = 32 * 1024
	logHeaderSize = 7

	recFull   = 1
	recFirst  = 2
	recMiddle = 3
	recLast   = 4
)

// crcMaskDelta is LevelDB's checksum mask: a stored checksum is the crc
// rotated right by 15 bits plus this constant, so that a crc computed over
// data that itself embeds crcs stays well distributed.
const crcMaskDelta = 0xa282ead8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func maskCRC(c uint32) uint32 { return (c>>15 | c<<17) + crcMaskDelta }

// LogRecords splits a LevelDB-format log into its logical records
// (fragments reassembled), checking every fragment's checksum. It is
// strict: a truncated record, an unknown record type (including RocksDB's
// recyclable types, which these fixtures do not use), or fragments out of
// order are errors, never a silently shorter result.
func LogRecords(log []byte) ([][]byte, error) {
	var (
		out     [][]byte
		partial []byte // assembled fragments of the current record
		inFrag  bool
	)
	for off := 0; off < len(log); {
		left := logBlockSize - off%logBlockSize
		if left < logHeaderSize {
			for _, b := range log[off:min(off+left, len(log))] {
				if b != 0 {
					return nil, fmt.Errorf("%w: non-zero block trailer at offset %d", ErrLog, off)
				}
			}
			off += left
			continue
		}
		if len(log)-off < logHeaderSize {
			return nil, fmt.Errorf("%w: truncated record header at offset %d (%d bytes left)", ErrLog, off, len(log)-off)
		}
		h := log[off : off+logHeaderSize]
		stored := binary.LittleEndian.Uint32(h[0:4])
		n := int(binary.LittleEndian.Uint16(h[4:6]))
		typ := h[6]
		if n > left-logHeaderSize {
			return nil, fmt.Errorf("%w: record at offset %d of length %d crosses its block boundary", ErrLog, off, n)
		}
		if off+logHeaderSize+n > len(log) {
			return nil, fmt.Errorf("%w: record at offset %d of length %d truncated at end of file", ErrLog, off, n)
		}
		payload := log[off+logHeaderSize : off+logHeaderSize+n]
		if typ < recFull || typ > recLast {
			return nil, fmt.Errorf("%w: unsupported record type %d at offset %d", ErrLog, typ, off)
		}
		c := crc32.Update(crc32.Checksum(h[6:7], castagnoli), castagnoli, payload)
		if maskCRC(c) != stored {
			return nil, fmt.Errorf("%w: checksum mismatch at offset %d (stored %08x, computed %08x)", ErrLog, off, stored, maskCRC(c))
		}
		switch typ {
		case recFull:
			if inFrag {
				return nil, fmt.Errorf("%w: full record at offset %d inside a fragmented record", ErrLog, off)
			}
			out = append(out, payload)
		case recFirst:
			if inFrag {
				return nil, fmt.Errorf("%w: first fragment at offset %d inside a fragmented record", ErrLog, off)
			}
			inFrag, partial = true, append([]byte(nil), payload...)
		case recMiddle, recLast:
			if !inFrag {
				return nil, fmt.Errorf("%w: fragment of type %d at offset %d without a first fragment", ErrLog, typ, off)
			}
			partial = append(partial, payload...)
			if typ == recLast {
				out = append(out, partial)
				inFrag, partial = false, nil
			}
		}
		off += logHeaderSize + n
	}
	if inFrag {
		return nil, fmt.Errorf("%w: log ends inside a fragmented record", ErrLog)
	}
	return out, nil
}

// WriteBatch entry tags (RocksDB ValueType, default column family).
const (
	batchDelete = 0x00
	batchPut    = 0x01
	batchHeader = 12 // sequence (8, LE) | count (4, LE)
)

// BatchOp is one entry of a WriteBatch. Value is nil for a deletion.
type BatchOp struct {
	Delete bool
	Key    []byte
	Value  []byte
}

// Batch is a decoded WriteBatch.
type Batch struct {
	Sequence uint64
	Ops      []BatchOp
}

// DecodeBatch decodes one WriteBatch: sequence, count, then count entries
// 0x01 | varint key length | key | varint value length | value (put) or
// 0x00 | varint key length | key (delete). Any other entry kind (column
// families, merges, log data…) is an error, as is a count that disagrees
// with the entries or trailing bytes. Key and value alias rec.
func DecodeBatch(rec []byte) (*Batch, error) {
	if len(rec) < batchHeader {
		return nil, fmt.Errorf("%w: %d bytes, shorter than its 12-byte header", ErrBatch, len(rec))
	}
	b := &Batch{Sequence: binary.LittleEndian.Uint64(rec[0:8])}
	count := binary.LittleEndian.Uint32(rec[8:12])
	p := rec[batchHeader:]
	slice := func(what string, i int) ([]byte, error) {
		l, n := binary.Uvarint(p)
		if n <= 0 {
			return nil, fmt.Errorf("%w: entry %d: bad %s length varint", ErrBatch, i, what)
		}
		if l > uint64(len(p)-n) {
			return nil, fmt.Errorf("%w: entry %d: %s length %d exceeds the %d bytes left", ErrBatch, i, what, l, len(p)-n)
		}
		s := p[n : n+int(l)]
		p = p[n+int(l):]
		return s, nil
	}
	for i := 0; len(p) > 0; i++ {
		if uint32(i) >= count {
			return nil, fmt.Errorf("%w: %d trailing bytes after the %d entries the header counts", ErrBatch, len(p), count)
		}
		tag := p[0]
		p = p[1:]
		switch tag {
		case batchPut:
			k, err := slice("key", i)
			if err != nil {
				return nil, err
			}
			v, err := slice("value", i)
			if err != nil {
				return nil, err
			}
			b.Ops = append(b.Ops, BatchOp{Key: k, Value: v})
		case batchDelete:
			k, err := slice("key", i)
			if err != nil {
				return nil, err
			}
			b.Ops = append(b.Ops, BatchOp{Delete: true, Key: k})
		default:
			return nil, fmt.Errorf("%w: entry %d: unsupported entry tag 0x%02x", ErrBatch, i, tag)
		}
	}
	if uint32(len(b.Ops)) != count {
		return nil, fmt.Errorf("%w: header counts %d entries, found %d", ErrBatch, count, len(b.Ops))
	}
	return b, nil
}

// Preimages reads a write-ahead log of keccak preimages: every record is a
// WriteBatch, applied in order (a delete removes an earlier put), and every
// put's key must be the 32-byte keccak256 of its value. Batch sequence
// numbers must follow one another (each batch starts where the previous
// one's entries end), so a lost record is detected. The values in the
// result are copies.
func Preimages(log []byte) (map[common.Hash][]byte, error) {
	recs, err := LogRecords(log)
	if err != nil {
		return nil, err
	}
	out := make(map[common.Hash][]byte)
	var next uint64
	for i, rec := range recs {
		b, err := DecodeBatch(rec)
		if err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		if i > 0 && b.Sequence != next {
			return nil, fmt.Errorf("record %d: %w: sequence %d, want %d after the previous batch", i, ErrBatch, b.Sequence, next)
		}
		next = b.Sequence + uint64(len(b.Ops))
		for j, op := range b.Ops {
			if len(op.Key) != common.HashLength {
				return nil, fmt.Errorf("record %d entry %d: %w: key of %d bytes", i, j, ErrPreimage, len(op.Key))
			}
			key := common.BytesToHash(op.Key)
			if op.Delete {
				delete(out, key)
				continue
			}
			if got := crypto.Keccak256Hash(op.Value); got != key {
				return nil, fmt.Errorf("record %d entry %d: %w: key %s, keccak256(value) %s", i, j, ErrPreimage, key, got)
			}
			out[key] = common.CopyBytes(op.Value)
		}
	}
	return out, nil
}
