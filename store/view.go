package store

import (
	"github.com/tipnode/tipnode/store/chaintypes"

	"errors"
	"fmt"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"
)

// TagEarliest names block 0. It is answered by Tag but never stored or moved.
const TagEarliest Tag = "earliest"

// view is the Pebble-snapshot implementation of View.
type view struct {
	db   *DB
	snap *pebble.Snapshot

	// latest is the latest block in the snapshot; hasChain is false for a
	// store without genesis (then every height is ErrNotFound).
	latest   uint64
	hasChain bool
	// epoch is the chain epoch of the snapshot (keyChainEpoch): with latest
	// it is the view's position for the state cache.
	epoch uint64
	// trie is the state trie's extent in the snapshot.
	trie trieMeta

	guard closeGuard // in-flight reads vs Close
	// iters are idle iterators of snap for point reads that miss the
	// caches (seekVersion, readPast): creating one costs about as much
	// as the seek itself. Closed with the view.
	iters iterPool
}

// iterPoolSlots bounds the idle iterators a view keeps (about the reads
// that miss the caches at the same moment; more are created and closed).
const iterPoolSlots = 8

// iterPool keeps idle iterators in slots taken and given back with
// atomics: every request reading the head shares the view, so a mutex
// here would be one all of them queue on. An iterator is owned by one
// read between take and give.
type iterPool struct {
	slots [iterPoolSlots]struct {
		it atomic.Pointer[pebble.Iterator]
		_  [56]byte // one cache line per slot
	}
}

// take returns an idle iterator, or nil when none is.
func (p *iterPool) take() *pebble.Iterator {
	for i := range p.slots {
		s := &p.slots[i].it
		if it := s.Load(); it != nil && s.CompareAndSwap(it, nil) {
			return it
		}
	}
	return nil
}

// give keeps it for a later read, or closes it when every slot is taken.
func (p *iterPool) give(it *pebble.Iterator) error {
	for i := range p.slots {
		if p.slots[i].it.CompareAndSwap(nil, it) {
			return nil
		}
	}
	return it.Close()
}

// closeAll closes the idle iterators (the view is closing: no read is in
// flight).
func (p *iterPool) closeAll() error {
	var err error
	for i := range p.slots {
		if it := p.slots[i].it.Swap(nil); it != nil {
			err = errors.Join(err, it.Close())
		}
	}
	return err
}

// pointIter returns an iterator of the view's snapshot for a point read
// (an idle one when there is one); doneIter gives it back. Between enter
// and exit only.
func (v *view) pointIter() (*pebble.Iterator, error) {
	if it := v.iters.take(); it != nil {
		return it, nil
	}
	return v.snap.NewIter(nil)
}

// doneIter ends a point read's use of it: kept for the next read unless
// the iterator failed. It returns the iterator's error.
func (v *view) doneIter(it *pebble.Iterator) error {
	if err := it.Error(); err != nil {
		return errors.Join(err, it.Close())
	}
	return v.iters.give(it)
}

var _ View = (*view)(nil)

// View returns a consistent snapshot of the whole store. Close it when done;
// DB.Close closes views left open.
func (db *DB) View() (View, error) {
	if err := db.acquire(); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	if err := db.checkSchema(); err != nil {
		return nil, err
	}
	v := &view{db: db, snap: db.pdb.NewSnapshot()}
	latest, err := readTag(v.snap, TagLatest)
	switch {
	case err == nil:
		v.latest, v.hasChain = latest, true
	case !isNotFound(err):
		return nil, fmt.Errorf("open view: %w", errors.Join(err, v.snap.Close()))
	}
	if v.epoch, err = readEpoch(v.snap); err != nil {
		return nil, fmt.Errorf("open view: %w", errors.Join(err, v.snap.Close()))
	}
	if v.trie, err = readTrieMeta(v.snap); err != nil {
		return nil, fmt.Errorf("open view: %w", errors.Join(err, v.snap.Close()))
	}
	db.vmu.Lock()
	db.views[v] = struct{}{}
	db.vmu.Unlock()
	return v, nil
}

// Close releases the snapshot. Closing twice returns ErrClosed.
func (v *view) Close() error {
	v.db.vmu.Lock()
	delete(v.db.views, v)
	v.db.vmu.Unlock()
	return v.closeSnapshot()
}

// closeSnapshot marks the view closed, waits for in-flight reads and
// releases its snapshot once.
func (v *view) closeSnapshot() error {
	if !v.guard.close() {
		return ErrClosed
	}
	if err := errors.Join(v.iters.closeAll(), v.snap.Close()); err != nil {
		return fmt.Errorf("close view: %w", err)
	}
	return nil
}

// enter guards a read against a concurrent Close; call v.exit after a nil
// error. Reads nest freely (a ForEach callback may read the same view).
func (v *view) enter() error {
	if !v.guard.enter() {
		return ErrClosed
	}
	return nil
}

func (v *view) exit() { v.guard.exit() }

// closeGuard counts in-flight operations; close waits for them to finish
// and makes later enters fail. It never blocks enter, so nested operations
// cannot deadlock with a concurrent close. It takes no lock: a view is
// shared by every request reading the head, so a mutex here would be one
// all of them queue on. state holds the in-flight count and, in its top
// bit, closed.
type closeGuard struct {
	state atomic.Uint64
	// drained is set by close before it sets the closed bit, and closed
	// by the exit that leaves no operation in flight after that.
	drained atomic.Pointer[chan struct{}]
}

const guardClosed = uint64(1) << 63

func (g *closeGuard) enter() bool {
	for {
		s := g.state.Load()
		if s&guardClosed != 0 {
			return false
		}
		if g.state.CompareAndSwap(s, s+1) {
			return true
		}
	}
}

func (g *closeGuard) exit() {
	if g.state.Add(^uint64(0)) == guardClosed { // the last one out after close
		close(*g.drained.Load())
	}
}

// isClosed reports whether close has begun (reads that need no snapshot
// check only this).
func (g *closeGuard) isClosed() bool { return g.state.Load()&guardClosed != 0 }

// close returns false if already closed; otherwise it waits until no
// operation is in flight.
func (g *closeGuard) close() bool {
	ch := make(chan struct{})
	g.drained.CompareAndSwap(nil, &ch) // concurrent closes share the first one's
	drained := *g.drained.Load()
	for {
		s := g.state.Load()
		if s&guardClosed != 0 {
			return false
		}
		if g.state.CompareAndSwap(s, s|guardClosed) {
			if s != 0 {
				<-drained
			}
			return true
		}
	}
}

// get reads a copy of key from the snapshot.
func (v *view) get(key []byte) ([]byte, bool, error) {
	if err := v.enter(); err != nil {
		return nil, false, err
	}
	defer v.exit()
	return getCopy(v.snap, key)
}

// mustGet is get with ErrNotFound for a missing key. The error names the
// item as format/args say; it is only formatted on failure (hot path).
func (v *view) mustGet(key []byte, format string, args ...any) ([]byte, error) {
	val, found, err := v.get(key)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), err)
	}
	if !found {
		return nil, fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrNotFound)
	}
	return val, nil
}

func (v *view) CanonicalHash(number uint64) (common.Hash, error) {
	if e := v.canonical(number); e != nil {
		if v.guard.isClosed() { // a closed view answers nothing
			return common.Hash{}, ErrClosed
		}
		return e.hash, nil
	}
	val, err := v.mustGet(canonicalKey(number), "canonical hash at %d", number)
	if err != nil {
		return common.Hash{}, err
	}
	if len(val) != common.HashLength {
		return common.Hash{}, fmt.Errorf("%w: canonical hash at %d has %d bytes", ErrCorrupt, number, len(val))
	}
	hash := common.BytesToHash(val)
	if v.hasChain && number <= v.latest {
		v.db.canon.put(v.epoch, number, hash)
	}
	return hash, nil
}

// canonical returns the canonical cache's entry of number for this view
// (canoncache.go), or nil: only numbers up to the view's latest block,
// whose canonical block is fixed by the view's epoch.
func (v *view) canonical(number uint64) *canonEntry {
	if !v.hasChain || number > v.latest {
		return nil
	}
	return v.db.canon.get(v.epoch, number)
}

func (v *view) NumberByHash(hash common.Hash) (uint64, error) {
	val, err := v.mustGet(hashToNumKey(hash), "block number of %s", hash)
	if err != nil {
		return 0, err
	}
	return decodeBE8(val, "block number of "+hash.Hex())
}

func (v *view) Header(number uint64, hash common.Hash) (*types.Header, error) {
	// A canonical header of this view's chain comes from the canonical
	// cache; any other is read through the view (so an unwound block is
	// not found) and only its decoding is cached, by hash.
	e := v.canonical(number)
	if e != nil && e.hash == hash && e.header != nil {
		if v.guard.isClosed() {
			return nil, ErrClosed
		}
		return types.CopyHeader(e.header), nil
	}
	val, err := v.mustGet(headerKey(number, hash), "header %s at %d", hash, number)
	if err != nil {
		return nil, err
	}
	h := v.db.headers.get(hash)
	if h == nil {
		h = new(types.Header)
		if err := rlp.DecodeBytes(val, h); err != nil {
			return nil, fmt.Errorf("%w: header %s at %d: %w", ErrCorrupt, hash, number, err)
		}
		v.db.headers.put(hash, h) // keeps its own copy
	}
	if e != nil && e.hash == hash {
		v.db.canon.putHeader(v.epoch, number, hash, types.CopyHeader(h))
	}
	return h, nil
}

func (v *view) Body(number uint64, hash common.Hash) (*chaintypes.Body, error) {
	if number < v.db.Anchor().History {
		return nil, fmt.Errorf("body of block %d: %w", number, ErrPrunedHistory)
	}
	val, err := v.mustGet(bodyKey(number, hash), "body %s at %d", hash, number)
	if err != nil {
		return nil, err
	}
	b := new(chaintypes.Body)
	if err := rlp.DecodeBytes(val, b); err != nil {
		return nil, fmt.Errorf("%w: body %s at %d: %w", ErrCorrupt, hash, number, err)
	}
	return b, nil
}

func (v *view) Receipts(number uint64, hash common.Hash) (chaintypes.Receipts, error) {
	if number < v.db.Anchor().History {
		return nil, fmt.Errorf("receipts of block %d: %w", number, ErrPrunedHistory)
	}
	val, err := v.mustGet(receiptsKey(number, hash), "receipts %s at %d", hash, number)
	if err != nil {
		return nil, err
	}
	rs, err := chaintypes.DecodeStored(val)
	if err != nil {
		return nil, fmt.Errorf("%w: receipts %s at %d: %w", ErrCorrupt, hash, number, err)
	}
	return rs, nil
}

func (v *view) TxLookup(txHash common.Hash) (TxLookup, error) {
	val, err := v.mustGet(txLookupKey(txHash), "tx lookup %s", txHash)
	if err != nil {
		return TxLookup{}, err
	}
	return decodeTxLookup(val)
}

// Tag returns the block number of tag; TagEarliest is 0 once a genesis exists.
func (v *view) Tag(tag Tag) (uint64, error) {
	if tag == TagEarliest {
		if !v.hasChain {
			return 0, fmt.Errorf("tag %s: %w", tag, ErrNotFound)
		}
		return 0, nil
	}
	if err := v.enter(); err != nil {
		return 0, err
	}
	defer v.exit()
	return readTag(v.snap, tag)
}

func (v *view) GenesisSpec() ([]byte, error) {
	if err := v.enter(); err != nil {
		return nil, err
	}
	defer v.exit()
	return readGenesisSpec(v.snap)
}

func (v *view) ChainConfig() ([]byte, error) {
	return v.mustGet(keyChainConfig, "chain config")
}

// StateAt returns the post-state reader of block number.
func (v *view) StateAt(number uint64) (StateReader, error) {
	if err := v.enter(); err != nil {
		return nil, err
	}
	defer v.exit()
	if !v.hasChain || number > v.latest {
		return nil, fmt.Errorf("state at %d (latest %d): %w", number, v.latest, ErrNotFound)
	}
	if f := v.db.fork.Load(); f != nil && number < f.block {
		return &forkPastState{f: f, height: number}, nil
	}
	if a := v.db.Anchor().State; number < a {
		e := &PrunedStateError{Number: number, Anchor: a}
		if hash, found, err := getCopy(v.snap, canonicalKey(number)); err == nil && found {
			if raw, found, err := getCopy(v.snap, headerKey(number, common.BytesToHash(hash))); err == nil && found {
				if h := new(types.Header); rlp.DecodeBytes(raw, h) == nil {
					e.Root = h.Root
				}
			}
		}
		return prunedState{e}, nil
	}
	return &stateReader{v: v, height: number}, nil
}

// Anchor returns the store's anchor.
func (v *view) Anchor() Anchor { return v.db.Anchor() }

// prunedState is the state reader below the store's anchor: every read
// fails with its error.
type prunedState struct{ err *PrunedStateError }

func (p prunedState) Account(common.Address) (*Account, error) { return nil, p.err }
func (p prunedState) Storage(common.Address, common.Hash) (common.Hash, error) {
	return common.Hash{}, p.err
}
func (p prunedState) Code(common.Hash) ([]byte, error) { return nil, p.err }
func (p prunedState) ForEachAccount(func(common.Address, *Account) error) error {
	return p.err
}
func (p prunedState) ForEachStorage(common.Address, func(common.Hash, common.Hash) error) error {
	return p.err
}

// readTag reads a stored tag.
func readTag(r reader, tag Tag) (uint64, error) {
	val, found, err := getCopy(r, tagKey(tag))
	if err != nil {
		return 0, fmt.Errorf("tag %s: %w", tag, err)
	}
	if !found {
		return 0, fmt.Errorf("tag %s: %w", tag, ErrNotFound)
	}
	return decodeBE8(val, "tag "+string(tag))
}

// isNotFound reports whether err wraps ErrNotFound.
func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
