package pending

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// Builder builds pending blocks, one at a time, for a driver: Open starts a
// block with the header the driver chose on top of a canonical head, Add /
// Apply execute transactions with the shared chain.Executor, Cut returns
// the next immutable Snapshot (which the driver hands to Manager.Publish),
// and Seal produces the block's single store write (which the driver hands
// to chain.Writer.Seal). The builder has no policy of its own: which
// transactions, in which order, with which header, is the driver's choice
// (the Sequencer picks from the pool; a stream follower replays what a
// sequencer published).
//
// A Builder belongs to one goroutine at a time (its driver's, or the
// writer's while it runs the driver's Rebase and the driver waits).
type Builder struct {
	exec *chain.Executor

	view   store.View // the anchor head's view; released by the next Open / Close
	anchor uint64     // the anchor's number (the open block's state trie is read there)
	// under are the state trie updates of the open block's pending
	// parents (their final snapshots' tries), above the anchor's trie.
	under []*store.TrieUpdate
	// live is the open block's state trie as of its last cut (nil: the
	// store keeps no trie, or trieErr), computed at the cut or, with
	// deferRoots, on first need.
	live    *cutTrie
	trieErr error // why the open block lost its live trie (nil: it did not)
	// deferRoots: cuts publish before their state root is computed
	// (DeferRoots).
	deferRoots bool
	// noCutRoots: cuts compute no state root at all; only the seal does
	// (SkipCutRoots).
	noCutRoots bool
	// cutTries counts the cuts' state trie updates computed (CutTries),
	// by the builder or, deferred, by whoever asked first.
	cutTries *atomic.Uint64
	// tail is the state the seal wrote after the last cut (the layer
	// Finish adds).
	tail     *store.StateDiff
	base     *types.Header // the driver's header template
	parent   *types.Header // the open block's parent (canonical or pending)
	state    *chain.StateDB
	proc     *chain.BlockProcessor
	txs      chaintypes.Txs
	receipts chaintypes.Receipts
	bloom    types.Bloom
	snap     *Snapshot // the last cut
	// dirty: Override changed the state since the last cut.
	dirty bool
	// impersonation: Add executes transactions carrying the marker
	// signature of Impersonate as their impersonated sender (dev chain).
	impersonation bool
}

// NewBuilder returns a builder executing with exec.
func NewBuilder(exec *chain.Executor) *Builder {
	return &Builder{exec: exec, cutTries: new(atomic.Uint64)}
}

// DeferRoots makes the builder's cuts (Open, OpenOn, Cut, CutOpen) return
// their snapshot before its state root is computed: the cut records its
// diff, and the snapshot's state trie is computed on first need, once
// (Snapshot.StateRoot, Header, BlockHash and StateTrie wait for it or
// compute it; ExecHeader never waits). A driver that publishes at once
// then computes the roots when it has time (Snapshot.StateRoot: a stream
// follower when no message waits); the seal computes what is left, and so does
// the builder before it releases its view (the next Open, Close), so that
// every snapshot it cut has its root whoever holds it. Without it (the
// sequencer) every cut computes its root before it returns.
func (b *Builder) DeferRoots() { b.deferRoots = true }

// SkipCutRoots makes the builder's cuts compute no state root (a
// sequencer with --stream.roots=off): the open block keeps no live trie,
// so its snapshots carry none, as on a store that keeps no trie
// (Snapshot.StateRoot reports none, Header's Root is zero, and on an OP
// chain from Isthmus its withdrawals root is zero too; eth_getProof at
// pending is refused with ErrNoStateTrie), and the seal computes the
// block's state root (and withdrawals root) from its whole diff on its
// parent's trie, as the header must carry them. Call it before Open.
func (b *Builder) SkipCutRoots() { b.noCutRoots = true }

// CutTries is how many state trie updates of cuts the builder's blocks
// computed so far (at the cut, or deferred, on first need): none with
// SkipCutRoots. The seal's own update is not counted.
func (b *Builder) CutTries() uint64 { return b.cutTries.Load() }

// AllowImpersonation makes Add execute transactions carrying the marker
// signature of Impersonate (tipnode dev's impersonated accounts) as sent by
// the address the marker names. Only the dev chain's sequencer sets it:
// such blocks are not valid on any other node.
func (b *Builder) AllowImpersonation() { b.impersonation = true }

// Open starts a pending block on head with the header template tmpl
// (number head+1, parent hash head's hash; timestamp, fee recipient,
// prev-randao, gas limit, base fee, parent beacon root, extra data as the
// driver chose them; see NextHeader). view must be head's store view
// (chain.Writer.OpenHead); the builder keeps it until the next Open or
// Close. The pre-execution system calls run here, then the opening
// transactions, if any (an OP block's L1-info deposit and user deposits:
// chain.Executor.OpeningTxs); the returned index-0 snapshot holds their
// state and those transactions only. A failing opening transaction fails
// Open (the caller keeps view).
func (b *Builder) Open(head *chain.Head, view store.View, tmpl *types.Header, now time.Time, opening ...chaintypes.Tx) (*Snapshot, error) {
	parent := head.Header()
	if tmpl.ParentHash != head.Hash() || tmpl.Number.Uint64() != parent.Number.Uint64()+1 {
		return nil, fmt.Errorf("%w: header %d (parent %s) does not extend head %d %s", ErrHeader,
			tmpl.Number, tmpl.ParentHash.Hex(), parent.Number, head.Hash().Hex())
	}
	return b.open(head, view, nil, parent, head.Hash(), parent, chain.ViewHeaders{Head: head, View: view}, tmpl, now, opening)
}

// OpenOn starts a pending block on a pending parent: parent is the final
// snapshot of the block before tmpl (Finish), whose chain of pending
// parents bottoms out on a canonical anchor in view (head's store view,
// which the builder keeps until the next Open or Close). The new block's
// state is the parent's layers over the anchor's state; its BLOCKHASH
// context resolves the pending ancestors' sealed headers, then the
// canonical chain. opening are the block's opening transactions, as for
// Open.
func (b *Builder) OpenOn(head *chain.Head, view store.View, parent *Snapshot, tmpl *types.Header, now time.Time, opening ...chaintypes.Tx) (*Snapshot, error) {
	if !parent.Final() || tmpl.ParentHash != parent.hash || tmpl.Number.Uint64() != parent.Number()+1 {
		return nil, fmt.Errorf("%w: header %d (parent %s) does not extend pending block %d %s", ErrHeader,
			tmpl.Number, tmpl.ParentHash.Hex(), parent.Number(), parent.hash.Hex())
	}
	headers := pendingHeaders{snap: parent, canon: chain.ViewHeaders{Head: head, View: view}}
	return b.open(head, view, parent, parent.anchor, parent.anchorHash, parent.header, headers, tmpl, now, opening)
}

func (b *Builder) open(head *chain.Head, view store.View, parentSnap *Snapshot, anchor *types.Header, anchorHash common.Hash,
	parent *types.Header, headers chain.HeaderSource, tmpl *types.Header, now time.Time, opening chaintypes.Txs) (*Snapshot, error) {
	reader, err := view.StateAt(anchor.Number.Uint64())
	if err != nil {
		return nil, fmt.Errorf("open block %d: %w", tmpl.Number, err)
	}
	var backend chain.Backend = reader
	if parentSnap != nil {
		backend = parentSnap.State(reader)
	}
	state := chain.NewStateDB(backend)
	proc := b.exec.NewBlockProcessor(tmpl, parent, common.Hash{}, state, headers, vm.Config{})
	if err := state.Error(); err != nil {
		return nil, fmt.Errorf("open block %d: %w", tmpl.Number, err)
	}
	b.Close()
	b.view, b.base, b.parent, b.state, b.proc = view, tmpl, parent, state, proc
	b.anchor, b.under = anchor.Number.Uint64(), nil
	if parentSnap != nil {
		b.under = parentSnap.tries
	}
	b.txs, b.receipts, b.bloom, b.dirty, b.tail = nil, nil, types.Bloom{}, false, nil
	b.live, b.trieErr = nil, nil
	var txIdx map[common.Hash]int
	for i, tx := range opening {
		if _, err := b.Add(tx); err != nil {
			b.view, b.proc, b.state, b.snap = nil, nil, nil, nil // the caller keeps view
			return nil, fmt.Errorf("open block %d: opening transaction %d: %w", tmpl.Number, i, err)
		}
		if txIdx == nil {
			txIdx = make(map[common.Hash]int, len(opening))
		}
		txIdx[tx.Hash()] = i
	}
	n := len(b.txs)
	diff := state.TakeDiff()
	if !b.noCutRoots {
		b.live, b.trieErr = b.openTrie(view, b.anchor, b.under)
		if b.trieErr != nil {
			b.trieErr = rootErr(tmpl, b.trieErr)
		}
	}
	header := b.pendingHeader() // knows now whether the block has a live trie
	b.advanceTrie(diff, header)
	b.snap = &Snapshot{
		roots:      new(roots),
		block:      new(blockRoots), // this block's snapshots extend these lists
		head:       head,
		anchor:     anchor,
		anchorHash: anchorHash,
		parent:     parentSnap,
		header:     header,
		layers:     pushLayer(nil, diff, txIdx), // pre-execution system calls, opening transactions
		txs:        b.txs[:n:n],
		receipts:   b.receipts[:n:n],
		created:    now,
	}
	b.setTrie(b.snap)
	return b.snap, nil
}

// Rebase re-anchors the open block on head without re-executing anything
// when head's block is one of its pending ancestors (Snapshot.Rebased):
// the next snapshots sit on head, and the returned one is the current
// snapshot re-anchored (nil, false when head is not an ancestor). The
// builder keeps reading through its view: the state it reads there is the
// same.
func (b *Builder) Rebase(head *chain.Head) (*Snapshot, bool) {
	if b.snap == nil {
		return nil, false
	}
	s, ok := b.snap.Rebased(head)
	if ok {
		b.snap = s
	}
	return s, ok
}

// Current is the open block's latest snapshot (nil when none is open).
func (b *Builder) Current() *Snapshot { return b.snap }

// Finish seals the open block in memory (Seal: post-block system calls,
// header totals) and returns its final snapshot: the sealed header and
// hash, every transaction, and a last layer with the post-block state, so
// that the next block can open on it (OpenOn). Nothing is written. The
// block stays open until the next Open.
func (b *Builder) Finish(now time.Time) (*Snapshot, *Sealed, error) {
	b.Cut(now)
	sealed, err := b.Seal()
	if err != nil {
		return nil, nil, err
	}
	n := len(b.txs)
	s := *b.snap
	s.header = sealed.Block.Header()
	s.hash = sealed.Block.Hash()
	s.layers = pushLayer(b.snap.layers, b.tail, nil)
	s.txs, s.receipts, s.newFrom = b.txs[:n:n], b.receipts[:n:n], n
	s.roots = new(roots)
	s.created = now
	s.trie, s.tries, s.cut, s.rootErr = nil, nil, nil, nil
	if upd := sealed.Write.Trie; upd != nil {
		s.tries = append(slices.Clip(b.under), upd)
		s.trie = &liveTrie{at: b.anchor, under: b.under, cuts: []*store.TrieUpdate{upd}, last: upd}
	}
	b.snap = &s
	return b.snap, sealed, nil
}

// Close releases the store view of the open block (if any).
func (b *Builder) Close() {
	b.settleTrie()
	if b.view != nil {
		b.view.Close()
		b.view = nil
	}
	b.proc, b.state = nil, nil
}

// Parent is the open block's parent header: the canonical head for Open,
// the pending parent's for OpenOn (nil when none is open).
func (b *Builder) Parent() *types.Header { return b.parent }

// Header is the open block's header template (nil when none is open).
func (b *Builder) Header() *types.Header { return b.base }

// Len is the number of transactions in the open block.
func (b *Builder) Len() int { return len(b.txs) }

// Transactions are the open block's transactions so far, in order (its
// opening transactions first), including those executed since the last
// cut. The slice is the Builder's: callers must not modify it, and a later
// Add may append to it (clone it to keep it).
func (b *Builder) Transactions() chaintypes.Txs { return b.txs }

// GasLeft is the gas still available in the open block.
func (b *Builder) GasLeft() uint64 { return b.proc.GasLeft() }

// BlobGasLeft is the blob gas still available in the open block.
func (b *Builder) BlobGasLeft() uint64 { return b.proc.BlobGasLeft() }

// Nonce is addr's nonce in the open block's current state.
func (b *Builder) Nonce(addr common.Address) (uint64, error) {
	n := b.state.GetNonce(addr)
	return n, b.state.Error()
}

// Add executes tx as the next transaction of the open block (a blob
// transaction without its sidecar: the block holds the canonical form). A
// transaction
// that cannot be included returns an error wrapping chain.ErrTxInvalid and
// changes nothing (the driver may go on with others); an error wrapping
// chain.ErrStateRead means the block can no longer be trusted.
func (b *Builder) Add(tx chaintypes.Tx) (*chaintypes.Receipt, error) {
	var (
		r   *chaintypes.Receipt
		err error
	)
	if t, ok := tx.(*types.Transaction); ok && b.impersonation && isImpersonated(t) {
		r, err = b.addImpersonated(t)
	} else {
		r, err = b.proc.ApplyTx(tx)
	}
	if err != nil {
		return nil, err
	}
	b.txs = append(b.txs, tx)
	b.receipts = append(b.receipts, r)
	for i := range r.Bloom {
		b.bloom[i] |= r.Bloom[i]
	}
	return r, nil
}

// addImpersonated executes a transaction with the marker signature as its
// impersonated sender: the message comes from go-ethereum's
// TransactionToMessage with DevSigner, and runs like any transaction
// (nonce, fees, funds and gas checked).
func (b *Builder) addImpersonated(tx *types.Transaction) (*chaintypes.Receipt, error) {
	if tx.Type() == types.BlobTxType {
		return nil, fmt.Errorf("%w: tx %s: blob transactions cannot be impersonated", chain.ErrTxInvalid, tx.Hash())
	}
	signer := DevSigner(types.MakeSigner(b.exec.Config(), b.base.Number, b.base.Time))
	msg, err := core.TransactionToMessage(tx, signer, b.base.BaseFee)
	if err != nil {
		return nil, fmt.Errorf("%w: tx %s: %v", chain.ErrTxInvalid, tx.Hash(), err)
	}
	r, _, err := b.proc.ApplyMessage(tx, msg)
	return r, err
}

// Override applies a dev-chain state change (tipnode dev's
// anvil_setBalance & co.) to the open block's state after the transactions
// added so far, as if a transaction had made it: the next Cut publishes it
// and Seal writes it with the block's state diff. o.At is not used (the
// driver records the position). Empty accounts are removed as after any
// transaction (EIP-161).
func (b *Builder) Override(o store.PendingOverride) error {
	switch o.Kind {
	case store.OverrideBalance:
		v, overflow := uint256.FromBig(o.Balance)
		if o.Balance == nil || o.Balance.Sign() < 0 || overflow {
			return fmt.Errorf("%w: balance %v out of range", ErrOverride, o.Balance)
		}
		b.state.SetBalance(o.Address, v)
	case store.OverrideNonce:
		b.state.SetNonce(o.Address, o.Nonce, tracing.NonceChangeUnspecified)
	case store.OverrideCode:
		b.state.SetCode(o.Address, common.CopyBytes(o.Code), tracing.CodeChangeUnspecified)
	case store.OverrideStorage:
		b.state.SetState(o.Address, o.Slot, o.Value)
	default:
		return fmt.Errorf("%w: unknown kind %d", ErrOverride, o.Kind)
	}
	b.state.Finalise(b.exec.Config().Rules(b.base.Number, b.base.Difficulty.Sign() == 0, b.base.Time))
	b.dirty = true
	return b.state.Error()
}

// Apply executes txs in order. It stops at the first transaction that
// fails (returning its error, the ones before it stay applied) and returns
// the snapshot of what was applied (nil if nothing was).
func (b *Builder) Apply(txs chaintypes.Txs, now time.Time) (*Snapshot, error) {
	var err error
	for _, tx := range txs {
		if _, err = b.Add(tx); err != nil {
			err = fmt.Errorf("transaction %s: %w", tx.Hash().Hex(), err)
			break
		}
	}
	return b.Cut(now), err
}

// Cut returns the next snapshot: one new copy-on-write layer with the state
// written since the previous cut, over that snapshot's layers. It returns
// nil when no transaction was added since.
func (b *Builder) Cut(now time.Time) *Snapshot {
	return b.cut(now, b.snap.index+1)
}

// CutOpen is Cut for a block whose first pre-confirmation carries
// transactions (an OP block's deposits, a stream's index 0 with
// transactions): the returned snapshot stays index 0. It returns nil when
// a Cut was made already (the index-0 snapshot was superseded) or nothing
// was added since Open.
func (b *Builder) CutOpen(now time.Time) *Snapshot {
	if b.snap.index != 0 {
		return nil
	}
	return b.cut(now, 0)
}

// Balance is addr's balance in the open block's current state.
func (b *Builder) Balance(addr common.Address) (*uint256.Int, error) {
	v := b.state.GetBalance(addr)
	return v, b.state.Error()
}

func (b *Builder) cut(now time.Time, index uint64) *Snapshot {
	first := len(b.snap.txs)
	if len(b.txs) == first && !b.dirty {
		return nil
	}
	b.dirty = false
	txIdx := make(map[common.Hash]int, len(b.txs)-first)
	for i := first; i < len(b.txs); i++ {
		txIdx[b.txs[i].Hash()] = i
	}
	n := len(b.txs)
	diff, header := b.state.TakeDiff(), b.pendingHeader()
	b.advanceTrie(diff, header)
	b.snap = &Snapshot{
		roots:      new(roots),
		block:      b.snap.block, // txs and receipts extend the previous cut's
		head:       b.snap.head,
		anchor:     b.snap.anchor,
		anchorHash: b.snap.anchorHash,
		parent:     b.snap.parent,
		header:     header,
		index:      index,
		layers:     pushLayer(b.snap.layers, diff, txIdx),
		txs:        b.txs[:n:n],
		receipts:   b.receipts[:n:n],
		newFrom:    first,
		created:    now,
	}
	b.setTrie(b.snap)
	return b.snap
}

// setTrie gives s, the cut just made, the open block's live trie: computed
// (its header holds the root), or deferred; or, when the block lost it,
// why (RootErr).
func (b *Builder) setTrie(s *Snapshot) {
	switch {
	case b.live == nil:
		s.rootErr = b.trieErr
	case b.deferRoots:
		s.cut = b.live
	default:
		s.trie = b.live.live
	}
}

// pendingHeader is the published copy of the template with the running
// totals.
func (b *Builder) pendingHeader() *types.Header {
	h := types.CopyHeader(b.base)
	h.GasUsed = b.proc.GasUsed()
	h.Bloom = b.bloom
	if h.BlobGasUsed != nil {
		v := b.proc.BlobGasUsed()
		h.BlobGasUsed = &v
	}
	if b.live == nil {
		// No live trie (SkipCutRoots, a store that keeps none: a fork,
		// or its update failed): on an OP block from Isthmus the
		// withdrawals root, a storage root of its state, is not computed
		// either (zero, as the state root and as a fork's sealed
		// headers; the template's empty-list root would be wrong).
		rootless(b.exec, h)
	}
	return h
}

// Sealed is a finished pending block: the store write for chain.Writer.Seal
// and the receipts with the final block hash.
type Sealed struct {
	Write    *store.BlockWrite
	Block    *chaintypes.Block
	Receipts chaintypes.Receipts
}

// Seal finishes the open block (withdrawals: none; EIP-7002/7251 requests;
// header totals and requests hash) with every transaction added so far and
// returns its store write, moving latest, safe and finalized to it (a
// locally sealed block is final). The block stays open; the next Open
// replaces it.
func (b *Builder) Seal() (*Sealed, error) {
	var withdrawals types.Withdrawals
	if b.base.WithdrawalsHash != nil {
		withdrawals = types.Withdrawals{}
	}
	requests, err := b.proc.Finish(withdrawals, nil)
	if err != nil {
		return nil, err
	}
	header := types.CopyHeader(b.base)
	header.GasUsed = b.proc.GasUsed()
	if header.BlobGasUsed != nil {
		v := b.proc.BlobGasUsed()
		header.BlobGasUsed = &v
	}
	if header.RequestsHash != nil {
		rh := types.CalcRequestsHash(requests)
		header.RequestsHash = &rh
	}
	receipts := b.proc.Receipts()
	block := chaintypes.NewBlockWithRoots(header, &chaintypes.Body{Transactions: b.txs, Withdrawals: withdrawals}, receipts, b.roots(receipts))
	// What the chain's rules derive from the block's final state: its
	// state root (the block's trie update on its parent's trie), an OP
	// block's withdrawals root from Isthmus.
	final := block.Header()
	diff := b.state.BlockDiff()
	// The state written since the last cut: the live trie's last update
	// (and the layer Finish adds).
	b.tail = b.state.TakeDiff()
	upd, live, err := b.sealTrie(b.tail, final)
	if err != nil {
		return nil, fmt.Errorf("seal block %d: %w", final.Number, err)
	}
	if !live {
		// No live trie: the whole diff on the parent's trie (nil when the
		// store keeps none).
		if upd, err = b.trieUpdate(final, diff); err != nil {
			return nil, err
		}
	}
	if err := b.exec.SealHeader(final, b.state, upd); err != nil {
		return nil, err
	}
	block = block.WithSeal(final)
	return &Sealed{
		Write: &store.BlockWrite{
			Block: block, Receipts: receipts, Diff: diff, Trie: upd,
			Tags: []store.Tag{store.TagLatest, store.TagSafe, store.TagFinalized},
		},
		Block:    block,
		Receipts: finalReceipts(receipts, block),
	}, nil
}

// trieUpdate computes the open block's state trie update (diff on its
// parent's trie: the anchor's, with the pending parents' updates above).
// nil when the store keeps no trie (a fork: the header's root stays zero).
func (b *Builder) trieUpdate(h *types.Header, diff *store.StateDiff) (*store.TrieUpdate, error) {
	tr, err := b.view.StateTrie(b.anchor)
	if errors.Is(err, store.ErrNoTrie) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("seal block %d: %w", h.Number, err)
	}
	upd, err := tr.On(b.under...).Update(diff, b.exec.TrieWatch(h)...)
	if err != nil {
		return nil, fmt.Errorf("seal block %d: %w", h.Number, err)
	}
	return upd, nil
}

// roots derives the open block's transactions and receipts roots (with
// receipts, its processor's), from what its snapshots derived so far: a
// seal costs the transactions added since the last root asked, not the
// whole block (DeriveSha when the lists do not extend the tries').
func (b *Builder) roots(receipts chaintypes.Receipts) chaintypes.Roots {
	var br *blockRoots
	if b.snap != nil {
		br = b.snap.block
	}
	n := len(b.txs)
	return chaintypes.Roots{Tx: br.txRoot(b.txs[:n:n]), Receipts: br.receiptsRoot(receipts)}
}

// finalReceipts copies the pending receipts (which published snapshots
// still share) and stamps the sealed block's hash into them and their logs.
func finalReceipts(receipts chaintypes.Receipts, block *chaintypes.Block) chaintypes.Receipts {
	out := make(chaintypes.Receipts, len(receipts))
	hash := block.Hash()
	for i, r := range receipts {
		cp := *r
		cp.BlockHash = hash
		cp.Logs = make([]*types.Log, len(r.Logs))
		for j, l := range r.Logs {
			lc := *l
			lc.BlockHash = hash
			cp.Logs[j] = &lc
		}
		out[i] = &cp
	}
	return out
}
