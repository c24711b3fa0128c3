package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/follow"
	"github.com/tipnode/tipnode/chain/genesisinit"
	"github.com/tipnode/tipnode/chain/op/preset"
	"github.com/tipnode/tipnode/chain/statedump"
	"github.com/tipnode/tipnode/chain/statesync"
	"github.com/tipnode/tipnode/store"
)

// initMarker is the directory (inside the data directory) that `init
// --state`, `init --genesis FILE` and `init --snapshot-from` work in: their
// sort files and sstables. It exists from the start of the import until
// the store is complete, so a data directory holding it was left by an
// interrupted init and is refused by every command.
const initMarker = "init-state.tmp"

// errHalfInitialised is the refusal of a data directory an interrupted
// init left behind.
func errHalfInitialised(dir string) error {
	return fmt.Errorf("the data directory %s holds an interrupted 'tipnode init' (%s): delete the directory %s and run init again",
		dir, filepath.Join(dir, initMarker), dir)
}

// checkNotHalfInitialised refuses a data directory with the init marker.
func checkNotHalfInitialised(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, initMarker)); err == nil {
		return errHalfInitialised(dir)
	}
	return nil
}

// openImportStore opens the store of sf for an init (bulk writes: no sync
// per write; the init syncs or ingests at its end).
func openImportStore(sf StoreFlags, log zerolog.Logger) (*store.DB, error) {
	cfg := sf.config()
	cfg.SyncWrites = false
	return openStore(cfg, log)
}

// makeInitMarker creates the init marker in the data directory dir: the
// directory the init works in (see initMarker). It returns its path.
func makeInitMarker(dir string) (string, error) {
	tmp := filepath.Join(dir, initMarker)
	return tmp, os.MkdirAll(tmp, 0o755)
}

// StateInitFlags are the flags of `init --state`.
type StateInitFlags struct {
	Dump    string // --state
	Block   uint64 // --state.block
	From    string // --state.from
	Headers string // --state.headers
	set     bool   // --state.block given
}

// Validate checks the combination.
func (f StateInitFlags) Validate() error {
	switch {
	case f.Dump == "" && (f.set || f.From != "" || f.Headers != ""):
		return errors.New("--state.block, --state.from and --state.headers need --state DUMP.jsonl")
	case f.Dump == "":
		return nil
	case !f.set:
		return errors.New("--state needs --state.block N: the block the dump is the state of")
	case (f.From == "") == (f.Headers == ""):
		return errors.New("--state needs one of --state.from URL (an upstream JSON-RPC node) or --state.headers FILE (RLP blocks or headers ending at --state.block)")
	}
	return nil
}

// importMemoryLimit is the Go runtime's soft memory limit during an
// import (init --state, --snapshot-from): the sorts hold about 256 MiB,
// and without a limit the heap's GC slack grows with the dump (peak RSS
// 403 MB for 3M slots, 313 MB with the limit, and less CPU).
const importMemoryLimit = 320 << 20

// limitImportMemory lowers the runtime's memory limit to importMemoryLimit
// (a lower one set by GOMEMLIMIT stays).
func limitImportMemory() {
	if debug.SetMemoryLimit(-1) > importMemoryLimit {
		debug.SetMemoryLimit(importMemoryLimit)
	}
}

// initFromState initialises the store of sf at block f.Block from the
// state dump f.Dump (see README "Starting from a recent block"): all or
// nothing, the dump verified against the anchor header's state root.
func initFromState(ctx context.Context, sf StoreFlags, f StateInitFlags, g *chain.Genesis, pre *preset.Preset, log zerolog.Logger) error {
	start := time.Now()
	limitImportMemory()
	n := f.Block
	anchor := &store.AnchorWrite{Spec: g.Spec}
	config, err := g.StoredConfig()
	if err != nil {
		return err
	}
	anchor.Config = config
	if g.Block != nil {
		anchor.Genesis = g.Block.Header()
	}
	if f.From != "" {
		a, err := follow.FetchAnchor(ctx, f.From, n, 30*time.Second)
		if err != nil {
			return fmt.Errorf("--state.from %s: %w", f.From, err)
		}
		if a.ChainID.Cmp(g.Config.ChainID) != 0 {
			return fmt.Errorf("--state.from %s: the upstream's chain id is %s, the genesis says %s", f.From, a.ChainID, g.Config.ChainID)
		}
		if anchor.Genesis != nil && anchor.Genesis.Hash() != a.Genesis.Hash() {
			return fmt.Errorf("--state.from %s: the upstream's block 0 is %s, the genesis gives %s", f.From, a.Genesis.Hash().Hex(), anchor.Genesis.Hash().Hex())
		}
		if pre != nil {
			if err := pre.CheckGenesisHash("--state.from "+f.From, a.Genesis.Hash()); err != nil {
				return err
			}
		}
		anchor.Genesis, anchor.Headers, anchor.Body, anchor.Receipts = a.Genesis, a.Headers, a.Body, a.Receipts
		if a.NoHistory != "" {
			log.Warn().Str("why", a.NoHistory).Uint64("block", n).Msg("block of the anchor not kept: history starts at the next block")
		}
	} else {
		file, err := os.Open(f.Headers)
		if err != nil {
			return err
		}
		hs, err := statedump.ReadHeaders(file, n, follow.AnchorHeaders)
		file.Close()
		if err != nil {
			return fmt.Errorf("--state.headers %s: %w", f.Headers, err)
		}
		anchor.Headers = hs.Headers
		if hs.Genesis != nil {
			if anchor.Genesis != nil && anchor.Genesis.Hash() != hs.Genesis.Hash() {
				return fmt.Errorf("--state.headers %s: block 0 is %s, the genesis gives %s", f.Headers, hs.Genesis.Hash().Hex(), anchor.Genesis.Hash().Hex())
			}
			anchor.Genesis = hs.Genesis
		}
		if anchor.Genesis == nil && g.Core == nil && pre != nil {
			return fmt.Errorf("--state.headers %s does not start at block 0 and --chain %s holds no genesis state: "+
				"give --genesis FILE too, or --state.from URL instead", f.Headers, pre.Name)
		}
		if anchor.Genesis == nil {
			// Block 0 from the spec: its alloc is built once to hash it.
			full, err := chain.ParseGenesis(g.Spec)
			if err != nil {
				return err
			}
			anchor.Genesis = full.Block.Header()
		}
		if pre != nil {
			if err := pre.CheckGenesisHash("--state.headers "+f.Headers, anchor.Genesis.Hash()); err != nil {
				return err
			}
		}
		if len(hs.Headers) > 0 && hs.Headers[0].Number.Uint64() == 1 && hs.Headers[0].ParentHash != anchor.Genesis.Hash() {
			return fmt.Errorf("--state.headers %s: block 1's parent is %s, the genesis is %s", f.Headers, hs.Headers[0].ParentHash.Hex(), anchor.Genesis.Hash().Hex())
		}
		// A file of blocks holds the anchor's body but no receipts: its
		// history starts at the next block.
	}
	top := anchor.Headers[len(anchor.Headers)-1]
	log.Info().Uint64("block", n).Str("hash", top.Hash().Hex()).Str("stateRoot", top.Root.Hex()).
		Int("headers", len(anchor.Headers)).Msg("anchor header")

	dump, err := os.Open(f.Dump)
	if err != nil {
		return err
	}
	defer dump.Close()
	db, err := openImportStore(sf, log)
	if err != nil {
		return err
	}
	defer db.Close()
	tmp, err := makeInitMarker(sf.DataDir)
	if err != nil {
		return err
	}
	si, err := db.NewStateImport(tmp, n, 128<<20)
	if errors.Is(err, store.ErrNotEmpty) {
		os.RemoveAll(tmp)
		return fmt.Errorf("the data directory %s is already initialised: init --state needs a new one", sf.DataDir)
	}
	if err != nil {
		os.RemoveAll(tmp)
		return err
	}
	// From here a failure removes the marker (nothing was ingested: the
	// store is as empty as before); a crash leaves it.
	cleanup := func() error { return errors.Join(si.Close(), os.RemoveAll(tmp)) }
	progress := func(phase string, n int64) {
		log.Info().Str("phase", phase).Int64("entries", n).Str("elapsed", time.Since(start).Round(time.Second).String()).Msg("state dump")
	}
	res, err := statedump.Load(ctx, dump, si, statedump.Config{TempDir: tmp, Expected: top.Root, Progress: progress})
	if err != nil {
		cleanup()
		return fmt.Errorf("--state %s: %w", f.Dump, err)
	}
	parsed := time.Since(start)
	log.Info().Str("stateRoot", res.Root.Hex()).Int64("accounts", res.Accounts).Int64("slots", res.Slots).
		Msg("state root verified; writing the store")
	stats, err := si.Commit(ctx, anchor)
	if err != nil {
		cleanup()
		return err
	}
	if err := cleanup(); err != nil {
		log.Warn().Err(err).Msg("remove the import's temporary files")
	}
	secs := time.Since(start).Seconds()
	entries := stats.Accounts + stats.Slots + stats.Codes
	log.Info().Str("datadir", sf.DataDir).Uint64("anchor", n).Str("hash", top.Hash().Hex()).
		Str("format", res.Format).Str("stateRoot", res.Root.Hex()).
		Int64("accounts", stats.Accounts).Int64("slots", stats.Slots).Int64("codes", stats.Codes).
		Int("tables", stats.Tables).Int64("bytes", stats.Bytes).
		Str("verified", parsed.Round(time.Millisecond).String()).
		Str("elapsed", time.Since(start).Round(time.Millisecond).String()).
		Float64("entries/s", float64(entries)/secs).
		Bool("anchorHistory", anchor.Body != nil).
		Msg("initialised from a state dump")
	return nil
}

// initFromSnapshot initialises the store of sf from the snapshot stream of
// the tipnode at url (chain/statesync): all or nothing, as init --state.
func initFromSnapshot(ctx context.Context, sf StoreFlags, url string, log zerolog.Logger) error {
	if err := checkNotHalfInitialised(sf.DataDir); err != nil {
		return err
	}
	start := time.Now()
	limitImportMemory()
	db, err := openImportStore(sf, log)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Latest(); err == nil {
		return fmt.Errorf("the data directory %s is already initialised: --snapshot-from needs a new one", sf.DataDir)
	}
	tmp, err := makeInitMarker(sf.DataDir)
	if err != nil {
		return err
	}
	stats, err := statesync.JoinURL(ctx, url, db, tmp)
	if rerr := os.RemoveAll(tmp); rerr != nil && err == nil {
		log.Warn().Err(rerr).Msg("remove the join's temporary files")
	}
	if err != nil {
		return fmt.Errorf("--snapshot-from %s: %w", url, err)
	}
	secs := time.Since(start).Seconds()
	log.Info().Str("datadir", sf.DataDir).Uint64("anchor", stats.Anchor).Str("hash", stats.Hash.Hex()).
		Bool("stateRootChecked", stats.RootChecked).
		Int64("accounts", stats.Accounts).Int64("slots", stats.Slots).Int64("codes", stats.Codes).
		Str("elapsed", time.Since(start).Round(time.Millisecond).String()).
		Float64("entries/s", float64(stats.Accounts+stats.Slots+stats.Codes)/secs).
		Msg("initialised from a snapshot")
	return nil
}

// initFromGenesisFile initialises the store of sf at genesis from the
// genesis JSON file, streamed (genesisinit.Init): bounded memory
// whatever the alloc's size, all or nothing as init --state.
func initFromGenesisFile(ctx context.Context, sf StoreFlags, file string, pre *preset.Preset, log zerolog.Logger) (err error) {
	if err := checkNotHalfInitialised(sf.DataDir); err != nil {
		return err
	}
	// The chain config is checked before the store is opened (opening
	// one writes its files): a malformed or contradictory config, or one
	// that is not the preset's, leaves the data directory as it was.
	if err := checkGenesisFileConfig(file, pre); err != nil {
		return err
	}
	start := time.Now()
	limitImportMemory()
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	// A refused genesis leaves no data directory behind that was not there
	// before (the store is opened before the streamed spec is read).
	if _, serr := os.Stat(sf.DataDir); errors.Is(serr, os.ErrNotExist) {
		defer func() {
			if err != nil {
				if rerr := os.RemoveAll(sf.DataDir); rerr != nil {
					log.Warn().Err(rerr).Str("datadir", sf.DataDir).Msg("remove the data directory of the refused init")
				}
			}
		}()
	}
	db, err := openImportStore(sf, log)
	if err != nil {
		return err
	}
	defer db.Close()
	tmp, err := makeInitMarker(sf.DataDir)
	if err != nil {
		return err
	}
	// The rate is over the interval since the phase's previous report
	// (or since the start).
	last, lastN, lastPhase := start, int64(0), ""
	progress := func(phase string, n int64) {
		now := time.Now()
		if phase != lastPhase {
			lastN, lastPhase = 0, phase
		}
		log.Info().Str("phase", phase).Int64("entries", n).Str("elapsed", now.Sub(start).Round(time.Second).String()).
			Float64("entries/s", float64(n-lastN)/now.Sub(last).Seconds()).Msg("genesis alloc")
		last, lastN = now, n
	}
	icfg := genesisinit.Config{TempDir: tmp, MemBytes: 128 << 20, Progress: progress}
	if pre != nil {
		// The preset's chain: its config member for member, its genesis
		// hash; checked before anything is written.
		icfg.Check = func(g *chain.Genesis, rawConfig json.RawMessage) error {
			if err := pre.CheckConfig(rawConfig); err != nil {
				return err
			}
			return pre.CheckGenesisHash("the genesis file", g.Block.Hash())
		}
	}
	g, stats, err := genesisinit.Init(ctx, db, f, icfg)
	// Nothing was ingested on an error: the store is as before.
	if rerr := os.RemoveAll(tmp); rerr != nil && err == nil {
		log.Warn().Err(rerr).Msg("remove the init's temporary files")
	}
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if err := db.Sync(); err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	entries := stats.Accounts + stats.Slots
	log.Info().Str("datadir", sf.DataDir).Str("genesis", g.Block.Hash().Hex()).Uint64("chainId", g.Config.ChainID.Uint64()).
		Str("stateRoot", g.Block.Root().Hex()).Int64("accounts", stats.Accounts).Int64("slots", stats.Slots).
		Int("tables", stats.Store.Tables).Int64("bytes", stats.Store.Bytes).
		Str("elapsed", time.Since(start).Round(time.Millisecond).String()).
		Float64("entries/s", float64(entries)/secs).Msg("initialised")
	return nil
}

// checkGenesisFileConfig reads the "config" member of the genesis file
// (streamed: the alloc before it, if any, is skipped token by token in
// bounded memory) and validates it as the init will (chain.ParseGenesisConfig:
// the L1 and OP fork rules), and against the preset when one is given.
func checkGenesisFileConfig(file string, pre *preset.Preset) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	raw, err := readConfigMember(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return fmt.Errorf("%s: %w: %v", file, chain.ErrGenesis, err)
	}
	spec, err := json.Marshal(map[string]json.RawMessage{"config": raw})
	if err != nil {
		return fmt.Errorf("%s: %w: %v", file, chain.ErrGenesis, err)
	}
	if _, err := chain.ParseGenesisConfig(spec); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if pre != nil {
		if err := pre.CheckConfig(raw); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
	}
	return nil
}

// readConfigMember returns the raw "config" member of the JSON object r
// holds, skipping the other members' values token by token.
func readConfigMember(r io.Reader) (json.RawMessage, error) {
	dec := json.NewDecoder(r)
	if tok, err := dec.Token(); err != nil {
		return nil, err
	} else if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("the genesis is not a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		if key, _ := tok.(string); key == "config" {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return nil, fmt.Errorf("config: %v", err)
			}
			return raw, nil
		}
		// Skip the value: count nesting over its tokens.
		depth := 0
		for {
			tok, err := dec.Token()
			if err != nil {
				return nil, err
			}
			if d, ok := tok.(json.Delim); ok {
				if d == '{' || d == '[' {
					depth++
				} else {
					depth--
				}
			}
			if depth == 0 {
				break
			}
		}
	}
	return nil, errors.New(`missing "config"`)
}
