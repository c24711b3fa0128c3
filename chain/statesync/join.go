package statesync

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/chain/statedump"
	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// JoinStats describe a joined store.
type JoinStats struct {
	Anchor      uint64
	Hash        common.Hash
	RootChecked bool // header N carried a real state root and the state made it
	store.StateImportStats
}

// hashingReader hashes what it reads.
type hashingReader struct {
	r   *bufio.Reader
	sum hash.Hash
}

func (h *hashingReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.sum.Write(p[:n])
	return n, err
}

func (h *hashingReader) ReadByte() (byte, error) {
	b, err := h.r.ReadByte()
	if err == nil {
		h.sum.Write([]byte{b})
	}
	return b, err
}

// JoinURL fetches the stream from the snapshot endpoint of the node at url
// (its JSON-RPC URL; the stream is GET url/snapshot) and joins db from it.
func JoinURL(ctx context.Context, url string, db *store.DB, tmpDir string) (JoinStats, error) {
	u := strings.TrimSuffix(url, "/") + "/snapshot"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return JoinStats{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return JoinStats{}, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusServiceUnavailable:
		return JoinStats{}, fmt.Errorf("%w: %s answers 503 (it serves its maximum of snapshot streams; try again)", ErrBusy, u)
	case resp.StatusCode != http.StatusOK:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return JoinStats{}, fmt.Errorf("%s: HTTP %d %s (does the node run with --snapshot.serve?)", u, resp.StatusCode, bytes.TrimSpace(body))
	}
	return Join(ctx, resp.Body, db, tmpDir)
}

// Join reads a stream into db, which must be empty, all or nothing (see
// the package doc). tmpDir holds the sorts' files.
func Join(ctx context.Context, r io.Reader, db *store.DB, tmpDir string) (JoinStats, error) {
	var stats JoinStats
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrStream, fmt.Sprintf(format, args...))
	}
	hr := &hashingReader{r: bufio.NewReaderSize(r, 1<<20), sum: sha256.New()}
	magic := make([]byte, len(Magic))
	if _, err := io.ReadFull(hr, magic); err != nil || string(magic) != Magic {
		return stats, bad("not a tipnode snapshot stream")
	}
	var (
		anchor   store.AnchorWrite
		headers  []*types.Header
		si       *store.StateImport
		builder  *statedump.Builder
		lastAddr common.Address
		haveAcc  bool
		payload  []byte
	)
	defer func() {
		if builder != nil {
			builder.Close()
		}
		if si != nil {
			si.Close()
		}
	}()
	startState := func(item int64) error {
		if si != nil {
			return nil
		}
		if anchor.Config == nil || len(headers) < 2 && (len(headers) == 0 || headers[0].Number.Sign() != 0) {
			return bad("frame %d: state before the chain config and headers", item)
		}
		top := headers[len(headers)-1]
		var err error
		if si, err = db.NewStateImport(tmpDir, top.Number.Uint64(), 128<<20); err != nil {
			return err
		}
		if top.Root == (common.Hash{}) {
			return nil // no root to check: entries go to the import directly
		}
		builder, err = statedump.NewBuilder(si, statedump.Config{TempDir: tmpDir})
		return err
	}
	account := func(item int64, addr common.Address, acc *store.Account) error {
		if builder != nil {
			return builder.Account(item, addr, acc)
		}
		return si.Account(addr, acc)
	}
	slot := func(item int64, addr common.Address, slot, value common.Hash) error {
		if builder != nil {
			return builder.Storage(item, addr, slot, value)
		}
		return si.Storage(addr, slot, value)
	}
	code := func(item int64, hash common.Hash, c []byte) error {
		if builder != nil {
			return builder.Code(item, hash, c)
		}
		if got := crypto.Keccak256Hash(c); got != hash {
			return bad("frame %d: code %s hashes to %s", item, hash.Hex(), got.Hex())
		}
		return si.Code(hash, c)
	}
	for item := int64(1); ; item++ {
		if item%4096 == 0 && ctx.Err() != nil {
			return stats, ctx.Err()
		}
		sum := hr.sum.Sum(nil) // of everything before this frame
		typ, err := hr.ReadByte()
		if err != nil {
			return stats, bad("truncated before frame %d (no end frame): %v", item, err)
		}
		size, err := binary.ReadUvarint(hr)
		if err == nil && size > MaxFrame {
			err = fmt.Errorf("frame of %d bytes (at most %d)", size, MaxFrame)
		}
		if err != nil {
			return stats, bad("frame %d: %v", item, err)
		}
		if cap(payload) < int(size) {
			payload = make([]byte, size)
		}
		p := payload[:size]
		if _, err := io.ReadFull(hr, p); err != nil {
			return stats, bad("frame %d truncated: %v", item, err)
		}
		switch typ {
		case frameConfig:
			anchor.Config = append([]byte(nil), p...)
		case frameSpec:
			anchor.Spec = append(anchor.Spec, p...)
		case frameHeader:
			h := new(types.Header)
			if err := rlp.DecodeBytes(p, h); err != nil {
				return stats, bad("frame %d: header: %v", item, err)
			}
			headers = append(headers, h)
		case frameBody:
			anchor.Body = new(chaintypes.Body)
			if err := rlp.DecodeBytes(p, anchor.Body); err != nil {
				return stats, bad("frame %d: body: %v", item, err)
			}
		case frameReceipts:
			rs, err := chaintypes.DecodeStored(p)
			if err != nil {
				return stats, bad("frame %d: receipts: %v", item, err)
			}
			anchor.Receipts = rs
		case frameAccount:
			if len(p) != 92 {
				return stats, bad("frame %d: account of %d bytes", item, len(p))
			}
			if err := startState(item); err != nil {
				return stats, err
			}
			lastAddr, haveAcc = common.BytesToAddress(p[:20]), true
			acc := &store.Account{Nonce: binary.BigEndian.Uint64(p[20:28]), Balance: new(uint256.Int).SetBytes32(p[28:60]), CodeHash: common.BytesToHash(p[60:92])}
			if err := account(item, lastAddr, acc); err != nil {
				return stats, err
			}
		case frameSlot:
			if len(p) != 84 {
				return stats, bad("frame %d: slot of %d bytes", item, len(p))
			}
			if addr := common.BytesToAddress(p[:20]); !haveAcc || addr != lastAddr {
				return stats, bad("frame %d: slot of %s outside its account", item, addr.Hex())
			}
			if err := slot(item, lastAddr, common.BytesToHash(p[20:52]), common.BytesToHash(p[52:84])); err != nil {
				return stats, err
			}
		case frameCode:
			if len(p) < 32 {
				return stats, bad("frame %d: code of %d bytes", item, len(p))
			}
			if err := startState(item); err != nil {
				return stats, err
			}
			if err := code(item, common.BytesToHash(p[:32]), p[32:]); err != nil {
				return stats, err
			}
		case frameEnd:
			if !bytes.Equal(p, sum) {
				return stats, bad("checksum mismatch: the stream says %x, its bytes hash to %x", p, sum)
			}
			if _, err := hr.ReadByte(); !errors.Is(err, io.EOF) {
				return stats, bad("data after the end frame")
			}
			if err := startState(item); err != nil {
				return stats, err
			}
			return finish(ctx, stats, &anchor, headers, si, builder)
		default:
			return stats, bad("frame %d: unknown type %q", item, typ)
		}
	}
}

// finish verifies the root (when header N carries one), then commits.
func finish(ctx context.Context, stats JoinStats, anchor *store.AnchorWrite, headers []*types.Header, si *store.StateImport, builder *statedump.Builder) (JoinStats, error) {
	if headers[0].Number.Sign() != 0 {
		return stats, fmt.Errorf("%w: the first header is %d, not block 0", ErrStream, headers[0].Number)
	}
	anchor.Genesis, anchor.Headers = headers[0], headers[1:]
	if len(anchor.Headers) == 0 {
		anchor.Headers = headers[:1]
	}
	top := anchor.Headers[len(anchor.Headers)-1]
	if builder != nil {
		root, err := builder.Finish(ctx)
		if err != nil {
			return stats, err
		}
		if root != top.Root {
			return stats, fmt.Errorf("%w: the state makes root %s, block %d's header says %s", ErrStream, root.Hex(), top.Number, top.Root.Hex())
		}
		stats.RootChecked = true
	}
	s, err := si.Commit(ctx, anchor)
	if err != nil {
		return stats, err
	}
	stats.Anchor, stats.Hash, stats.StateImportStats = top.Number.Uint64(), top.Hash(), s
	return stats, nil
}
