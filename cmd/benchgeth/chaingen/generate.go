package chaingen

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus/beacon"
	"github.com/ethereum/go-ethereum/consensus/ethash"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/ethdb/pebble"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/ethereum/go-ethereum/triedb"
	"github.com/holiman/uint256"
	"github.com/rs/zerolog"
)

// File names inside an output directory.
const (
	GenesisFile  = "genesis.json"
	ChainFile    = "chain.rlp"
	ManifestFile = "manifest.json"
)

// Manifest describes a generated chain. It is written last, so a directory
// with a manifest matching its Config holds complete files.
type Manifest struct {
	Config      Config      `json:"config"`
	GenesisHash common.Hash `json:"genesisHash"`
	Head        uint64      `json:"head"`
	HeadHash    common.Hash `json:"headHash"`
	Txs         int         `json:"txs"`
	Gas         uint64      `json:"gas"`
	// GenesisSlots counts every storage slot in the genesis alloc
	// (balances, totalSupply and the system contracts' none).
	GenesisSlots int `json:"genesisSlots"`
	NewHolders   int `json:"newHolders"`
}

// Generate writes the genesis, the chain and the manifest of c into dir
// (created if missing).
func Generate(c Config, dir string, log zerolog.Logger) (*Manifest, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	start := time.Now()
	genesis := buildGenesis(c, log)
	slots := 0
	for _, a := range genesis.Alloc {
		slots += len(a.Storage)
	}
	log.Info().Int("slots", slots).Str("elapsed", since(start)).Msg("genesis built")
	if err := writeFile(filepath.Join(dir, GenesisFile), func(w io.Writer) error {
		return WriteGenesisJSON(w, genesis, log)
	}); err != nil {
		return nil, err
	}
	log.Info().Int("slots", slots).Str("elapsed", since(start)).Msg("genesis written")

	blocks, err := generateBlocks(c, genesis, dir, log)
	if err != nil {
		return nil, err
	}
	m := &Manifest{Config: c, GenesisSlots: slots, GenesisHash: blocks[0].ParentHash(), NewHolders: len(NewHolders(c))}
	if err := writeFile(filepath.Join(dir, ChainFile), func(w io.Writer) error {
		for _, b := range blocks {
			m.Txs += len(b.Transactions())
			m.Gas += b.GasUsed()
			if err := rlp.Encode(w, b); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	head := blocks[len(blocks)-1]
	m.Head, m.HeadHash = head.NumberU64(), head.Hash()
	if err := WriteManifest(dir, m); err != nil {
		return nil, err
	}
	log.Info().Uint64("head", m.Head).Int("txs", m.Txs).Uint64("gas", m.Gas).Str("elapsed", time.Since(start).Round(time.Millisecond).String()).Msg("chain written")
	return m, nil
}

// generateBlocks commits the genesis state into a temporary go-ethereum
// database under dir (Pebble, hash-scheme tries, so every block's state
// stays readable; see commitGenesis) and runs go-ethereum's chain maker
// over the plan on it. The genesis alloc is dropped once committed. The database is removed on
// return. A planned transaction that fails makes the chain maker panic;
// that is turned into an error.
func generateBlocks(c Config, genesis *core.Genesis, dir string, log zerolog.Logger) (blocks []*types.Block, err error) {
	tmp, err := os.MkdirTemp(dir, "chaindb.tmp*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	kv, err := pebble.New(tmp, 512, 256, "", false)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", tmp, err)
	}
	db := rawdb.NewDatabase(kv)
	defer db.Close()
	start := time.Now()
	log.Info().Str("db", tmp).Msg("committing genesis state")
	parent, err := commitGenesis(genesis, db, genesisChunk, log)
	if err != nil {
		return nil, fmt.Errorf("commit genesis: %w", err)
	}
	genesis.Alloc = nil
	debug.FreeOSMemory()
	log.Info().Str("root", parent.Root().Hex()).Str("hash", parent.Hash().Hex()).Str("elapsed", since(start)).Msg("genesis committed")

	type sender struct {
		key  *ecdsa.PrivateKey
		addr common.Address
	}
	keys := make([]sender, c.Senders)
	for i := range keys {
		k := SenderKey(i)
		keys[i] = sender{k, crypto.PubkeyToAddress(k.PublicKey)}
	}
	gasTip := big.NewInt(params.GWei)
	gasCap := big.NewInt(100 * params.GWei)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("chain maker: %v", r)
		}
	}()
	start, last := time.Now(), time.Now()
	blocks, _ = core.GenerateChain(genesis.Config, parent, beacon.New(ethash.NewFaker()), db, c.Blocks, func(i int, b *BlockGen) {
		b.SetCoinbase(Coinbase)
		n := i + 1
		signer := b.Signer()
		for j := 0; j < c.TxsPerBlock; j++ {
			p := Plan(c, n, j)
			k := keys[p.Sender]
			tx := &types.DynamicFeeTx{
				ChainID:   big.NewInt(ChainID),
				Nonce:     b.TxNonce(k.addr),
				GasTipCap: gasTip,
				GasFeeCap: gasCap,
			}
			if p.Kind == EtherToNew {
				to := p.To
				tx.To, tx.Gas, tx.Value = &to, 21_000, p.Amount
			} else {
				to := TokenAddress(p.Token)
				tx.To, tx.Gas, tx.Value, tx.Data = &to, 100_000, new(big.Int), TransferData(p.To, p.Amount)
			}
			signed, err := types.SignNewTx(k.key, signer, tx)
			if err != nil {
				panic(err)
			}
			b.AddTx(signed)
		}
		if time.Since(last) > 5*time.Second {
			last = time.Now()
			log.Info().Int("block", n).Int("of", c.Blocks).Str("elapsed", since(start)).Msg("generating blocks")
		}
	})
	log.Info().Int("blocks", len(blocks)).Str("elapsed", since(start)).Msg("blocks generated")
	return blocks, nil
}

// BlockGen is go-ethereum's block generator (named here for the callback).
type BlockGen = core.BlockGen

// ReadManifest reads dir's manifest and checks it was written for c.
func ReadManifest(dir string, c Config) (*Manifest, error) {
	data, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrManifest, err)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrManifest, dir, err)
	}
	got, want := m.Config, c
	got.Requests, got.Seed, want.Requests, want.Seed = 0, 0, 0, 0
	if got != want {
		return nil, fmt.Errorf("%w: %s was generated for %+v, not %+v", ErrManifest, dir, m.Config, c)
	}
	return &m, nil
}

// WriteManifest writes m into dir.
func WriteManifest(dir string, m *Manifest) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, ManifestFile), func(w io.Writer) error {
		_, err := w.Write(append(data, '\n'))
		return err
	})
}

// writeFile writes path through a temporary file renamed into place, so a
// file is either complete or absent.
func writeFile(path string, fill func(io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	w := bufio.NewWriterSize(f, 1<<20)
	if err = fill(w); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = w.Flush(); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// genesisChunk is how many storage slots commitGenesis sets between two
// commits of the genesis state.
const genesisChunk = 1 << 20

// commitGenesis writes the state of g into db and returns the genesis
// block. It makes the statedb calls core.Genesis.Commit makes (with the
// same empty rules, so the state root is the same), but commits the state
// every chunk slots and reopens it at the new root: Genesis.Commit builds
// the whole trie, its node set and the hash database's dirty nodes at once,
// which for 10M slots went past 20 GB. An account's slots are set in the
// order of their trie keys (keccak256 of the slot), so a chunk fills one
// range of the storage trie and the next one reopens only its right edge
// (in map order every chunk would rewrite most of the trie again). It also
// skips the alloc JSON that Commit stores as the genesis spec (a second
// 1.4 GB encoding the chain maker does not read). Each token's storage map
// is dropped from the alloc once set. The block is go-ethereum's own
// (Genesis.ToBlock of the alloc-less genesis) with the committed root: the
// root is the only header field the alloc decides.
func commitGenesis(g *core.Genesis, db ethdb.Database, chunk int, log zerolog.Logger) (block *types.Block, err error) {
	tdb := triedb.NewDatabase(db, triedb.HashDefaults)
	defer func() {
		if cerr := tdb.Close(); err == nil && cerr != nil {
			block, err = nil, cerr
		}
	}()
	sdb := state.NewDatabase(tdb, nil)
	root := types.EmptyRootHash
	statedb, err := state.New(root, sdb)
	if err != nil {
		return nil, err
	}
	addrs, total := sortedAlloc(g.Alloc)
	for _, a := range addrs {
		acct := g.Alloc[a]
		if acct.Balance != nil {
			statedb.AddBalance(a, uint256.MustFromBig(acct.Balance), tracing.BalanceIncreaseGenesisBalance)
		}
		statedb.SetCode(a, acct.Code, tracing.CodeChangeGenesis)
		statedb.SetNonce(a, acct.Nonce, tracing.NonceChangeGenesis)
	}
	start := time.Now()
	commit := func() error {
		r, err := statedb.Commit(params.Rules{}, 0)
		if err != nil {
			return err
		}
		if err := tdb.Commit(r, false); err != nil {
			return err
		}
		root = r
		statedb, err = state.New(root, sdb)
		return err
	}
	type slot struct{ hashed, key common.Hash }
	done, pending := 0, 0
	for _, a := range addrs {
		acct := g.Alloc[a]
		slots := make([]slot, 0, len(acct.Storage))
		for k := range acct.Storage {
			slots = append(slots, slot{crypto.Keccak256Hash(k[:]), k})
		}
		slices.SortFunc(slots, func(x, y slot) int { return bytes.Compare(x.hashed[:], y.hashed[:]) })
		for _, s := range slots {
			statedb.SetState(a, s.key, acct.Storage[s.key])
			if pending++; pending == chunk {
				if err := commit(); err != nil {
					return nil, err
				}
				done, pending = done+pending, 0
				log.Info().Int("slots", done).Int("of", total).Str("elapsed", since(start)).Msg("committing genesis state")
			}
		}
		acct.Storage = nil
		g.Alloc[a] = acct
	}
	if err := commit(); err != nil {
		return nil, err
	}
	light := *g
	light.Alloc = nil
	b := light.ToBlock()
	h := b.Header()
	h.Root = root
	return b.WithSeal(h), nil
}
