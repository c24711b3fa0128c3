package genesisinit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/op"
	"github.com/tipnode/tipnode/chain/statedump"
	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// Config configures Init.
type Config struct {
	// TempDir holds the sorts' files and the sstables (required; a
	// directory on the store's filesystem).
	TempDir string
	// MemBytes bounds each of the two sorts' buffers (the state root's and
	// the store's; they run one after the other but overlap while the
	// spec is read). Default statedump.DefaultMemBytes (128 MiB).
	MemBytes int
	// Progress, when set, is called about every statedump.ProgressEvery
	// accounts and slots read ("parse") and written ("write").
	Progress func(phase string, entries int64)
	// Check, when set, is called with the genesis (block 0 sealed) and its
	// "config" member as given, before anything is written: an error
	// refuses the genesis (tipnode init --chain: the preset's chain).
	Check func(g *chain.Genesis, rawConfig json.RawMessage) error
}

// Validate checks the config.
func (c Config) Validate() error {
	if c.TempDir == "" {
		return errors.New("genesisinit: no TempDir")
	}
	if c.MemBytes < 0 {
		return fmt.Errorf("genesisinit: MemBytes %d < 0", c.MemBytes)
	}
	return nil
}

// Stats describes a streamed genesis init.
type Stats struct {
	Accounts, Slots int64 // read (slots: non-zero)
	Store           store.StateImportStats
}

// Init initialises the empty store db at genesis from the
// genesis JSON read from r, in bounded memory (chain.ReadGenesis, the state root
// by statedump.Builder, the store by one store.StateImport at block 0):
// the store equals the one InitGenesis writes for the same spec, the spec
// streamed into it. All or nothing: on an error nothing was ingested.
// ctx stops it between reads.
func Init(ctx context.Context, db *store.DB, r io.Reader, cfg Config) (*chain.Genesis, Stats, error) {
	var stats Stats
	if err := cfg.Validate(); err != nil {
		return nil, stats, err
	}
	if cfg.MemBytes == 0 {
		cfg.MemBytes = statedump.DefaultMemBytes
	}
	// A store that holds a chain is only compared (as WriteGenesis does:
	// the same genesis is a no-op, another store.ErrGenesisMismatch).
	si, err := db.NewStateImport(cfg.TempDir, 0, cfg.MemBytes)
	var dst statedump.Sink = si
	switch {
	case errors.Is(err, store.ErrNotEmpty):
		si, dst = nil, discardSink{}
	case err != nil:
		return nil, stats, err
	default:
		defer si.Close()
	}
	sink := &genesisSink{Sink: dst, passer: trie.NewStackTrie(nil), written: progressCounter{phase: "write", report: cfg.Progress}}
	b, err := statedump.NewBuilder(sink, statedump.Config{TempDir: cfg.TempDir, MemBytes: cfg.MemBytes})
	if err != nil {
		return nil, stats, err
	}
	defer b.Close()
	v := &allocBuilder{b: b, read: progressCounter{phase: "parse", report: cfg.Progress}}
	in := statedump.ContextReader(ctx, r)
	if si != nil {
		in = io.TeeReader(in, si.SpecWriter())
	}
	g, rawConfig, err := chain.ReadGenesis(in, v)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, stats, cerr
		}
		return nil, stats, err
	}
	if g.Core.Number != 0 {
		return nil, stats, fmt.Errorf("%w: block number %d, want 0", chain.ErrGenesis, g.Core.Number)
	}
	if g.Core.IsUBT() {
		return nil, stats, fmt.Errorf("%w: a binary-trie (UBT) genesis is not supported", chain.ErrGenesis)
	}
	stats.Accounts, stats.Slots = b.Accounts, b.Slots
	root, err := b.Finish(ctx)
	if err != nil {
		return nil, stats, fmt.Errorf("%w: %w", chain.ErrGenesis, err)
	}
	// The builder's runs are spent: their disk space goes before the
	// import writes its tables (Close again at return is a no-op).
	if err := b.Close(); err != nil {
		return nil, stats, err
	}
	var passerRoot common.Hash
	if sink.passerSlots {
		passerRoot = sink.passer.Hash()
	} else {
		passerRoot = types.EmptyRootHash
	}
	g.SealBlock(root, passerRoot)
	if cfg.Check != nil {
		if err := cfg.Check(g, rawConfig); err != nil {
			return nil, stats, err
		}
	}
	config, err := g.ConfigJSON(rawConfig)
	if err != nil {
		return nil, stats, fmt.Errorf("%w: encode chain config: %v", chain.ErrGenesis, err)
	}
	if si == nil {
		return g, stats, sameGenesis(db, g.Block.Hash())
	}
	h := g.Block.Header()
	stats.Store, err = si.Commit(ctx, &store.AnchorWrite{
		Genesis: h,
		Headers: []*types.Header{h},
		Body:    chaintypes.FromEthBlock(g.Block).Body(),
		Config:  config,
	})
	if err != nil {
		return nil, stats, err
	}
	return g, stats, nil
}

// sameGenesis checks that the store's block 0 is hash.
func sameGenesis(db *store.DB, hash common.Hash) error {
	view, err := db.View()
	if err != nil {
		return err
	}
	defer view.Close()
	stored, err := view.CanonicalHash(0)
	if err != nil {
		return err
	}
	if stored != hash {
		return fmt.Errorf("%w: store has genesis %s, given %s", store.ErrGenesisMismatch, stored, hash)
	}
	return nil
}

// discardSink drops the state (a store that already holds the chain).
type discardSink struct{}

func (discardSink) Account(common.Address, *store.Account) error           { return nil }
func (discardSink) Storage(common.Address, common.Hash, common.Hash) error { return nil }
func (discardSink) Code(common.Hash, []byte) error                         { return nil }

// allocBuilder hands a streamed alloc to a statedump.Builder (the item
// number of its errors is the account's position in the alloc, from 1).
type allocBuilder struct {
	b    *statedump.Builder
	item int64
	read progressCounter
}

// progressCounter counts a phase's entries and reports every
// statedump.ProgressEvery of them (report nil: none).
type progressCounter struct {
	n      int64
	phase  string
	report func(string, int64)
}

func (c *progressCounter) count() {
	if c.n++; c.report != nil && c.n%statedump.ProgressEvery == 0 {
		c.report(c.phase, c.n)
	}
}

func (a *allocBuilder) Storage(addr common.Address, slot, value common.Hash) error {
	a.read.count()
	return a.b.Slot(a.item+1, addr, slot, value)
}

func (a *allocBuilder) Account(addr common.Address, nonce uint64, balance *uint256.Int, code []byte) error {
	a.read.count()
	a.item++
	acc := &store.Account{Nonce: nonce, Balance: balance, CodeHash: types.EmptyCodeHash}
	if len(code) > 0 {
		acc.CodeHash = crypto.Keccak256Hash(code)
		if err := a.b.Code(a.item, acc.CodeHash, code); err != nil {
			return err
		}
	}
	return a.b.Account(a.item, addr, acc)
}

// genesisSink passes the verified state to the store import and computes
// the L2ToL1MessagePasser's storage root on the way (the builder gives an
// account's slots in trie order).
type genesisSink struct {
	statedump.Sink
	passer      *trie.StackTrie
	passerSlots bool
	written     progressCounter
}

// TrieNode passes the state trie's nodes on when the store import takes
// them (statedump.TrieSink: the trie built in the genesis's one pass).
func (s *genesisSink) TrieNode(owner common.Hash, path, blob []byte) error {
	if ts, ok := s.Sink.(statedump.TrieSink); ok {
		return ts.TrieNode(owner, path, blob)
	}
	return nil
}

func (s *genesisSink) Account(addr common.Address, acc *store.Account) error {
	s.written.count()
	return s.Sink.Account(addr, acc)
}

func (s *genesisSink) Storage(addr common.Address, slot, value common.Hash) error {
	s.written.count()
	if addr == op.L2ToL1MessagePasser && value != (common.Hash{}) {
		enc, err := rlp.EncodeToBytes(common.TrimLeftZeroes(value[:]))
		if err != nil {
			return err
		}
		if err := s.passer.Update(crypto.Keccak256(slot[:]), enc); err != nil {
			return err
		}
		s.passerSlots = true
	}
	return s.Sink.Storage(addr, slot, value)
}
