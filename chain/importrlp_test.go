package chain_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rlp"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
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

// A chain file holding a side chain imports as go-ethereum's import
// inserts it: a block whose parent is an older canonical block becomes the
// head, replacing the blocks above its parent in one step, and the file's
// last block wins. A block whose parent is not canonical is refused and
// nothing of it is written. Found by the Ethereum conformance suite
// (UncleFromSideChain_Cancun, chain/ethtests): ImportRLP refused every
// block that was not the head's child ("number is not latest+1").
func TestImportRLPSideChain(t *testing.T) {
	config, engine := params.MergedTestChainConfig, gethCases()[1].engine
	gg := newGethGenesis(config, engine)
	gdb, chainA, _ := core.GenerateChainWithGenesis(gg.gspec, engine, 3, func(i int, b *core.BlockGen) {
		b.SetCoinbase(common.Address{0xaa})
	})
	db, g, w := gg.initStore(t)
	chainB, _ := core.GenerateChain(config, g.Block, engine, gdb, 2, func(i int, b *core.BlockGen) {
		b.SetCoinbase(common.Address{0xbb})
		gg.send(b, &common.Address{0xb0}, 1, nil)
	})
	orphanParent, _ := core.GenerateChain(config, chainA[0], engine, gdb, 2, func(i int, b *core.BlockGen) {
		b.SetCoinbase(common.Address{0xcc})
	})
	file := func(blocks ...*types.Block) []byte {
		var buf bytes.Buffer
		for _, b := range blocks {
			if err := rlp.Encode(&buf, b); err != nil {
				t.Fatal(err)
			}
		}
		return buf.Bytes()
	}
	stats, err := w.ImportRLP(bytes.NewReader(file(append(chainA, chainB...)...)), 0, nil)
	if err != nil || stats.Blocks != 5 {
		t.Fatalf("import A then B: %d blocks, %v", stats.Blocks, err)
	}
	checkCanonicalChain(t, openView(t, db), append([]*types.Block{g.Block}, chainB...))
	if h := w.Head(); h.Hash() != chainB[1].Hash() || h.Finalized().Hash() != chainB[1].Hash() {
		t.Fatalf("head %d %s (finalized %s), want B's block 2", h.Number(), h.Hash().Hex(), h.Finalized().Hash().Hex())
	}
	checkStateAgainstGeth(t, openView(t, db), gdb, append([]*types.Block{g.Block}, chainB...))
	// orphanParent[1]'s parent (on A's block 1) is not canonical any more.
	_, err = w.ImportRLP(bytes.NewReader(file(orphanParent[1])), 0, nil)
	if !errors.Is(err, chain.ErrInvalidBlock) {
		t.Fatalf("block on a parent that is not canonical: %v, want ErrInvalidBlock", err)
	}
	if h := w.Head(); h.Hash() != chainB[1].Hash() {
		t.Fatalf("head moved to %d %s", h.Number(), h.Hash().Hex())
	}
	// Back to A, one block at a time: its block 1 is a side chain again.
	if _, err := w.ImportRLP(bytes.NewReader(file(chainA...)), 0, nil); err != nil {
		t.Fatal(err)
	}
	checkCanonicalChain(t, openView(t, db), append([]*types.Block{g.Block}, chainA...))
	checkStateAgainstGeth(t, openView(t, db), gdb, append([]*types.Block{g.Block}, chainA...))
}

// A block with a forged state root inside a chain file, with blocks
// chained on it after it: the import pipeline (executing the blocks after
// it on its in-memory state while its root is verified) writes the blocks
// before it, nothing of it or of the blocks after it, and the error names
// the block and both roots. The genuine file then imports, and its last
// block is safe and finalized.
func TestImportRLPPipelineForgedRoot(t *testing.T) {
	blocks := chaintest.Blocks(t)
	const bad = 10 // block 10 has transactions
	var forged []*chaintypes.Block
	forged = append(forged, blocks[:bad-1]...)
	parent := blocks[bad-2].Hash()
	for _, b := range blocks[bad-1 : bad+5] {
		h := b.Header()
		h.ParentHash = parent
		if h.Number.Uint64() == bad {
			h.Root[0] ^= 0xff
		}
		nb := chaintypes.NewBlockWithHeader(h).WithBody(*b.Body())
		forged = append(forged, nb)
		parent = nb.Hash()
	}
	var buf bytes.Buffer
	for _, b := range forged {
		if err := rlp.Encode(&buf, b); err != nil {
			t.Fatal(err)
		}
	}
	db, _, w := chaintest.GenesisStore(t)
	stats, err := w.ImportRLP(bytes.NewReader(buf.Bytes()), 0, nil)
	want := fmt.Sprintf("state root %s, header says %s", blocks[bad-1].Root().Hex(), forged[bad-1].Root().Hex())
	if !errors.Is(err, chain.ErrInvalidBlock) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), fmt.Sprintf("block %d (%s)", bad, forged[bad-1].Hash().Hex())) {
		t.Fatalf("ImportRLP: %v, want ErrInvalidBlock naming block %d and %q", err, bad, want)
	}
	if stats.Blocks != bad-1 {
		t.Fatalf("%d blocks imported, want %d", stats.Blocks, bad-1)
	}
	view := openView(t, db)
	if n, err := view.Tag(store.TagLatest); err != nil || n != bad-1 {
		t.Fatalf("latest %d (%v), want %d", n, err, bad-1)
	}
	for n := uint64(bad); n <= bad+5; n++ {
		if _, err := view.CanonicalHash(n); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("block %d written: %v", n, err)
		}
	}
	if got, want := flatRoot(t, view, bad-1), blocks[bad-2].Root(); got != want {
		t.Fatalf("state at %d: root %s, want %s", bad-1, got, want)
	}
	data, err := os.ReadFile(filepath.Join(chaintest.Dir(t), "chain", "chain.rlp"))
	if err != nil {
		t.Fatal(err)
	}
	if stats, err = w.ImportRLP(bytes.NewReader(data), 0, nil); err != nil || stats.Skipped != bad-1 || stats.Blocks != len(blocks)-bad+1 {
		t.Fatalf("genuine file: %+v, %v", stats, err)
	}
	last := blocks[len(blocks)-1].Hash()
	if h := w.Head(); h.Hash() != last || h.Safe().Hash() != last || h.Finalized().Hash() != last {
		t.Fatalf("head %s safe %s finalized %s, want %s", h.Hash(), h.Safe().Hash(), h.Finalized().Hash(), last)
	}
}

// The import pipeline starts with the file's first block: a file whose
// second block comes only after its first was written (the reader blocks
// until then) imports. Collecting a run of blocks before executing any
// would wait for the second block forever (failed here after 30 s).
func TestImportRLPPipelineStreams(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(chaintest.Dir(t), "chain", "chain.rlp"))
	if err != nil {
		t.Fatal(err)
	}
	_, _, rest, err := rlp.Split(data)
	if err != nil {
		t.Fatal(err)
	}
	first := data[:len(data)-len(rest)]
	blocks := chaintest.Blocks(t)
	_, _, w := chaintest.GenesisStore(t)
	pr, pw := io.Pipe()
	fed := make(chan error, 1)
	go func() {
		defer pw.Close()
		if _, err := pw.Write(first); err != nil {
			fed <- err
			return
		}
		deadline := time.Now().Add(30 * time.Second)
		for w.Head().Number() < 1 {
			if time.Now().After(deadline) {
				fed <- errors.New("block 1 not written before the file's second block was read")
				return
			}
			time.Sleep(time.Millisecond)
		}
		_, err := pw.Write(rest)
		fed <- err
	}()
	stats, err := w.ImportRLP(pr, 0, nil)
	if ferr := <-fed; ferr != nil {
		t.Fatal(ferr)
	}
	if err != nil || stats.Blocks != len(blocks) {
		t.Fatalf("ImportRLP: %+v, %v, want %d blocks", stats, err, len(blocks))
	}
	if h := w.Head(); h.Hash() != blocks[len(blocks)-1].Hash() || h.Finalized().Hash() != h.Hash() {
		t.Fatalf("head %d %s (finalized %s), want %s", h.Number(), h.Hash(), h.Finalized().Hash(), blocks[len(blocks)-1].Hash())
	}
}

// A re-import of a file whose blocks are all canonical moves safe and
// finalized up to the file's last block when they are below it (an
// import killed after writing its last block, before the tags that the
// pipeline sets apart in rare cases), and never down (a file of older
// blocks).
func TestImportRLPReimportTags(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(chaintest.Dir(t), "chain", "chain.rlp"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := chaintest.Blocks(t)
	db, _, w := chaintest.GenesisStore(t)
	if _, err := w.ImportRLP(bytes.NewReader(data), 0, nil); err != nil {
		t.Fatal(err)
	}
	tagsAt := func(want uint64) {
		t.Helper()
		v, err := db.View()
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		for _, tag := range []store.Tag{store.TagSafe, store.TagFinalized} {
			if n, err := v.Tag(tag); err != nil || n != want {
				t.Fatalf("%s at %d (%v), want %d", tag, n, err, want)
			}
		}
	}
	tagsAt(54)
	// The state an import killed before its final tags leaves.
	back := blocks[39].Hash() // block 40
	if err := w.SetTags(map[store.Tag]common.Hash{store.TagSafe: back, store.TagFinalized: back}); err != nil {
		t.Fatal(err)
	}
	tagsAt(40)
	// A file of blocks 1-20: all skipped, the tags stay (above its last).
	var offset []int
	for pos := 0; pos < len(data); {
		_, _, rest, err := rlp.Split(data[pos:])
		if err != nil {
			t.Fatal(err)
		}
		offset = append(offset, pos)
		pos = len(data) - len(rest)
	}
	if stats, err := w.ImportRLP(bytes.NewReader(data[:offset[20]]), 0, nil); err != nil || stats.Skipped != 20 {
		t.Fatalf("re-import of blocks 1-20: %+v, %v", stats, err)
	}
	tagsAt(40)
	// The whole file again: all skipped, the tags move up to block 54.
	if stats, err := w.ImportRLP(bytes.NewReader(data), 0, nil); err != nil || stats.Skipped != 54 || stats.Blocks != 0 {
		t.Fatalf("re-import: %+v, %v", stats, err)
	}
	tagsAt(54)
}
