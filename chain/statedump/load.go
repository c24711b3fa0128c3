package statedump

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/extsort"
)

// Sink receives the verified state (store.StateImport implements it).
type Sink interface {
	Account(addr common.Address, acc *store.Account) error
	Storage(addr common.Address, slot, value common.Hash) error
	Code(hash common.Hash, code []byte) error
}

// TrieSink is a Sink that also takes the state trie's nodes, as the
// StackTries computing the root commit them (store.StateImport: the trie
// is built in the same pass that verifies the root). owner is zero for the
// account trie, the account's hashed address for its storage trie.
type TrieSink interface {
	Sink
	TrieNode(owner common.Hash, path, blob []byte) error
}

// Config configures Load.
type Config struct {
	// TempDir holds the sort's files (required; Load removes what it
	// put there).
	TempDir string
	// MemBytes bounds the sort's buffer. Default 128 MiB.
	MemBytes int
	// Expected is the state root the dump must produce (the anchor
	// header's); zero checks nothing (the result's Root says what it is).
	Expected common.Hash
	// Progress, when set, is called about every ProgressEvery entries
	// read ("parse") and verified ("verify"), with the count so far.
	Progress func(phase string, entries int64)
}

// ProgressEvery is how many entries pass between Config.Progress calls.
const ProgressEvery = 1 << 20

// DefaultMemBytes is Config.MemBytes's default.
const DefaultMemBytes = 128 << 20

// Result describes a loaded dump.
type Result struct {
	Format   string      // one of the Format constants
	DumpRoot common.Hash // the root the dump names
	Root     common.Hash // the root computed from its accounts
	Accounts int64
	Slots    int64 // non-zero slots
}

// Load reads a dump from r, verifies it and hands it to sink (see the
// package doc). ctx stops it between records.
func Load(ctx context.Context, r io.Reader, sink Sink, cfg Config) (Result, error) {
	if cfg.TempDir == "" {
		return Result{}, errors.New("statedump: no TempDir")
	}
	if cfg.MemBytes <= 0 {
		cfg.MemBytes = DefaultMemBytes
	}
	dir, err := tempDir(cfg.TempDir)
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(dir)
	sorter, err := extsort.New(filepath.Join(dir, "sort"), cfg.MemBytes)
	if err != nil {
		return Result{}, err
	}
	defer sorter.Close()
	var res Result
	lines := &lineReader{r: ContextReader(ctx, r)}
	dec := json.NewDecoder(lines)
	dec.UseNumber()
	p := &parser{dec: dec, lines: lines, sorter: sorter, sink: sink, slots: slotBuffer{dir: dir}, res: &res, progress: cfg.Progress}
	defer p.slots.reset()
	if err := p.run(cfg.Expected); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return res, cerr
		}
		return res, err
	}
	if res.Format == "" {
		res.Format = FormatGethIterative
	}
	root, err := emit(ctx, sorter, sink, cfg.Progress)
	if err != nil {
		return res, err
	}
	res.Root = root
	if root != res.DumpRoot {
		return res, fmt.Errorf("%w: the dump's accounts make state root %s, its first line says %s (accounts missing or changed)", ErrRootMismatch, root.Hex(), res.DumpRoot.Hex())
	}
	if cfg.Expected != (common.Hash{}) && root != cfg.Expected {
		return res, fmt.Errorf("%w: the dump makes state root %s, the anchor block's state root is %s", ErrRootMismatch, root.Hex(), cfg.Expected.Hex())
	}
	return res, nil
}

// ContextReader is r whose reads fail once ctx is done (Ctrl-C during a
// long parse).
func ContextReader(ctx context.Context, r io.Reader) io.Reader { return ctxReader{ctx, r} }

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// pendingAccount is the account whose slots are being emitted.
type pendingAccount struct {
	hash     common.Hash
	line     int64
	addr     common.Address
	acc      types.StateAccount
	claimed  *common.Hash
	slots    *trie.StackTrie
	hasSlots bool
}

// emit walks the sorted records: per account its record, then its slots,
// building the storage and account tries and feeding sink. It returns the
// state root.
func emit(ctx context.Context, sorter *extsort.Sorter, sink Sink, progress func(string, int64)) (common.Hash, error) {
	// A TrieSink gets every node of the tries (the first error stops the
	// walk at the next record).
	var nodeErr error
	onNode := func(owner common.Hash) trie.OnTrieNode {
		ts, ok := sink.(TrieSink)
		if !ok {
			return nil
		}
		return func(path []byte, _ common.Hash, blob []byte) {
			if nodeErr == nil {
				if err := ts.TrieNode(owner, path, blob); err != nil {
					nodeErr = fmt.Errorf("%w: trie node: %w", ErrSink, err)
				}
			}
		}
	}
	accounts := trie.NewStackTrie(onNode(common.Hash{}))
	var (
		cur      *pendingAccount
		prevKey  []byte
		prevLine int64
		count    int
		enc      []byte
	)
	finish := func() error {
		if cur == nil {
			return nil
		}
		cur.acc.Root = types.EmptyRootHash
		if cur.hasSlots {
			cur.acc.Root = cur.slots.Hash()
		}
		if cur.claimed != nil && *cur.claimed != cur.acc.Root {
			return fmt.Errorf("%w: line %d: account %s: storage root %s, its slots make %s (slots missing from the dump?)",
				ErrMismatch, cur.line, cur.addr.Hex(), cur.claimed.Hex(), cur.acc.Root.Hex())
		}
		var err error
		if enc, err = rlp.EncodeToBytes(&cur.acc); err != nil {
			return err
		}
		return accounts.Update(cur.hash[:], enc)
	}
	var valEnc []byte
	err := sorter.Merge(func(key, val []byte) error {
		if nodeErr != nil {
			return nodeErr
		}
		if count++; count%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if progress != nil && count%ProgressEvery == 0 {
				progress("verify", int64(count))
			}
		}
		line := int64(binary.BigEndian.Uint64(val))
		dup := prevKey != nil && bytes.Equal(prevKey, key)
		prevKey = append(prevKey[:0], key...)
		defer func() { prevLine = line }()
		switch key[32] {
		case kindAccount:
			if dup {
				return fmt.Errorf("%w: lines %d and %d: account %s is given twice", ErrDuplicate, prevLine, line,
					common.BytesToAddress(val[8:28]).Hex())
			}
			if err := finish(); err != nil {
				return err
			}
			cur = &pendingAccount{hash: common.BytesToHash(key[:32]), line: line, addr: common.BytesToAddress(val[8:28])}
			v := val[28:]
			cur.acc.Nonce = binary.BigEndian.Uint64(v)
			cur.acc.Balance = new(uint256.Int).SetBytes32(v[8:40])
			cur.acc.CodeHash = append([]byte(nil), v[40:72]...)
			if v[72] == 1 {
				h := common.BytesToHash(v[73:105])
				cur.claimed = &h
			}
			acc := &store.Account{Nonce: cur.acc.Nonce, Balance: cur.acc.Balance, CodeHash: common.BytesToHash(cur.acc.CodeHash)}
			if err := sink.Account(cur.addr, acc); err != nil {
				return fmt.Errorf("%w: account %s: %w", ErrSink, cur.addr.Hex(), err)
			}
		case kindSlot:
			if cur == nil || !bytes.Equal(cur.hash[:], key[:32]) {
				return fmt.Errorf("%w: line %d: storage of an account the dump does not list", ErrMalformed, line)
			}
			slot, value := common.BytesToHash(val[8:40]), common.BytesToHash(val[40:72])
			if dup {
				return fmt.Errorf("%w: line %d: slot %s of account %s is given twice", ErrDuplicate, line, slot.Hex(), cur.addr.Hex())
			}
			if value == (common.Hash{}) {
				return nil // a zero kept only to catch repeats (Builder.Slot)
			}
			if !cur.hasSlots {
				cur.slots, cur.hasSlots = trie.NewStackTrie(onNode(cur.hash)), true
			}
			eb := rlp.NewEncoderBuffer(nil)
			eb.WriteBytes(common.TrimLeftZeroes(value[:]))
			valEnc = eb.AppendToBytes(valEnc[:0])
			eb.Flush()
			if err := cur.slots.Update(key[33:65], valEnc); err != nil {
				return err
			}
			if err := sink.Storage(cur.addr, slot, value); err != nil {
				return fmt.Errorf("%w: slot %s of %s: %w", ErrSink, slot.Hex(), cur.addr.Hex(), err)
			}
		default:
			return fmt.Errorf("statedump: corrupt sort record %x", key)
		}
		return nil
	})
	if err == nil {
		err = finish()
	}
	if err != nil {
		return common.Hash{}, err
	}
	root := accounts.Hash()
	return root, nodeErr
}
