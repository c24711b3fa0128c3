package chain

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/holiman/uint256"
)

// AllocVisitor receives the alloc of a genesis spec read by ReadGenesis,
// one account at a time: the account's slots first (Storage, in the order
// of the file, zero values included), then Account once its object ends.
// An address or slot given twice is passed on twice (go-ethereum's decoder
// keeps the last; the store import refuses repeats).
type AllocVisitor interface {
	Storage(addr common.Address, slot, value common.Hash) error
	// Account ends the account addr (code nil or empty: none).
	Account(addr common.Address, nonce uint64, balance *uint256.Int, code []byte) error
}

// ReadGenesis reads go-ethereum's genesis JSON from r in bounded memory:
// every top-level member but "alloc" is decoded into the returned
// Genesis' Core (with an EMPTY Alloc) by go-ethereum's own decoder, and
// "alloc" is streamed to v account by account, each account's "storage"
// slot by slot (no account's storage map is ever built). It accepts what
// ParseGenesis accepts, except what ErrGenesisUnstreamable names, and
// checks the same (config, chain id, OP config, fork order). The result
// has no Block and no Spec; rawConfig is the "config" member as given
// (for ConfigJSON).
func ReadGenesis(r io.Reader, v AllocVisitor) (g *Genesis, rawConfig json.RawMessage, err error) {
	gr := &genesisReader{dec: json.NewDecoder(r), v: v}
	core, rawConfig, err := gr.read()
	if errors.Is(err, ErrPreBedrock) {
		return nil, nil, err
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrGenesis, err)
	}
	g, err = checkGenesis(core, rawConfig)
	return g, rawConfig, err
}

// genesisReader is the token-level reader behind ReadGenesis.
type genesisReader struct {
	dec *json.Decoder
	v   AllocVisitor
}

// member is a top-level or account member decoded afterwards by
// go-ethereum's decoder.
type member struct {
	key string
	raw json.RawMessage
}

// jsonObject re-encodes members as one JSON object.
func jsonObject(members []member, extra string) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, err := json.Marshal(m.key)
		if err != nil {
			return nil, err
		}
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(m.raw)
	}
	if extra != "" {
		if len(members) > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(extra)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// unstreamable refuses what go-ethereum accepts but the stream cannot
// reproduce.
func unstreamable(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrGenesisUnstreamable, fmt.Sprintf(format, args...))
}

// token is the next token; the end of the input inside the genesis is
// io.ErrUnexpectedEOF.
func (gr *genesisReader) token() (json.Token, error) {
	tok, err := gr.dec.Token()
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return tok, err
}

// decode reads the next value into raw (io.ErrUnexpectedEOF as token).
func (gr *genesisReader) decode(raw *json.RawMessage) error {
	err := gr.dec.Decode(raw)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// key reads an object key (or the closing brace: ok false).
func (gr *genesisReader) key() (string, bool, error) {
	if !gr.dec.More() {
		tok, err := gr.token()
		if err != nil {
			return "", false, err
		}
		if tok != json.Delim('}') {
			return "", false, fmt.Errorf("unexpected %v", tok)
		}
		return "", false, nil
	}
	tok, err := gr.token()
	if err != nil {
		return "", false, err
	}
	k, ok := tok.(string)
	if !ok {
		return "", false, fmt.Errorf("unexpected %v where a member name belongs", tok)
	}
	return k, true, nil
}

func (gr *genesisReader) read() (*core.Genesis, json.RawMessage, error) {
	tok, err := gr.token()
	if err != nil {
		return nil, nil, err
	}
	if tok != json.Delim('{') {
		return nil, nil, fmt.Errorf("the genesis is not a JSON object (starts with %v)", tok)
	}
	var (
		members   []member
		rawConfig json.RawMessage
		alloc     string // "": none, else the member to decode
	)
	for {
		k, ok, err := gr.key()
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			break
		}
		if !strings.EqualFold(k, "alloc") {
			var raw json.RawMessage
			if err := gr.decode(&raw); err != nil {
				return nil, nil, fmt.Errorf("%q: %w", k, err)
			}
			members = append(members, member{k, raw})
			if strings.EqualFold(k, "config") {
				rawConfig = raw
			}
			continue
		}
		if alloc != "" {
			return nil, nil, unstreamable("\"alloc\" given twice")
		}
		tok, err := gr.token()
		if err != nil {
			return nil, nil, fmt.Errorf("alloc: %w", err)
		}
		switch tok {
		case nil:
			alloc = `"alloc":null` // go-ethereum: missing alloc
		case json.Delim('{'):
			alloc = `"alloc":{}`
			if err := gr.alloc(); err != nil {
				return nil, nil, err
			}
		default:
			return nil, nil, fmt.Errorf("alloc is not an object (%v)", tok)
		}
	}
	if tok, err := gr.dec.Token(); err != io.EOF {
		if err == nil {
			err = fmt.Errorf("%v", tok)
		}
		return nil, nil, fmt.Errorf("data after the genesis object: %w", err)
	}
	if err := refusePreBedrock(rawConfig); err != nil {
		return nil, nil, err
	}
	enc, err := jsonObject(members, alloc)
	if err != nil {
		return nil, nil, err
	}
	g := new(core.Genesis)
	if err := json.Unmarshal(enc, g); err != nil {
		return nil, nil, err
	}
	if len(rawConfig) == 0 {
		rawConfig = json.RawMessage("null")
	}
	return g, rawConfig, nil
}

// alloc streams the members of the alloc object (its '{' read).
func (gr *genesisReader) alloc() error {
	for {
		k, ok, err := gr.key()
		if err != nil {
			return fmt.Errorf("alloc: %w", err)
		}
		if !ok {
			return nil
		}
		var addr common.UnprefixedAddress
		if err := addr.UnmarshalText([]byte(k)); err != nil {
			return fmt.Errorf("alloc: account %q: %w", k, err)
		}
		if err := gr.account(common.Address(addr)); err != nil {
			return fmt.Errorf("alloc: account %s: %w", common.Address(addr).Hex(), err)
		}
	}
}

// account streams one account's object.
func (gr *genesisReader) account(addr common.Address) error {
	tok, err := gr.token()
	if err != nil {
		return err
	}
	switch tok {
	case nil:
		return errors.New("null: missing required field 'balance'")
	case json.Delim('{'):
	default:
		return fmt.Errorf("not an object (%v)", tok)
	}
	var (
		members []member
		storage bool
	)
	for {
		k, ok, err := gr.key()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if !strings.EqualFold(k, "storage") {
			var raw json.RawMessage
			if err := gr.decode(&raw); err != nil {
				return fmt.Errorf("%q: %w", k, err)
			}
			members = append(members, member{k, raw})
			continue
		}
		if storage {
			return unstreamable("\"storage\" given twice")
		}
		storage = true
		tok, err := gr.token()
		if err != nil {
			return fmt.Errorf("storage: %w", err)
		}
		switch tok {
		case nil: // no storage
		case json.Delim('{'):
			if err := gr.storage(addr); err != nil {
				return err
			}
		default:
			return fmt.Errorf("storage is not an object (%v)", tok)
		}
	}
	enc, err := jsonObject(members, "")
	if err != nil {
		return err
	}
	var acc types.Account
	if err := json.Unmarshal(enc, &acc); err != nil {
		return err
	}
	bal := new(uint256.Int)
	if acc.Balance != nil {
		if acc.Balance.Sign() < 0 {
			return unstreamable("negative balance %s", acc.Balance)
		}
		if bal.SetFromBig(acc.Balance) {
			return fmt.Errorf("balance %s does not fit 256 bits", acc.Balance)
		}
	}
	return gr.v.Account(addr, acc.Nonce, bal, acc.Code)
}

// storage streams the slots of an account's storage object (its '{'
// read).
func (gr *genesisReader) storage(addr common.Address) error {
	for {
		k, ok, err := gr.key()
		if err != nil {
			return fmt.Errorf("storage: %w", err)
		}
		if !ok {
			return nil
		}
		slot, err := storageWord(k)
		if err != nil {
			return fmt.Errorf("storage key %q: %w", k, err)
		}
		tok, err := gr.token()
		if err != nil {
			return fmt.Errorf("storage %s: %w", slot.Hex(), err)
		}
		var value common.Hash
		switch t := tok.(type) {
		case nil: // zero
		case string:
			if value, err = storageWord(t); err != nil {
				return fmt.Errorf("storage %s: value %q: %w", slot.Hex(), t, err)
			}
		default:
			return fmt.Errorf("storage %s: value %v is not a hex string", slot.Hex(), tok)
		}
		if err := gr.v.Storage(addr, slot, value); err != nil {
			return err
		}
	}
}

// storageWord decodes a storage key or value as go-ethereum's genesis
// decoder does: hex of at most 32 bytes, "0x" optional, an even number
// of digits, left-padded with zeros ("" and "0x" are zero).
func storageWord(s string) (common.Hash, error) {
	s = strings.TrimPrefix(s, "0x")
	var h common.Hash
	if len(s) > 2*common.HashLength {
		return h, errors.New("more than 64 hex digits")
	}
	if len(s)%2 != 0 {
		return h, errors.New("odd number of hex digits")
	}
	if _, err := hex.Decode(h[common.HashLength-len(s)/2:], []byte(s)); err != nil {
		return h, errors.New("invalid hex")
	}
	return h, nil
}

// SealBlock sets g.Block to block 0 of g.Core with the given state root
// (g.Core.Alloc is empty: ReadGenesis) and, on an OP chain with Isthmus at
// genesis, the L2ToL1MessagePasser's storage root passerRoot as its
// withdrawals root. go-ethereum's ToBlock takes every other header field
// from the config and the genesis' members, none from the alloc.
func (g *Genesis) SealBlock(stateRoot, passerRoot common.Hash) {
	block := g.Core.ToBlock()
	h := block.Header()
	h.Root = stateRoot
	if g.isthmusGenesis() {
		h.WithdrawalsHash = &passerRoot
	}
	g.Block = block.WithSeal(h)
}
