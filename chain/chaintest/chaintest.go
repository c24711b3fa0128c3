// Package chaintest gives tests of every package access to the shared
// conformance data (../shared/conformance beside the repository, or the
// directory named by TIPNODE_CONFORMANCE) and builds stores with the
// conformance chain imported. Tests skip, saying so, when the data is absent.
package chaintest

import (
	"github.com/tipnode/tipnode/store/chaintypes"

	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/store"
)

// EnvDir names the environment variable that overrides the location of the
// conformance data (tests only; the node itself reads no environment).
const EnvDir = "TIPNODE_CONFORMANCE"

// HeadHash is the hash of block 54, the head of the conformance chain.
const HeadHash = "0xd226371d0b1551adb03fb52b71f08e3e11247fe9b1af994768af8cdaa8e7dcd7"

// Dir returns the conformance directory or skips the test.
func Dir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv(EnvDir); d != "" {
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			c := filepath.Join(d, "..", "shared", "conformance")
			if _, err := os.Stat(filepath.Join(c, "chain", "chain.rlp")); err == nil {
				return c
			}
			break
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	t.Skipf("conformance data not found (expected ../shared/conformance beside the repository, or set %s): skipping", EnvDir)
	return ""
}

// Genesis parses the conformance genesis.
func Genesis(t testing.TB) *chain.Genesis {
	t.Helper()
	spec, err := os.ReadFile(filepath.Join(Dir(t), "chain", "genesis.json"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := chain.ParseGenesis(spec)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// Blocks decodes every block of chain.rlp, in order. Only the end of the
// file ends the stream: any other decoding error fails the test.
func Blocks(t testing.TB) []*chaintypes.Block {
	t.Helper()
	f, err := os.Open(filepath.Join(Dir(t), "chain", "chain.rlp"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := rlp.NewStream(f, 0)
	var blocks []*chaintypes.Block
	for {
		b := new(chaintypes.Block)
		if err := s.Decode(b); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("chain.rlp block %d: %v", len(blocks), err)
		}
		blocks = append(blocks, b)
	}
	return blocks
}

// HistoryAccount is one account of history.json at one block.
type HistoryAccount struct {
	Balance *hexutil.Big                `json:"balance"`
	Nonce   hexutil.Uint64              `json:"nonce"`
	Code    hexutil.Bytes               `json:"code"`
	Storage map[common.Hash]common.Hash `json:"storage"`
}

// History is history.json by block number: the state of the conformance
// accounts at every block, as a reference archive node answered it. An
// account absent at a block is empty there, an absent slot zero.
type History map[uint64]map[common.Address]HistoryAccount

// LoadHistory reads history.json; a block key that is not a canonical hex
// number fails the test.
func LoadHistory(t testing.TB) History {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(Dir(t), "history.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Blocks map[string]map[common.Address]HistoryAccount `json:"blocks"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	out := make(History, len(raw.Blocks))
	for k, accs := range raw.Blocks {
		n, err := hexutil.DecodeUint64(k)
		if err != nil {
			t.Fatalf("history.json block %q: %v", k, err)
		}
		out[n] = accs
	}
	return out
}

// OpenStore opens a fresh store in a temporary directory, closed at cleanup.
func OpenStore(t testing.TB) *store.DB {
	t.Helper()
	cfg := store.DefaultConfig(t.TempDir())
	cfg.SyncWrites = false
	db, err := store.Open(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// ImportedStore returns a fresh store with the conformance genesis and
// chain.rlp imported (head = safe = finalized = block 54).
func ImportedStore(t testing.TB) (*store.DB, *chain.Genesis) {
	t.Helper()
	db, g, w := GenesisStore(t)
	defer w.Stop() // the store is handed over with no writer running
	f, err := os.Open(filepath.Join(Dir(t), "chain", "chain.rlp"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := w.ImportRLP(f, 0, nil); err != nil {
		t.Fatal(err)
	}
	return db, g
}

// InitStore parses spec (a genesis JSON) and returns a fresh store holding
// its block 0, with a started writer ready to add blocks on top (stopped at
// the end of the test, before the store closes).
func InitStore(t testing.TB, spec []byte) (*store.DB, *chain.Genesis, *chain.Writer) {
	t.Helper()
	g, err := chain.ParseGenesis(spec)
	if err != nil {
		t.Fatal(err)
	}
	db, im := initStore(t, g)
	return db, g, im
}

// GenesisStore returns a fresh store holding the conformance genesis, with
// a started writer ready to add the chain's blocks.
func GenesisStore(t testing.TB) (*store.DB, *chain.Genesis, *chain.Writer) {
	t.Helper()
	g := Genesis(t)
	db, im := initStore(t, g)
	return db, g, im
}

func initStore(t testing.TB, g *chain.Genesis) (*store.DB, *chain.Writer) {
	t.Helper()
	db := OpenStore(t)
	if err := chain.InitGenesis(db, g); err != nil {
		t.Fatal(err)
	}
	return db, StartWriter(t, db, g)
}

// StartWriter opens and starts a writer on db (which holds g's genesis),
// stopped at the end of the test.
func StartWriter(t testing.TB, db *store.DB, g *chain.Genesis) *chain.Writer {
	t.Helper()
	w, err := chain.NewWriter(db, g.Executor(), chain.DefaultWriterConfig(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	w.Start()
	t.Cleanup(w.Stop)
	return w
}

// CanonicalBlock reads canonical block n (header and body) of db.
func CanonicalBlock(t testing.TB, db *store.DB, n uint64) *chaintypes.Block {
	t.Helper()
	view, err := db.View()
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	h, err := chain.ViewHeaders{View: view}.HeaderByNumber(n)
	if err != nil {
		t.Fatal(err)
	}
	body, err := view.Body(n, h.Hash())
	if err != nil {
		t.Fatal(err)
	}
	return chaintypes.NewBlockWithHeader(h).WithBody(*body)
}

// ReexecuteOnConformance verifies and executes block (a block built on the
// conformance head, block 54) on a fresh copy of the imported conformance
// chain with the importer's rules (header rules, body roots, gas, receipts
// root, bloom, requests hash), failing the test if they reject it.
func ReexecuteOnConformance(t testing.TB, g *chain.Genesis, block *chaintypes.Block) *chain.ExecutedBlock {
	t.Helper()
	db, _ := ImportedStore(t)
	view, err := db.View()
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	headers := chain.ViewHeaders{View: view}
	parent, err := headers.HeaderByNumber(block.NumberU64() - 1)
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Executor().ExecuteBlock(block, parent, headers, view)
	if err != nil {
		t.Fatalf("the importer rejects block %d: %v", block.NumberU64(), err)
	}
	return res
}
