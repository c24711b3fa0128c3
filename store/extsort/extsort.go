// Package extsort sorts a stream of (key, value) records by key in bounded
// memory: records are buffered up to a byte budget, sorted and spilled to
// run files, and Merge yields them in key order by merging the runs.
//
// Records with equal keys come out in the order they were added (the sort
// is stable and the merge prefers the earlier run), so a caller detects
// duplicates by comparing adjacent keys.
//
// A Sorter is used by one goroutine. Close removes its files.
package extsort

import (
	"bufio"
	"bytes"
	"cmp"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// ErrClosed: the sorter was closed or already merged.
var ErrClosed = errors.New("extsort: sorter closed")

// record locates one buffered record in the arena.
type record struct {
	off        uint32 // start of key in the arena
	klen, vlen uint32
}

// Sorter buffers records and spills sorted runs to files in Dir. A full
// buffer is sorted and written by a background goroutine while Add fills
// the other one (two buffers of half the budget each).
type Sorter struct {
	dir    string
	budget int // bytes of one buffer: half the memory budget
	arena  []byte
	recs   []record
	runs   []string
	count  int64
	closed bool

	// inflight is the result of the background spill (nil: none), spare
	// its buffer once done.
	inflight   chan error
	spareArena []byte
	spareRecs  []record
}

// New returns a sorter that spills to files in dir (created if needed)
// whenever its buffered records exceed memBytes (at least 1 MiB).
func New(dir string, memBytes int) (*Sorter, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("extsort: %w", err)
	}
	memBytes = max(memBytes, 1<<20)
	return &Sorter{dir: dir, budget: memBytes / 2}, nil
}

// Count is the number of records added.
func (s *Sorter) Count() int64 { return s.count }

// Add buffers a copy of the record.
func (s *Sorter) Add(key, value []byte) error {
	if s.closed {
		return ErrClosed
	}
	if len(key)+len(value) > s.budget/2 {
		return fmt.Errorf("extsort: record of %d bytes exceeds a quarter of the memory budget", len(key)+len(value))
	}
	if len(s.arena)+len(key)+len(value) > s.budget*3/4 || len(s.recs)*12 > s.budget/4 {
		if err := s.spillAsync(); err != nil {
			return err
		}
	}
	if s.arena == nil {
		s.arena = make([]byte, 0, s.budget*3/4)
	}
	s.recs = append(s.recs, record{off: uint32(len(s.arena)), klen: uint32(len(key)), vlen: uint32(len(value))})
	s.arena = append(s.arena, key...)
	s.arena = append(s.arena, value...)
	s.count++
	return nil
}

func (s *Sorter) key(r record) []byte { return s.arena[r.off : r.off+r.klen] }
func (s *Sorter) value(r record) []byte {
	return s.arena[r.off+r.klen : r.off+r.klen+r.vlen]
}

func (s *Sorter) sortBuffer() { sortRecords(s.arena, s.recs) }

// sortRecords sorts records by key; equal keys keep the order they were
// added in (arena offsets grow with every Add), without the cost of a
// stable sort.
func sortRecords(arena []byte, recs []record) {
	slices.SortFunc(recs, func(a, b record) int {
		if c := bytes.Compare(arena[a.off:a.off+a.klen], arena[b.off:b.off+b.klen]); c != 0 {
			return c
		}
		return cmp.Compare(a.off, b.off)
	})
}

// wait waits for the background spill, if any.
func (s *Sorter) wait() error {
	if s.inflight == nil {
		return nil
	}
	err := <-s.inflight
	s.inflight = nil
	return err
}

// spillAsync hands the buffer to a background goroutine that sorts it and
// writes it as the next run, after the previous one finished, and goes on
// with the other buffer.
func (s *Sorter) spillAsync() error {
	if err := s.wait(); err != nil {
		return err
	}
	if len(s.recs) == 0 {
		return nil
	}
	name := filepath.Join(s.dir, fmt.Sprintf("run-%06d", len(s.runs)))
	s.runs = append(s.runs, name)
	arena, recs := s.arena, s.recs
	s.arena, s.recs = s.spareArena[:0], s.spareRecs[:0]
	done := make(chan error, 1)
	s.inflight = done
	go func() {
		err := writeRun(name, arena, recs)
		s.spareArena, s.spareRecs = arena, recs // read by the Add after wait
		done <- err
	}()
	return nil
}

// spill writes the buffered records as one sorted run file (in the
// caller's goroutine).
func (s *Sorter) spill() error {
	if err := s.wait(); err != nil {
		return err
	}
	if len(s.recs) == 0 {
		return nil
	}
	name := filepath.Join(s.dir, fmt.Sprintf("run-%06d", len(s.runs)))
	s.runs = append(s.runs, name)
	if err := writeRun(name, s.arena, s.recs); err != nil {
		return err
	}
	s.recs, s.arena = s.recs[:0], s.arena[:0]
	return nil
}

// writeRun sorts recs and writes them to the file name.
func writeRun(name string, arena []byte, recs []record) error {
	sortRecords(arena, recs)
	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("extsort: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var hdr [2 * binary.MaxVarintLen32]byte
	for _, r := range recs {
		n := binary.PutUvarint(hdr[:], uint64(r.klen))
		n += binary.PutUvarint(hdr[n:], uint64(r.vlen))
		if _, err := w.Write(hdr[:n]); err != nil {
			break
		}
		if _, err := w.Write(arena[r.off : r.off+r.klen+r.vlen]); err != nil {
			break
		}
	}
	if err := errors.Join(w.Flush(), f.Close()); err != nil {
		return fmt.Errorf("extsort: write run: %w", err)
	}
	return nil
}

// runReader reads one run file.
type runReader struct {
	idx      int
	f        *os.File
	r        *bufio.Reader
	key, val []byte
}

func (rr *runReader) next() (bool, error) {
	klen, err := binary.ReadUvarint(rr.r)
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	vlen, err := binary.ReadUvarint(rr.r)
	if err != nil {
		return false, err
	}
	n := int(klen + vlen)
	if cap(rr.key) < n {
		rr.key = make([]byte, n)
	}
	buf := rr.key[:n]
	if _, err := io.ReadFull(rr.r, buf); err != nil {
		return false, err
	}
	rr.key, rr.val = buf[:klen], buf[klen:]
	return true, nil
}

type runHeap []*runReader

func (h runHeap) Len() int { return len(h) }
func (h runHeap) Less(i, j int) bool {
	if c := bytes.Compare(h[i].key, h[j].key); c != 0 {
		return c < 0
	}
	return h[i].idx < h[j].idx
}
func (h runHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)   { *h = append(*h, x.(*runReader)) }
func (h *runHeap) Pop() any     { old := *h; x := old[len(old)-1]; *h = old[:len(old)-1]; return x }

// Merge calls fn with every record in key order (equal keys in the order
// added). The slices are valid only during the call. A Sorter merges once;
// Close it afterwards.
func (s *Sorter) Merge(fn func(key, value []byte) error) error {
	if s.closed {
		return ErrClosed
	}
	if err := s.wait(); err != nil {
		return err
	}
	if len(s.runs) == 0 {
		// Everything fits in memory: no file at all.
		s.sortBuffer()
		for _, r := range s.recs {
			if err := fn(s.key(r), s.value(r)); err != nil {
				return err
			}
		}
		s.closed = true
		return nil
	}
	if err := s.spill(); err != nil {
		return err
	}
	s.arena, s.recs, s.spareArena, s.spareRecs = nil, nil, nil, nil
	h := make(runHeap, 0, len(s.runs))
	defer func() {
		for _, rr := range h {
			rr.f.Close()
		}
	}()
	bufSize := max(64<<10, min(1<<20, s.budget/len(s.runs)))
	for i, name := range s.runs {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("extsort: %w", err)
		}
		rr := &runReader{idx: i, f: f, r: bufio.NewReaderSize(f, bufSize)}
		ok, err := rr.next()
		if err != nil {
			f.Close()
			return fmt.Errorf("extsort: read run: %w", err)
		}
		if !ok {
			f.Close()
			continue
		}
		h = append(h, rr)
	}
	heap.Init(&h)
	for len(h) > 0 {
		rr := h[0]
		if err := fn(rr.key, rr.val); err != nil {
			return err
		}
		ok, err := rr.next()
		if err != nil {
			return fmt.Errorf("extsort: read run: %w", err)
		}
		if ok {
			heap.Fix(&h, 0)
		} else {
			rr.f.Close()
			heap.Pop(&h)
		}
	}
	s.closed = true
	return nil
}

// Close drops the buffer and removes the run files.
func (s *Sorter) Close() error {
	s.closed = true
	werr := s.wait()
	s.arena, s.recs, s.spareArena, s.spareRecs = nil, nil, nil, nil
	var errs []error
	for _, name := range s.runs {
		if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	s.runs = nil
	return errors.Join(append(errs, werr)...)
}
