// Package store is tipnode's Pebble-backed storage: canonical blocks,
// receipts, transaction lookups, tags and versioned flat state.
//
// # Model
//
// The store holds one canonical chain from block 0 to the latest block. Every
// block is written by WriteBlock in ONE Pebble batch containing its header,
// body, receipts, canonical and hash->number entries, transaction lookups,
// state versions, change list, new code, its state trie nodes and tag
// moves: a block is either fully present or absent. Key layouts are listed
// in schema.go.
//
// State is flat and versioned: each write of an account or slot at block N
// adds a version key entity + ^N. Nothing is overwritten, so the state at
// every height stays readable until UnwindTo removes the versions above a
// height (via the per-block change list). Every state read is answered there.
//
// # State trie (trie.go, triebuild.go)
//
// Beside the flat state the store keeps the Merkle-Patricia state trie the
// same way: a trie node is an entity (owner: zero for the account trie,
// keccak(address) for a storage trie; its path), and each block that
// changes it adds a version entity + ^N (an empty value deletes it), so the
// node at height H is one SeekPrefixGE. A block's nodes are computed by
// go-ethereum's trie (trie.StateTrie over a NodeDatabase of this store at
// the parent height, Commit's node sets; StateTrie.Update) and written in
// the block's own batch with the list of the versions it wrote ('U'), which
// UnwindTo and Reorg delete like state versions. An update reads its keys'
// paths, in trie-path (hashed key) order, with a prefetcher on a second
// goroutine (trieprefetch.go: the keys from the back, chunk by chunk,
// handed over by hash; not in a bulk import, whose pipeline keeps the
// cores busy). A node missing from the caches is read first from Pebble's
// flushed tables only (IterOptions.OnlyReadGuaranteedDurable: no memtable
// seek; most nodes a block reads are old) and taken from there when it
// hashes to the node wanted, whatever its version; else it is read at the
// height from the store's snapshot. Invariants:
//   - the trie is readable at every height from its base (keyTrie) to
//     latest, and its root there is the state root of the flat state;
//   - every node read from Pebble is checked against the hash its parent
//     names (a version bug fails a read, it never gives a wrong root);
//   - the clean node cache is keyed by node hash, so it is right at every
//     height and on every branch and is never invalidated;
//   - with a window W (Config.TrieWindow), the versions superseded at a
//     block p <= latest-W are pruned in the batch of the block that moves
//     the base to p; an unwind or reorg onto a height below the base drops
//     the trie and rebuilds it from the flat state (BuildTrie: StackTrie over
//     hashed keys in one pass, the base key written last, so a crash leaves
//     no trie and the build runs again);
//   - a store with Config.NoTrie drops its trie at its next block write,
//     and a fork keeps none (its state is partial).
//
// # Anchored stores
//
// A store initialised from a state dump at block N (StateImport, all of it
// ingested as sstables in one Pebble ingestion) records its Anchor
// (keyAnchor): state versions start at N (every entity has one at N),
// canonical headers exist for block 0 and N-256..N, bodies and receipts
// from Anchor.History (N, or N+1 when block N's were not given). StateAt
// below N returns a reader whose every read fails with *PrunedStateError;
// Body and Receipts below History fail with ErrPrunedHistory; UnwindTo and
// Reorg below N fail with ErrBelowAnchor. The anchor is read at Open and
// never changes. The invariants below hold with "0" read as N for state
// and history. An import at block 0 with block 0's body (the streamed
// `tipnode init --genesis`) has anchor 0, 0 and writes no keyAnchor: it is
// the store WriteGenesis writes, its spec streamed in through
// StateImport.SpecWriter.
//
// # Forked stores
//
// A forked store (`tipnode dev --fork`) is an anchored store at the fork
// block F whose keyFork names an upstream (Anchor.Fork). It holds only the
// state the fork wrote; DB.SetForkSource gives it the upstream (a
// ForkSource: the store imports no network code, chain/remotestate implements
// it). A read of an account or slot at a height >= F that finds no
// version at or below the height (the local read answers the forkMissing
// marker, which is never filled into the state cache) looks, in order,
// at the values fetched and not yet persisted, at the live store's
// version at F (persisted after the view's snapshot), and then asks the
// upstream at F. The value is kept in memory, filled into the state cache
// as a version at F (the entity has no version in (F, latest] of the
// view, so the cache invariant holds), and persisted as a version at F
// in the batch of the next WriteBlock (or at Close): readers never write.
// Versions at F are never unwound (UnwindTo stops at the anchor) and are
// facts about the upstream, so adding one later changes no answer. A past
// cache entry built before it may still say "no version"; such a read
// costs one Pebble read of the version at F (dropFetched removes the head
// entries of what it persisted). A read below F goes to the upstream at
// that height and keeps nothing. A failed fetch is ErrUpstream.
//
// # Ordering contract
//
// A version key is entity + BE8(^N). Bitwise inversion makes newer versions
// sort first, so for a read at height H the first key >= entity + ^H is the
// newest version at or below H, if it still starts with entity. Every point
// read (Account, Storage) is therefore exactly ONE SeekPrefixGE, at any
// height; reading "latest" is the same seek with H = latest. The comparer
// (comparer.go) splits versioned keys into entity prefix and version suffix,
// so bloom filters on the prefix let that seek skip sstables that do not hold
// the entity.
//
// Absence is encoded explicitly: a deleted account is a version whose value
// is the one-byte deleted marker; a zero slot is a version with an empty
// value. A storage wipe (StateDiff.Wiped) is materialised at write time:
// every slot live at the parent height gets a zero version at the block, so
// reads never need to consult wipe records and stay one seek.
//
// # Invariants
//
//   - latest >= safe, latest >= finalized; every tag names a canonical block.
//   - Block N exists iff 0 <= N <= latest; the only ways down are UnwindTo
//     and Reorg (which replaces the blocks above an ancestor with a new
//     branch in the same single batch: readers see the old chain or the
//     new one, never a mix).
//   - Every state version at block N > 0 is listed in the change list of N
//     (block 0 is never unwound and has none).
//   - No value grows with the genesis alloc: the spec is stored in 64 KiB
//     chunks. A huge value is one sstable block, decompressed whole by
//     every read that lands beside it.
//   - Code is content addressed and never deleted.
//   - Values returned to callers are copies; no Pebble memory escapes.
//
// # Durability
//
// Config.SyncWrites (default true) fsyncs the WAL on every batch. With it
// false (bulk import) batches remain atomic, since every write is a single
// WAL batch, but the last blocks before a power loss may be missing on
// restart; the store is then simply at an earlier latest block. Call
// DB.Sync at the end of an import. Migration batches always fsync.
//
// On Linux a writable store on the operating system's filesystem with
// SyncWrites runs Pebble's fsyncs through the kernel's AIO (pollsync_linux.go:
// io_submit of an IOCB_CMD_FSYNC/FDSYNC that signals an eventfd): the
// goroutine waiting for one waits in the Go runtime's network poller, not
// in a blocking system call that keeps its P, so on a node limited to one
// CPU (GOMAXPROCS 1) reads go on during the disk's flush instead of
// waiting for it (DB.SyncsInPoller; chain.Writer.SetSpareWhen relies on
// it). What is durable is the same as with fsync(2): the kernel runs that
// very call in a worker. Where AIO is refused (an older kernel, a seccomp
// filter) or a sync cannot be submitted, the sync is the plain system call.
//
// Open replays the WAL files whose writes are not yet in sstables (Pebble
// flushes a memtable only once half of Config.MemtableBytes is queued),
// flushes them and waits for the compactions that flush starts. DB.Flush
// (end of import) and Close (a writable store with room on its disk) flush
// the memtables so the next open has nothing to replay. Nothing depends on
// it: after a crash Open replays what is left. When Close's flush leaves a
// single, empty live WAL, it then deletes the obsolete WAL files Pebble
// keeps for recycling (walclean.go): in a closed store they are only disk,
// up to five memtables' worth.
//
// # Disk space and read-only stores
//
// Config.MinFreeBytes (default 512 MiB) is a free-space guard: every write
// (blocks, tags, unwinds, reorgs, raw migration batches) first checks the free
// space of the store's filesystem and is refused with ErrDiskFull when it
// is below the minimum, before anything is staged. A writer therefore stops
// cleanly at a block boundary, reads go on, and DB.DiskFull reports the
// refusal until a write passes again. Open refuses a writable store on a
// filesystem below the minimum, and turns an ENOSPC during Pebble's open
// (its own files, or the flush of the replayed WAL, which Pebble would
// retry forever) into a fast ErrDiskFull; the abandoned Pebble instance is
// parked, not retried, and the caller is expected to exit. Pebble's
// background errors are logged at most once a second.
//
// Config.ReadOnly opens with Pebble's ReadOnly and a shared lock taken
// through a read-only file descriptor: nothing in the directory is
// created, locked for writing or modified, so a store on a read-only
// filesystem can be served.
//
// # Concurrency
//
// DB is safe for concurrent use. Reads go through View, a Pebble snapshot:
// everything read from one View (chain data and state at any height) is from
// the same instant, and writes committed after the View was taken are not
// visible in it. Views must be closed; DB.Close closes leftovers. Writes are
// serialised by a mutex (one writer at a time); each is one atomic batch.
//
// One View is typically shared by every request reading the head, so its
// read path takes no lock: a read that needs the Pebble snapshot counts
// itself in and out of the view's atomic guard (Close waits for the count
// to drain), a read the caches answer only checks that the view is open,
// and the caches' hit/miss counters are striped over cache lines. A read
// the caches miss seeks with one of the view's idle Pebble iterators
// (view.go iterPool: up to 8, taken and given back with atomics, closed
// with the view) rather than a new one: a miss costs about half as much
// (BenchmarkStorageReadMiss 4.2 -> 2.2 µs).
//
// # State cache
//
// A bounded in-memory cache (statecache.go, Config.StateCacheBytes, default
// 256 MiB, 0 disables; VictoriaMetrics/fastcache, off the Go heap) sits in
// front of the point reads of accounts, slots and code. It holds at most
// one entry per entity: the newest value the store knows, tagged with the
// chain epoch and the block of its version (from). Code is cached by hash,
// valid forever.
//
// The chain epoch (keyChainEpoch) is a counter bumped in the batch of every
// UnwindTo and Reorg, so a View reads its epoch from its own snapshot. The
// cache keeps its position (epoch, applied, busy): applied is the latest
// block whose versions it holds.
//
// Invariant: an entry (epoch e, from f, value x) of entity E, while the
// cache is at epoch e with applied A, means E has no version in (f, A] on
// the chain of epoch e, so x is E's value at every height in [f, A]. It is
// kept by the two ways in:
//
//   - The writer (WriteBlock, under the write lock): busy before the batch
//     commits; after it, every state version of the block (including the
//     zero versions of a wipe) is written through as (e, N, value); then
//     applied = N, not busy. UnwindTo and Reorg commit a new epoch, then
//     empty the cache and set (e+1, new latest).
//   - A reader (a View at (e, L)) that read E at height L from Pebble fills
//     (e, version found, value) only if the cache is at (e, L) and not busy,
//     checked under the key's stripe lock, which the writer's write-through
//     of the same key also takes; so a fill is either overwritten by the
//     next block's version of E or refused.
//
// A View at (e, L) uses an entry only when the cache is at epoch e with
// applied >= L (otherwise it reads Pebble, e.g. between a commit and its
// write-through) and the entry has epoch e and from <= the height read. A
// miss, an eviction or a disabled cache only cost a Pebble seek. Readers
// never wait for the writer: the stripe lock is held for one fastcache Set.
// Past-height reads use the cache when the entry's from is at or below the
// height; they fill it only as described below. Raw batches (migrations)
// empty it.
//
// # Past-height reads
//
// A read below a view's latest block that the state cache cannot answer
// goes to the past cache (pastcache.go), which lives in the same fastcache
// under keys of its own (so it shares the memory bound and every reset).
// An entry (epoch e, through T, versions) lists every version of an entity
// at heights in [oldest listed, T] on the chain of epoch e (newest first;
// a flag says whether there is none below). Within an epoch, versions at
// committed heights never change (blocks are only appended; UnwindTo and
// Reorg bump the epoch), so the entry answers a view of epoch e at any
// height <= T, whatever its latest block and whatever the writer does
// meanwhile; other epochs ignore it. An entity's head entry holds its
// newest versions (at most 64); on a miss, one iterator walks the entity's
// versions (adjacent keys) down from the view's latest block L, answers
// the read and stores the head entry with T = L; the newest version goes
// to the state cache as a read at L would fill it. An entity with more
// versions than that (a fee recipient, a busy holder: one version a block)
// answers heights below its head entry from page entries, one per span of
// 32 heights, each listing the span's versions and the one in force at its
// start (built on a miss by the same kind of walk, from the span's end or
// L if lower): every height is one bounded cache lookup after the first.
//
// Canonical hashes and decoded headers by number (canoncache.go) follow the
// same rule: an entry read at epoch e answers views of epoch e whose latest
// block is at or above its number; the block selector of a past-block read
// below the Head's in-memory window then costs no Pebble read.
//
// # Format versions
//
// FormatVersion numbers the on-disk format (format.go): one named constant
// per version saying what it introduced, FormatCurrent (what this binary
// writes) and FormatMinSupported (the oldest it can migrate). schema.go lists
// the layouts of FormatCurrent; format.go describes the layouts older formats
// used. Open refuses a store recording a version above FormatCurrent
// (ErrSchemaTooNew) or below FormatMinSupported (ErrSchemaTooOld); one in
// between opens so the migrations package can upgrade it through the small
// raw facility in raw.go, and until then Views and writes fail with
// ErrSchemaOutdated.
package store
