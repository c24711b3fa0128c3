package pending

import (
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// Snapshot is one immutable pre-confirmed state: the anchor (the canonical
// block the diffs sit on), the pending block's header (the execution
// context of `pending`), the copy-on-write diff layers written by the
// pre-confirmed transactions, and those transactions with their receipts.
// A pending block may sit on a pending parent (a stream follower's window
// of blocks ahead of the canonical chain): Parent is then the parent's
// final (sealed in memory) snapshot, whose state lies under this block's
// layers, and Anchor is the canonical block the chain of pending parents
// bottoms out on. A Snapshot never changes after it is published; readers load the
// current one once per request and use it throughout.
//
// Snapshots are built by a Builder and made current by Manager.Publish.
type Snapshot struct {
	head       *chain.Head // the canonical head it was built on (or rebased on)
	anchor     *types.Header
	anchorHash common.Hash
	parent     *Snapshot   // the pending parent's final snapshot; nil: the parent is the anchor
	hash       common.Hash // final snapshots (Builder.Finish): the sealed block's hash
	adopted    bool        // hash is an announced one (Adopted), not the sealed header's
	header     *types.Header
	index      uint64
	layers     *layer // newest first; shared with older snapshots
	txs        chaintypes.Txs
	receipts   chaintypes.Receipts
	newFrom    int       // txs[newFrom:] were pre-confirmed by this snapshot
	created    time.Time // when it was published (sequencer clock)
	roots      *roots    // derived on first use; copies with the same txs and receipts share it
	// block carries the roots' derivation from one snapshot of the block to
	// the next (the Builder's snapshots of one block share it); nil:
	// derived afresh.
	block *blockRoots
	// tries are the state trie updates of a final snapshot's block and
	// its pending parents, oldest first (nil: not final, or the store
	// keeps no trie): a block opened on it reads its trie through them.
	tries []*store.TrieUpdate
	// trie is the pending block's state trie as of this snapshot (nil:
	// the store keeps no trie, or the builder lost it): its header's Root
	// is trie.Root().
	trie *liveTrie
	// cut is, for a deferring builder's snapshot (Builder.DeferRoots),
	// its state trie and header with the root, computed on first need
	// (trie is then nil, and header holds no root: Header completes it).
	cut *cutTrie
	// rootErr is why an eager builder's snapshot has no trie (its update
	// failed: ErrStateRoot; nil when it has one or keeps none by design).
	// A deferring builder's failure is kept in cut.
	rootErr error
}

// Head is the canonical head the snapshot was built on (or rebased on).
func (s *Snapshot) Head() *chain.Head { return s.head }

// WarmRoots derives the snapshot's transactions and receipts roots now
// (TxRoot, ReceiptsRoot) if it shares its block's incremental tries (a
// Builder's snapshot); otherwise it does nothing, leaving them to be
// derived on first use. A driver calls it between cuts so that a later
// seal derives only what the last cut added.
func (s *Snapshot) WarmRoots() {
	if s.block != nil {
		s.TxRoot()
		s.ReceiptsRoot()
	}
}

// RootTries reports how many transactions and receipts of the snapshot's
// block its incremental roots' tries hold so far (0, 0 for a snapshot
// without them): what later roots of the block need not hash again.
func (s *Snapshot) RootTries() (txs, receipts int) {
	if s.block == nil {
		return 0, 0
	}
	s.block.txs.mu.Lock()
	txs = len(s.block.txs.done)
	s.block.txs.mu.Unlock()
	s.block.receipts.mu.Lock()
	receipts = len(s.block.receipts.done)
	s.block.receipts.mu.Unlock()
	return txs, receipts
}

// TxRoot is the root of the snapshot's transactions (the pending block's
// TxHash as of this snapshot).
func (s *Snapshot) TxRoot() common.Hash {
	s.roots.txOnce.Do(func() {
		s.roots.tx = s.block.txRoot(s.txs)
	})
	return s.roots.tx
}

// ReceiptsRoot is the root of the snapshot's receipts (the pending block's
// ReceiptHash as of this snapshot; the sealed block's once it holds exactly
// these transactions).
func (s *Snapshot) ReceiptsRoot() common.Hash {
	s.roots.receiptsOnce.Do(func() {
		s.roots.receipts = s.block.receiptsRoot(s.receipts)
	})
	return s.roots.receipts
}

// Anchor is the canonical block the snapshot's chain of pending parents
// bottoms out on (the snapshot's own parent when Parent is nil).
func (s *Snapshot) Anchor() *types.Header { return s.anchor }

// Header is the pending block's header: Number = anchor+1, its timestamp,
// base fee, fee recipient, prev-randao, gas limit, and GasUsed / Bloom /
// BlobGasUsed as of this snapshot; Root the state root as of this snapshot
// (zero when the store keeps no trie: StateRoot), and on an OP chain from
// Isthmus the withdrawals root as of it (zero when there is no state
// root: the store keeps none, SkipCutRoots, or its update failed:
// RootErr). RequestsHash is a placeholder,
// TxHash and ReceiptHash are not set (TxRoot, ReceiptsRoot, BlockHash)
// until sealed. Callers must not modify it.
//
// A deferring builder's snapshot (Builder.DeferRoots) may be published
// before its root is computed: Header then waits for it (or computes it).
// A caller that needs only the execution context uses ExecHeader.
func (s *Snapshot) Header() *types.Header {
	_, h, _ := s.rooted()
	return h
}

// ExecHeader is Header without its state-derived fields, never waiting:
// the execution context of the pending block (number, timestamp, base
// fee, fee recipient, prev-randao, gas limit, beacon root) and its running
// totals (GasUsed, Bloom, BlobGasUsed). Its Root, and on an OP chain from
// Isthmus its withdrawals root, are not the snapshot's when a deferring
// builder cut it (then Root is zero): never present them, use Header.
// Callers must not modify it.
func (s *Snapshot) ExecHeader() *types.Header { return s.header }

// Index is the pre-confirmation index within the pending block (0 = no
// transactions pre-confirmed yet).
func (s *Snapshot) Index() uint64 { return s.index }

// Transactions are the pre-confirmed transactions in block order.
func (s *Snapshot) Transactions() chaintypes.Txs { return s.txs }

// Receipts are their receipts (BlockHash zero until sealed). Callers must
// not modify them.
func (s *Snapshot) Receipts() chaintypes.Receipts { return s.receipts }

// NewTransactions are the transactions this snapshot pre-confirmed (the
// ones the previous snapshot of the same block did not have).
func (s *Snapshot) NewTransactions() chaintypes.Txs { return s.txs[s.newFrom:] }

// NewReceipts are the receipts of NewTransactions.
func (s *Snapshot) NewReceipts() chaintypes.Receipts { return s.receipts[s.newFrom:] }

// Logs returns every log of the pre-confirmed transactions in block order.
func (s *Snapshot) Logs() []*types.Log {
	var logs []*types.Log
	for _, r := range s.receipts {
		logs = append(logs, r.Logs...)
	}
	return logs
}

// Created is when the snapshot was published.
func (s *Snapshot) Created() time.Time { return s.created }

// Depth is the number of diff layers a read may walk (O(log of the pending
// diff size)).
func (s *Snapshot) Depth() int {
	if s.layers == nil {
		return 0
	}
	return s.layers.depth
}

// AnchorHash is the anchor's hash.
func (s *Snapshot) AnchorHash() common.Hash { return s.anchorHash }

// Parent is the final snapshot of the pending parent block, nil when the
// block sits directly on its canonical anchor.
func (s *Snapshot) Parent() *Snapshot { return s.parent }

// Number is the pending block's number.
func (s *Snapshot) Number() uint64 { return s.header.Number.Uint64() }

// Final reports whether the snapshot is a finished block's (Builder.Finish):
// its Header is the sealed header, Hash its hash, and its layers include the
// post-block system calls.
func (s *Snapshot) Final() bool { return s.hash != (common.Hash{}) }

// Hash is the sealed block's hash of a final snapshot (zero otherwise): its
// header's hash, or the hash it adopted (Adopted).
func (s *Snapshot) Hash() common.Hash { return s.hash }

// Adopted returns a copy of the final snapshot s whose hash is hash instead
// of its sealed header's: a stream follower that cannot compute the block's
// state root (its header's Root is zero) takes the hash the next block
// announces as its parent, so that the next block builds on s at once. Its
// BLOCKHASH context (PendingHeaders) and Rebased resolve s by that hash.
// The follower must verify s against the canonical block of that hash when
// it arrives (Header, with the canonical state root, must hash to it).
// Nil when s is not final.
func (s *Snapshot) Adopted(hash common.Hash) *Snapshot {
	if !s.Final() {
		return nil
	}
	cp := *s
	cp.hash, cp.adopted = hash, true
	return &cp
}

// HashAdopted reports whether Hash was adopted (Adopted) rather than
// computed from the sealed header.
func (s *Snapshot) HashAdopted() bool { return s.adopted }

// State returns the pending state: the diff layers (newest first) over the
// pending parents' layers over base, which must be the store's state of
// the anchor (Manager.Open verifies the chain is canonical up to the head;
// Read.PendingState does this pairing).
func (s *Snapshot) State(base chain.Backend) chain.Backend {
	if s.parent != nil {
		base = s.parent.State(base)
	}
	return &overlay{layers: s.layers, base: base}
}

// Rebased returns s re-anchored on head without re-executing anything, when
// one of s's pending ancestors is exactly head's block (same number and
// hash: the canonical block is the block s was built on, so its state is
// the one under s's layers): the ancestors up to head are cut off, the
// anchor becomes head. ok is false when head is not in s's chain of
// pending parents.
func (s *Snapshot) Rebased(head *chain.Head) (rebased *Snapshot, ok bool) {
	num := s.Number()
	if num <= head.Number() {
		return nil, false
	}
	cp := *s
	cp.head = head
	if num-1 == head.Number() {
		if s.header.ParentHash != head.Hash() {
			return nil, false
		}
		cp.parent, cp.anchor, cp.anchorHash = nil, head.Header(), head.Hash()
		return &cp, true
	}
	if s.parent == nil {
		return nil, false
	}
	p, ok := s.parent.Rebased(head)
	if !ok {
		return nil, false
	}
	cp.parent, cp.anchor, cp.anchorHash = p, p.anchor, p.anchorHash
	return &cp, true
}

// placement is where a snapshot stands against a canonical chain.
type placement int

const (
	servedOn   placement = iota // above the head, on its chain: servable
	superseded                  // the head reached its number: pending is never older than latest
	offChain                    // its ancestry left the canonical chain (stale)
)

// onChain places s on a canonical chain whose head is number head and
// whose canonical hash at n is hashAt(n): s is servable when the pending
// block is above the head and its ancestry meets the canonical chain at
// the head or below with the same hash (checking the highest such ancestor
// suffices: hashes chain). ok false from hashAt means "unknown": off chain.
func (s *Snapshot) onChain(head uint64, hashAt func(n uint64) (common.Hash, bool, error)) (placement, error) {
	if s.Number() <= head {
		return superseded, nil
	}
	for cur := s; ; cur = cur.parent {
		n, want := cur.Number()-1, cur.header.ParentHash
		if n <= head {
			got, ok, err := hashAt(n)
			if err != nil || !ok || got != want {
				return offChain, err
			}
			return servedOn, nil
		}
		if cur.parent == nil {
			return offChain, nil // its anchor is above the head (the head went back)
		}
	}
}

// pendingHeaders resolves the sealed headers of a snapshot's pending
// ancestors (by their hash and number) before the canonical source: the
// BLOCKHASH context of a block built ahead of the canonical chain.
type pendingHeaders struct {
	snap  *Snapshot // its parents are searched (final snapshots)
	canon chain.HeaderSource
}

func (p pendingHeaders) HeaderByHash(hash common.Hash) (*types.Header, error) {
	for a := p.snap; a != nil; a = a.parent {
		if a.hash == hash && a.Final() {
			return a.header, nil
		}
	}
	return p.canon.HeaderByHash(hash)
}

func (p pendingHeaders) HeaderByNumber(number uint64) (*types.Header, error) {
	for a := p.snap; a != nil; a = a.parent {
		if a.Final() && a.Number() == number {
			return a.header, nil
		}
	}
	return p.canon.HeaderByNumber(number)
}

// Transaction finds a pre-confirmed transaction by hash.
func (s *Snapshot) Transaction(hash common.Hash) (tx chaintypes.Tx, receipt *chaintypes.Receipt, index int, ok bool) {
	for l := s.layers; l != nil; l = l.parent {
		if i, found := l.txs[hash]; found && i < len(s.txs) {
			return s.txs[i], s.receipts[i], i, true
		}
	}
	return nil, nil, 0, false
}
