package store

import (
	"encoding/binary"
	"errors"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// pastCache serves reads of accounts and slots below a view's latest block
// (see "Past-height reads" in doc.go). It shares the state cache's
// fastcache (and so its memory bound and its resets) under keys of its own,
// starting with pastKeyPrefix.
//
// An entry is a fact about the chain of one epoch: epoch BE8 | through BE8
// | flags (1 byte) | versions, newest first, each from BE8 | uvarint length
// | stored value. It lists every version of the entity at heights in
// [oldest listed from, through]; with flagAll, the entity has no version
// below the oldest listed one either (an entity without any version is an
// entry with no versions and flagAll). Versions at committed heights are
// immutable within an epoch (only UnwindTo and Reorg remove or replace
// blocks, and both bump the epoch), so an entry serves a view of the same
// epoch at any height <= through, whatever the view's latest block and
// whatever the writer does meanwhile.
//
// An entity has up to two kinds of entries, both in that form:
//
//   - its head entry, key pastKeyPrefix + entity: its newest versions, from
//     the latest block of the view that read it down (at most maxVersions;
//     all of them, with flagAll, for most entities);
//   - for an entity with more versions than its head entry lists (a fee
//     recipient, a busy holder or contract: one version per block), page
//     entries, key pastKeyPrefix + entity + BE8(page), one per span of
//     pageBlocks heights [page*pageBlocks, page*pageBlocks+pageBlocks-1]:
//     the versions in the page up to through (the span's end, or the
//     reading view's latest block if lower) and the newest version at or
//     below the page's first height, the one in force there (flagAll if
//     there is none). A page lists at most pageBlocks+1 versions, so every
//     height of a busy entity is answered from one bounded entry.
//
// A read looks at the head entry; a height below what it lists (and not
// flagAll) looks at the height's page. Keys of both kinds differ in length
// from each other for one entity kind, and account and slot keys differ in
// their second byte, so no two entries share a key.
type pastCache struct {
	state *stateCache

	// maxVersions bounds the versions of a head entry, pageBlocks is the
	// span of heights of a page (defaultPastVersions, defaultPastPage;
	// tests lower them to reach pages on short chains).
	maxVersions int
	pageBlocks  uint64

	// bufs holds scratch buffers entries are read into (*[]byte): a head
	// entry of a busy entity is kilobytes, and only the value read is
	// copied out of it.
	bufs sync.Pool

	hits, misses stripedCounter
}

const (
	// pastKeyPrefix starts the key of a past entry; no entity or code key of
	// the state cache starts with it.
	pastKeyPrefix  = 'V'
	pastHeaderLen  = 17
	pastFlagAll    = 1
	pastVersionLen = 8
	// defaultPastVersions and maxPastEntry bound a head entry: an entity
	// with more versions than fit keeps its newest ones there and the
	// older ones in pages of defaultPastPage heights (at most
	// defaultPastPage+1 versions of at most an account's encoding each,
	// under maxPastEntry).
	defaultPastVersions = 64
	defaultPastPage     = 32
	maxPastEntry        = 4 << 10
	// pastKeyLen is the longest past key: a slot's page key.
	pastKeyLen = 1 + storageEntityLen + 8
)

// newPastCache returns the past cache in front of state's fastcache.
func newPastCache(state *stateCache) *pastCache {
	return &pastCache{state: state, maxVersions: defaultPastVersions, pageBlocks: defaultPastPage}
}

// enabled reports whether the cache is on (the state cache is).
func (p *pastCache) enabled() bool { return p.state.fc != nil }

// pastLookup is the outcome of a past cache lookup.
type pastLookup uint8

const (
	pastMiss      pastLookup = iota // no head entry answering the view
	pastHit                         // answered
	pastBelowHead                   // the head entry answers the view but lists no version at or below the height
)

// get returns a copy of the stored value of entity at height for a view at
// epoch (absent when the entity had no version at or below height), or how
// it missed: pastMiss (no usable head entry: walk the entity from the
// view's latest block) or pastBelowHead (the head entry is usable, the
// height's page is missing: build that page).
func (p *pastCache) get(entity []byte, epoch, height uint64, absent []byte) ([]byte, pastLookup) {
	bp, _ := p.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer p.bufs.Put(bp)
	var kb [pastKeyLen]byte
	*bp = p.state.fc.Get((*bp)[:0], pastHeadKey(&kb, entity))
	val, res := lookupPast(*bp, epoch, height, absent)
	if res == pastBelowHead {
		*bp = p.state.fc.Get((*bp)[:0], pastPageKey(&kb, entity, height/p.pageBlocks))
		if val, res = lookupPast(*bp, epoch, height, absent); res != pastHit {
			res = pastBelowHead
		}
	}
	if res != pastHit {
		p.misses.add(entity)
		return nil, res
	}
	p.hits.add(entity)
	if string(val) == string(absent) { // absent, or stored as absence is
		return absent, pastHit
	}
	return append([]byte{}, val...), pastHit
}

// lookupPast reads height out of a past entry (see pastCache): pastHit
// with the value, pastBelowHead when the entry is of epoch and through
// height but lists no version at or below height and is not flagAll, else
// pastMiss. The value aliases buf (or is absent).
func lookupPast(buf []byte, epoch, height uint64, absent []byte) ([]byte, pastLookup) {
	if len(buf) < pastHeaderLen || binary.BigEndian.Uint64(buf) != epoch || height > binary.BigEndian.Uint64(buf[8:]) {
		return nil, pastMiss
	}
	all := buf[16]&pastFlagAll != 0
	rest := buf[pastHeaderLen:]
	for len(rest) > 0 {
		if len(rest) < pastVersionLen {
			return nil, pastMiss
		}
		from := binary.BigEndian.Uint64(rest)
		n, w := binary.Uvarint(rest[pastVersionLen:])
		start := pastVersionLen + w
		if w <= 0 || uint64(len(rest)-start) < n {
			return nil, pastMiss
		}
		if from <= height {
			return rest[start : start+int(n)], pastHit
		}
		rest = rest[start+int(n):]
	}
	if all {
		return absent, pastHit
	}
	return nil, pastBelowHead
}

// pastHeadKey is the key of entity's head entry, pastPageKey of its page.
func pastHeadKey(kb *[pastKeyLen]byte, entity []byte) []byte {
	kb[0] = pastKeyPrefix
	return kb[:1+copy(kb[1:], entity)]
}

func pastPageKey(kb *[pastKeyLen]byte, entity []byte, page uint64) []byte {
	n := len(pastHeadKey(kb, entity))
	binary.BigEndian.PutUint64(kb[n:], page)
	return kb[:n+8]
}

// pastWalk is an entry built by walking an entity's versions down from the
// entry's through height.
type pastWalk struct {
	entry      []byte
	listed     int
	newest     []byte // the first version listed (aliases entry)
	newestFrom uint64
	val        []byte // the version at the height read (aliases entry)
	found      bool
	// complete: every version at or below through is listed (flagAll).
	complete bool
}

// walkPast lists the versions of entity (whose versioned keys are keyLen
// long) from through down, into an entry of epoch: at most maxVersions and
// maxPastEntry bytes, and none after the first version at or below floor
// (floor < 0: no floor). It finds the version at height on the way. It
// closes nothing; the caller checks it.Error.
func walkPast(it *pebble.Iterator, entity []byte, keyLen int, epoch, through uint64, floor int64, height uint64, maxVersions int) (pastWalk, error) {
	var kb [pastKeyLen]byte
	seek := appendVersion(append(kb[:0], entity...), through)
	w := pastWalk{entry: make([]byte, pastHeaderLen, 256), complete: true}
	binary.BigEndian.PutUint64(w.entry, epoch)
	binary.BigEndian.PutUint64(w.entry[8:], through)
	for valid := it.SeekPrefixGE(seek); valid; valid = it.Next() {
		k := it.Key()
		if len(k) != keyLen || string(k[:len(entity)]) != string(entity) {
			break
		}
		from := keyVersion(k)
		v, err := it.ValueAndErr()
		if err != nil {
			return w, err
		}
		if w.listed == maxVersions || len(w.entry)+pastVersionLen+binary.MaxVarintLen64+len(v) > maxPastEntry {
			w.complete = false
			break
		}
		w.entry = binary.BigEndian.AppendUint64(w.entry, from)
		w.entry = binary.AppendUvarint(w.entry, uint64(len(v)))
		w.entry = append(w.entry, v...)
		v = w.entry[len(w.entry)-len(v):] // the copy (later appends leave it intact)
		if w.listed++; w.listed == 1 {
			w.newest, w.newestFrom = v, from
		}
		if !w.found && from <= height {
			w.val, w.found = v, true
		}
		if floor >= 0 && from <= uint64(floor) {
			w.complete = from == 0 // nothing sorts below block 0
			break
		}
	}
	if w.complete {
		w.entry[16] = pastFlagAll
	}
	return w, nil
}

// readPast is stateReader.read for a height below the view's latest block
// after a state-cache miss: from the past cache, or else from one Pebble
// iterator. Without a usable head entry it walks the entity's versions
// (adjacent keys) from the view's latest block down, and fills the head
// entry (and the state cache with the newest version, as a read at the
// view's latest block would). When the height is below what the head entry
// holds, the same iterator builds the height's page.
func (s *stateReader) readPast(key []byte, entityLen int, absent []byte) ([]byte, error) {
	p, entity := s.v.db.past, key[:entityLen]
	if !p.enabled() {
		val, found, err := s.seekVersion(key)
		if err != nil || !found {
			return absent, err
		}
		return val.value, nil
	}
	val, res := p.get(entity, s.v.epoch, s.height, absent)
	if err := s.v.enter(); err != nil { // a closed view answers nothing
		return nil, err
	}
	defer s.v.exit()
	if res == pastHit {
		return val, nil
	}
	it, err := s.v.pointIter()
	if err != nil {
		return nil, err
	}
	val, err = s.walkPast(it, entity, len(key), absent, res)
	if err = errors.Join(err, s.v.doneIter(it)); err != nil {
		return nil, err
	}
	return val, nil
}

// walkPast answers readPast's miss res with it, filling the entries it
// builds.
func (s *stateReader) walkPast(it *pebble.Iterator, entity []byte, keyLen int, absent []byte, res pastLookup) ([]byte, error) {
	p := s.v.db.past
	var kb [pastKeyLen]byte
	if res == pastMiss {
		w, err := walkPast(it, entity, keyLen, s.v.epoch, s.v.latest, -1, s.height, p.maxVersions)
		if err != nil {
			return nil, err
		}
		newest := w.newest
		if w.listed == 0 {
			newest = absent // complete: no version at all
		}
		if newest != nil {
			p.state.fc.Set(pastHeadKey(&kb, entity), w.entry)
			// The newest version is what a read at the view's latest block
			// finds: the state cache takes it on the same terms as that
			// read's fill (not a fork's "no version": the upstream has it).
			if !isForkMissing(newest) {
				p.state.fill(entity, s.v.epoch, s.v.latest, w.newestFrom, newest)
			}
		}
		switch {
		case w.found:
			return w.val, nil
		case w.complete:
			return absent, nil
		}
	}
	// The height is below the versions the head entry lists: its page.
	page := s.height / p.pageBlocks
	first := page * p.pageBlocks
	through := min(first+p.pageBlocks-1, s.v.latest)
	w, err := walkPast(it, entity, keyLen, s.v.epoch, through, int64(first), s.height, int(p.pageBlocks)+1)
	if err != nil {
		return nil, err
	}
	if w.listed > 0 || w.complete {
		p.state.fc.Set(pastPageKey(&kb, entity, page), w.entry)
	}
	switch {
	case w.found:
		return w.val, nil
	case w.complete:
		return absent, nil
	}
	// The page did not fit (values too large): seek the version at height.
	if it.SeekPrefixGE(appendVersion(append(kb[:0], entity...), s.height)) {
		if k := it.Key(); len(k) == keyLen && string(k[:len(entity)]) == string(entity) {
			v, err := it.ValueAndErr()
			if err != nil {
				return nil, err
			}
			return append([]byte{}, v...), nil
		}
	}
	return absent, nil
}
