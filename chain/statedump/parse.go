package statedump

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/store/extsort"
)

// Formats Load recognises (Result.Format).
const (
	FormatGethIterative = "geth dump --iterative (JSONL)"
	FormatGethObject    = "geth dump (one object)"
	FormatReth          = "reth init-state (JSONL)"
)

// lineReader counts the newlines of what it reads, so a decoder's input
// offset maps to a line number. It keeps only the newline offsets the
// decoder has not passed yet (bounded by the decoder's read-ahead).
type lineReader struct {
	r       io.Reader
	off     int64   // bytes read so far
	pending []int64 // offsets of newlines not yet passed, ascending
	passed  int64   // newlines before the last offset asked about
}

func (l *lineReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for i, c := range p[:n] {
		if c == '\n' {
			l.pending = append(l.pending, l.off+int64(i))
		}
	}
	l.off += int64(n)
	return n, err
}

// line returns the 1-based line of the byte at off (offsets only grow).
func (l *lineReader) line(off int64) int64 {
	i := 0
	for i < len(l.pending) && l.pending[i] < off {
		i++
	}
	l.passed += int64(i)
	l.pending = l.pending[i:]
	if len(l.pending) == 0 {
		l.pending = nil
	}
	return l.passed + 1
}

// dumpAccount is one parsed account before its address is known.
type dumpAccount struct {
	line     int64
	addr     *common.Address
	key      *common.Hash // "key": the hashed address
	nonce    uint64
	balance  uint256.Int
	codeHash *common.Hash
	code     []byte
	hasCode  bool
	root     *common.Hash
}

// slotBuffer holds one account's slots until its address is known (geth
// writes "address" after "storage"): in memory up to slotSpill slots, the
// rest in a file.
type slotBuffer struct {
	dir  string
	mem  []byte // 64-byte entries: slot, value
	f    *os.File
	w    *bufio.Writer
	n    int
	file int
}

const slotSpill = 256 << 10

func (b *slotBuffer) add(slot, value common.Hash) error {
	if len(b.mem) >= slotSpill*64 {
		if b.f == nil {
			f, err := os.CreateTemp(b.dir, "slots-*")
			if err != nil {
				return err
			}
			b.f, b.w = f, bufio.NewWriterSize(f, 1<<20)
		}
		if _, err := b.w.Write(b.mem); err != nil {
			return err
		}
		b.file += len(b.mem) / 64
		b.mem = b.mem[:0]
	}
	b.mem = append(b.mem, slot[:]...)
	b.mem = append(b.mem, value[:]...)
	b.n++
	return nil
}

// drain calls fn with every buffered slot (file first, then memory) and
// empties the buffer.
func (b *slotBuffer) drain(fn func(slot, value []byte) error) error {
	defer b.reset()
	if b.f != nil {
		if err := b.w.Flush(); err != nil {
			return err
		}
		if _, err := b.f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		r := bufio.NewReaderSize(b.f, 1<<20)
		var e [64]byte
		for range b.file {
			if _, err := io.ReadFull(r, e[:]); err != nil {
				return err
			}
			if err := fn(e[:32], e[32:]); err != nil {
				return err
			}
		}
	}
	for i := 0; i < len(b.mem); i += 64 {
		if err := fn(b.mem[i:i+32], b.mem[i+32:i+64]); err != nil {
			return err
		}
	}
	return nil
}

func (b *slotBuffer) reset() {
	if b.f != nil {
		name := b.f.Name()
		b.f.Close()
		os.Remove(name)
		b.f, b.w = nil, nil
	}
	b.mem, b.n, b.file = b.mem[:0], 0, 0
}

// parser decodes the dump into the hashed-order sort.
type parser struct {
	dec    *json.Decoder
	lines  *lineReader
	sorter *extsort.Sorter
	sink   Sink
	slots  slotBuffer
	res    *Result
	// progress is Config.Progress; next the count that calls it.
	progress func(string, int64)
	next     int64
	// scratch
	key, val []byte
}

func (p *parser) malformed(line int64, format string, args ...any) error {
	return fmt.Errorf("%w: line %d: %s", ErrMalformed, line, fmt.Sprintf(format, args...))
}

// syntax turns a decoder error into a malformed-line error.
func (p *parser) syntax(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return p.malformed(p.lines.line(p.lines.off), "unexpected end of the dump")
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return p.malformed(p.lines.line(se.Offset), "%v", se)
	}
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) {
		return p.malformed(p.lines.line(ute.Offset), "%v", ute)
	}
	if errors.Is(err, ErrMalformed) {
		return err
	}
	return p.malformed(p.lines.line(p.dec.InputOffset()), "%v", err)
}

func (p *parser) line() int64 { return p.lines.line(p.dec.InputOffset()) }

func (p *parser) delim(want json.Delim) error {
	tok, err := p.dec.Token()
	if err != nil {
		return p.syntax(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return p.malformed(p.line(), "want %q, found %v", want, tok)
	}
	return nil
}

func (p *parser) str(field string) (string, error) {
	tok, err := p.dec.Token()
	if err != nil {
		return "", p.syntax(err)
	}
	s, ok := tok.(string)
	if !ok {
		return "", p.malformed(p.line(), "%q: want a string, found %v", field, tok)
	}
	return s, nil
}

// skip skips one value.
func (p *parser) skip() error {
	var raw json.RawMessage
	if err := p.dec.Decode(&raw); err != nil {
		return p.syntax(err)
	}
	return nil
}

// run parses the whole stream.
func (p *parser) run(expected common.Hash) error {
	tok, err := p.dec.Token()
	if errors.Is(err, io.EOF) {
		return p.malformed(1, "empty dump")
	}
	if err != nil {
		return p.syntax(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return p.malformed(p.line(), "want an object, found %v", tok)
	}
	sawRoot, sawAccounts := false, false
	for p.dec.More() {
		k, err := p.str("key")
		if err != nil {
			return err
		}
		switch k {
		case "root":
			line := p.line()
			s, err := p.str("root")
			if err != nil {
				return err
			}
			h, err := parseHash(s)
			if err != nil {
				return p.malformed(line, "root: %v", err)
			}
			p.res.DumpRoot, sawRoot = h, true
			if expected != (common.Hash{}) && h != expected {
				return fmt.Errorf("%w: the dump's root (line %d) is %s, the anchor block's state root is %s", ErrRootLine, line, h.Hex(), expected.Hex())
			}
		case "accounts":
			p.res.Format, sawAccounts = FormatGethObject, true
			if err := p.delim('{'); err != nil {
				return err
			}
			for p.dec.More() {
				line := p.line()
				name, err := p.str("account")
				if err != nil {
					return err
				}
				var addr *common.Address
				if common.IsHexAddress(name) {
					a := common.HexToAddress(name)
					addr = &a
				}
				if err := p.delim('{'); err != nil {
					return err
				}
				if err := p.account(line, addr); err != nil {
					return err
				}
			}
			if err := p.delim('}'); err != nil {
				return err
			}
		case "next":
			if err := p.skip(); err != nil {
				return err
			}
		default:
			return p.malformed(p.line(), "unexpected field %q: the first line of a dump is {\"root\": …} (then one account per line)", k)
		}
	}
	if err := p.delim('}'); err != nil {
		return err
	}
	if !sawRoot {
		return p.malformed(1, "the dump has no \"root\"")
	}
	if sawAccounts {
		if _, err := p.dec.Token(); !errors.Is(err, io.EOF) {
			return p.malformed(p.line(), "data after the dump object")
		}
		return nil
	}
	// One account per line.
	for {
		tok, err := p.dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return p.syntax(err)
		}
		line := p.line()
		if d, ok := tok.(json.Delim); !ok || d != '{' {
			return p.malformed(line, "want an account object, found %v", tok)
		}
		if err := p.account(line, nil); err != nil {
			return err
		}
	}
}

// account parses one account object after its '{' (addr: the address the
// enclosing object named it by, if any).
func (p *parser) account(line int64, addr *common.Address) error {
	a := dumpAccount{line: line, addr: addr}
	hexBalance := false
	for p.dec.More() {
		k, err := p.str("key")
		if err != nil {
			return err
		}
		switch k {
		case "balance":
			s, err := p.str(k)
			if err != nil {
				return err
			}
			hexBalance = strings.HasPrefix(s, "0x")
			if err := parseBalance(s, &a.balance); err != nil {
				return p.malformed(line, "balance %q: %v", s, err)
			}
		case "nonce":
			tok, err := p.dec.Token()
			if err != nil {
				return p.syntax(err)
			}
			if a.nonce, err = parseNonce(tok); err != nil {
				return p.malformed(line, "nonce: %v", err)
			}
		case "root", "codeHash", "key":
			s, err := p.str(k)
			if err != nil {
				return err
			}
			h, err := parseHash(s)
			if err != nil {
				return p.malformed(line, "%s: %v", k, err)
			}
			switch k {
			case "root":
				a.root = &h
			case "codeHash":
				a.codeHash = &h
			default:
				a.key = &h
			}
		case "code":
			s, err := p.str(k)
			if err != nil {
				return err
			}
			if a.code, err = parseBytes(s); err != nil {
				return p.malformed(line, "code: %v", err)
			}
			a.hasCode = true
		case "address":
			s, err := p.str(k)
			if err != nil {
				return err
			}
			if !common.IsHexAddress(s) {
				return p.malformed(line, "address %q is not a hex address", s)
			}
			ad := common.HexToAddress(s)
			a.addr = &ad
		case "storage":
			tok, err := p.dec.Token()
			if err != nil {
				return p.syntax(err)
			}
			if tok == nil {
				continue // null
			}
			if d, ok := tok.(json.Delim); !ok || d != '{' {
				return p.malformed(line, "storage: want an object, found %v", tok)
			}
			for p.dec.More() {
				ks, err := p.str("slot")
				if err != nil {
					return err
				}
				vs, err := p.str("slot value")
				if err != nil {
					return err
				}
				slot, err := parseWord(ks)
				if err != nil {
					return p.malformed(line, "storage slot %q: %v", ks, err)
				}
				val, err := parseWord(vs)
				if err != nil {
					return p.malformed(line, "storage value %q of slot %s: %v", vs, ks, err)
				}
				if val == (common.Hash{}) {
					continue // absent slots read zero; the trie holds none
				}
				if err := p.slots.add(slot, val); err != nil {
					return err
				}
			}
			if err := p.delim('}'); err != nil {
				return err
			}
		default:
			if err := p.skip(); err != nil {
				return err
			}
		}
	}
	if err := p.delim('}'); err != nil {
		return err
	}
	return p.finishAccount(&a, hexBalance)
}

// finishAccount checks a parsed account and adds it and its slots to the
// sort.
func (p *parser) finishAccount(a *dumpAccount, hexBalance bool) error {
	p.res.Accounts++
	if p.res.Format == "" {
		if hexBalance || (a.key == nil && a.codeHash == nil && a.root == nil) {
			p.res.Format = FormatReth
		} else {
			p.res.Format = FormatGethIterative
		}
	}
	if a.addr == nil {
		p.slots.reset()
		key := "unknown"
		if a.key != nil {
			key = a.key.Hex()
		}
		return fmt.Errorf("%w: line %d: the account with hashed key %s has no address (go-ethereum writes addresses only for preimages it recorded: run its init and import with --cache.preimages)",
			ErrNoAddress, a.line, key)
	}
	hashed := crypto.Keccak256Hash(a.addr[:])
	if a.key != nil && *a.key != hashed {
		return fmt.Errorf("%w: line %d: account %s has key %s, its hash is %s", ErrMismatch, a.line, a.addr.Hex(), a.key.Hex(), hashed.Hex())
	}
	codeHash := types.EmptyCodeHash
	if a.hasCode && len(a.code) > 0 {
		codeHash = crypto.Keccak256Hash(a.code)
	}
	if a.codeHash != nil && *a.codeHash != codeHash {
		if !a.hasCode {
			return fmt.Errorf("%w: line %d: account %s has code hash %s but the dump holds no code (dumped without code?)", ErrMismatch, a.line, a.addr.Hex(), a.codeHash.Hex())
		}
		return fmt.Errorf("%w: line %d: account %s: code hash %s, its code hashes to %s", ErrMismatch, a.line, a.addr.Hex(), a.codeHash.Hex(), codeHash.Hex())
	}
	if codeHash != types.EmptyCodeHash {
		if err := p.sink.Code(codeHash, a.code); err != nil {
			return fmt.Errorf("%w: code %s: %w", ErrSink, codeHash.Hex(), err)
		}
	}
	// Account record, then its slots (builder.go).
	if err := addAccountRecord(p.sorter, &p.key, &p.val, hashed, a.line, *a.addr, a.nonce, a.balance.Bytes32(), codeHash, a.root); err != nil {
		return err
	}
	p.res.Slots += int64(p.slots.n)
	if n := p.res.Accounts + p.res.Slots; p.progress != nil && n >= p.next {
		p.progress("parse", n)
		p.next = n + ProgressEvery
	}
	return p.slots.drain(func(slot, value []byte) error {
		return addSlotRecord(p.sorter, &p.key, &p.val, hashed, a.line, slot, value)
	})
}

const (
	kindAccount byte = 0
	kindSlot    byte = 1
)

func stripHex(s string) string {
	if len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		return s[2:]
	}
	return s
}

// parseWord parses a 32-byte word: hex with or without 0x, leading zeros
// optional (geth trims them from values).
func parseWord(s string) (common.Hash, error) {
	s = stripHex(s)
	if len(s) > 64 {
		return common.Hash{}, errors.New("longer than 32 bytes")
	}
	var buf [64]byte
	pad := 64 - len(s)
	for i := range pad {
		buf[i] = '0'
	}
	copy(buf[pad:], s)
	var h common.Hash
	if _, err := hex.Decode(h[:], buf[:]); err != nil {
		return common.Hash{}, err
	}
	return h, nil
}

// parseHash parses a full 32-byte hash, 0x optional.
func parseHash(s string) (common.Hash, error) {
	if len(stripHex(s)) != 64 {
		return common.Hash{}, fmt.Errorf("%q is not a 32-byte hex hash", s)
	}
	return parseWord(s)
}

func parseBytes(s string) ([]byte, error) {
	s = stripHex(s)
	if len(s)%2 == 1 {
		return nil, errors.New("odd number of hex digits")
	}
	return hex.DecodeString(s)
}

func parseBalance(s string, out *uint256.Int) error {
	b, ok := new(big.Int), false
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		if len(s) == 2 {
			out.Clear()
			return nil
		}
		_, ok = b.SetString(s[2:], 16)
	} else {
		_, ok = b.SetString(s, 10)
	}
	if !ok || b.Sign() < 0 {
		return errors.New("not a non-negative decimal or 0x hex number")
	}
	if out.SetFromBig(b) {
		return errors.New("above 2^256-1")
	}
	return nil
}

func parseNonce(tok json.Token) (uint64, error) {
	switch v := tok.(type) {
	case float64:
		if v < 0 || v != float64(uint64(v)) || v > 1<<53 {
			return 0, fmt.Errorf("%v is not a 64-bit unsigned integer", v)
		}
		return uint64(v), nil
	case json.Number:
		return strconv.ParseUint(v.String(), 10, 64)
	case string:
		if strings.HasPrefix(v, "0x") {
			return strconv.ParseUint(v[2:], 16, 64)
		}
		return strconv.ParseUint(v, 10, 64)
	}
	return 0, fmt.Errorf("want a number, found %v", tok)
}

// tempDir makes the parse's scratch directory under dir.
func tempDir(dir string) (string, error) {
	d := filepath.Join(dir, "dump")
	return d, os.MkdirAll(d, 0o755)
}
