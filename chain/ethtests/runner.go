package ethtests

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rlp"
	gethtests "github.com/ethereum/go-ethereum/tests"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/store"
)

// ErrUnsupportedNetwork is returned for a test whose network (fork or fork
// transition) has no chain config.
var ErrUnsupportedNetwork = errors.New("unsupported network")

// ErrForgedRootAccepted wraps the failure of a block that had to be
// refused, was imported, and whose header's state root differs from the
// root of the state it produced: state-root verification on import would
// have refused it (whatever else is wrong with it).
var ErrForgedRootAccepted = errors.New("a block whose state root differs from its state was imported")

// Config returns the chain config of network, as go-ethereum's test suite
// defines it (its tests.Forks table; a copy).
func Config(network string) (*params.ChainConfig, error) {
	c, ok := gethtests.Forks[network]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnsupportedNetwork, network)
	}
	cp := *c
	return &cp, nil
}

// GenesisSpec returns the genesis JSON of f (go-ethereum's format, as
// `tipnode init --genesis` reads it): the chain config of its network,
// block 0's header fields from genesisRLP, and pre as the alloc.
func GenesisSpec(f *Fixture) ([]byte, error) {
	config, err := Config(f.Network)
	if err != nil {
		return nil, err
	}
	raw, err := hexutil.Decode(f.GenesisRLP)
	if err != nil {
		return nil, fmt.Errorf("genesisRLP: %w", err)
	}
	var b types.Block
	if err := rlp.DecodeBytes(raw, &b); err != nil {
		return nil, fmt.Errorf("genesisRLP: %w", err)
	}
	h := b.Header()
	g := &core.Genesis{
		Config:        config,
		Nonce:         h.Nonce.Uint64(),
		Timestamp:     h.Time,
		ParentHash:    h.ParentHash,
		ExtraData:     h.Extra,
		GasLimit:      h.GasLimit,
		GasUsed:       h.GasUsed,
		Difficulty:    h.Difficulty,
		Mixhash:       h.MixDigest,
		Coinbase:      h.Coinbase,
		Alloc:         f.Pre,
		BaseFee:       h.BaseFee,
		BlobGasUsed:   h.BlobGasUsed,
		ExcessBlobGas: h.ExcessBlobGas,
	}
	return json.Marshal(g)
}

// Store sizes of one test's in-memory store: the tests' states are small.
const (
	cacheBytes    = 4 << 20
	memtableBytes = 1 << 20
)

// openMemStore opens an empty store on an in-memory filesystem.
func openMemStore() (*store.DB, error) {
	cfg := store.DefaultConfig("/ethtest")
	cfg.FS = vfs.NewMem()
	cfg.CacheBytes = cacheBytes
	cfg.MemtableBytes = memtableBytes
	cfg.SyncWrites = false
	cfg.MinFreeBytes = 0
	cfg.StateCacheBytes = 0
	return store.Open(cfg, zerolog.Nop())
}

// Run runs one test on a fresh in-memory store through tipnode's own
// paths: the genesis as `tipnode init --genesis` builds it (its block 0
// must have the test's genesis hash), then every block as `tipnode import`
// reads it (Writer.ImportRLP, one block per call: a block that does not
// decode is refused like an invalid one). A block with expectException must
// be refused, leaving the head and the store as they were; any other block
// must be imported and become the head. At the end the head must be
// lastblockhash, the root of the flat state must be the head's state root
// (and postStateHash when the test gives it), and the flat state must be
// exactly postState (every account's balance, nonce, code and storage; no
// other account or slot).
//
// The state root is the primary check: after every valid block the root
// of the flat state must be the block's header root (the test's, which
// the block hash covers), and at the end lastblockhash ties the whole
// state to the imported chain. It is computed from the flat state
// (chain.StateRoot); once import verifies roots itself, a block whose
// root differs is refused by the importer first.
func Run(f *Fixture) error {
	spec, err := GenesisSpec(f)
	if err != nil {
		return err
	}
	g, err := chain.ParseGenesis(spec)
	if err != nil {
		return fmt.Errorf("genesis: %w", err)
	}
	if got := g.Block.Hash(); got != f.GenesisBlockHeader.Hash {
		return fmt.Errorf("genesis block hash %s, test says %s (state root %s, test says %s)",
			got.Hex(), f.GenesisBlockHeader.Hash.Hex(), g.Block.Root().Hex(), f.GenesisBlockHeader.StateRoot.Hex())
	}
	db, err := openMemStore()
	if err != nil {
		return err
	}
	defer db.Close()
	if err := chain.InitGenesis(db, g); err != nil {
		return fmt.Errorf("genesis: %w", err)
	}
	w, err := chain.NewWriter(db, g.Executor(), chain.WriterConfig{}, zerolog.Nop())
	if err != nil {
		return err
	}
	w.Start()
	defer w.Stop()

	for i := range f.Blocks {
		if err := importBlock(w, db, i, &f.Blocks[i]); err != nil {
			return err
		}
	}
	return checkEnd(w, f)
}

// importBlock imports the test's block i and checks the outcome.
func importBlock(w *chain.Writer, db *store.DB, i int, b *FixtureBlock) error {
	before := w.Head().Hash()
	raw, decErr := hexutil.Decode(b.RLP)
	var importErr error
	if decErr == nil {
		_, importErr = w.ImportRLP(bytes.NewReader(raw), 0, nil)
	}
	if !b.Invalid() {
		if decErr != nil {
			return fmt.Errorf("block %d: rlp: %v", i, decErr)
		}
		if importErr != nil {
			return fmt.Errorf("block %d refused: %w", i, importErr)
		}
		if got := w.Head().Hash(); got != b.BlockHeader.Hash {
			return fmt.Errorf("block %d imported but the head is %s, want %s", i, got.Hex(), b.BlockHeader.Hash.Hex())
		}
		// The block's header root (the test's) is the root of the state
		// its import produced: checked after every block, so that a
		// difference a later block hides is still found.
		hs, err := openHeadState(w)
		if err != nil {
			return err
		}
		defer hs.close()
		if want := hs.head.Header().Root; hs.root != want {
			return fmt.Errorf("block %d (number %d): state root of the flat state %s, header says %s", i, hs.head.Number(), hs.root.Hex(), want.Hex())
		}
		return nil
	}
	if decErr != nil || importErr != nil {
		// Refused: nothing of it may have been written.
		if got := w.Head().Hash(); got != before {
			return fmt.Errorf("block %d (expect %s) refused (%v) but the head moved from %s to %s", i, b.ExpectException, importErr, before.Hex(), got.Hex())
		}
		if decErr == nil {
			var blk types.Block
			if rlp.DecodeBytes(raw, &blk) == nil {
				view, err := db.View()
				if err != nil {
					return err
				}
				_, err = view.NumberByHash(blk.Hash())
				view.Close()
				if !errors.Is(err, store.ErrNotFound) {
					return fmt.Errorf("block %d (expect %s) refused (%v) but the store knows its hash (%v)", i, b.ExpectException, importErr, err)
				}
			}
		}
		return nil
	}
	// Accepted although it must be refused: say whether its state root was
	// forged (which only root verification catches) or the block is
	// otherwise wrong.
	err := fmt.Errorf("block %d imported although it must be refused (%s)", i, b.ExpectException)
	hs, herr := openHeadState(w)
	if herr != nil {
		return errors.Join(err, herr)
	}
	defer hs.close()
	if want := hs.head.Header().Root; hs.root != want {
		return fmt.Errorf("%w: %v: header root %s, state root %s", ErrForgedRootAccepted, err, want.Hex(), hs.root.Hex())
	}
	return err
}

// headState is the head of a writer with its state and the state's root.
type headState struct {
	head  *chain.Head
	view  store.View
	state store.StateReader
	root  common.Hash // of the flat state (chain.StateRoot)
}

func openHeadState(w *chain.Writer) (*headState, error) {
	h, view, err := w.OpenHead()
	if err != nil {
		return nil, err
	}
	st, err := view.StateAt(h.Number())
	if err == nil {
		var root common.Hash
		if root, err = chain.StateRoot(st); err == nil {
			return &headState{head: h, view: view, state: st, root: root}, nil
		}
	}
	view.Close()
	return nil, err
}

func (hs *headState) close() { hs.view.Close() }

// checkEnd checks the head, the state root and the post state, reporting
// every failed check.
func checkEnd(w *chain.Writer, f *Fixture) error {
	hs, err := openHeadState(w)
	if err != nil {
		return err
	}
	defer hs.close()
	h, st, root := hs.head, hs.state, hs.root
	var errs []error
	if got := h.Hash(); got != f.LastBlockHash {
		errs = append(errs, fmt.Errorf("head %d %s, lastblockhash %s", h.Number(), got.Hex(), f.LastBlockHash.Hex()))
	}
	if want := h.Header().Root; root != want {
		errs = append(errs, fmt.Errorf("state root of the flat state %s, head %d's header says %s", root.Hex(), h.Number(), want.Hex()))
	}
	if f.PostStateHash != nil && root != *f.PostStateHash {
		errs = append(errs, fmt.Errorf("state root %s, postStateHash %s", root.Hex(), f.PostStateHash.Hex()))
	}
	switch {
	case f.PostState != nil:
		if err := ComparePostState(st, f.PostState); err != nil {
			errs = append(errs, err)
		}
	case f.PostStateHash == nil:
		errs = append(errs, errors.New("the test has neither postState nor postStateHash"))
	}
	return errors.Join(errs...)
}

// ComparePostState compares the flat state st with want exactly: every
// account of want with its balance, nonce, code and every non-zero slot,
// and no other account or non-zero slot. It reports every difference (up
// to a few dozen).
func ComparePostState(st store.StateReader, want types.GenesisAlloc) error {
	var diffs []string
	add := func(format string, args ...any) {
		if len(diffs) < 40 {
			diffs = append(diffs, fmt.Sprintf(format, args...))
		}
	}
	seen := make(map[common.Address]bool, len(want))
	err := st.ForEachAccount(func(addr common.Address, acc *store.Account) error {
		seen[addr] = true
		w, ok := want[addr]
		if !ok {
			add("extra account %s (nonce %d, balance %s)", addr.Hex(), acc.Nonce, acc.Balance.Dec())
			return nil
		}
		wantBal := w.Balance
		if wantBal == nil {
			wantBal = new(big.Int)
		}
		if acc.Balance.ToBig().Cmp(wantBal) != 0 {
			add("%s balance %s, want %s", addr.Hex(), acc.Balance.Dec(), wantBal)
		}
		if acc.Nonce != w.Nonce {
			add("%s nonce %d, want %d", addr.Hex(), acc.Nonce, w.Nonce)
		}
		code, err := st.Code(acc.CodeHash)
		if err != nil {
			return err
		}
		if !bytes.Equal(code, w.Code) {
			add("%s code %x, want %x", addr.Hex(), code, w.Code)
		}
		have := make(map[common.Hash]common.Hash)
		err = st.ForEachStorage(addr, func(slot, value common.Hash) error {
			have[slot] = value
			if value != w.Storage[slot] {
				add("%s slot %s = %s, want %s", addr.Hex(), slot.Hex(), value.Hex(), w.Storage[slot].Hex())
			}
			return nil
		})
		if err != nil {
			return err
		}
		for slot, value := range w.Storage {
			if _, ok := have[slot]; !ok && value != (common.Hash{}) {
				add("%s slot %s missing, want %s", addr.Hex(), slot.Hex(), value.Hex())
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for addr := range want {
		if !seen[addr] {
			add("account %s missing", addr.Hex())
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	slices.Sort(diffs)
	return fmt.Errorf("post state differs:\n  %s", joinLines(diffs))
}

func joinLines(s []string) string {
	var b bytes.Buffer
	for i, l := range s {
		if i > 0 {
			b.WriteString("\n  ")
		}
		b.WriteString(l)
	}
	return b.String()
}
