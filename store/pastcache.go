package store

import (
	"encoding/binary"
	"errors"
	"sync/atomic"
)

// pastCache serves reads of accounts and slots below a view's latest block
// (see "Past-height reads" in doc.go). It shares the state cache's
// fastcache (and so its memory bound and its resets) under keys of its own:
// pastKeyPrefix + entity.
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
type pastCache struct {
	state *stateCache

	hits, misses atomic.Uint64
}

const (
	// pastKeyPrefix starts the key of a past entry; no entity or code key of
	// the state cache starts with it.
	pastKeyPrefix  = 'V'
	pastHeaderLen  = 17
	pastFlagAll    = 1
	pastVersionLen = 8
	// maxPastVersions and maxPastEntry bound one entry: an entity with more
	// versions than fit keeps its newest ones (reads below them seek).
	maxPastVersions = 64
	maxPastEntry    = 4 << 10
)

// enabled reports whether the cache is on (the state cache is).
func (p *pastCache) enabled() bool { return p.state.fc != nil }

// get returns the stored value of entity at height for a view at epoch
// (absent when the entity had no version at or below height), or ok=false.
func (p *pastCache) get(entity []byte, epoch, height uint64, absent []byte) (val []byte, ok bool) {
	var kb [1 + storageEntityLen]byte
	buf := p.state.fc.Get(nil, pastKey(&kb, entity))
	val, ok = lookupPast(buf, epoch, height, absent)
	if ok {
		p.hits.Add(1)
	} else {
		p.misses.Add(1)
	}
	return val, ok
}

// lookupPast reads height out of a past entry (see pastCache).
func lookupPast(buf []byte, epoch, height uint64, absent []byte) ([]byte, bool) {
	if len(buf) < pastHeaderLen || binary.BigEndian.Uint64(buf) != epoch || height > binary.BigEndian.Uint64(buf[8:]) {
		return nil, false
	}
	all := buf[16]&pastFlagAll != 0
	rest := buf[pastHeaderLen:]
	for len(rest) > 0 {
		if len(rest) < pastVersionLen {
			return nil, false
		}
		from := binary.BigEndian.Uint64(rest)
		n, w := binary.Uvarint(rest[pastVersionLen:])
		start := pastVersionLen + w
		if w <= 0 || uint64(len(rest)-start) < n {
			return nil, false
		}
		if from <= height {
			return rest[start : start+int(n)], true
		}
		rest = rest[start+int(n):]
	}
	if all {
		return absent, true
	}
	return nil, false
}

func pastKey(kb *[1 + storageEntityLen]byte, entity []byte) []byte {
	kb[0] = pastKeyPrefix
	return kb[:1+copy(kb[1:], entity)]
}

// readPast is stateReader.read for a height below the view's latest block
// after a state-cache miss: from the past cache, or else from one Pebble
// iterator that walks the entity's versions from the view's latest block
// down (they are adjacent keys), answers the read and fills the past cache
// with them (and the state cache with the newest, as a read at the view's
// latest block would).
func (s *stateReader) readPast(key []byte, entityLen int, absent []byte) ([]byte, error) {
	p, entity := s.v.db.past, key[:entityLen]
	if !p.enabled() {
		val, found, err := s.seekVersion(key)
		if err != nil || !found {
			return absent, err
		}
		return val.value, nil
	}
	if val, ok := p.get(entity, s.v.epoch, s.height, absent); ok {
		if err := s.v.enter(); err != nil { // a closed view answers nothing
			return nil, err
		}
		s.v.exit()
		return val, nil
	}
	if err := s.v.enter(); err != nil {
		return nil, err
	}
	defer s.v.exit()
	it, err := s.v.snap.NewIter(nil)
	if err != nil {
		return nil, err
	}
	seek := appendVersion(append(make([]byte, 0, len(key)), entity...), s.v.latest)
	sameEntity := func(k []byte) bool { return len(k) == len(key) && string(k[:entityLen]) == string(entity) }
	entry := make([]byte, pastHeaderLen, 256)
	binary.BigEndian.PutUint64(entry, s.v.epoch)
	binary.BigEndian.PutUint64(entry[8:], s.v.latest)
	var (
		val, newest []byte
		newestFrom  uint64
		found       bool
		complete    = true // every version is listed
		listed      int
	)
	for valid := it.SeekPrefixGE(seek); valid && sameEntity(it.Key()); valid = it.Next() {
		from := keyVersion(it.Key())
		v, verr := it.ValueAndErr()
		if verr != nil {
			err = verr
			break
		}
		if listed == maxPastVersions || len(entry)+pastVersionLen+binary.MaxVarintLen64+len(v) > maxPastEntry {
			complete = false
			break
		}
		entry = binary.BigEndian.AppendUint64(entry, from)
		entry = binary.AppendUvarint(entry, uint64(len(v)))
		entry = append(entry, v...)
		v = entry[len(entry)-len(v):] // the copy (later appends leave it intact)
		if listed++; listed == 1 {
			newest, newestFrom = v, from
		}
		if !found && from <= s.height {
			val, found = v, true
		}
	}
	if err == nil && !found && !complete {
		// The versions at and below height did not fit: seek the one at height.
		seek = appendVersion(seek[:entityLen], s.height)
		if it.SeekPrefixGE(seek) && sameEntity(it.Key()) {
			v, verr := it.ValueAndErr()
			if err = verr; err == nil {
				val, found = append([]byte{}, v...), true
			}
		}
	}
	if err = errors.Join(err, it.Error(), it.Close()); err != nil {
		return nil, err
	}
	if complete {
		entry[16] = pastFlagAll
		if listed == 0 {
			newest = absent
		}
	}
	if newest != nil {
		var kb [1 + storageEntityLen]byte
		p.state.fc.Set(pastKey(&kb, entity), entry)
		// The newest version is what a read at the view's latest block
		// finds: the state cache takes it on the same terms as that read's
		// fill.
		p.state.fill(entity, s.v.epoch, s.v.latest, newestFrom, newest)
	}
	if !found {
		return absent, nil
	}
	return val, nil
}
