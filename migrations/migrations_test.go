package migrations

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/tipnode/tipnode/store"
)

func openStore(t *testing.T, dir string) *store.DB {
	t.Helper()
	cfg := store.DefaultConfig(dir)
	cfg.CacheBytes, cfg.MemtableBytes = 16<<20, 4<<20
	db, err := store.Open(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
			t.Error(err)
		}
	})
	return db
}

// dump renders every key/value in the store.
func dump(t *testing.T, db *store.DB) string {
	t.Helper()
	var sb strings.Builder
	if err := db.RawScan(nil, nil, func(k, v []byte) error {
		fmt.Fprintf(&sb, "%x=%x\n", k, v)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return sb.String()
}

func formatVersion(t *testing.T, db *store.DB) store.FormatVersion {
	t.Helper()
	v, err := db.FormatVersion()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestVersionsPinned pins every released format and its migration to
// literals: a version's number, constant and migration name never change once
// shipped, and each version 1..store.FormatCurrent has exactly one migration.
// Adding, removing, renaming or reordering a migration, or moving
// store.FormatCurrent or store.FormatMinSupported, fails here until the pin
// is updated on purpose.
func TestVersionsPinned(t *testing.T) {
	const (
		pinnedCurrent      = 7
		pinnedMinSupported = 1
	)
	pinned := []struct {
		version  uint64
		name     string
		constant store.FormatVersion
	}{
		{1, "initial-schema", store.FormatInitial},
		{2, "pending-journal", store.FormatPendingJournal},
		{3, "chain-config", store.FormatChainConfig},
		{4, "genesis-chunks", store.FormatGenesisChunks},
		{5, "anchor", store.FormatAnchor},
		{6, "fork", store.FormatFork},
		{7, "state-trie", store.FormatTrie},
	}
	if store.FormatCurrent != pinnedCurrent || store.FormatMinSupported != pinnedMinSupported {
		t.Fatalf("store.FormatCurrent = %d, FormatMinSupported = %d; pinned %d, %d: pin the new format",
			store.FormatCurrent, store.FormatMinSupported, pinnedCurrent, pinnedMinSupported)
	}
	if last := pinned[len(pinned)-1].version; last != pinnedCurrent {
		t.Fatalf("pinned table ends at %d, pinned current format %d", last, pinnedCurrent)
	}
	if len(All) != len(pinned) {
		t.Fatalf("All has %d migrations, pinned table %d: pin the new one", len(All), len(pinned))
	}
	for i, p := range pinned {
		if uint64(p.constant) != p.version {
			t.Errorf("format constant of version %d is %d", p.version, p.constant)
		}
		if uint64(All[i].Version) != p.version || All[i].Name != p.name {
			t.Errorf("migration %d = {%d %q}, pinned {%d %q}", i, All[i].Version, All[i].Name, p.version, p.name)
		}
	}
	count := map[store.FormatVersion]int{}
	for _, m := range All {
		count[m.Version]++
	}
	for v := store.FormatVersion(1); v <= store.FormatCurrent; v++ {
		if count[v] != 1 {
			t.Errorf("version %d has %d migrations, want 1", v, count[v])
		}
	}
	if len(count) != int(store.FormatCurrent) {
		t.Errorf("migrations cover %d versions, store.FormatCurrent is %d", len(count), store.FormatCurrent)
	}
	if err := validate(All); err != nil {
		t.Fatal(err)
	}
}

// TestEmptyStore: migrating an empty store only records the version, and
// running again changes nothing.
func TestEmptyStore(t *testing.T) {
	db := openStore(t, t.TempDir())
	if v := formatVersion(t, db); v != 0 {
		t.Fatalf("fresh store version %d", v)
	}
	if err := Run(db, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	if v := formatVersion(t, db); v != store.FormatCurrent {
		t.Fatalf("version after Run %d, want %d", v, store.FormatCurrent)
	}
	first := dump(t, db)
	if n := strings.Count(first, "\n"); n != 1 {
		t.Fatalf("empty store migration wrote %d keys, want only the version:\n%s", n, first)
	}
	if err := Run(db, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	if again := dump(t, db); again != first {
		t.Fatalf("second Run changed the store:\n%s\n---\n%s", first, again)
	}
	if _, err := db.View(); err != nil {
		t.Fatalf("view after migration: %v", err)
	}
}

// migrationLines returns the "migrating" and "migrated" lines of a JSON log,
// each as "message version".
func migrationLines(t *testing.T, log string) []string {
	t.Helper()
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		if line == "" {
			continue
		}
		var m struct {
			Message string `json:"message"`
			Version uint64 `json:"version"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line not JSON: %s", line)
		}
		if m.Message == "migrating" || m.Message == "migrated" {
			lines = append(lines, fmt.Sprintf("%s %d", m.Message, m.Version))
		}
	}
	return lines
}

// TestMigrationLog: a new store is created at the current format without a
// migration line; an existing store logs "migrating" and "migrated" for
// each version it is upgraded through, and nothing once current.
func TestMigrationLog(t *testing.T) {
	upgradeLines := func(from store.FormatVersion) []string {
		var want []string
		for v := from + 1; v <= store.FormatCurrent; v++ {
			want = append(want, fmt.Sprintf("migrating %d", v), fmt.Sprintf("migrated %d", v))
		}
		return want
	}
	tests := []struct {
		name string
		seed func(t *testing.T, db *store.DB) // the store before Run
		want []string
	}{
		{"new store", func(*testing.T, *store.DB) {}, nil},
		{"keys without a format version", func(t *testing.T, db *store.DB) { seedKeys(t, db, 1) }, upgradeLines(store.FormatNone)},
		{"recorded format 4", func(t *testing.T, db *store.DB) {
			b, err := db.NewRawBatch()
			if err != nil {
				t.Fatal(err)
			}
			if err := errors.Join(b.SetFormatVersion(store.FormatGenesisChunks), b.Commit()); err != nil {
				t.Fatal(err)
			}
		}, upgradeLines(store.FormatGenesisChunks)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := openStore(t, t.TempDir())
			tt.seed(t, db)
			var logs bytes.Buffer
			if err := Run(db, zerolog.New(&logs)); err != nil {
				t.Fatal(err)
			}
			if got := migrationLines(t, logs.String()); strings.Join(got, ", ") != strings.Join(tt.want, ", ") {
				t.Errorf("migration lines %q, want %q", got, tt.want)
			}
			if v := formatVersion(t, db); v != store.FormatCurrent {
				t.Fatalf("version after Run %d, want %d", v, store.FormatCurrent)
			}
			logs.Reset()
			if err := Run(db, zerolog.New(&logs)); err != nil {
				t.Fatal(err)
			}
			if got := migrationLines(t, logs.String()); len(got) != 0 {
				t.Errorf("second Run logged %q", got)
			}
		})
	}
}

// testRewrite is a v2 migration over keys "Zmig<i>": it sets each to "done",
// three keys per step, resuming after the cursor key, and fails once when
// failAt is reached.
type testRewrite struct {
	failAt  int // step number that fails once (0 = never)
	steps   int
	visited map[string]int
}

func (r *testRewrite) step(db *store.DB, b *store.RawBatch, cursor []byte) ([]byte, bool, error) {
	r.steps++
	if r.steps == r.failAt {
		return nil, false, errors.New("simulated crash")
	}
	lower := []byte("Zmig")
	if len(cursor) > 0 {
		lower = append(append([]byte{}, cursor...), 0) // strictly after the cursor
	}
	var last []byte
	n := 0
	errFull := errors.New("full")
	err := db.RawScan(lower, []byte("Zmih"), func(k, _ []byte) error {
		if n == 3 {
			return errFull
		}
		r.visited[string(k)]++
		last = append(last[:0], k...)
		n++
		return b.Set(k, []byte("done"))
	})
	if err != nil && !errors.Is(err, errFull) {
		return nil, false, err
	}
	if n == 0 {
		return nil, true, nil
	}
	return last, false, nil
}

func seedKeys(t *testing.T, db *store.DB, n int) {
	t.Helper()
	b, err := db.NewRawBatch()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if err := b.Set([]byte(fmt.Sprintf("Zmig%02d", i)), []byte("old")); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestInterruptedResume: a step fails mid-migration; the store stays at the
// previous version with its cursor; the next run resumes from the cursor
// (committed work is not redone) and a third run changes nothing.
func TestInterruptedResume(t *testing.T) {
	db := openStore(t, t.TempDir())
	if err := Run(db, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	seedKeys(t, db, 10)
	rw := &testRewrite{failAt: 2, visited: map[string]int{}}
	list := append(append([]Migration{}, All...), Migration{Version: store.FormatCurrent + 1, Name: "test-rewrite", Step: rw.step})

	err := Apply(db, list, zerolog.Nop())
	if !errors.Is(err, ErrStepFailed) {
		t.Fatalf("first run: %v, want ErrStepFailed", err)
	}
	if v := formatVersion(t, db); v != store.FormatCurrent {
		t.Fatalf("version after failed step %d", v)
	}
	cursor, found, err := db.RawGet(store.MigrationCursorKey(store.FormatCurrent + 1))
	if err != nil || !found || string(cursor) != "Zmig02" {
		t.Fatalf("cursor after failure %q, %v, %v", cursor, found, err)
	}
	done := 0
	if err := db.RawScan([]byte("Zmig"), []byte("Zmih"), func(_, v []byte) error {
		if string(v) == "done" {
			done++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if done != 3 {
		t.Fatalf("%d keys migrated before the failure, want 3 (one committed step)", done)
	}

	if err := Apply(db, list, zerolog.Nop()); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if v := formatVersion(t, db); v != store.FormatCurrent+1 {
		t.Fatalf("version after resume %d", v)
	}
	if _, found, _ := db.RawGet(store.MigrationCursorKey(store.FormatCurrent + 1)); found {
		t.Fatal("cursor left after completion")
	}
	for i := 0; i < 10; i++ {
		k := fmt.Sprintf("Zmig%02d", i)
		v, _, err := db.RawGet([]byte(k))
		if err != nil || !bytes.Equal(v, []byte("done")) {
			t.Fatalf("%s = %q, %v", k, v, err)
		}
		if rw.visited[k] != 1 {
			t.Fatalf("%s migrated %d times, want once", k, rw.visited[k])
		}
	}
	before, steps := dump(t, db), rw.steps
	if err := Apply(db, list, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	if dump(t, db) != before || rw.steps != steps {
		t.Fatal("applying a completed migration again changed something")
	}
}

// TestNewerSchemaRefused: Run and store.Open both refuse a newer store and
// name both versions.
func TestNewerSchemaRefused(t *testing.T) {
	dir := t.TempDir()
	db := openStore(t, dir)
	b, err := db.NewRawBatch()
	if err != nil {
		t.Fatal(err)
	}
	newer := store.FormatCurrent + 5
	if err := errors.Join(b.SetFormatVersion(newer), b.Commit()); err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrSchemaTooNew) ||
			!strings.Contains(err.Error(), fmt.Sprintf("version %d", newer)) || !strings.Contains(err.Error(), fmt.Sprintf("up to %d", store.FormatCurrent)) {
			t.Fatalf("%s: %v, want ErrSchemaTooNew naming %d and %d", what, err, newer, store.FormatCurrent)
		}
	}
	check("Run", Run(db, zerolog.Nop()))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = store.Open(store.DefaultConfig(dir), zerolog.Nop())
	check("Open", err)
}

func TestInvalidLists(t *testing.T) {
	step := initialSchema
	tests := []struct {
		name string
		list []Migration
	}{
		{"empty", nil},
		{"starts at 2", []Migration{{2, "a", step}}},
		{"gap", []Migration{{1, "a", step}, {3, "b", step}}},
		{"duplicate", []Migration{{1, "a", step}, {1, "b", step}}},
		{"no name", []Migration{{1, "", step}}},
		{"no step", []Migration{{1, "a", nil}}},
	}
	db := openStore(t, t.TempDir())
	for _, tt := range tests {
		if err := Apply(db, tt.list, zerolog.Nop()); !errors.Is(err, ErrInvalidList) {
			t.Errorf("%s: %v, want ErrInvalidList", tt.name, err)
		}
	}
	if v := formatVersion(t, db); v != 0 {
		t.Fatalf("invalid lists changed the version to %d", v)
	}
}

// TestGenesisChunks: a format-3 store holding the genesis spec as one
// value and block 0's change list migrates to the chunked spec (read back
// byte for byte through a view) without either old key.
func TestGenesisChunks(t *testing.T) {
	db := openStore(t, t.TempDir())
	spec := []byte(`{"config":{"chainId":1},"alloc":"` + strings.Repeat("ab", 100_000) + `"}`)
	b, err := db.NewRawBatch()
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(b.Set(store.LegacyGenesisSpecKey(), spec), b.Set(store.ChainConfigKey(), []byte(`{"chainId":1}`)),
		b.Set(store.GenesisChangeListKey(), []byte{0, 0}), b.SetFormatVersion(store.FormatChainConfig), b.Commit()); err != nil {
		t.Fatal(err)
	}
	if err := Run(db, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	if v := formatVersion(t, db); v != store.FormatCurrent {
		t.Fatalf("version %d", v)
	}
	for _, k := range [][]byte{store.LegacyGenesisSpecKey(), store.GenesisChangeListKey()} {
		if _, found, err := db.RawGet(k); err != nil || found {
			t.Fatalf("old key %q after migration: found %v, %v", k, found, err)
		}
	}
	v, err := db.View()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	got, err := v.GenesisSpec()
	if err != nil || string(got) != string(spec) {
		t.Fatalf("spec after migration: %d bytes (want %d), %v", len(got), len(spec), err)
	}
}
