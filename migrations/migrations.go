package migrations

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/rs/zerolog"
	"github.com/tipnode/tipnode/store"
)

// Step performs one bounded unit of a migration. cursor is nil on the first
// step, else the value the previous committed step returned. The step adds
// its changes to b (it must not commit or close it) and returns the cursor to
// resume from, or done=true when the migration is complete. Keep each step
// small enough for one batch (see store.RawBatch.Len).
type Step func(db *store.DB, b *store.RawBatch, cursor []byte) (next []byte, done bool, err error)

// Migration upgrades the store from format Version-1 to Version.
type Migration struct {
	Version store.FormatVersion
	Name    string
	Step    Step
}

// All is every migration of tipnode, in version order, ending at
// store.FormatCurrent. Append a migration here (with a new store format
// constant, see store/format.go) for every format change; never edit or
// renumber an existing entry.
var All = []Migration{
	{Version: store.FormatInitial, Name: "initial-schema", Step: initialSchema},
	{Version: store.FormatPendingJournal, Name: "pending-journal", Step: pendingJournal},
	{Version: store.FormatChainConfig, Name: "chain-config", Step: chainConfig},
	{Version: store.FormatGenesisChunks, Name: "genesis-chunks", Step: genesisChunks},
	{Version: store.FormatAnchor, Name: "anchor", Step: anchor},
	{Version: store.FormatFork, Name: "fork", Step: fork},
	{Version: store.FormatTrie, Name: "state-trie", Step: stateTrie},
}

// stateTrie migrates to store.FormatTrie: the state trie of the latest
// block is built from the flat state in one pass (store.DB.BuildTrie: its
// own batches, progress logged every 10 s; the trie's base key is written
// last, so a crash before leaves no trie and the migration builds it
// again). A store without a chain, a fork (partial state) or one opened
// without a trie (store.Config.NoTrie) gets none; such a store builds it
// later with BuildTrie.
func stateTrie(db *store.DB, _ *store.RawBatch, _ []byte) ([]byte, bool, error) {
	if _, err := db.Latest(); errors.Is(err, store.ErrNoGenesis) || errors.Is(err, store.ErrNotFound) || !db.KeepsTrie() {
		return nil, true, nil
	} else if err != nil {
		return nil, false, err
	}
	_, err := db.BuildTrie(nil)
	return nil, err == nil, err
}

// fork migrates to store.FormatFork, which only added the fork meta key of
// stores made by `tipnode dev --fork` (a store being migrated has none).
func fork(*store.DB, *store.RawBatch, []byte) ([]byte, bool, error) {
	return nil, true, nil
}

// anchor migrates to store.FormatAnchor, which only added the anchor meta
// key of stores initialised from a state dump (a store being migrated was
// initialised from genesis and has none): the step only lets Run record
// the version.
func anchor(*store.DB, *store.RawBatch, []byte) ([]byte, bool, error) {
	return nil, true, nil
}

// initialSchema migrates to store.FormatInitial, the first format: nothing to
// transform, the step only lets Run record the version.
func initialSchema(*store.DB, *store.RawBatch, []byte) ([]byte, bool, error) {
	return nil, true, nil
}

// pendingJournal migrates to store.FormatPendingJournal, which only added
// new key layouts (the pending journal, empty in a store of format 1): the
// step only lets Run record the version.
func pendingJournal(*store.DB, *store.RawBatch, []byte) ([]byte, bool, error) {
	return nil, true, nil
}

// chainConfig migrates to store.FormatChainConfig: a store with a genesis
// but no stored chain config gets the "config" object of its genesis spec,
// as written. One step: the spec is parsed once (for a genesis with a large
// alloc this is the last time). An empty store has neither key and gets none.
func chainConfig(db *store.DB, b *store.RawBatch, _ []byte) ([]byte, bool, error) {
	if _, found, err := db.RawGet(store.ChainConfigKey()); err != nil || found {
		return nil, true, err
	}
	spec, found, err := db.RawGet(store.LegacyGenesisSpecKey())
	if err != nil || !found {
		return nil, true, err
	}
	var g struct {
		Config json.RawMessage `json:"config"`
	}
	if err := json.Unmarshal(spec, &g); err != nil {
		return nil, false, fmt.Errorf("stored genesis spec: %w", err)
	}
	if len(g.Config) == 0 || string(g.Config) == "null" {
		return nil, false, errors.New("stored genesis spec has no \"config\"")
	}
	return nil, true, b.Set(store.ChainConfigKey(), g.Config)
}

// genesisChunks migrates to store.FormatGenesisChunks in two steps. The
// first rewrites the single-value genesis spec in chunks, deletes the old
// key and block 0's change list (one batch: the spec is never absent nor
// doubled for a reader). The second, once that batch is committed,
// compacts both keys' ranges: until then the old values stay in sstable
// blocks beside other keys, and every read of those decompresses them. A
// crash before the compaction resumes at the second step. A store without
// the old spec (an empty one) has nothing to move.
func genesisChunks(db *store.DB, b *store.RawBatch, cursor []byte) ([]byte, bool, error) {
	spec, cl := store.LegacyGenesisSpecKey(), store.GenesisChangeListKey()
	if cursor != nil {
		for _, k := range [][]byte{spec, cl} {
			if err := db.RawCompact(k, append(append([]byte(nil), k...), 0)); err != nil {
				return nil, false, err
			}
		}
		return nil, true, nil
	}
	val, found, err := db.RawGet(spec)
	if err != nil || !found {
		return nil, true, err
	}
	if err := errors.Join(b.SetGenesisSpec(val), b.Delete(spec), b.Delete(cl)); err != nil {
		return nil, false, err
	}
	return []byte("compact"), false, nil
}

// Run upgrades db to store.FormatCurrent with All. A new store (no format
// recorded and no key written) has nothing to migrate: it is created at
// store.FormatCurrent in one batch, and only a store that is upgraded logs
// its migrations.
func Run(db *store.DB, log zerolog.Logger) error {
	if last := lastVersion(All); last != store.FormatCurrent {
		return fmt.Errorf("%w: migrations end at %d, store format is %d", ErrInvalidList, last, store.FormatCurrent)
	}
	fresh, err := isNew(db)
	if err != nil {
		return err
	}
	if fresh {
		b, err := db.NewRawBatch()
		if err != nil {
			return fmt.Errorf("record the format of a new store: %w", err)
		}
		if err := b.SetFormatVersion(store.FormatCurrent); err != nil {
			return fmt.Errorf("record the format of a new store: %w", errors.Join(err, b.Close()))
		}
		if err := b.Commit(); err != nil {
			return fmt.Errorf("record the format of a new store: %w", err)
		}
		log.Debug().Str("component", "migrations").Uint64("version", uint64(store.FormatCurrent)).Msg("new store at the current format")
		return nil
	}
	return Apply(db, All, log)
}

// errNotEmpty stops isNew's scan at the first key.
var errNotEmpty = errors.New("store holds a key")

// isNew reports whether db is a new store: no format version recorded
// (store.FormatNone) and no key at all. A store with keys but no version
// predates the formats and is migrated from version 1.
func isNew(db *store.DB) (bool, error) {
	v, err := db.FormatVersion()
	if err != nil {
		return false, fmt.Errorf("read format version: %w", err)
	}
	if v != store.FormatNone {
		return false, nil
	}
	err = db.RawScan(nil, nil, func([]byte, []byte) error { return errNotEmpty })
	switch {
	case errors.Is(err, errNotEmpty):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("scan a store without a format version: %w", err)
	}
	return true, nil
}

// Apply upgrades db through list, which must hold versions 1..N in order;
// the store ends at version N. Exposed for tests of migration machinery.
func Apply(db *store.DB, list []Migration, log zerolog.Logger) error {
	if err := validate(list); err != nil {
		return err
	}
	log = log.With().Str("component", "migrations").Logger()
	target := lastVersion(list)
	current, err := db.FormatVersion()
	if err != nil {
		return fmt.Errorf("read format version: %w", err)
	}
	if current > target {
		return fmt.Errorf("%w: store has format version %d, this binary supports up to %d",
			store.ErrSchemaTooNew, current, target)
	}
	for _, m := range list[current:] {
		if err := apply(db, m, log); err != nil {
			return err
		}
	}
	return nil
}

// apply runs the steps of m until done, committing each with its cursor.
func apply(db *store.DB, m Migration, log zerolog.Logger) error {
	cursorKey := store.MigrationCursorKey(m.Version)
	cursor, resumed, err := db.RawGet(cursorKey)
	if err != nil {
		return fmt.Errorf("migration %d (%s): read cursor: %w", m.Version, m.Name, err)
	}
	log.Info().Uint64("version", uint64(m.Version)).Str("name", m.Name).Bool("resumed", resumed).Msg("migrating")
	for steps := 1; ; steps++ {
		b, err := db.NewRawBatch()
		if err != nil {
			return fmt.Errorf("migration %d (%s): %w", m.Version, m.Name, err)
		}
		next, done, err := m.Step(db, b, cursor)
		if err != nil {
			return fmt.Errorf("%w: migration %d (%s) step %d: %w", ErrStepFailed, m.Version, m.Name, steps, errors.Join(err, b.Close()))
		}
		if done {
			err = errors.Join(b.Delete(cursorKey), b.SetFormatVersion(m.Version))
		} else {
			if next == nil {
				next = []byte{} // a committed cursor always exists, even if empty
			}
			err = b.Set(cursorKey, next)
		}
		if err == nil {
			err = b.Commit()
		}
		if err != nil {
			return fmt.Errorf("migration %d (%s) step %d: commit: %w", m.Version, m.Name, steps, errors.Join(err, b.Close()))
		}
		if done {
			log.Info().Uint64("version", uint64(m.Version)).Int("steps", steps).Msg("migrated")
			return nil
		}
		cursor = next
	}
}

// validate checks that list holds exactly versions 1..N in order.
func validate(list []Migration) error {
	if len(list) == 0 {
		return fmt.Errorf("%w: empty", ErrInvalidList)
	}
	for i, m := range list {
		if m.Version != store.FormatVersion(i+1) {
			return fmt.Errorf("%w: entry %d has version %d, want %d", ErrInvalidList, i, m.Version, i+1)
		}
		if m.Name == "" || m.Step == nil {
			return fmt.Errorf("%w: version %d lacks a name or step", ErrInvalidList, m.Version)
		}
	}
	return nil
}

func lastVersion(list []Migration) store.FormatVersion {
	if len(list) == 0 {
		return store.FormatNone
	}
	return list[len(list)-1].Version
}
