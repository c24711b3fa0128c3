package statesync

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"

	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// Magic starts every stream.
const Magic = "tipnode-snapshot/1\n"

// MaxFrame bounds one frame's payload (a reader refuses more).
const MaxFrame = 64 << 20

// AnchorHeaders is how many headers below the anchor a stream carries.
const AnchorHeaders = 256

const specChunk = 64 << 10

// Frame types.
const (
	frameConfig   byte = 'C'
	frameSpec     byte = 'G'
	frameHeader   byte = 'H'
	frameBody     byte = 'B'
	frameReceipts byte = 'R'
	frameAccount  byte = 'A'
	frameSlot     byte = 'S'
	frameCode     byte = 'K'
	frameEnd      byte = 'E'
)

// Errors.
var (
	// ErrStream: the stream is malformed, truncated or its checksum or
	// state root does not match.
	ErrStream = errors.New("bad snapshot stream")
	// ErrBusy: the source serves its maximum of streams (HTTP 503).
	ErrBusy = errors.New("snapshot source busy")
)

// frameWriter writes frames and hashes everything it writes.
type frameWriter struct {
	w   *bufio.Writer
	sum hash.Hash
	hdr [1 + binary.MaxVarintLen64]byte
}

func (fw *frameWriter) raw(p []byte) error {
	fw.sum.Write(p)
	_, err := fw.w.Write(p)
	return err
}

func (fw *frameWriter) frame(typ byte, parts ...[]byte) error {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	fw.hdr[0] = typ
	l := binary.PutUvarint(fw.hdr[1:], uint64(n))
	if err := fw.raw(fw.hdr[:1+l]); err != nil {
		return err
	}
	for _, p := range parts {
		if err := fw.raw(p); err != nil {
			return err
		}
	}
	return nil
}

// Write writes the stream of view's chain at block n to w (through a
// buffer of bufSize). ctx stops it between entries.
func Write(ctx context.Context, w io.Writer, view store.View, n uint64, bufSize int) error {
	fw := &frameWriter{w: bufio.NewWriterSize(w, bufSize), sum: sha256.New()}
	if err := fw.raw([]byte(Magic)); err != nil {
		return err
	}
	config, err := view.ChainConfig()
	if err != nil {
		return fmt.Errorf("chain config: %w", err)
	}
	if err := fw.frame(frameConfig, config); err != nil {
		return err
	}
	spec, err := view.GenesisSpec()
	if err != nil {
		return fmt.Errorf("genesis spec: %w", err)
	}
	for i := 0; i < len(spec); i += specChunk {
		if err := fw.frame(frameSpec, spec[i:min(len(spec), i+specChunk)]); err != nil {
			return err
		}
	}
	header := func(m uint64) (*types.Header, error) {
		hash, err := view.CanonicalHash(m)
		if err != nil {
			return nil, err
		}
		return view.Header(m, hash)
	}
	g, err := header(0)
	if err != nil {
		return fmt.Errorf("header 0: %w", err)
	}
	headers := []*types.Header{g}
	for m := n - min(n, AnchorHeaders); m <= n; m++ {
		if m == 0 {
			continue
		}
		h, err := header(m)
		if errors.Is(err, store.ErrNotFound) && m < n {
			continue // an anchored source holds fewer
		}
		if err != nil {
			return fmt.Errorf("header %d: %w", m, err)
		}
		headers = append(headers, h)
	}
	for _, h := range headers {
		enc, err := rlp.EncodeToBytes(h)
		if err != nil {
			return err
		}
		if err := fw.frame(frameHeader, enc); err != nil {
			return err
		}
	}
	top := headers[len(headers)-1]
	if body, err := view.Body(n, top.Hash()); err == nil {
		receipts, rerr := view.Receipts(n, top.Hash())
		if rerr == nil {
			b, err1 := rlp.EncodeToBytes(body)
			r, err2 := chaintypes.EncodeStored(receipts)
			if err := errors.Join(err1, err2); err != nil {
				return err
			}
			if err := errors.Join(fw.frame(frameBody, b), fw.frame(frameReceipts, r)); err != nil {
				return err
			}
		}
	}
	st, err := view.StateAt(n)
	if err != nil {
		return err
	}
	codes := make(map[common.Hash]struct{})
	var count int
	var buf [20 + 8 + 32 + 32]byte
	err = st.ForEachAccount(func(addr common.Address, acc *store.Account) error {
		if count++; count%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		copy(buf[:20], addr[:])
		binary.BigEndian.PutUint64(buf[20:28], acc.Nonce)
		bal := acc.Balance.Bytes32()
		copy(buf[28:60], bal[:])
		copy(buf[60:92], acc.CodeHash[:])
		if err := fw.frame(frameAccount, buf[:92]); err != nil {
			return err
		}
		if acc.CodeHash != types.EmptyCodeHash {
			if _, ok := codes[acc.CodeHash]; !ok {
				codes[acc.CodeHash] = struct{}{}
				code, err := st.Code(acc.CodeHash)
				if err != nil {
					return err
				}
				if err := fw.frame(frameCode, acc.CodeHash[:], code); err != nil {
					return err
				}
			}
		}
		return st.ForEachStorage(addr, func(slot, value common.Hash) error {
			if count++; count%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			return fw.frame(frameSlot, addr[:], slot[:], value[:])
		})
	})
	if err != nil {
		return err
	}
	sum := fw.sum.Sum(nil)
	if err := fw.frame(frameEnd, sum); err != nil {
		return err
	}
	return fw.w.Flush()
}
