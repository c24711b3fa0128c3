package optest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// flatAccount is one account of a complete synthetic state.
type flatAccount struct {
	acc     store.Account
	storage map[common.Hash]common.Hash
}

// buildTrie hashes leaves with go-ethereum's StackTrie (a code path other
// than the trie.Trie updates PostStateRoot uses) and adds every hashed node
// to nodes.
func buildTrie(nodes map[common.Hash][]byte, leaves map[common.Hash][]byte) common.Hash {
	keys := slices.SortedFunc(maps.Keys(leaves), func(a, b common.Hash) int { return bytes.Compare(a[:], b[:]) })
	st := trie.NewStackTrie(func(_ []byte, hash common.Hash, blob []byte) {
		if crypto.Keccak256Hash(blob) == hash {
			nodes[hash] = common.CopyBytes(blob)
		}
	})
	for _, k := range keys {
		if err := st.Update(k[:], leaves[k]); err != nil {
			panic(err)
		}
	}
	return st.Hash()
}

// buildState returns the state root of a complete flat state and all its
// trie nodes plus code.
func buildState(state map[common.Address]flatAccount, codes map[common.Hash][]byte) (common.Hash, map[common.Hash][]byte) {
	nodes := make(map[common.Hash][]byte)
	maps.Copy(nodes, codes)
	accLeaves := make(map[common.Hash][]byte)
	for addr, fa := range state {
		slots := make(map[common.Hash][]byte)
		for k, v := range fa.storage {
			if v != (common.Hash{}) {
				enc, _ := rlp.EncodeToBytes(common.TrimLeftZeroes(v[:]))
				slots[crypto.Keccak256Hash(k[:])] = enc
			}
		}
		root := types.EmptyRootHash
		if len(slots) > 0 {
			root = buildTrie(nodes, slots)
		}
		enc, _ := rlp.EncodeToBytes(&types.StateAccount{Nonce: fa.acc.Nonce, Balance: fa.acc.Balance, Root: root, CodeHash: fa.acc.CodeHash[:]})
		accLeaves[crypto.Keccak256Hash(addr[:])] = enc
	}
	return buildTrie(nodes, accLeaves), nodes
}

// applyFlat applies diff to a copy of a complete flat state, in the order
// store.StateDiff documents.
func applyFlat(state map[common.Address]flatAccount, diff *store.StateDiff) map[common.Address]flatAccount {
	out := make(map[common.Address]flatAccount)
	for a, fa := range state {
		out[a] = flatAccount{fa.acc, maps.Clone(fa.storage)}
	}
	for a := range diff.Wiped {
		if fa, ok := out[a]; ok {
			out[a] = flatAccount{fa.acc, nil}
		}
	}
	for a, acc := range diff.Accounts {
		if acc == nil {
			delete(out, a)
			continue
		}
		fa := out[a]
		out[a] = flatAccount{*acc, fa.storage}
	}
	for a, slots := range diff.Storage {
		fa := out[a]
		if fa.storage == nil {
			fa.storage = make(map[common.Hash]common.Hash)
		}
		maps.Copy(fa.storage, slots)
		out[a] = fa
	}
	return out
}

func acct(nonce, bal uint64, code common.Hash) store.Account {
	return store.Account{Nonce: nonce, Balance: uint256.NewInt(bal), CodeHash: code}
}

func slot(i uint64) common.Hash { return common.BigToHash(new(big.Int).SetUint64(i)) }

// synthetic builds a Fixture over a complete synthetic state with enough
// accounts and slots for the tries to have branches, extensions and
// hashed (not embedded) nodes.
func synthetic(t *testing.T) (*Fixture, map[common.Address]flatAccount) {
	t.Helper()
	code := []byte{0x60, 0x00, 0x60, 0x00, 0xf3}
	codeHash := crypto.Keccak256Hash(code)
	state := make(map[common.Address]flatAccount)
	for i := uint64(1); i <= 40; i++ {
		addr := common.BigToAddress(new(big.Int).SetUint64(i * 7919))
		fa := flatAccount{acc: acct(i, i*1000, types.EmptyCodeHash)}
		if i%4 == 0 {
			fa.acc.CodeHash = codeHash
			fa.storage = make(map[common.Hash]common.Hash)
			for j := uint64(0); j < i; j++ {
				fa.storage[slot(j)] = common.BigToHash(new(big.Int).SetUint64(j*j + 1))
			}
		}
		state[addr] = fa
	}
	root, nodes := buildState(state, map[common.Hash][]byte{codeHash: code})
	return &Fixture{Parent: &types.Header{Root: root, Number: big.NewInt(1)}, Preimages: nodes}, state
}

func addr(i uint64) common.Address { return common.BigToAddress(new(big.Int).SetUint64(i * 7919)) }

func TestStateReadsSynthetic(t *testing.T) {
	f, state := synthetic(t)
	s := f.State()
	for a, fa := range state {
		got, err := s.Account(a)
		if err != nil {
			t.Fatal(err)
		}
		if got == nil || got.Nonce != fa.acc.Nonce || !got.Balance.Eq(fa.acc.Balance) || got.CodeHash != fa.acc.CodeHash {
			t.Fatalf("account %s: got %+v, want %+v", a, got, fa.acc)
		}
		for k, v := range fa.storage {
			if got, err := s.Storage(a, k); err != nil || got != v {
				t.Fatalf("storage %s %s: got %s, %v; want %s", a, k, got, err, v)
			}
		}
		if got, err := s.Storage(a, slot(1000)); err != nil || got != (common.Hash{}) {
			t.Fatalf("absent slot of %s: got %s, %v", a, got, err)
		}
		code, err := s.Code(fa.acc.CodeHash)
		if err != nil || crypto.Keccak256Hash(code) != fa.acc.CodeHash && fa.acc.CodeHash != types.EmptyCodeHash {
			t.Fatalf("code of %s: %x, %v", a, code, err)
		}
	}
	absent := common.HexToAddress("0x00000000000000000000000000000000deadbeef")
	if got, err := s.Account(absent); got != nil || err != nil {
		t.Fatalf("absent account: got %+v, %v; want nil, nil", got, err)
	}
	if got, err := s.Storage(absent, slot(0)); got != (common.Hash{}) || err != nil {
		t.Fatalf("storage of an absent account: got %s, %v", got, err)
	}
	if _, err := s.Code(common.Hash{1}); !errors.Is(err, ErrMissing) {
		t.Fatalf("unknown code: got %v, want ErrMissing", err)
	}
}

// TestStateMissingNode: removing any node on an account's or a slot's path
// makes the read fail with ErrMissing naming that node, never a zero.
func TestStateMissingNode(t *testing.T) {
	f, state := synthetic(t)
	a := addr(8)
	for _, tc := range []struct {
		name string
		key  []byte
		tr   func() (*trie.StateTrie, error)
		read func(*State) (any, error)
	}{
		{"account", crypto.Keccak256(a[:]), func() (*trie.StateTrie, error) {
			return trie.NewStateTrie(trie.StateTrieID(f.Parent.Root), nodeDB(f.Preimages))
		}, func(s *State) (any, error) { return s.Account(a) }},
		{"slot", crypto.Keccak256(slot(5).Bytes()), func() (*trie.StateTrie, error) {
			sa, err := f.State().account(a)
			if err != nil {
				return nil, err
			}
			return trie.NewStateTrie(trie.StorageTrieID(f.Parent.Root, crypto.Keccak256Hash(a[:]), sa.Root), nodeDB(f.Preimages))
		}, func(s *State) (any, error) { return s.Storage(a, slot(5)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := tc.tr()
			if err != nil {
				t.Fatal(err)
			}
			proof := make(proofList)
			if err := tr.Prove(tc.key, proof); err != nil {
				t.Fatal(err)
			}
			if len(proof) < 2 {
				t.Fatalf("proof of %d nodes: the test needs a deeper trie", len(proof))
			}
			for h := range proof {
				g := &Fixture{Parent: f.Parent, Preimages: maps.Clone(f.Preimages)}
				delete(g.Preimages, h)
				v, err := tc.read(g.State())
				if !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), strings.TrimPrefix(h.Hex(), "0x")) {
					t.Fatalf("node %s removed: got %v, %v; want ErrMissing naming it", h, v, err)
				}
				if _, err := g.PostStateRoot(storeDiffTouching(a, state[a].acc)); !errors.Is(err, ErrMissing) {
					t.Fatalf("node %s removed: PostStateRoot got %v, want ErrMissing", h, err)
				}
			}
		})
	}
}

// storeDiffTouching rewrites slot 5 of a and the account itself.
func storeDiffTouching(a common.Address, acc store.Account) *store.StateDiff {
	d := store.NewStateDiff()
	acc.Nonce++
	d.Accounts[a] = &acc
	d.Storage[a] = map[common.Hash]common.Hash{slot(5): {9}}
	return d
}

// proofList collects the hashed nodes of a go-ethereum proof.
type proofList map[common.Hash][]byte

func (p proofList) Put(k, v []byte) error { p[common.BytesToHash(k)] = v; return nil }
func (p proofList) Delete(k []byte) error { delete(p, common.BytesToHash(k)); return nil }

// TestPostStateRootSynthetic checks PostStateRoot on the partial-trie code
// path against the root of the complete post-state hashed from scratch.
func TestPostStateRootSynthetic(t *testing.T) {
	f, state := synthetic(t)
	codeHash := state[addr(4)].acc.CodeHash
	newAcc := func(n, b uint64, c common.Hash) *store.Account { a := acct(n, b, c); return &a }
	cases := []struct {
		name string
		diff func(d *store.StateDiff)
	}{
		{"empty", func(d *store.StateDiff) {}},
		{"balance", func(d *store.StateDiff) { d.Accounts[addr(3)] = newAcc(3, 1, types.EmptyCodeHash) }},
		{"slot set", func(d *store.StateDiff) {
			d.Storage[addr(8)] = map[common.Hash]common.Hash{slot(2): slot(7), slot(500): {8}}
		}},
		{"slot cleared", func(d *store.StateDiff) {
			d.Storage[addr(8)] = map[common.Hash]common.Hash{slot(0): {}, slot(3): {}}
		}},
		{"all slots cleared", func(d *store.StateDiff) {
			d.Storage[addr(4)] = map[common.Hash]common.Hash{slot(0): {}, slot(1): {}, slot(2): {}, slot(3): {}}
		}},
		{"deleted", func(d *store.StateDiff) {
			d.Accounts[addr(5)] = nil
			d.Accounts[addr(12)] = nil
			d.Wiped[addr(12)] = struct{}{}
		}},
		{"created with storage", func(d *store.StateDiff) {
			d.Accounts[addr(1000)] = newAcc(1, 0, codeHash)
			d.Storage[addr(1000)] = map[common.Hash]common.Hash{slot(1): slot(1), slot(2): {0}, slot(3): {3}}
		}},
		{"wiped and recreated", func(d *store.StateDiff) {
			d.Wiped[addr(16)] = struct{}{}
			d.Accounts[addr(16)] = newAcc(1, 5, codeHash)
			d.Storage[addr(16)] = map[common.Hash]common.Hash{slot(3): {3}}
		}},
		{"deleted absent", func(d *store.StateDiff) { d.Accounts[addr(2000)] = nil }},
		{"mixed", func(d *store.StateDiff) {
			for i := uint64(1); i <= 40; i += 3 {
				d.Accounts[addr(i)] = newAcc(i+1, i, state[addr(i)].acc.CodeHash)
			}
			d.Accounts[addr(2)] = nil
			d.Storage[addr(20)] = map[common.Hash]common.Hash{slot(19): {}, slot(1): {0xff}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := store.NewStateDiff()
			tc.diff(d)
			want, _ := buildState(applyFlat(state, d), nil)
			got, err := f.PostStateRoot(d)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("root %s, want %s", got, want)
			}
		})
	}
	bad := store.NewStateDiff()
	bad.Storage[addr(3000)] = map[common.Hash]common.Hash{slot(1): {1}}
	if _, err := f.PostStateRoot(bad); !errors.Is(err, ErrDiff) {
		t.Fatalf("storage of an absent account: got %v, want ErrDiff", err)
	}
	bad = store.NewStateDiff()
	bad.Accounts[addr(4)] = nil
	bad.Storage[addr(4)] = map[common.Hash]common.Hash{slot(1): {1}}
	if _, err := f.PostStateRoot(bad); !errors.Is(err, ErrDiff) {
		t.Fatalf("storage of a deleted account: got %v, want ErrDiff", err)
	}
}

// TestStateRealL1Block reads the L1Block predeploy of each fixture's
// parent state and checks it against the block's own L1-info deposit:
// when its sequence number is not zero, block N has the same L1 origin as
// its parent, so the parent's L1Block storage holds the same L1 number,
// timestamp and hash, and the previous sequence number.
func TestStateRealL1Block(t *testing.T) {
	checked := 0
	for _, n := range Blocks() {
		f := Load(t, n)
		s := f.State()
		acc, err := s.Account(L1Block)
		if err != nil || acc == nil || acc.CodeHash == types.EmptyCodeHash {
			t.Fatalf("block %d: L1Block account %+v, %v", n, acc, err)
		}
		if code, err := s.Code(acc.CodeHash); err != nil || len(code) == 0 {
			t.Fatalf("block %d: L1Block code: %d bytes, %v", n, len(code), err)
		}
		dep, ok := f.Attributes.Transactions[0].(*chaintypes.Deposit)
		if !ok {
			t.Fatalf("block %d: first transaction is %T", n, f.Attributes.Transactions[0])
		}
		// setL1BlockValuesEcotone: selector(4) baseFeeScalar(4)
		// blobBaseFeeScalar(4) sequenceNumber(8) timestamp(8) number(8)
		// basefee(32) blobBaseFee(32) hash(32) batcherHash(32).
		data := dep.Data()
		if len(data) != 164 {
			t.Fatalf("block %d: L1-info calldata of %d bytes", n, len(data))
		}
		seq := binary.BigEndian.Uint64(data[12:20])
		ts := binary.BigEndian.Uint64(data[20:28])
		num := binary.BigEndian.Uint64(data[28:36])
		hash := common.BytesToHash(data[100:132])
		read := func(i uint64) common.Hash {
			v, err := s.Storage(L1Block, slot(i))
			if err != nil {
				t.Fatalf("block %d: L1Block slot %d: %v", n, i, err)
			}
			return v
		}
		s0, s2, s3 := read(0), read(2), read(3)
		gotNum, gotTS := binary.BigEndian.Uint64(s0[24:32]), binary.BigEndian.Uint64(s0[16:24])
		gotSeq := binary.BigEndian.Uint64(s3[24:32])
		t.Logf("block %d: deposit seq %d origin %d; parent L1Block seq %d origin %d", n, seq, num, gotSeq, gotNum)
		if seq == 0 {
			if gotNum >= num {
				t.Errorf("block %d starts L1 origin %d but its parent's is %d", n, num, gotNum)
			}
			continue
		}
		checked++
		if gotNum != num || gotTS != ts || s2 != hash || gotSeq != seq-1 {
			t.Errorf("block %d: parent L1Block (number %d, time %d, hash %s, seq %d), deposit says (%d, %d, %s, %d)", n, gotNum, gotTS, s2, gotSeq, num, ts, hash, seq)
		}
	}
	if checked == 0 {
		t.Fatal("no fixture continues its parent's L1 origin: nothing compared")
	}
}

// TestPostStateRootReal: on the real partial tries, the empty diff and a
// diff rewriting values to what they already are give the parent's root;
// changing one slot of L1Block gives another root, the same every time.
func TestPostStateRootReal(t *testing.T) {
	for _, n := range Blocks() {
		f := Load(t, n)
		s := f.State()
		root, err := f.PostStateRoot(store.NewStateDiff())
		if err != nil || root != f.Parent.Root {
			t.Fatalf("block %d: empty diff gives %s, %v; want the parent root %s", n, root, err, f.Parent.Root)
		}
		acc, err := s.Account(L1Block)
		if err != nil {
			t.Fatal(err)
		}
		v, err := s.Storage(L1Block, slot(2))
		if err != nil {
			t.Fatal(err)
		}
		same := store.NewStateDiff()
		same.Accounts[L1Block] = acc
		same.Storage[L1Block] = map[common.Hash]common.Hash{slot(2): v}
		if root, err := f.PostStateRoot(same); err != nil || root != f.Parent.Root {
			t.Fatalf("block %d: rewriting L1Block unchanged gives %s, %v; want %s", n, root, err, f.Parent.Root)
		}
		changed := store.NewStateDiff()
		changed.Storage[L1Block] = map[common.Hash]common.Hash{slot(2): slot(0x42)}
		r1, err := f.PostStateRoot(changed)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := f.PostStateRoot(changed)
		if err != nil {
			t.Fatal(err)
		}
		if r1 == f.Parent.Root || r1 != r2 {
			t.Fatalf("block %d: changed slot gives %s then %s (parent %s)", n, r1, r2, f.Parent.Root)
		}
		// The state reader is unaffected by PostStateRoot.
		if again, err := s.Storage(L1Block, slot(2)); err != nil || again != v {
			t.Fatalf("block %d: slot reads %s, %v after PostStateRoot; want %s", n, again, err, v)
		}
	}
}

// TestStateConcurrent: a State may be shared by goroutines (run with -race).
func TestStateConcurrent(t *testing.T) {
	f, state := synthetic(t)
	s := f.State()
	done := make(chan error)
	for g := 0; g < 4; g++ {
		go func() {
			for a, fa := range state {
				if _, err := s.Account(a); err != nil {
					done <- err
					return
				}
				for k, v := range fa.storage {
					if got, err := s.Storage(a, k); err != nil || got != v {
						done <- fmt.Errorf("storage %s %s: %s, %v", a, k, got, err)
						return
					}
				}
			}
			done <- nil
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
