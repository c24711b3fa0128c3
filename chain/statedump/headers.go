package statedump

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"
)

// Headers is what ReadHeaders takes from a file for an anchor at block N.
type Headers struct {
	Genesis *types.Header   // block 0's header, when the file holds it
	Headers []*types.Header // up to keep+1 headers ending at N, ascending and linked
	Block   *types.Block    // block N, when the file holds blocks (not bare headers)
}

// maxHeadersItem bounds one block of a headers file (a size field can
// claim anything).
const maxHeadersItem = 64 << 20

// ReadHeaders reads RLP blocks or headers (as `geth export` writes blocks:
// concatenated, ascending) up to block n, keeping block 0's header, the
// last keep+1 headers ending at n and block n. Items above n are not read.
// A file that ends before n, items out of order or not linked, or an item
// that is neither a block nor a header are ErrMalformed naming the item.
func ReadHeaders(r io.Reader, n uint64, keep int) (*Headers, error) {
	s := rlp.NewStream(bufio.NewReaderSize(r, 1<<20), 0)
	out := new(Headers)
	var last *types.Header
	for item := 1; ; item++ {
		_, size, err := s.Kind()
		if errors.Is(err, io.EOF) {
			break
		}
		if err == nil && size > maxHeadersItem {
			err = fmt.Errorf("item of %d bytes (at most %d)", size, maxHeadersItem)
		}
		var raw []byte
		if err == nil {
			raw, err = s.Raw()
		}
		if err != nil {
			return nil, fmt.Errorf("%w: headers file, item %d: %v", ErrMalformed, item, err)
		}
		var (
			h *types.Header
			b *types.Block
		)
		if blk := new(types.Block); rlp.DecodeBytes(raw, blk) == nil {
			b, h = blk, blk.Header()
		} else if hdr := new(types.Header); rlp.DecodeBytes(raw, hdr) == nil {
			h = hdr
		} else {
			return nil, fmt.Errorf("%w: headers file, item %d is neither an RLP block nor an RLP header", ErrMalformed, item)
		}
		num := h.Number.Uint64()
		if num > n {
			break
		}
		if last != nil && (num != last.Number.Uint64()+1 || h.ParentHash != last.Hash()) {
			return nil, fmt.Errorf("%w: headers file, item %d: block %d does not follow block %d", ErrMalformed, item, num, last.Number)
		}
		last = h
		if num == 0 {
			out.Genesis = h
		}
		out.Headers = append(out.Headers, h)
		if len(out.Headers) > 2*(keep+1) {
			out.Headers = append(out.Headers[:0:0], out.Headers[len(out.Headers)-keep-1:]...)
		}
		if num == n {
			out.Headers = out.Headers[max(0, len(out.Headers)-keep-1):]
			out.Block = b
			return out, nil
		}
	}
	if last == nil {
		return nil, fmt.Errorf("%w: the headers file holds no block up to %d", ErrMalformed, n)
	}
	return nil, fmt.Errorf("%w: the headers file ends at block %d, before block %d", ErrMalformed, last.Number, n)
}
