package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/follow"
	"github.com/tipnode/tipnode/chain/op/preset"
	"github.com/tipnode/tipnode/migrations"
	"github.com/tipnode/tipnode/store"
)

// StoreFlags are the store settings shared by every command.
type StoreFlags struct {
	DataDir    string
	CacheMiB   int
	StateMiB   int
	MinFreeMiB uint64
	ReadOnly   bool // run --readonly
	// NoTrie: --verify.stateroot=off (no state trie kept, nothing
	// verified); TrieWindow is --trie.window (TrieWindowSet: given on
	// the command line, else the command's default); TrieMiB --cache.trie.
	NoTrie        bool
	TrieWindow    uint64
	TrieWindowSet bool
	TrieMiB       int
}

// followerTrieWindow is --trie.window's default on a node that follows or
// imports an L1 chain (about 33 hours of 12 s blocks): its proofs serve
// recent heights, and each block's node versions cost disk. Sealed chains
// and OP chains keep store.DefaultTrieWindow (OP's 7-day withdrawal-proof
// window of 2 s blocks).
const followerTrieWindow = 10_000

// register adds --datadir (described by datadirUsage), --cache and
// --cache.state.
func (f *StoreFlags) register(fs *flag.FlagSet, datadirUsage string) {
	def := store.DefaultConfig("")
	fs.StringVar(&f.DataDir, "datadir", "", datadirUsage)
	fs.IntVar(&f.CacheMiB, "cache", int(def.CacheBytes>>20), "Pebble block cache size in MiB")
	fs.IntVar(&f.StateMiB, "cache.state", int(def.StateCacheBytes>>20),
		"in-memory cache of hot state (accounts, storage slots, code) in front of the store, in MiB (0 = off)")
	fs.Uint64Var(&f.MinFreeMiB, "datadir.minfreedisk", def.MinFreeBytes>>20,
		"minimum free disk space in MiB: below it store writes (sealing, importing) stop cleanly and reads go on (0 = no guard)")
	fs.Func("verify.stateroot", "full: keep the Merkle state trie beside the flat state, verify the state root (and the OP withdrawals root) of every imported and followed block, put the real roots in sealed blocks, serve eth_getProof; off: none of it, imports are faster (default full)", func(s string) error {
		switch s {
		case "full":
			f.NoTrie = false
		case "off":
			f.NoTrie = true
		default:
			return fmt.Errorf("want full or off, not %q", s)
		}
		return nil
	})
	f.TrieWindow = def.TrieWindow
	fs.Func("trie.window", fmt.Sprintf("blocks below the latest whose state trie stays readable (eth_getProof there, unwinds that deep without a rebuild); older node versions are pruned; 0 = keep all (default %d on sealed and OP chains, %d when following or importing an L1 chain)", def.TrieWindow, followerTrieWindow), func(s string) error {
		w, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return fmt.Errorf("want a block count: %v", err)
		}
		f.TrieWindow, f.TrieWindowSet = w, true
		return nil
	})
	fs.IntVar(&f.TrieMiB, "cache.trie", int(def.TrieCacheBytes>>20), "in-memory cache of state trie nodes (by hash) in front of the store, in MiB (0 = off)")
}

// followerWindow applies --trie.window's follower default to db when it
// was not given: on a node following or importing an L1 chain.
func (f *StoreFlags) followerWindow(db *store.DB, g *chain.Genesis) {
	if !f.TrieWindowSet && g.OP == nil {
		db.SetTrieWindow(followerTrieWindow)
	}
}

// datadirRequired is the --datadir usage of the commands that need one.
const datadirRequired = "data directory (required)"

func (f *StoreFlags) config() store.Config {
	cfg := store.DefaultConfig(f.DataDir)
	cfg.CacheBytes = int64(f.CacheMiB) << 20
	cfg.StateCacheBytes = int64(f.StateMiB) << 20
	cfg.MinFreeBytes = f.MinFreeMiB << 20
	cfg.ReadOnly = f.ReadOnly
	cfg.NoTrie = f.NoTrie
	cfg.TrieWindow = f.TrieWindow
	cfg.TrieCacheBytes = int64(f.TrieMiB) << 20
	return cfg
}

// errNotInitialised is the answer of run and import on a data directory
// without a store (nothing is created there).
func errNotInitialised(dir string) error {
	return fmt.Errorf("the data directory %s is not initialised: run 'tipnode init --datadir %s --genesis FILE' first", dir, dir)
}

// readOnlyConfig is f's store configuration for a command that only
// reads an existing store (export, verify, init --chain's check).
func (f *StoreFlags) readOnlyConfig() store.Config {
	cfg := f.config()
	cfg.ReadOnly, cfg.MustExist = true, true
	return cfg
}

// openReadView opens the existing store of f read-only (openStore) and a
// view of it; closeAll closes the view, then the store.
func openReadView(f *StoreFlags, log zerolog.Logger) (db *store.DB, view store.View, closeAll func(), err error) {
	if db, err = openStore(f.readOnlyConfig(), log); err != nil {
		return nil, nil, nil, err
	}
	if view, err = db.View(); err != nil {
		db.Close()
		return nil, nil, nil, err
	}
	return db, view, func() { view.Close(); db.Close() }, nil
}

// blockOrLatest is the block a --flag value names: a number, or latest
// (the view's latest tag, read in either case).
func blockOrLatest(view store.View, flag, value string) (uint64, error) {
	n, err := view.Tag(store.TagLatest)
	if err != nil {
		return 0, err
	}
	if value != "latest" {
		if n, err = strconv.ParseUint(value, 10, 64); err != nil {
			return 0, fmt.Errorf("--%s %q: %v", flag, value, err)
		}
	}
	return n, nil
}

// openStore opens (and migrates) the store of a data directory.
func openStore(cfg store.Config, log zerolog.Logger) (*store.DB, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkNotHalfInitialised(cfg.Dir); err != nil {
		return nil, err
	}
	db, err := store.Open(cfg, log)
	switch {
	case errors.Is(err, store.ErrLocked):
		return nil, fmt.Errorf("another tipnode holds the data directory %s: stop it, or pass another --datadir", cfg.Dir)
	case errors.Is(err, store.ErrNoStore):
		return nil, errNotInitialised(cfg.Dir)
	case err != nil:
		return nil, err
	}
	if err := migrations.Run(db, log); err != nil { // Run names its component
		db.Close()
		return nil, err
	}
	if err := ensureTrie(db, cfg, log); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// ensureTrie builds the state trie of a store that keeps one but holds
// none (written with --verify.stateroot=off, or whose build was
// interrupted), with progress in the log, before anything is served.
func ensureTrie(db *store.DB, cfg store.Config, log zerolog.Logger) error {
	if cfg.ReadOnly || !db.KeepsTrie() {
		return nil
	}
	if _, ok := db.TrieBase(); ok {
		return nil
	}
	if _, err := db.Latest(); errors.Is(err, store.ErrNotFound) {
		return nil // not initialised yet
	}
	log.Info().Msg("the store holds no state trie: building it from the flat state (--verify.stateroot=off skips this)")
	_, err := db.BuildTrie(nil)
	return err
}

// loadChain reads the chain (config and block 0) stored at init time,
// without parsing the genesis alloc (dir names the data directory in the
// error when there is none).
func loadChain(db *store.DB, dir string) (*chain.Genesis, error) {
	view, err := db.View()
	if err != nil {
		return nil, err
	}
	defer view.Close()
	g, err := chain.LoadGenesis(view)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errNotInitialised(dir)
	}
	return g, err
}

func runInit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		sf          StoreFlags
		lc          LogConfig
		genesis     string
		genesisFrom string
		st          StateInitFlags
		snapFrom    string
		chainName   string
	)
	sf.register(fs, datadirRequired)
	lc.register(fs)
	fs.StringVar(&st.Dump, "state", "", "initialise at a recent block from this state dump (geth dump [--iterative] or reth init-state JSONL) instead of at genesis; needs --state.block and --state.from or --state.headers")
	fs.Func("state.block", "the block number N the --state dump is the state of", func(s string) error {
		n, err := strconv.ParseUint(s, 0, 64)
		st.Block, st.set = n, err == nil
		return err
	})
	fs.StringVar(&st.From, "state.from", "", "upstream JSON-RPC URL giving header N, the 256 headers before it, block N and its receipts (for --state)")
	fs.StringVar(&snapFrom, "snapshot-from", "", "join a tipnode network: initialise from the snapshot stream of a node running with --snapshot.serve at this JSON-RPC URL (instead of --genesis)")
	fs.StringVar(&st.Headers, "state.headers", "", "RLP file of blocks or headers ending at N (as geth export writes), instead of --state.from")
	fs.StringVar(&genesis, "genesis", "", "genesis JSON file in go-ethereum's format (streamed: any size in bounded memory)")
	fs.StringVar(&genesisFrom, "genesis-from", "", "fetch the genesis from a tipnode upstream at this JSON-RPC URL (tipnode_genesis)")
	fs.StringVar(&chainName, "chain", "", "OP Stack chain preset ("+strings.Join(preset.Names(), ", ")+
		"): its chain config, fork times and genesis hash; with --genesis FILE (checked against the preset), --state (no genesis file needed) or --snapshot-from")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := lc.Validate(); err != nil {
		return err
	}
	var pre *preset.Preset
	if chainName != "" {
		var err error
		if pre, err = lookupPreset(chainName, sf); err != nil {
			return err
		}
	}
	if snapFrom != "" {
		if genesis != "" || genesisFrom != "" || st.Dump != "" || sf.DataDir == "" {
			return errors.New("--snapshot-from needs --datadir and excludes --genesis, --genesis-from and --state")
		}
		if pre != nil {
			if err := checkUpstreamChain(ctx, pre, "--snapshot-from", snapFrom); err != nil {
				return err
			}
		}
		return initFromSnapshot(ctx, sf, snapFrom, lc.logger(stderr))
	}
	switch {
	case sf.DataDir == "":
		return errors.New("--datadir is required")
	case pre != nil && genesisFrom != "":
		return fmt.Errorf("--chain %s excludes --genesis-from: the preset gives the chain (add --genesis FILE, --state or --snapshot-from)", pre.Name)
	case pre != nil && st.Dump == "" && (genesis == "" || !pre.StartsAtGenesis()):
		return errPresetNeedsSource(pre)
	case pre == nil && (genesis == "") == (genesisFrom == ""):
		return errors.New("--datadir and one of --genesis, --genesis-from or --chain are required")
	}
	if err := st.Validate(); err != nil {
		return err
	}
	log := lc.logger(stderr)
	var (
		g   *chain.Genesis
		err error
	)
	if st.Dump != "" {
		if err := checkNotHalfInitialised(sf.DataDir); err != nil {
			return err
		}
		// The state comes from the dump: only the genesis' config is read
		// (the preset's when --chain is given without --genesis).
		if pre != nil && genesis == "" {
			g, err = pre.Genesis()
		} else {
			g, err = readGenesis(ctx, genesisFrom, genesis, chain.ParseGenesisConfig)
		}
		if err != nil {
			return err
		}
		if pre != nil {
			if err := pre.CheckConfig(g.RawConfig()); err != nil {
				return fmt.Errorf("%s: %w", genesis, err)
			}
		}
		return initFromState(ctx, sf, st, g, pre, log)
	}
	if genesis != "" {
		return initFromGenesisFile(ctx, sf, genesis, pre, log)
	}
	if g, err = readGenesis(ctx, genesisFrom, genesis, chain.ParseGenesis); err != nil {
		return err
	}
	db, err := openStore(sf.config(), log)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := chain.InitGenesis(db, g); err != nil {
		return err
	}
	log.Info().Str("datadir", sf.DataDir).Str("genesis", g.Block.Hash().Hex()).Uint64("chainId", g.Config.ChainID.Uint64()).Msg("initialised")
	return nil
}

func runImport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		sf        StoreFlags
		lc        LogConfig
		prof      ProfileConfig
		gcPercent int
	)
	sf.register(fs, datadirRequired)
	lc.register(fs)
	prof.register(fs)
	fs.IntVar(&gcPercent, "memory.gcpercent", importGCPercent, "Go garbage collector target: the heap may grow this % over the live data before a collection (debug.SetGCPercent; Go's default is 100; 0 = leave GOGC as the environment sets it). Higher spends less of the import's CPU on collections and more memory")
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := lc.Validate(); err != nil {
		return err
	}
	if err := prof.Validate(); err != nil {
		return err
	}
	restoreGC, err := setGCPercent(gcPercent)
	if err != nil {
		return err
	}
	defer restoreGC()
	if sf.DataDir == "" || len(files) == 0 {
		return errors.New("usage: tipnode import --datadir DIR FILE.rlp...") //lint:ignore ST1005 a usage line, as the help prints it
	}
	log := lc.logger(stderr)
	ps := newProfileServer(prof, log)
	if err := ps.Start(); err != nil {
		return err
	}
	defer ps.Stop()
	cfg := sf.config()
	// Bulk import: batches are atomic through the WAL; one fsync at the
	// end. L0 is compacted late (store.Config.BulkImport).
	cfg.SyncWrites = false
	cfg.BulkImport = true
	cfg.MustExist = true // import needs an initialised store; create nothing
	db, err := openStore(cfg, log)
	if err != nil {
		return err
	}
	defer db.Close()
	g, err := loadChain(db, sf.DataDir)
	if err != nil {
		return err
	}
	sf.followerWindow(db, g)
	// No reads to yield to while importing: the write sections keep the
	// process's priority (SectionNice 0).
	w, err := chain.NewWriter(db, g.Executor(), chain.WriterConfig{}, log)
	if err != nil {
		return err
	}
	w.Start()
	defer w.Stop()
	var total chain.ImportStats
	start := time.Now()
	for _, file := range files {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		stats, err := w.ImportRLP(ctxReader{ctx, f}, 5*time.Second, func(s chain.ImportStats) {
			secs := s.Duration.Seconds()
			log.Info().Str("file", file).Int("blocks", s.Blocks).Uint64("block", s.Head.Number.Uint64()).
				Float64("blocks/s", float64(s.Blocks)/secs).Float64("Mgas/s", float64(s.Gas)/1e6/secs).Msg("importing")
		})
		f.Close()
		total.Blocks += stats.Blocks
		total.Skipped += stats.Skipped
		total.Txs += stats.Txs
		total.Gas += stats.Gas
		if stats.Head != nil {
			total.Head = stats.Head
		}
		if err != nil {
			if syncErr := db.Sync(); syncErr != nil {
				log.Error().Err(syncErr).Msg("sync after failed import")
			}
			return fmt.Errorf("%s: %w", file, err)
		}
	}
	if err := db.Sync(); err != nil {
		return err
	}
	// The memtables out to sstables (counted in the import's time): else
	// the next open replays up to half a memtable of write-ahead log.
	if err := db.Flush(); err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	ev := log.Info().Int("blocks", total.Blocks).Int("skipped", total.Skipped).Int("txs", total.Txs).
		Str("elapsed", time.Since(start).Round(time.Millisecond).String()).
		Float64("blocks/s", float64(total.Blocks)/secs).Float64("Mgas/s", float64(total.Gas)/1e6/secs)
	if total.Head != nil {
		ev = ev.Uint64("head", total.Head.Number.Uint64()).Str("hash", total.Head.Hash().Hex())
	}
	ev.Msg("import done")
	return nil
}

// ctxReader stops a long import at a signal between reads.
type ctxReader struct {
	ctx context.Context
	f   *os.File
}

func (r ctxReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, fmt.Errorf("import interrupted: %w", err)
	}
	return r.f.Read(p)
}

// readGenesis is the genesis of --genesis-from (fetched from an upstream
// tipnode) or else of the --genesis file, read with parse.
func readGenesis(ctx context.Context, genesisFrom, file string, parse func([]byte) (*chain.Genesis, error)) (*chain.Genesis, error) {
	if genesisFrom != "" {
		g, err := follow.FetchGenesis(ctx, genesisFrom, 30*time.Second)
		if err != nil {
			return nil, fmt.Errorf("--genesis-from %s: %w", genesisFrom, err)
		}
		return g, nil
	}
	spec, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	g, err := parse(spec)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return g, nil
}
