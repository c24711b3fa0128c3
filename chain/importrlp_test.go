package chain_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/rlp"

	"github.com/tipnode/tipnode/chain/chaintest"
)

// TestImportRLPFile covers ImportRLP's reading of a chain file through its
// decode-ahead pipeline: the whole file, a file cut inside a block (the
// blocks before it are imported, the error names the block), a re-import
// (every block skipped) and a file continued after a prefix.
func TestImportRLPFile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(chaintest.Dir(t), "chain", "chain.rlp"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := chaintest.Blocks(t)
	// offset[i] is where block i+1 (the i-th in the file) starts.
	var offset []int
	for pos := 0; pos < len(data); {
		_, content, rest, err := rlp.Split(data[pos:])
		if err != nil {
			t.Fatal(err)
		}
		offset = append(offset, pos)
		pos = len(data) - len(rest)
		_ = content
	}
	if len(offset) != len(blocks) {
		t.Fatalf("%d blocks in the file, %d from chaintest", len(offset), len(blocks))
	}
	for _, tc := range []struct {
		name     string
		files    [][]byte
		wantErr  string // of the last file
		blocks   int    // imported by the last file
		skipped  int
		wantHead uint64
	}{
		{name: "whole", files: [][]byte{data}, blocks: 54, wantHead: 54},
		{name: "cut in block 30", files: [][]byte{data[:offset[29]+10]}, wantErr: "decode block 30 of the file", blocks: 29, wantHead: 29},
		{name: "again", files: [][]byte{data, data}, blocks: 0, skipped: 54, wantHead: 54},
		{name: "prefix then all", files: [][]byte{data[:offset[20]], data}, blocks: 34, skipped: 20, wantHead: 54},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, w := chaintest.GenesisStore(t)
			for i, f := range tc.files {
				stats, err := w.ImportRLP(bytes.NewReader(f), 0, nil)
				if i < len(tc.files)-1 {
					if err != nil {
						t.Fatal(err)
					}
					continue
				}
				if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
					t.Fatalf("ImportRLP: %v, want error %q", err, tc.wantErr)
				}
				if stats.Blocks != tc.blocks || stats.Skipped != tc.skipped {
					t.Fatalf("imported %d, skipped %d; want %d, %d", stats.Blocks, stats.Skipped, tc.blocks, tc.skipped)
				}
			}
			if got := w.Head().Number(); got != tc.wantHead {
				t.Fatalf("head %d, want %d", got, tc.wantHead)
			}
			if h := w.Head(); h.Hash() != blocks[tc.wantHead-1].Hash() {
				t.Fatalf("head hash %s, want block %d's %s", h.Hash(), tc.wantHead, blocks[tc.wantHead-1].Hash())
			}
		})
	}
}
