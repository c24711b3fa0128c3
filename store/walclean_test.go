package store

import (
	"math/big"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/holiman/uint256"
	"github.com/rs/zerolog"
)

func walFiles(t *testing.T, dir string) []string {
	t.Helper()
	names, err := vfs.Default.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var logs []string
	for _, n := range names {
		if strings.HasSuffix(n, ".log") {
			logs = append(logs, n)
		}
	}
	return logs
}

// TestCloseRemovesRecycledWALs: blocks written through 1 MiB memtables
// rotate the write-ahead log several times, leaving obsolete logs for
// recycling; a clean close flushes and removes them all but the live one,
// and the store reopens with every block (the trie's root at the head
// unchanged, and writable on).
func TestCloseRemovesRecycledWALs(t *testing.T) {
	cfg := testConfig(t)
	cfg.MemtableBytes = 1 << 20
	cfg.CacheBytes = 8 << 20
	db, err := Open(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	writeGenesis(t, db, NewStateDiff())
	for n := uint64(1); n <= 12; n++ {
		d := NewStateDiff()
		a := common.Address{byte(n)}
		d.Accounts[a] = &Account{Nonce: n, Balance: uint256.NewInt(n), CodeHash: types.EmptyCodeHash}
		d.Storage[a] = map[common.Hash]common.Hash{}
		for i := range 600 {
			d.Storage[a][common.BigToHash(big.NewInt(int64(i)))] = common.BigToHash(big.NewInt(int64(i + 1)))
		}
		writeDiffBlock(t, db, n, d)
	}
	root := trieRootAt(t, db, 12)
	if logs := walFiles(t, cfg.Dir); len(logs) < 2 {
		t.Fatalf("only %v before the close: nothing to remove, the test lost its point", logs)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if logs := walFiles(t, cfg.Dir); len(logs) != 1 {
		t.Fatalf("write-ahead logs after a clean close: %v, want the live one only", logs)
	}
	db = openTestDBWith(t, cfg)
	if got := trieRootAt(t, db, 12); got != root {
		t.Fatalf("root at 12 after reopening: %s, want %s", got, root)
	}
	writeDiffBlock(t, db, 13, NewStateDiff())
}
