package store

import (
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// ForkSource is the upstream of a forked store (see "Forked stores" in
// doc.go): the state of the upstream chain at a block. The store imports
// no network code; chain/remotestate implements it over JSON-RPC. Implementations
// are safe for concurrent use, deduplicate concurrent requests for the
// same entity and name the upstream and the entity in their errors.
type ForkSource interface {
	// Account returns addr's account at block (nil: the upstream has no
	// such account) and its code (nil: none).
	Account(block uint64, addr common.Address) (*Account, []byte, error)
	// Storage returns the value of slot of addr at block.
	Storage(block uint64, addr common.Address, slot common.Hash) (common.Hash, error)
}

// forkState is the fork side of a forked store: its upstream and the
// values fetched from it that are not persisted yet.
type forkState struct {
	block uint64 // the fork block F (Anchor.State)
	url   string // Anchor.Fork

	smu sync.RWMutex
	src ForkSource // nil until DB.SetForkSource

	// mu guards the fetched values waiting for the next write's batch:
	// versioned keys at F (entity + ^F) -> stored value, code by code key.
	mu    sync.Mutex
	vals  map[string][]byte
	codes map[string][]byte
	// inflight are the fetches running (by versioned key at F).
	inflight map[string]*fetchCall
}

func newForkState(block uint64, url string) *forkState {
	return &forkState{block: block, url: url, vals: make(map[string][]byte), codes: make(map[string][]byte), inflight: make(map[string]*fetchCall)}
}

// source returns the upstream, or an error when none is set.
func (f *forkState) source() (ForkSource, error) {
	f.smu.RLock()
	defer f.smu.RUnlock()
	if f.src == nil {
		return nil, fmt.Errorf("%w: forked store of %s opened without its upstream (tipnode dev --fork)", ErrUpstream, f.url)
	}
	return f.src, nil
}

// SetForkSource sets the upstream a forked store (Anchor.Fork) fetches the
// state it does not hold from. It fails on a store that is not a fork.
func (db *DB) SetForkSource(src ForkSource) error {
	f := db.fork.Load()
	if f == nil {
		return fmt.Errorf("set fork source: %w: the store is not a fork", ErrInvalidWrite)
	}
	f.smu.Lock()
	f.src = src
	f.smu.Unlock()
	return nil
}

// ForkStats describes a forked store's fetching (DB.ForkStats).
type ForkStats struct {
	// Fetched counts the entities fetched from the upstream since open;
	// Unpersisted those waiting for the next write.
	Fetched, Unpersisted uint64
}

// forkMissing is the value a local read of a forked store answers for an
// entity without any version at or below the height: no stored value looks
// like it (account values start with 0x01 or are the one-byte 0x00 marker,
// slot values have no leading zero byte).
var forkMissing = []byte{0x00, 0xff, 'f', 'o', 'r', 'k'}

func isForkMissing(v []byte) bool { return string(v) == string(forkMissing) }

// readFork answers a read of entity (entityLen bytes of key) that the
// local store cannot: a value fetched earlier (not yet persisted, or
// persisted after the view's snapshot: the live store is read at F), else
// from the upstream at F (then kept for the next write). A read at the
// view's latest block fills the state cache with it as a version at F.
func (s *stateReader) readFork(key []byte, entityLen int) ([]byte, error) {
	f := s.v.db.fork.Load()
	entity := key[:entityLen]
	vkey := appendVersion(append(make([]byte, 0, len(key)), entity...), f.block)
	if err := s.v.enter(); err != nil {
		return nil, err
	}
	defer s.v.exit()
	val, err := s.v.db.fetched(f, vkey, entity)
	if err != nil {
		return nil, err
	}
	if s.height == s.v.latest {
		s.v.db.state.fill(entity, s.v.epoch, s.v.latest, f.block, val)
	}
	return val, nil
}

// fetchCall is one fetch of an entity in flight; done is closed when val
// or err is set.
type fetchCall struct {
	done chan struct{}
	val  []byte
	err  error
}

// fetched returns the stored value of the version at F (vkey) of entity:
// kept from an earlier fetch, persisted since (the live store), or fetched
// from the upstream now. Concurrent reads of one entity share one fetch,
// and a read that comes after it finds its value kept: the upstream is
// asked once.
func (db *DB) fetched(f *forkState, vkey, entity []byte) ([]byte, error) {
	f.mu.Lock()
	if val, ok := f.vals[string(vkey)]; ok {
		f.mu.Unlock()
		return val, nil
	}
	if c, ok := f.inflight[string(vkey)]; ok {
		f.mu.Unlock()
		<-c.done
		return c.val, c.err
	}
	c := &fetchCall{done: make(chan struct{})}
	f.inflight[string(vkey)] = c
	f.mu.Unlock()
	var code, ck []byte
	val, found, err := getCopy(db.pdb, vkey)
	if err == nil && !found {
		var src ForkSource
		if src, err = f.source(); err == nil {
			val, code, ck, err = fetchEntity(src, f.block, entity)
		}
		if err == nil {
			db.forkFetched.Add(1)
		}
	}
	c.val, c.err = val, err
	f.mu.Lock()
	delete(f.inflight, string(vkey))
	if err == nil && !found {
		f.vals[string(vkey)] = val
		if len(code) > 0 {
			f.codes[string(ck)] = code
		}
	}
	f.mu.Unlock()
	close(c.done)
	if len(code) > 0 {
		db.state.fillCode(ck, code)
	}
	return val, err
}

// fetchEntity fetches an account ('a' entity) or slot ('s' entity) from
// src at block, as its stored value (and an account's code with its code
// key).
func fetchEntity(src ForkSource, block uint64, entity []byte) (val, code, ck []byte, err error) {
	addr := common.BytesToAddress(entity[1:accountEntityLen])
	if entity[0] == prefixAccount {
		acc, code, err := src.Account(block, addr)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%w: %w", ErrUpstream, err)
		}
		if acc == nil {
			return []byte{deletedMarker}, nil, nil, nil
		}
		if len(code) > 0 {
			ck = codeKey(acc.CodeHash)
		}
		return encodeAccount(acc), code, ck, nil
	}
	v, err := src.Storage(block, addr, common.BytesToHash(entity[storageAddrLen:storageEntityLen]))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w: %w", ErrUpstream, err)
	}
	return trimValue(v), nil, nil, nil
}

// forkCode returns code the fork fetched (not yet persisted, or persisted
// after the view's snapshot).
func (s *stateReader) forkCode(key []byte) ([]byte, bool, error) {
	f := s.v.db.fork.Load()
	f.mu.Lock()
	code, ok := f.codes[string(key)]
	f.mu.Unlock()
	if ok {
		return code, true, nil
	}
	if err := s.v.enter(); err != nil {
		return nil, false, err
	}
	defer s.v.exit()
	return getCopy(s.v.db.pdb, key)
}

// stageFetched adds the fork's fetched values to b (versions at F and
// code) and returns the keys staged, for dropFetched after the commit.
func (db *DB) stageFetched(b *pebble.Batch) (vals, codes []string, err error) {
	f := db.fork.Load()
	if f == nil {
		return nil, nil, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, v := range f.vals {
		vals = append(vals, k)
		err = errors.Join(err, b.Set([]byte(k), v, nil))
	}
	for k, c := range f.codes {
		codes = append(codes, k)
		err = errors.Join(err, b.Set([]byte(k), c, nil))
	}
	sort.Strings(vals)
	return vals, codes, err
}

// dropFetched forgets the fetched values a committed batch persisted.
func (db *DB) dropFetched(vals, codes []string) {
	f := db.fork.Load()
	if f == nil || len(vals)+len(codes) == 0 {
		return
	}
	f.mu.Lock()
	for _, k := range vals {
		delete(f.vals, k)
	}
	// A past-cache head entry built before the commit says the entity has
	// no version at all: drop it so the next past read lists the one at F
	// (a reader of an older snapshot may put it back; that read then costs
	// one Pebble read of the version at F, see readFork).
	if fc := db.state.fc; fc != nil {
		var kb [pastKeyLen]byte
		for _, k := range vals {
			fc.Del(pastHeadKey(&kb, []byte(k[:len(k)-versionLen])))
		}
	}
	for _, k := range codes {
		delete(f.codes, k)
	}
	f.mu.Unlock()
}

// persistFetchedAtClose writes what the fork fetched and no block write
// took along, in one batch (Close, after every reader and writer is gone).
func (db *DB) persistFetchedAtClose() {
	f := db.fork.Load()
	if f == nil {
		return
	}
	b := db.pdb.NewBatch()
	vals, codes, err := db.stageFetched(b)
	if err == nil && len(vals)+len(codes) > 0 {
		err = db.commit(b, "fetched fork state")
		if err == nil {
			db.log.Info().Int("entities", len(vals)).Int("codes", len(codes)).Msg("fork: fetched state persisted")
		}
		b = nil
	}
	if b != nil {
		b.Close()
	}
	if err != nil {
		db.log.Warn().Err(err).Msg("fork: persist fetched state (it is fetched again after a restart)")
	}
}

// ForkStats returns the fork's fetch counters (zero for other stores).
func (db *DB) ForkStats() ForkStats {
	s := ForkStats{Fetched: db.forkFetched.Load()}
	if f := db.fork.Load(); f != nil {
		f.mu.Lock()
		s.Unpersisted = uint64(len(f.vals))
		f.mu.Unlock()
	}
	return s
}

// forkPastState is a forked store's state reader below the fork block:
// every read goes to the upstream at that height (nothing is persisted;
// the code of the accounts read is kept for Code, which a JSON-RPC
// upstream cannot answer by hash).
type forkPastState struct {
	f      *forkState
	height uint64

	mu    sync.Mutex
	codes map[common.Hash][]byte
}

func (p *forkPastState) Account(addr common.Address) (*Account, error) {
	src, err := p.f.source()
	if err != nil {
		return nil, err
	}
	acc, code, err := src.Account(p.height, addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUpstream, err)
	}
	if acc != nil && len(code) > 0 {
		p.mu.Lock()
		if p.codes == nil {
			p.codes = make(map[common.Hash][]byte)
		}
		p.codes[acc.CodeHash] = code
		p.mu.Unlock()
	}
	return acc, nil
}

func (p *forkPastState) Storage(addr common.Address, slot common.Hash) (common.Hash, error) {
	src, err := p.f.source()
	if err != nil {
		return common.Hash{}, err
	}
	v, err := src.Storage(p.height, addr, slot)
	if err != nil {
		return common.Hash{}, fmt.Errorf("%w: %w", ErrUpstream, err)
	}
	return v, nil
}

// Code answers the code of an account this reader read.
func (p *forkPastState) Code(hash common.Hash) ([]byte, error) {
	if hash == types.EmptyCodeHash || hash == (common.Hash{}) {
		return nil, nil
	}
	p.mu.Lock()
	code, ok := p.codes[hash]
	p.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: code %s at block %d: read its account first", ErrUpstream, hash, p.height)
	}
	return code, nil
}

func (p *forkPastState) ForEachAccount(func(common.Address, *Account) error) error {
	return fmt.Errorf("%w: accounts at %d: a fork cannot list the upstream's state", ErrUpstream, p.height)
}

func (p *forkPastState) ForEachStorage(addr common.Address, _ func(common.Hash, common.Hash) error) error {
	return fmt.Errorf("%w: storage of %s at %d: a fork cannot list the upstream's state", ErrUpstream, addr, p.height)
}
