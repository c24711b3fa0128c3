package eth

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/consensus/beacon"
	"github.com/ethereum/go-ethereum/consensus/ethash"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethdb/memorydb"
	"github.com/ethereum/go-ethereum/trie"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/rpc"
	"github.com/tipnode/tipnode/store"
)

// proofResult is an eth_getProof answer as go-ethereum's internal/ethapi
// AccountResult decodes it (the tests' reading of tipnode's answers).
type proofResult struct {
	Address      common.Address `json:"address"`
	AccountProof []string       `json:"accountProof"`
	Balance      *hexutil.Big   `json:"balance"`
	CodeHash     common.Hash    `json:"codeHash"`
	Nonce        hexutil.Uint64 `json:"nonce"`
	StorageHash  common.Hash    `json:"storageHash"`
	StorageProof []struct {
		Key   string       `json:"key"`
		Value *hexutil.Big `json:"value"`
		Proof []string     `json:"proof"`
	} `json:"storageProof"`
}

// gethProofList collects go-ethereum's Prove output as hex strings.
type gethProofList []string

func (l *gethProofList) Put(_ []byte, v []byte) error {
	*l = append(*l, hexutil.Encode(v))
	return nil
}
func (l *gethProofList) Delete([]byte) error { return nil }

// gethProof is what go-ethereum's eth_getProof answers (internal/ethapi
// GetProof, read for behaviour: its state and tries, the same encoding
// rules) on its own archive chain at root, built here from go-ethereum's
// own state database.
func gethProof(t *testing.T, bc *core.BlockChain, hdr *types.Header, addr common.Address, keys []string) string {
	t.Helper()
	root := hdr.Root
	st, err := bc.StateAt(root, hdr.Number, hdr.Time)
	if err != nil {
		t.Fatal(err)
	}
	type slotRes struct {
		Key   string       `json:"key"`
		Value *hexutil.Big `json:"value"`
		Proof []string     `json:"proof"`
	}
	res := struct {
		Address      common.Address `json:"address"`
		AccountProof []string       `json:"accountProof"`
		Balance      *hexutil.Big   `json:"balance"`
		CodeHash     common.Hash    `json:"codeHash"`
		Nonce        hexutil.Uint64 `json:"nonce"`
		StorageHash  common.Hash    `json:"storageHash"`
		StorageProof []slotRes      `json:"storageProof"`
	}{Address: addr, Balance: (*hexutil.Big)(st.GetBalance(addr).ToBig()), CodeHash: st.GetCodeHash(addr),
		Nonce: hexutil.Uint64(st.GetNonce(addr)), StorageHash: st.GetStorageRoot(addr), StorageProof: []slotRes{}}
	for _, k := range keys {
		key, n, err := proofKey(k)
		if err != nil {
			t.Fatal(err)
		}
		out := hexutil.Encode(key[:])
		if n != 32 {
			out = hexutil.EncodeBig(key.Big())
		}
		sr := slotRes{Key: out, Value: &hexutil.Big{}, Proof: []string{}}
		if r := res.StorageHash; r != types.EmptyRootHash && r != (common.Hash{}) {
			tr, err := st.Database().OpenStorageTrie(root, addr, r, nil)
			if err != nil {
				t.Fatal(err)
			}
			var p gethProofList
			if err := tr.Prove(crypto.Keccak256(key[:]), &p); err != nil {
				t.Fatal(err)
			}
			sr.Proof, sr.Value = p, (*hexutil.Big)(st.GetState(addr, key).Big())
		}
		res.StorageProof = append(res.StorageProof, sr)
	}
	tr, err := st.Database().OpenTrie(root)
	if err != nil {
		t.Fatal(err)
	}
	var p gethProofList
	if err := tr.Prove(crypto.Keccak256(addr[:]), &p); err != nil {
		t.Fatal(err)
	}
	res.AccountProof = p
	enc, _ := json.Marshal(res)
	return string(enc)
}

// TestGetProofMatchesGeth: eth_getProof on the imported conformance chain
// answers exactly what go-ethereum answers on the same chain, for every
// account of the state (with and without storage), an absent account,
// present and absent slots, keys given in full and as short quantities,
// at the head, at an older block by number and by hash, and at safe and
// finalized, byte for byte (the answer is written without encoding/json);
// every account and slot proof verifies against the header's state root.
func TestGetProofMatchesGeth(t *testing.T) {
	db, g := chaintest.ImportedStore(t)
	_, url := startNode(t, db, g, nil)
	spec, err := os.ReadFile(filepath.Join(chaintest.Dir(t), "chain", "genesis.json"))
	if err != nil {
		t.Fatal(err)
	}
	var gspec core.Genesis
	if err := json.Unmarshal(spec, &gspec); err != nil {
		t.Fatal(err)
	}
	bc, err := core.NewBlockChain(rawdb.NewMemoryDatabase(), &gspec, beacon.New(ethash.NewFaker()), core.DefaultConfig().WithArchive(true))
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Stop()
	var blocks []*types.Block
	for _, b := range chaintest.Blocks(t) {
		eb, _ := b.Eth()
		blocks = append(blocks, eb)
	}
	if n, err := bc.InsertChain(blocks); err != nil {
		t.Fatalf("go-ethereum import of block %d: %v", n, err)
	}
	view, err := db.View()
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	type acct struct {
		addr  common.Address
		slots []common.Hash
	}
	state := func(n uint64) []acct {
		st, err := view.StateAt(n)
		if err != nil {
			t.Fatal(err)
		}
		var out []acct
		err = st.ForEachAccount(func(a common.Address, _ *store.Account) error {
			ac := acct{addr: a}
			err := st.ForEachStorage(a, func(k, _ common.Hash) error {
				if len(ac.slots) < 3 {
					ac.slots = append(ac.slots, k)
				}
				return nil
			})
			out = append(out, ac)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	call := func(params string) []byte {
		t.Helper()
		_, body := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"eth_getProof","params":`+params+`}`)
		r := parseResp(t, body)
		if r.Error != nil {
			t.Fatalf("eth_getProof %s: %v", params, r.Error)
		}
		return r.Result
	}
	checked := 0
	for _, at := range []struct {
		n   uint64
		sel string
	}{{54, `"latest"`}, {54, `"safe"`}, {54, `"finalized"`}, {20, `"0x14"`}, {33, ""}} {
		hdr := blocks[at.n-1].Header()
		sel := at.sel
		if sel == "" {
			sel = `{"blockHash":"` + hdr.Hash().Hex() + `"}`
		}
		accounts := append(state(at.n), acct{addr: common.HexToAddress("0x00000000000000000000000000000000deadbeef")})
		for _, a := range accounts {
			keys := []string{common.Hash{0xab}.Hex(), "0x0", "0x1", "0x02"}
			for _, s := range a.slots {
				keys = append(keys, s.Hex(), hexutil.EncodeBig(s.Big()))
			}
			kj, _ := json.Marshal(keys)
			got := call(fmt.Sprintf(`[%q,%s,%s]`, a.addr.Hex(), kj, sel))
			want := gethProof(t, bc, hdr, a.addr, keys)
			if string(got) != want { // byte for byte, not only as JSON
				t.Fatalf("block %d %s account %s:\n got %s\nwant %s", at.n, sel, a.addr, got, want)
			}
			verifyProof(t, got, hdr.Root)
			checked++
		}
	}
	t.Logf("%d answers equal to go-ethereum's", checked)
}

// verifyProof checks an eth_getProof answer with go-ethereum's
// trie.VerifyProof against root: the account and every slot.
func verifyProof(t *testing.T, answer []byte, root common.Hash) {
	t.Helper()
	var r proofResult
	if err := json.Unmarshal(answer, &r); err != nil {
		t.Fatal(err)
	}
	db := func(proof []string) *memorydb.Database {
		m := memorydb.New()
		for _, n := range proof {
			b := common.FromHex(n)
			m.Put(crypto.Keccak256(b), b)
		}
		return m
	}
	if _, err := trie.VerifyProof(root, crypto.Keccak256(r.Address[:]), db(r.AccountProof)); err != nil {
		t.Fatalf("account proof of %s: %v", r.Address, err)
	}
	for _, s := range r.StorageProof {
		if len(s.Proof) == 0 {
			continue
		}
		key, _, _ := proofKey(s.Key)
		if _, err := trie.VerifyProof(r.StorageHash, crypto.Keccak256(key[:]), db(s.Proof)); err != nil {
			t.Fatalf("slot %s of %s: %v", s.Key, r.Address, err)
		}
	}
}

// TestGetProofRefusals: malformed keys, too many keys and a block outside
// the trie's window are refused with clear messages; the window's oldest
// block is served.
func TestGetProofRefusals(t *testing.T) {
	db, g := chaintest.ImportedStore(t)
	api, url := startNode(t, db, g, nil)
	// A window of 10 blocks: re-importing the last 14 blocks prunes the
	// trie's versions below block 44.
	db.SetTrieWindow(10)
	w := writerOf(api)
	if err := w.UnwindTo(40, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Import(chaintest.Blocks(t)[40:], chain.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	if base, ok := db.TrieBase(); !ok || base != 44 {
		t.Fatalf("trie base %d %v, want 44", base, ok)
	}
	_, body := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"eth_getProof","params":["0x7dcd17433742f4c0ca53122ab541d0ba67fc27df",["0x0"],"0x2c"]}`)
	if r := parseResp(t, body); r.Error != nil {
		t.Fatalf("at the window's oldest block: %v", r.Error)
	}
	many := make([]string, MaxProofKeys+1)
	for i := range many {
		many[i] = "0x1"
	}
	mj, _ := json.Marshal(many)
	for _, c := range []struct {
		params string
		code   int
		msg    string
	}{
		{`["0x7dcd17433742f4c0ca53122ab541d0ba67fc27df",["0xzz"],"latest"]`, rpc.CodeInvalidParams, "invalid hex in storage key"},
		{`["0x7dcd17433742f4c0ca53122ab541d0ba67fc27df",["0x` + strings.Repeat("11", 33) + `"],"latest"]`, rpc.CodeInvalidParams, "storage key too long"},
		{`["0x7dcd17433742f4c0ca53122ab541d0ba67fc27df",` + string(mj) + `,"latest"]`, rpc.CodeInvalidParams, "too many storage keys requested (max 1024, got 1025)"},
		{`["0x7dcd17433742f4c0ca53122ab541d0ba67fc27df",[],"0x2b"]`, rpc.CodeServerError, "no state proof at block 43: proofs are served for blocks 44 to 54"},
		{`["0x7dcd17433742f4c0ca53122ab541d0ba67fc27df",[],"0x99"]`, rpc.CodeHeaderNotFound, "header not found"},
		{`["0x7dcd",[],"latest"]`, rpc.CodeInvalidParams, "address"},
	} {
		_, body := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"eth_getProof","params":`+c.params+`}`)
		r := parseResp(t, body)
		if r.Error == nil || r.Error.Code != c.code || !strings.Contains(r.Error.Message, c.msg) {
			t.Errorf("%s: %s, want code %d mentioning %q", clip(c.params), body, c.code, c.msg)
		}
	}
}
