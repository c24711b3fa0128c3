package chaingen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/consensus/beacon"
	"github.com/ethereum/go-ethereum/consensus/ethash"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/ethereum/go-ethereum/triedb"
	"github.com/rs/zerolog"
)

// tinyConfig is a chain small enough for every test run.
func tinyConfig() Config {
	return Config{Slots: 400, Tokens: 2, Blocks: 3, TxsPerBlock: 12, Senders: 3, Requests: 40, Seed: 1}
}

// generated is the tiny chain, generated once and imported into
// go-ethereum's BlockChain (the oracle: a chain it accepts is valid).
var generated struct {
	once  sync.Once
	dir   string
	m     *Manifest
	chain *core.BlockChain
	err   error
}

func tinyChain(t *testing.T) (string, *Manifest, *core.BlockChain) {
	t.Helper()
	generated.once.Do(func() {
		dir, err := os.MkdirTemp("", "chaingen-test-")
		if err != nil {
			generated.err = err
			return
		}
		generated.dir = dir
		generated.m, generated.err = Generate(tinyConfig(), dir, zerolog.Nop())
		if generated.err != nil {
			return
		}
		generated.chain, generated.err = importIntoGeth(dir)
	})
	if generated.err != nil {
		t.Fatal(generated.err)
	}
	return generated.dir, generated.m, generated.chain
}

func TestMain(m *testing.M) {
	code := m.Run()
	if generated.chain != nil {
		generated.chain.Stop()
	}
	if generated.dir != "" {
		os.RemoveAll(generated.dir)
	}
	os.Exit(code)
}

// importIntoGeth inits go-ethereum's BlockChain from dir's genesis file and
// inserts every block of its chain file.
func importIntoGeth(dir string) (*core.BlockChain, error) {
	spec, err := os.ReadFile(filepath.Join(dir, GenesisFile))
	if err != nil {
		return nil, err
	}
	var g core.Genesis
	if err := json.Unmarshal(spec, &g); err != nil {
		return nil, err
	}
	bc, err := core.NewBlockChain(rawdb.NewMemoryDatabase(), &g, beacon.New(ethash.NewFaker()), core.DefaultConfig())
	if err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(dir, ChainFile))
	if err != nil {
		bc.Stop()
		return nil, err
	}
	defer f.Close()
	var blocks types.Blocks
	s := rlp.NewStream(bufio.NewReader(f), 0)
	for {
		var b types.Block
		if err := s.Decode(&b); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			bc.Stop()
			return nil, err
		}
		blocks = append(blocks, &b)
	}
	if n, err := bc.InsertChain(blocks); err != nil {
		bc.Stop()
		return nil, errors.Join(errors.New("block "+big.NewInt(int64(n)).String()+" refused"), err)
	}
	return bc, nil
}

func TestGenerateIsDeterministic(t *testing.T) {
	dir, m, _ := tinyChain(t)
	again := t.TempDir()
	m2, err := Generate(tinyConfig(), again, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if *m != *m2 {
		t.Fatalf("manifests differ:\n%+v\n%+v", m, m2)
	}
	for _, name := range []string{GenesisFile, ChainFile, ManifestFile} {
		a, _ := os.ReadFile(filepath.Join(dir, name))
		b, _ := os.ReadFile(filepath.Join(again, name))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s: %d and %d bytes, not identical", name, len(a), len(b))
		}
	}
}

func TestManifest(t *testing.T) {
	dir, m, bc := tinyChain(t)
	c := tinyConfig()
	head := bc.CurrentBlock()
	if m.Head != uint64(c.Blocks) || head.Number.Uint64() != m.Head || head.Hash() != m.HeadHash {
		t.Fatalf("manifest head %d %s, go-ethereum's head %d %s", m.Head, m.HeadHash, head.Number, head.Hash())
	}
	if m.GenesisHash != bc.Genesis().Hash() {
		t.Fatalf("manifest genesis %s, go-ethereum's %s", m.GenesisHash, bc.Genesis().Hash())
	}
	if m.Txs != c.Blocks*c.TxsPerBlock || m.Gas == 0 {
		t.Fatalf("manifest txs %d gas %d", m.Txs, m.Gas)
	}
	// balances + totalSupply + the senders' balances on every token.
	if want := c.Tokens * (c.HoldersPerToken() + c.Senders + 1); m.GenesisSlots != want {
		t.Fatalf("genesis slots %d, want %d", m.GenesisSlots, want)
	}
	if _, err := ReadManifest(dir, c); err != nil {
		t.Fatal(err)
	}
	other := c
	other.Blocks++
	if _, err := ReadManifest(dir, other); !errors.Is(err, ErrManifest) {
		t.Fatalf("manifest of another config accepted: %v", err)
	}
}

// headState is go-ethereum's state at the tiny chain's head.
func headState(t *testing.T) (*state.StateDB, *types.Header) {
	_, _, bc := tinyChain(t)
	st, err := bc.State()
	if err != nil {
		t.Fatal(err)
	}
	return st, bc.CurrentBlock()
}

func TestBlocksCreateHolders(t *testing.T) {
	st, _ := headState(t)
	c := tinyConfig()
	news := NewHolders(c)
	if len(news) == 0 {
		t.Fatal("no new holders planned")
	}
	for n := 1; n <= c.Blocks; n++ {
		for j := 0; j < c.TxsPerBlock; j++ {
			p := Plan(c, n, j)
			switch p.Kind {
			case TokenToNew:
				if got := st.GetState(TokenAddress(p.Token), BalanceSlot(p.To)).Big(); got.Cmp(p.Amount) != 0 {
					t.Errorf("block %d tx %d: new holder balance %v, want %v", n, j, got, p.Amount)
				}
			case EtherToNew:
				if got := st.GetBalance(p.To).ToBig(); got.Cmp(p.Amount) != 0 {
					t.Errorf("block %d tx %d: new account balance %v, want %v", n, j, got, p.Amount)
				}
			}
		}
	}
}

// call runs a read-only call against the head state.
func call(t *testing.T, to common.Address, data []byte) ([]byte, error) {
	st, head := headState(t)
	_, _, bc := tinyChain(t)
	evm := vm.NewEVM(core.NewEVMBlockContext(head, bc, nil), st.Copy(), bc.Config(), vm.Config{})
	ret, _, err := evm.StaticCall(common.Address{1}, to, data, vm.NewGasBudget(50_000_000, 0))
	return ret, err
}

func TestContracts(t *testing.T) {
	st, _ := headState(t)
	c := tinyConfig()
	holders := []common.Address{Holder(0), Holder(1), Holder(c.HoldersPerToken() - 1), NewHolder(1, 0), Holder(3)}
	for tok := 0; tok < c.Tokens; tok++ {
		// balanceOf reads the slot the generator wrote.
		for i, h := range holders {
			ret, err := call(t, TokenAddress(tok), BalanceOfData(h))
			if err != nil {
				t.Fatal(err)
			}
			if want := st.GetState(TokenAddress(tok), BalanceSlot(h)).Big(); new(big.Int).SetBytes(ret).Cmp(want) != 0 {
				t.Errorf("token %d holder %d: balanceOf %x, slot %v", tok, i, ret, want)
			}
		}
		// heavy matches the same arithmetic in big.Int.
		ret, err := call(t, TokenAddress(tok), HeavyData(holders))
		if err != nil {
			t.Fatal(err)
		}
		want := heavyReference(func(h common.Address) *big.Int { return st.GetState(TokenAddress(tok), BalanceSlot(h)).Big() }, holders)
		if got := new(big.Int).SetBytes(ret); got.Cmp(want) != 0 || want.Sign() == 0 {
			t.Errorf("token %d: heavy = %v, want %v", tok, got, want)
		}
	}
	// fail reverts with its reason.
	for code, reason := range map[uint64]string{4: "BenchToken: even code refused", 7: "BenchToken: odd code refused"} {
		ret, err := call(t, TokenAddress(0), FailData(code))
		if !errors.Is(err, vm.ErrExecutionReverted) {
			t.Fatalf("fail(%d): %v, want a revert", code, err)
		}
		if got, err := abi.UnpackRevert(ret); err != nil || got != reason {
			t.Errorf("fail(%d) reason %q (%v), want %q", code, got, err, reason)
		}
	}
	// aggregate returns each balanceOf.
	var calls []MulticallCall
	for tok := 0; tok < c.Tokens; tok++ {
		for _, h := range holders {
			calls = append(calls, MulticallCall{TokenAddress(tok), BalanceOfData(h)})
		}
	}
	ret, err := call(t, MulticallAddress, AggregateData(calls))
	if err != nil {
		t.Fatal(err)
	}
	out, err := MulticallABI.Unpack("aggregate", ret)
	if err != nil {
		t.Fatal(err)
	}
	results := out[0].([][]byte)
	if len(results) != len(calls) {
		t.Fatalf("aggregate: %d results for %d calls", len(results), len(calls))
	}
	for i, r := range results {
		tok, h := i/len(holders), holders[i%len(holders)]
		if want := st.GetState(TokenAddress(tok), BalanceSlot(h)).Big(); new(big.Int).SetBytes(r).Cmp(want) != 0 {
			t.Errorf("aggregate result %d = %x, want %v", i, r, want)
		}
	}
}

// heavyReference is BenchToken.heavy in big.Int arithmetic.
func heavyReference(balance func(common.Address) *big.Int, holders []common.Address) *big.Int {
	big0 := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(19))
	e36 := new(big.Int).Exp(big.NewInt(10), big.NewInt(36), nil)
	e40 := new(big.Int).Exp(big.NewInt(10), big.NewInt(40), nil)
	acc := new(big.Int)
	for i, h := range holders {
		b := balance(h)
		x1 := new(big.Int).Div(new(big.Int).Mul(b, big.NewInt(997)), big.NewInt(1000))
		x2 := new(big.Int).Div(new(big.Int).Mul(new(big.Int).Add(b, big.NewInt(1)), big0), e36)
		d := new(big.Int).Add(e40, big.NewInt(int64(i)))
		x3 := new(big.Int).Div(new(big.Int).Mul(x2, new(big.Int).Or(x1, big.NewInt(1))), d)
		acc.Add(acc, x3)
	}
	return acc
}

func TestRequestFiles(t *testing.T) {
	c := tinyConfig()
	a, b := t.TempDir(), t.TempDir()
	if err := WriteRequests(c, a); err != nil {
		t.Fatal(err)
	}
	if err := WriteRequests(c, b); err != nil {
		t.Fatal(err)
	}
	other := c
	other.Seed = 2
	o := t.TempDir()
	if err := WriteRequests(other, o); err != nil {
		t.Fatal(err)
	}
	st, _ := headState(t)
	for _, w := range Workloads() {
		x, err := os.ReadFile(RequestsFile(a, w.Name))
		if err != nil {
			t.Fatal(err)
		}
		y, _ := os.ReadFile(RequestsFile(b, w.Name))
		if !bytes.Equal(x, y) {
			t.Errorf("%s: two runs with the same config differ", w.Name)
		}
		if z, _ := os.ReadFile(RequestsFile(o, w.Name)); bytes.Equal(x, z) && w.Name != "chainid" && w.Name != "blocknumber" {
			t.Errorf("%s: another seed gives the same requests", w.Name)
		}
		lines := strings.Split(strings.TrimSuffix(string(x), "\n"), "\n")
		if len(lines) != c.Lines(w) {
			t.Fatalf("%s: %d lines, want %d", w.Name, len(lines), c.Lines(w))
		}
		distinct := map[string]bool{}
		for _, line := range lines {
			distinct[line] = true
			checkRequestLine(t, w, line, st)
		}
		if w.Name != "chainid" && w.Name != "blocknumber" && len(distinct) < len(lines)/4 {
			t.Errorf("%s: only %d distinct requests of %d", w.Name, len(distinct), len(lines))
		}
	}
}

type testRequest struct {
	JSONRPC string            `json:"jsonrpc"`
	ID      int               `json:"id"`
	Method  string            `json:"method"`
	Params  []json.RawMessage `json:"params"`
}

// checkRequestLine checks one line is a well-formed request and that the
// state it reads exists: storage reads name non-zero slots of the head state
// (every holder sampled has a balance there).
func checkRequestLine(t *testing.T, w Workload, line string, st *state.StateDB) {
	t.Helper()
	if w.Batch {
		var batch []testRequest
		if err := json.Unmarshal([]byte(line), &batch); err != nil || len(batch) != BatchSize {
			t.Fatalf("%s: not a batch of %d: %v", w.Name, BatchSize, err)
		}
		ids := map[int]bool{}
		for _, r := range batch {
			ids[r.ID] = true
		}
		if len(ids) != BatchSize {
			t.Fatalf("%s: batch ids repeat", w.Name)
		}
		return
	}
	if !strings.HasPrefix(line, RequestPrefix) {
		t.Fatalf("%s: line does not start with %s: %.60s", w.Name, RequestPrefix, line)
	}
	var r testRequest
	if err := json.Unmarshal([]byte(line), &r); err != nil || r.JSONRPC != "2.0" || r.Method == "" {
		t.Fatalf("%s: bad request %.80s: %v", w.Name, line, err)
	}
	if r.Method != "eth_getStorageAt" {
		return
	}
	var addr common.Address
	var slot common.Hash
	var block string
	if json.Unmarshal(r.Params[0], &addr) != nil || json.Unmarshal(r.Params[1], &slot) != nil || json.Unmarshal(r.Params[2], &block) != nil {
		t.Fatalf("%s: bad params %s", w.Name, line)
	}
	if st.GetState(addr, slot) == (common.Hash{}) {
		t.Errorf("%s: slot %s of %s is empty at the head", w.Name, slot, addr)
	}
	switch w.Name {
	case "storage-past":
		n, err := hexutil.DecodeUint64(block)
		if err != nil || n > uint64(tinyConfig().Blocks) {
			t.Errorf("%s: block %q out of range", w.Name, block)
		}
	case "storage-pending":
		if block != "pending" {
			t.Errorf("%s: block %q", w.Name, block)
		}
	default:
		if block != "latest" {
			t.Errorf("%s: block %q", w.Name, block)
		}
	}
}

// TestWriteGenesisJSON checks the streamed genesis against json.Marshal
// (the oracle: the bytes genesis.json held before it was streamed).
func TestWriteGenesisJSON(t *testing.T) {
	code := []byte{0x60, 0x00}
	slot := func(b byte) common.Hash { return common.Hash{31: b} }
	withAlloc := func(alloc types.GenesisAlloc) *core.Genesis {
		g := BuildGenesis(tinyConfig())
		g.Alloc = alloc
		return g
	}
	tests := []struct {
		name string
		g    *core.Genesis
	}{
		{"tiny config", BuildGenesis(tinyConfig())},
		{"quick config", BuildGenesis(QuickConfig())},
		{"empty alloc", withAlloc(types.GenesisAlloc{})},
		{"storage without code", withAlloc(types.GenesisAlloc{
			{1}: {Balance: big.NewInt(1), Storage: map[common.Hash]common.Hash{slot(2): slot(9), slot(1): {}, {0xff}: slot(1)}},
		})},
		{"empty storage map, nonce 0", withAlloc(types.GenesisAlloc{
			{2}: {Balance: big.NewInt(0), Code: code, Storage: map[common.Hash]common.Hash{}},
			{1}: {Balance: big.NewInt(5), Nonce: 3},
		})},
		{"zero slot", withAlloc(types.GenesisAlloc{
			{0xab}: {Balance: big.NewInt(1), Code: code, Nonce: 1, Storage: map[common.Hash]common.Hash{{}: {}, slot(3): slot(4)}},
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := json.Marshal(tt.g)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := WriteGenesisJSON(&got, tt.g, zerolog.Nop()); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				n := 0
				for n < min(got.Len(), len(want)) && got.Bytes()[n] == want[n] {
					n++
				}
				t.Fatalf("streamed genesis differs from json.Marshal at byte %d of %d/%d:\n got %.120s\nwant %.120s", n, got.Len(), len(want), got.Bytes()[n:], want[n:])
			}
		})
	}
}

// TestGenerateRemovesItsDatabase checks the temporary chain database is gone
// after a successful run and after a failed one.
func TestGenerateRemovesItsDatabase(t *testing.T) {
	dir, _, _ := tinyChain(t)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() || strings.Contains(e.Name(), ".tmp") {
			t.Errorf("%s left in the output directory", e.Name())
		}
	}

	// Senders without ether: the first planned transaction fails.
	c := tinyConfig()
	g := BuildGenesis(c)
	for i := 0; i < c.Senders; i++ {
		a := g.Alloc[crypto.PubkeyToAddress(SenderKey(i).PublicKey)]
		a.Balance = new(big.Int)
		g.Alloc[crypto.PubkeyToAddress(SenderKey(i).PublicKey)] = a
	}
	failed := t.TempDir()
	if _, err := generateBlocks(c, g, failed, zerolog.Nop()); err == nil {
		t.Fatal("blocks generated by senders without ether")
	}
	if entries, err := os.ReadDir(failed); err != nil || len(entries) != 0 {
		t.Fatalf("after a failed run the output directory holds %v (%v)", entries, err)
	}
}

// TestCommitGenesisInChunks checks the chunked commit against go-ethereum's
// own genesis block (Genesis.ToBlock hashes the whole alloc at once), for
// chunks that split accounts' storage and one that holds all of it, and
// that the committed state reads back.
func TestCommitGenesisInChunks(t *testing.T) {
	c := tinyConfig()
	want := BuildGenesis(c).ToBlock()
	for _, chunk := range []int{1, 7, 150, 1 << 20} {
		t.Run(big.NewInt(int64(chunk)).String(), func(t *testing.T) {
			db := rawdb.NewMemoryDatabase()
			g := BuildGenesis(c)
			got, err := commitGenesis(g, db, chunk, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			if got.Hash() != want.Hash() || got.Root() != want.Root() {
				t.Fatalf("genesis %s root %s, want %s root %s", got.Hash(), got.Root(), want.Hash(), want.Root())
			}
			sdb, err := state.New(got.Root(), state.NewDatabase(triedb.NewDatabase(db, triedb.HashDefaults), nil))
			if err != nil {
				t.Fatal(err)
			}
			for a, acct := range BuildGenesis(c).Alloc {
				for k, v := range acct.Storage {
					if sdb.GetState(a, k) != v {
						t.Fatalf("%s slot %s: %s, want %s", a, k, sdb.GetState(a, k), v)
					}
				}
			}
		})
	}
}
