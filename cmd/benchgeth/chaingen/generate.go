package chaingen

import (
	"bufio"
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus/beacon"
	"github.com/ethereum/go-ethereum/consensus/ethash"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethdb/pebble"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/ethereum/go-ethereum/triedb"
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

// generateBlocks commits the genesis into a temporary go-ethereum database
// under dir (Pebble, hash-scheme tries, so every block's state stays
// readable) and runs go-ethereum's chain maker over the plan on it. The
// genesis alloc is dropped once committed. The database is removed on
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
	tdb := triedb.NewDatabase(db, triedb.HashDefaults)
	parent, err := genesis.Commit(db, tdb, nil)
	if cerr := tdb.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("commit genesis: %w", err)
	}
	genesis.Alloc = nil
	debug.FreeOSMemory()
	log.Info().Str("root", parent.Root().Hex()).Str("elapsed", since(start)).Msg("genesis committed")

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
