package store

import (
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"
)

// AccountProof is the material of an EIP-1186 answer (eth_getProof): the
// account as the state trie holds it, the trie nodes proving it (or its
// absence) from the state root, and each asked slot's value with the nodes
// of its storage trie proving it. The node blobs may be shared with the
// node cache: read-only.
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

// Prove returns the proof of addr and of its slots at the trie's height,
// all read from the trie itself (values and proofs agree by construction).
// A slot of an account without storage has the zero value and no proof.
// The state root is the hash of the root node stored at the height.
func (t *StateTrie) Prove(addr common.Address, slots []common.Hash) (*AccountProof, error) {
	return t.prove(nil, addr, slots)
}

// ProveAgainst is Prove when the caller knows the state root at the
// trie's height (the block header's): the root node is then read by its
// hash, from the node cache when it holds it, and a root node read from
// the store that does not hash to root fails with ErrCorrupt. Not for a
// trie with updates on top (On).
func (t *StateTrie) ProveAgainst(root common.Hash, addr common.Address, slots []common.Hash) (*AccountProof, error) {
	return t.prove(&root, addr, slots)
}

// prove walks the account's path in the account trie, then each slot's
// path in its storage trie, node by node through the node reader (cache,
// update layers, one Pebble seek per node otherwise; every blob read from
// Pebble is checked against the hash its parent names). A proof is the
// list of hashed nodes on the path, which are exactly the stored blobs:
// go-ethereum's Trie.Prove re-encodes and re-hashes each, this takes them
// as read. Nodes embedded in their parent are part of the parent's blob.
func (t *StateTrie) prove(root *common.Hash, addr common.Address, slots []common.Hash) (*AccountProof, error) {
	if err := t.v.enter(); err != nil {
		return nil, err
	}
	defer t.v.exit()
	nr := newNodeReader(t.v.snap, t.v.db.nodes, t.height, t.under)
	defer nr.close()
	fail := func(err error) (*AccountProof, error) {
		return nil, fmt.Errorf("proof of %s at %d: %w", addr, t.height, err)
	}
	var rootBlob []byte
	if root != nil && len(t.under) == 0 {
		if *root != types.EmptyRootHash {
			blob, err := nr.Node(common.Hash{}, nil, *root)
			if err != nil {
				return fail(err)
			}
			rootBlob = blob
		}
	} else {
		blob, found, _, err := nr.readAt(common.Hash{}, nil, nil)
		if err != nil {
			return fail(err)
		}
		if found {
			rootBlob = blob
		}
	}
	w := proofWalker{nr: nr}
	out := &AccountProof{Storage: make([]SlotProof, len(slots))}
	var key [common.HashLength]byte
	w.hashKey(addr[:], &key)
	val, proof, err := w.walk(common.Hash{}, rootBlob, &key)
	if err != nil {
		return fail(err)
	}
	out.Proof = proof
	if val != nil {
		var acc types.StateAccount
		if err := rlp.DecodeBytes(val, &acc); err != nil {
			return fail(fmt.Errorf("%w: account leaf: %v", ErrCorrupt, err))
		}
		out.Account = &acc
	}
	if len(slots) == 0 || out.Account == nil || out.Account.Root == types.EmptyRootHash {
		return out, nil
	}
	owner := common.Hash(key)
	storageRoot, err := nr.Node(owner, nil, out.Account.Root)
	if err != nil {
		return fail(fmt.Errorf("storage root: %w", err))
	}
	for i, slot := range slots {
		w.hashKey(slot[:], &key)
		val, proof, err := w.walk(owner, storageRoot, &key)
		if err != nil {
			return fail(fmt.Errorf("slot %s: %w", slot, err))
		}
		if val != nil {
			_, content, _, err := rlp.Split(val)
			if err != nil || len(content) > common.HashLength {
				return fail(fmt.Errorf("%w: slot %s: value %x", ErrCorrupt, slot, val))
			}
			out.Storage[i].Value = common.BytesToHash(content)
		}
		out.Storage[i].Proof = proof
	}
	return out, nil
}

// proofWalker walks key paths of one request's tries. It remembers the
// hashed nodes of its last walk: the slots of one account share the upper
// levels of its storage trie, which the next walk takes from there instead
// of the node reader.
type proofWalker struct {
	nr     *nodeReader
	last   []walkedNode
	hashed [2][]walkedNode // double buffer for last
	flip   int
}

type walkedNode struct {
	hash common.Hash
	blob []byte
}

func (w *proofWalker) hashKey(b []byte, out *[common.HashLength]byte) {
	w.nr.hasher.Reset()
	w.nr.hasher.Write(b)
	w.nr.hasher.Read(out[:])
}

// node returns the node of owner's trie at path with hash: from the last
// walk's nodes, else the node reader.
func (w *proofWalker) node(owner common.Hash, path []byte, hash common.Hash) ([]byte, error) {
	for _, n := range w.last {
		if n.hash == hash {
			return n.blob, nil
		}
	}
	return w.nr.Node(owner, path, hash)
}

// walk follows key (32 bytes, 64 nibbles) from the root node root (nil: an
// empty trie) down owner's trie. It returns the leaf's value (nil: the key
// is absent) and the proof: the root node and every hashed node on the
// path.
func (w *proofWalker) walk(owner common.Hash, root []byte, key *[common.HashLength]byte) ([]byte, [][]byte, error) {
	proof := make([][]byte, 0, 8)
	if root == nil {
		return nil, proof, nil
	}
	var path [2 * common.HashLength]byte
	for i, b := range key {
		path[2*i], path[2*i+1] = b>>4, b&0x0f
	}
	cur := w.hashed[w.flip][:0]
	defer func() {
		w.hashed[w.flip] = cur
		w.last = cur
		w.flip ^= 1
	}()
	node := root
	proof = append(proof, root)
	pos := 0
	corrupt := func(what string) ([]byte, [][]byte, error) {
		return nil, nil, fmt.Errorf("%w: trie node %x of owner %s: %s", ErrCorrupt, path[:pos], owner, what)
	}
	for {
		elems, _, err := rlp.SplitList(node)
		if err != nil {
			return corrupt(err.Error())
		}
		// Two items: a short node; otherwise a full node (17 items; a
		// malformed one fails on its children or its hash).
		_, _, second, err := rlp.Split(elems)
		if err != nil {
			return corrupt(err.Error())
		}
		_, _, third, err := rlp.Split(second)
		if err != nil {
			return corrupt(err.Error())
		}
		var ref []byte
		if len(third) == 0 { // short node: compact key, then value (leaf) or child
			ck, rest, err := rlp.SplitString(elems)
			if err != nil || len(ck) == 0 {
				return corrupt("short node key")
			}
			leaf, odd := ck[0]&0x20 != 0, ck[0]&0x10 != 0
			nibbles := 2*(len(ck)-1) + btoi(odd)
			if pos+nibbles > len(path) {
				return nil, proof, nil // longer than any key: not on its path
			}
			i := pos
			if odd {
				if path[i] != ck[0]&0x0f {
					return nil, proof, nil
				}
				i++
			}
			for _, b := range ck[1:] {
				if path[i] != b>>4 || path[i+1] != b&0x0f {
					return nil, proof, nil
				}
				i += 2
			}
			pos = i
			if leaf {
				if pos != len(path) {
					return nil, proof, nil
				}
				val, _, err := rlp.SplitString(rest)
				if err != nil {
					return corrupt("leaf value")
				}
				return val, proof, nil
			}
			ref = rest
		} else { // full node: 16 children and a value (unused: keys are one length)
			if pos == len(path) {
				return corrupt("full node at a key's end")
			}
			ref = elems
			for range path[pos] {
				if _, _, ref, err = rlp.Split(ref); err != nil {
					return corrupt("full node child")
				}
			}
			pos++
		}
		kind, content, rest, err := rlp.Split(ref)
		if err != nil {
			return corrupt(err.Error())
		}
		switch {
		case kind == rlp.List: // embedded in its parent: not a proof element
			node = ref[:len(ref)-len(rest)]
		case len(content) == 0:
			return nil, proof, nil // no child on the key's path
		case len(content) == common.HashLength:
			hash := common.Hash(content)
			blob, err := w.node(owner, path[:pos], hash)
			if err != nil {
				return nil, nil, err
			}
			cur = append(cur, walkedNode{hash: hash, blob: blob})
			proof = append(proof, blob)
			node = blob
		default:
			return corrupt(fmt.Sprintf("child reference of %d bytes", len(content)))
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
