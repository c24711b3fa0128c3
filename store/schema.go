package store

import (
	"encoding/binary"

	"github.com/ethereum/go-ethereum/common"
)

// Key layouts of FormatCurrent (format.go numbers the formats and describes
// the layouts older ones used). Every key starts with a one-byte table
// prefix; numbers are 8-byte big-endian (BE8) so keys sort by block number.
// Values are described after the arrow.
//
// Versioned state ordering contract: a version key is entity + ^number
// (BE8 of the bitwise-inverted block number), so for one entity the newest
// version sorts first. The newest version at or below height N is therefore
// the first key >= entity+^N that still starts with entity: ONE seek
// (SeekPrefixGE). The Pebble comparer's Split puts the entity in the key
// prefix and ^number in the suffix, so bloom filters answer those seeks.
const (
	prefixHeader     byte = 'h' // 'h' + num BE8 + hash(32)          -> RLP(types.Header)
	prefixBody       byte = 'b' // 'b' + num BE8 + hash(32)          -> RLP(chaintypes.Body) (transactions, uncles, withdrawals; go-ethereum's types.Body layout, deposits as 0x7e-typed elements)
	prefixReceipts   byte = 'r' // 'r' + num BE8 + hash(32)          -> chaintypes.EncodeStored: RLP list of go-ethereum ReceiptForStorage, OP receipts with a 4th element (chaintypes.StoredReceipt)
	prefixCanonical  byte = 'c' // 'c' + num BE8                     -> canonical block hash(32)
	prefixHashToNum  byte = 'n' // 'n' + hash(32)                    -> num BE8 (canonical blocks only)
	prefixTxLookup   byte = 'x' // 'x' + txhash(32)                  -> blockhash(32) + num BE8 + index BE8
	prefixTag        byte = 't' // 't' + tag name ("latest"|"safe"|"finalized") -> num BE8; "earliest" (= 0) is not stored
	prefixCode       byte = 'C' // 'C' + codehash(32)                -> contract code (content addressed, never deleted)
	prefixMeta       byte = 'm' // 'm' + name                        -> store metadata, see the meta keys below
	prefixChangeList byte = 'l' // 'l' + num BE8                     -> changed entities of the block, see encodeChangeList (none for block 0: never unwound)
	prefixAccount    byte = 'a' // 'a' + addr(20) + ^num BE8         -> encodeAccount(Account) or deletedMarker (0x00)
	prefixStorage    byte = 's' // 's' + addr(20) + slot(32) + ^num BE8 -> value with leading zero bytes trimmed (empty = zero)
	prefixMigration  byte = 'M' // 'M' + format version BE8          -> progress cursor of an unfinished migration to that version
	prefixPendingHdr byte = 'P' // 'P' + num BE8                     -> RLP(types.Header): header of the open pending block num (at most one; gone when num is written)
	prefixPendingTx  byte = 'Q' // 'Q' + num BE8 + index BE8         -> tx.MarshalBinary() (EIP-2718; 0x7e = deposit): pre-confirmed transaction index of pending block num
	prefixPendingOvr byte = 'O' // 'O' + num BE8 + seq BE8           -> RLP(PendingOverride): dev-chain state change seq of pending block num (tipnode dev only)
	prefixGenesisSpc byte = 'G' // 'G' + chunk index BE4             -> the next genesisSpecChunk bytes of the genesis spec (genesis JSON) stored by WriteGenesis; chunks 0..n-1, all full but the last
	prefixTrieNode   byte = 'T' // 'T' + owner(32) + path(32, nibbles packed, zero padded) + path length(1) + ^num BE8 -> RLP trie node written at block num, empty = deleted there (owner zero: account trie; keccak(addr): its storage trie); see trie.go
	prefixTrieList   byte = 'U' // 'U' + num BE8                     -> entities (owner + path + length, 65 bytes each, sorted) of the trie node versions block num wrote; unwinds delete them, pruning drops superseded ones
)

// Meta keys ('m' + name).
var (
	keySchemaVersion = []byte("mschema-version") // -> FormatVersion of the data, BE8 (absent = FormatNone)
	keyChainConfig   = []byte("mchain-config")   // -> opaque chain config bytes (JSON) stored by WriteGenesis (in stores initialised before format 3, by that migration)
	keyChainEpoch    = []byte("mchain-epoch")    // -> BE8 counter of unwinds and reorgs (absent = 0), bumped in their batch; keys the state cache (statecache.go)
	keyAnchor        = []byte("manchor")         // -> state anchor BE8 + history anchor BE8 of a store initialised from a state dump (absent = 0, 0: from genesis); see Anchor
	keyFork          = []byte("mfork")           // -> the upstream JSON-RPC URL of a forked store (tipnode dev --fork; absent: not a fork); its fork block is the state anchor, see Anchor.Fork
	keyTrie          = []byte("mtrie")           // -> BE8 base: the state trie ('T', 'U') can be read at every height from base to latest (absent: the store keeps no trie)
)

// genesisSpecChunk is the size of the genesis spec's chunks ('G' keys). A
// spec with a large alloc is hundreds of MB: as one value it made one
// sstable block of that size, decompressed whole by every read that lands
// in it (the meta keys around it: format version, chain config, epoch);
// chunks keep every block near Config's block size and the spec away from
// the keys read at open.
const genesisSpecChunk = 64 << 10

// Fixed key lengths and the length of the entity part of versioned keys.
const (
	versionLen       = 8                        // ^num BE8 suffix of versioned keys
	accountEntityLen = 1 + common.AddressLength // 'a' + addr
	accountKeyLen    = accountEntityLen + versionLen
	storageEntityLen = 1 + common.AddressLength + common.HashLength // 's' + addr + slot
	storageKeyLen    = storageEntityLen + versionLen
	storageAddrLen   = 1 + common.AddressLength // 's' + addr: the prefix of all slots of one address
)

// deletedMarker is the value of an account version that deletes the account.
// Live account encodings start with accountEncodingV1, never with 0x00.
const deletedMarker byte = 0x00

func be8(n uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	return b[:]
}

func numHashKey(prefix byte, num uint64, hash common.Hash) []byte {
	k := make([]byte, 0, 1+8+common.HashLength)
	k = append(k, prefix)
	k = binary.BigEndian.AppendUint64(k, num)
	return append(k, hash[:]...)
}

func headerKey(num uint64, hash common.Hash) []byte   { return numHashKey(prefixHeader, num, hash) }
func bodyKey(num uint64, hash common.Hash) []byte     { return numHashKey(prefixBody, num, hash) }
func receiptsKey(num uint64, hash common.Hash) []byte { return numHashKey(prefixReceipts, num, hash) }

func pendingHdrKey(num uint64) []byte { return append([]byte{prefixPendingHdr}, be8(num)...) }

func pendingOvrKey(num, seq uint64) []byte {
	return append(append([]byte{prefixPendingOvr}, be8(num)...), be8(seq)...)
}
func pendingTxKey(num, index uint64) []byte {
	return append(append([]byte{prefixPendingTx}, be8(num)...), be8(index)...)
}

func canonicalKey(num uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefixCanonical}, num)
}

func hashToNumKey(hash common.Hash) []byte { return append([]byte{prefixHashToNum}, hash[:]...) }
func txLookupKey(tx common.Hash) []byte    { return append([]byte{prefixTxLookup}, tx[:]...) }
func tagKey(tag Tag) []byte                { return append([]byte{prefixTag}, tag...) }
func codeKey(hash common.Hash) []byte      { return append([]byte{prefixCode}, hash[:]...) }
func changeListKey(num uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefixChangeList}, num)
}

// LegacyGenesisSpecKey and ChainConfigKey are the keys of the genesis spec
// as stores before FormatGenesisChunks hold it (one value) and of the chain
// config, for the migrations that derive the config from the spec and chunk
// the spec.
func LegacyGenesisSpecKey() []byte { return []byte("mgenesis-spec") }
func ChainConfigKey() []byte       { return append([]byte(nil), keyChainConfig...) }

// GenesisChangeListKey is the key of block 0's change list, which stores
// before FormatGenesisChunks hold (migration 4 deletes it).
func GenesisChangeListKey() []byte { return changeListKey(0) }

func genesisSpecKey(chunk uint32) []byte {
	return binary.BigEndian.AppendUint32([]byte{prefixGenesisSpc}, chunk)
}

// MigrationCursorKey is the key under which the migrations package keeps the
// progress cursor of an unfinished migration to format version v.
func MigrationCursorKey(v FormatVersion) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefixMigration}, uint64(v))
}

// appendVersion appends the inverted block number that makes newer versions
// sort first.
func appendVersion(entity []byte, num uint64) []byte {
	return binary.BigEndian.AppendUint64(entity, ^num)
}

// accountKey is the key of the version of addr written at block num.
func accountKey(addr common.Address, num uint64) []byte {
	k := make([]byte, 0, accountKeyLen)
	k = append(k, prefixAccount)
	k = append(k, addr[:]...)
	return appendVersion(k, num)
}

// storageAddrPrefix is the common prefix of every slot version of addr.
func storageAddrPrefix(addr common.Address) []byte {
	return append([]byte{prefixStorage}, addr[:]...)
}

// storageEntity is 's' + addr + slot: the prefix of all versions of one slot.
func storageEntity(addr common.Address, slot common.Hash) []byte {
	k := make([]byte, 0, storageKeyLen)
	k = append(k, prefixStorage)
	k = append(k, addr[:]...)
	return append(k, slot[:]...)
}

// storageKey is the key of the version of (addr, slot) written at block num.
func storageKey(addr common.Address, slot common.Hash, num uint64) []byte {
	return appendVersion(storageEntity(addr, slot), num)
}

// keyVersion returns the block number encoded in a versioned key.
func keyVersion(key []byte) uint64 {
	return ^binary.BigEndian.Uint64(key[len(key)-versionLen:])
}

// isAccountKey / isStorageKey recognise versioned keys by table and length.
func isAccountKey(key []byte) bool { return len(key) == accountKeyLen && key[0] == prefixAccount }
func isStorageKey(key []byte) bool { return len(key) == storageKeyLen && key[0] == prefixStorage }

// prefixEnd returns the smallest key greater than every key starting with p
// (p with its last non-0xff byte incremented), or nil if there is none.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
