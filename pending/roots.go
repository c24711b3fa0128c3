package pending

import (
	"bytes"
	"slices"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/ethereum/go-ethereum/trie"

	"github.com/tipnode/tipnode/store/chaintypes"
)

// roots memoizes a snapshot's transactions and receipts roots: derived on
// demand (building a snapshot stays proportional to its new diff), once
// per snapshot however many readers, replica checks and stream encodings
// ask.
type roots struct {
	txOnce, receiptsOnce sync.Once
	tx, receipts         common.Hash
}

// blockRoots carries the work of deriving the roots from one snapshot of a
// pending block to the next: the Builder makes one when it opens a block
// and hands it to every snapshot it cuts of that block, whose lists are
// successive prefixes of the block's. Deriving a snapshot's root then
// costs what it adds since the root last derived, not the whole block.
type blockRoots struct {
	txs      listRoot[chaintypes.Tx, chaintypes.Txs]
	receipts listRoot[*chaintypes.Receipt, chaintypes.Receipts]
}

// txRoot is the root of txs, a list of b's block (a nil b derives afresh).
func (b *blockRoots) txRoot(txs chaintypes.Txs) common.Hash {
	if b == nil {
		return (*listRoot[chaintypes.Tx, chaintypes.Txs])(nil).root(txs)
	}
	return b.txs.root(txs)
}

// receiptsRoot is the root of receipts, a list of b's block (a nil b
// derives afresh).
func (b *blockRoots) receiptsRoot(receipts chaintypes.Receipts) common.Hash {
	if b == nil {
		return (*listRoot[*chaintypes.Receipt, chaintypes.Receipts])(nil).root(receipts)
	}
	return b.receipts.root(receipts)
}

// derivable is a block list whose root types.DeriveSha derives.
type derivable[E comparable] interface {
	~[]E
	types.DerivableList
}

// listRoot is the root of one list of a pending block, kept up to date
// incrementally: an in-memory go-ethereum trie (trie.Trie, no database)
// holding rlp(i) -> the list's EncodeIndex(i) for every item of done,
// the longest list it was asked for. Its Hash rehashes only the paths
// changed since the last one: appending k items to a list of n costs k
// encodings and leaf hashes plus the branch nodes above them, where
// types.DeriveSha costs n + k of each. The trie's root is the same as
// DeriveSha's (one Merkle-Patricia trie of the same keys and values).
//
// Snapshots are read concurrently, and the trie (which go-ethereum writes
// in place on Update and Hash) is not: mu guards it. A caller holds mu
// while it extends the trie by what its list adds, never longer. A list
// that does not extend done (shorter: an older snapshot asked after a
// newer one; or not the same items: never the case for the Builder's
// snapshots, checked anyway) is derived afresh with DeriveSha outside the
// lock, and leaves the trie as it was.
type listRoot[E comparable, L derivable[E]] struct {
	mu   sync.Mutex
	tr   *trie.Trie   // nil until the first use, or after a failed update
	done L            // the items tr holds: one snapshot's list (shared, never written)
	enc  bytes.Buffer // the new items' encodings, one after the other
	ends []int        // where each ends in enc
	key  []byte
}

// root is types.DeriveSha(list, trie.NewStackTrie(nil)), derived from the
// items r holds plus those list adds when list extends them (a nil r
// derives afresh).
func (r *listRoot[E, L]) root(list L) common.Hash {
	if r != nil {
		if h, ok := r.extend(list); ok {
			return h
		}
	}
	return types.DeriveSha(list, trie.NewStackTrie(nil))
}

// extend adds list's items beyond done to the trie and returns its root;
// ok is false when list does not extend done (same items, by identity, in
// the same order) and the trie was left alone.
func (r *listRoot[E, L]) extend(list L) (h common.Hash, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.done)
	if len(list) < n || !slices.Equal(list[:n], r.done) {
		return common.Hash{}, false
	}
	if r.tr == nil {
		r.tr = trie.NewEmpty(nil)
	}
	// The trie keeps the values (it copies the keys): the new items'
	// encodings go to one fresh slab, never written after.
	r.enc.Reset()
	r.ends = r.ends[:0]
	for i := n; i < len(list); i++ {
		list.EncodeIndex(i, &r.enc)
		r.ends = append(r.ends, r.enc.Len())
	}
	slab, start := bytes.Clone(r.enc.Bytes()), 0
	for j, end := range r.ends {
		r.key = rlp.AppendUint64(r.key[:0], uint64(n+j))
		if err := r.tr.Update(r.key, slab[start:end:end]); err != nil {
			// Not expected of a trie without a database; its content is
			// unknown now: start over at the next call.
			r.tr, r.done = nil, nil
			return common.Hash{}, false
		}
		start = end
		if (j+1)%hashBatch == 0 {
			r.tr.Hash()
		}
	}
	r.done = list
	return r.tr.Hash(), true
}

// hashBatch is how many items extend adds to the trie between hashes. A
// go-ethereum trie with 100 or more changes since its last hash is hashed
// by 16 goroutines of its own. They run at normal priority: a seal's roots
// (often its first, when no stream encoder asked the snapshots' roots) would
// escape the low priority of the seal's section, and on a one-CPU node the
// requests queued behind those goroutines waited for them all (traces: up
// to a millisecond per seal). Hashed every 64 items, the trie never goes
// parallel; the nodes above the batches are hashed once per batch.
const hashBatch = 64
