package store

import (
	"bytes"

	"github.com/cockroachdb/pebble/v2"
)

// comparerName is persisted by Pebble; a store created with another comparer
// refuses to open. Change it only together with a migration of every key.
const comparerName = "tipnode.v1"

// splitKey is the Pebble Split of our key space: versioned account,
// storage and trie node keys split into entity (prefix) and ^number (suffix); every other
// key is all prefix. Versioned keys are recognised by table byte and exact
// length, and no other key of those tables is ever stored (seek and bound
// keys of other lengths are plain prefixes).
func splitKey(key []byte) int {
	if isAccountKey(key) || isStorageKey(key) || isTrieKey(key) {
		return len(key) - versionLen
	}
	return len(key)
}

// compareKeys orders keys by prefix (bytewise), then by suffix (bytewise), as
// Pebble v2 requires of a Comparer with a Split. For every key that is
// actually stored this equals bytes.Compare: versioned keys of one table have
// one fixed length, and the suffix only ever compares against the suffix of
// the same entity.
//
// Whether a key is versioned depends only on its table byte and its
// length, so two keys whose first bytes differ, or of one length, compare
// as bytes.Compare without splitting: the fast path of nearly every
// comparison (memtable inserts and seeks).
func compareKeys(a, b []byte) int {
	if len(a) > 0 && len(b) > 0 && (a[0] != b[0] || len(a) == len(b)) {
		return bytes.Compare(a, b)
	}
	pa, pb := splitKey(a), splitKey(b)
	if c := bytes.Compare(a[:pa], b[:pb]); c != 0 {
		return c
	}
	return bytes.Compare(a[pa:], b[pb:])
}

// separator is the index-block separator. Shortening a versioned key would
// produce a key of a non-versioned length whose prefix orders differently, so
// when either side is versioned the separator is a itself (always valid);
// plain keys use Pebble's bytewise shortening.
func separator(dst, a, b []byte) []byte {
	if splitKey(a) < len(a) || splitKey(b) < len(b) {
		return append(dst, a...)
	}
	return pebble.DefaultComparer.Separator(dst, a, b)
}

// newComparer returns the comparer of tipnode stores: Pebble's default
// comparer with our Split, the matching Compare and a safe Separator.
// Successor (increment a leading byte, truncate) and ImmediateSuccessor
// (append 0x00) from the default comparer remain valid: their outputs are
// plain keys that order correctly under compareKeys.
func newComparer() *pebble.Comparer {
	c := *pebble.DefaultComparer
	c.Name = comparerName
	c.Split = splitKey
	c.Compare = compareKeys
	c.Equal = bytes.Equal // prefix+suffix is injective, so Compare == 0 iff bytes are equal
	c.ComparePointSuffixes = bytes.Compare
	c.CompareRangeSuffixes = bytes.Compare
	c.Separator = separator
	return &c
}
