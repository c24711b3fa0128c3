package chain_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/migrations"
	"github.com/tipnode/tipnode/store"
)

// TestMigrationBuildsTrie: a store of the format before the trie (the
// conformance chain imported, its trie and the trie's keys removed, the
// format set back to 6) migrates to the trie format by building the trie
// of its latest block from the flat state, whose root is the header's.
func TestMigrationBuildsTrie(t *testing.T) {
	db, _ := chaintest.ImportedStore(t)
	b, err := db.NewRawBatch()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range []byte{'T', 'U'} {
		err := db.RawScan([]byte{p}, []byte{p + 1}, func(key, _ []byte) error {
			n++
			return b.Delete(bytes.Clone(key))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if n == 0 {
		t.Fatal("the imported store holds no trie keys")
	}
	must(t, b.Delete([]byte("mtrie")))
	must(t, b.SetFormatVersion(store.FormatFork))
	must(t, b.Commit())
	if _, ok := db.TrieBase(); ok {
		t.Fatal("trie still recorded after removing it")
	}
	if err := migrations.Run(db, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	view := openView(t, db)
	h, err := view.Header(54, canonical(t, view, 54))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := view.StateTrie(54)
	if err != nil {
		t.Fatal(err)
	}
	if root, err := tr.Root(); err != nil || root != h.Root {
		t.Fatalf("migrated trie root %s (%v), header %s", root, err, h.Root)
	}
	if _, err := view.StateTrie(53); !errors.Is(err, store.ErrTrieWindow) {
		t.Fatalf("below the migrated trie's base: %v", err)
	}
}

func canonical(t *testing.T, view store.View, n uint64) [32]byte {
	t.Helper()
	h, err := view.CanonicalHash(n)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
