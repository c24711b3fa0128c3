package store

import (
	"bytes"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/trie"
)

// AccountProof is the material of an EIP-1186 answer (eth_getProof): the
// account as the state trie holds it, the trie nodes proving it (or its
// absence) from the state root, and each asked slot's value with the nodes
// of its storage trie proving it.
type AccountProof struct {
	// Account is nil when the account is absent.
	Account *types.StateAccount
	// Proof are the RLP nodes from the root to the account's leaf (or to
	// where its absence shows), go-ethereum's Trie.Prove order.
	Proof   [][]byte
	Storage []SlotProof
}

// SlotProof is one slot's value and proof (no proof when the account has
// no storage trie).
type SlotProof struct {
	Value common.Hash
	Proof [][]byte
}

// proofList collects Prove's nodes in order (an ethdb.KeyValueWriter).
type proofList [][]byte

func (l *proofList) Put(_ []byte, value []byte) error {
	*l = append(*l, bytes.Clone(value))
	return nil
}

func (l *proofList) Delete([]byte) error { return nil }

// Prove returns the proof of addr and of its slots at the trie's height,
// all read from the trie itself (values and proofs agree by construction).
// A slot of an account without storage has the zero value and no proof.
func (t *StateTrie) Prove(addr common.Address, slots []common.Hash) (*AccountProof, error) {
	if err := t.v.enter(); err != nil {
		return nil, err
	}
	defer t.v.exit()
	nr := newNodeReader(t.v.snap, t.v.db.nodes, t.height, t.under)
	defer nr.close()
	root, err := nr.root()
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*AccountProof, error) {
		return nil, fmt.Errorf("proof of %s at %d: %w", addr, t.height, err)
	}
	accounts, err := trie.NewStateTrie(trie.StateTrieID(root), nr)
	if err != nil {
		return fail(err)
	}
	out := &AccountProof{Storage: make([]SlotProof, len(slots))}
	if out.Account, err = accounts.GetAccount(addr); err != nil {
		return fail(err)
	}
	var proof proofList
	if err := accounts.Prove(crypto.Keccak256(addr[:]), &proof); err != nil {
		return fail(err)
	}
	out.Proof = proof
	if len(slots) == 0 || out.Account == nil || out.Account.Root == types.EmptyRootHash {
		return out, nil
	}
	st, err := trie.NewStateTrie(trie.StorageTrieID(root, crypto.Keccak256Hash(addr[:]), out.Account.Root), nr)
	if err != nil {
		return fail(err)
	}
	for i, slot := range slots {
		v, err := st.GetStorage(addr, slot[:])
		if err != nil {
			return fail(fmt.Errorf("slot %s: %w", slot, err))
		}
		out.Storage[i].Value = common.BytesToHash(v)
		var sp proofList
		if err := st.Prove(crypto.Keccak256(slot[:]), &sp); err != nil {
			return fail(fmt.Errorf("slot %s: %w", slot, err))
		}
		out.Storage[i].Proof = sp
	}
	return out, nil
}
