package chain

import (
	"fmt"
	"maps"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/stateless"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/types/bal"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/store"
)

// Backend is the read side a StateDB executes on: the store at one height
// (store.StateReader), or the pending overlay. Absent accounts are (nil, nil),
// absent slots the zero hash. Implementations must be safe for concurrent use.
type Backend interface {
	Account(addr common.Address) (*store.Account, error)
	Storage(addr common.Address, slot common.Hash) (common.Hash, error)
	Code(hash common.Hash) ([]byte, error)
}

// IterableBackend is a Backend that can enumerate its whole state. It is
// needed only to compute state roots (pre-Byzantium receipts, verification).
type IterableBackend interface {
	Backend
	ForEachAccount(fn func(addr common.Address, acc *store.Account) error) error
	ForEachStorage(addr common.Address, fn func(slot, value common.Hash) error) error
}

// object is the in-memory state of one account during execution.
type object struct {
	addr    common.Address
	origin  *store.Account // value in the backend (nil = absent); never mutated
	data    store.Account  // current value
	code    []byte
	codeSet bool // code loaded or assigned

	// wiped: the backend's storage of this address is invisible (the account
	// was destroyed earlier in this block, or re-created after that).
	wiped bool

	// The slot maps are allocated on first insert (a read-only call touches
	// only originSt): nil maps read as empty.
	storage   map[common.Hash]common.Hash // current values of slots written (others read as committed)
	originSt  map[common.Hash]common.Hash // backend values of slots read (cache)
	txStart   map[common.Hash]common.Hash // values at tx start of slots written in this tx
	written   map[common.Hash]struct{}    // slots written since the block started
	writtenAt map[common.Hash]struct{}    // slots written since the last TakeDiff

	selfDestructed bool // in the current tx
	newContract    bool // created in the current tx
}

func newObject(addr common.Address, origin *store.Account) *object {
	o := &object{addr: addr, origin: origin}
	if origin != nil {
		o.data = store.Account{Nonce: origin.Nonce, Balance: new(uint256.Int).Set(origin.Balance), CodeHash: origin.CodeHash}
	} else {
		o.data = store.Account{Balance: new(uint256.Int), CodeHash: types.EmptyCodeHash}
	}
	return o
}

// writable allocates the maps a slot write fills.
func (o *object) writable() {
	if o.storage == nil {
		o.storage = make(map[common.Hash]common.Hash)
	}
	if o.txStart == nil {
		o.txStart = make(map[common.Hash]common.Hash)
	}
	if o.written == nil {
		o.written = make(map[common.Hash]struct{})
	}
	if o.writtenAt == nil {
		o.writtenAt = make(map[common.Hash]struct{})
	}
}

func (o *object) empty() bool {
	return o.data.Nonce == 0 && o.data.Balance.IsZero() && o.data.CodeHash == types.EmptyCodeHash
}

// slotRef is one entry of the objects map: an account, not a storage slot.
// obj is the loaded account; dead marks an account absent from the backend
// (obj nil) or deleted earlier in the block. A deleted account is kept as a
// tombstone so that reads in the rest of the block do not fall through to
// the backend.
type slotRef struct {
	obj  *object
	dead bool
}

// StateDB implements go-ethereum's vm.StateDB over a Backend. It is the one
// seam between go-ethereum's EVM and our flat state: block import, the
// pending sequencer, eth_call and eth_simulateV1 all execute on it. It is not
// safe for concurrent use.
//
// Model: accounts are loaded from the backend on first access and kept in
// objects; every mutation is recorded in a journal so Snapshot /
// RevertToSnapshot work call-frame by call-frame. Finalise (end of each
// transaction) applies EIP-158/161 empty-account removal and SELFDESTRUCT
// deletion. BlockDiff / TakeDiff extract the complete change set for the
// store or the pending layer.
type StateDB struct {
	backend Backend
	objects map[common.Address]*slotRef
	err     error

	journal []journalEntry
	// journals, when set, gave journal (in jholder, which carries it
	// back and forth without an allocation) and takes it back at Release.
	journals *JournalPool
	jholder  *[]journalEntry
	dirties  map[common.Address]int // journal entries per address in the current tx

	touchedBlock map[common.Address]struct{} // accounts finalised as changed since block start
	touchedDiff  map[common.Address]struct{} // ... since the last TakeDiff
	wipedDiff    map[common.Address]struct{} // accounts wiped since the last TakeDiff
	wipedBlock   map[common.Address]struct{}
	codes        map[common.Hash][]byte // code written in this block
	codesDiff    map[common.Hash][]byte // ... since the last TakeDiff

	refund    uint64
	accessAdr map[common.Address]map[common.Hash]struct{}
	// accessPre lists the precompiles Prepare put in the access list; they
	// are in it without an entry in accessAdr (unless slots of them were
	// added): filling a map with the fork's precompiles cost every
	// transaction (every eth_call) a map of twenty entries. Shared,
	// read-only (go-ethereum's per-fork list).
	accessPre []common.Address
	// extraWarm are addresses the chain's rules warm for every transaction
	// besides go-ethereum's (Executor.PrepareState: OP precompiles).
	extraWarm []common.Address
	transient map[common.Address]map[common.Hash]common.Hash

	thash   common.Hash
	txIndex int
	logs    map[common.Hash][]*types.Log
	logSize uint

	codeCache *CodeCache // nil: code is read from the backend

	// hooks, when set, are told of every state change as go-ethereum's
	// hooked state tells them (SetHooks; hooks.go).
	hooks *tracing.Hooks
}

// NewStateDB returns a StateDB reading from backend. Only the maps every
// execution fills are allocated here; the others (block and diff sets,
// codes, logs, transient storage, access list) on their first insert (see
// put): a read-only call allocates none of them.
func NewStateDB(backend Backend) *StateDB {
	return &StateDB{
		backend: backend,
		objects: make(map[common.Address]*slotRef),
		dirties: make(map[common.Address]int),
	}
}

// SetCodeCache makes the StateDB read code through c (shared with other
// StateDBs) before its backend, and add what it reads from the backend.
func (s *StateDB) SetCodeCache(c *CodeCache) { s.codeCache = c }

// JournalPool keeps the journals of released StateDBs for the next ones:
// an execution's journal grows by doubling to hundreds of entries (a
// multicall of 50 calls: about 25 KB reallocated per request). Safe for
// concurrent use; a journal is owned by one StateDB between
// SetJournalPool and Release.
type JournalPool struct{ p sync.Pool }

// maxPooledJournal: larger journals are left to the GC (clearing one
// costs in proportion to its capacity, and few executions grow that far).
const maxPooledJournal = 1024

// NewJournalPool returns an empty pool.
func NewJournalPool() *JournalPool { return &JournalPool{} }

// SetJournalPool makes the StateDB take its journal from p; Release gives
// it back. Call before the first change.
func (s *StateDB) SetJournalPool(p *JournalPool) {
	s.journals = p
	if h, ok := p.p.Get().(*[]journalEntry); ok {
		s.jholder, s.journal = h, (*h)[:0]
	}
}

// Release ends the StateDB's use: its journal goes back to the pool of
// SetJournalPool (nothing without one). The StateDB must not be used
// afterwards except to be dropped.
func (s *StateDB) Release() {
	p, h, j := s.journals, s.jholder, s.journal
	s.journals, s.jholder, s.journal = nil, nil, nil
	if p == nil || j == nil || cap(j) > maxPooledJournal {
		return
	}
	// Entries hold pointers (previous balances, code, objects): cleared so
	// the pool keeps nothing of this execution alive.
	clear(j[:cap(j)])
	if h == nil {
		h = new([]journalEntry)
	}
	*h = j[:0]
	p.p.Put(h)
}

// put inserts k -> v into *m, allocating the map on first use (reading,
// deleting from and ranging over a nil map are fine; inserting is not).
func put[K comparable, V any](m *map[K]V, k K, v V) {
	if *m == nil {
		*m = make(map[K]V)
	}
	(*m)[k] = v
}

// Error returns the first backend read error met during execution. A
// non-nil error means the execution results are not trustworthy.
func (s *StateDB) Error() error { return s.err }

func (s *StateDB) setErr(err error) {
	if s.err == nil && err != nil {
		s.err = err
	}
}

// getObject returns the live object of addr, or nil if the account does not
// exist (absent in the backend, or deleted earlier in this block).
func (s *StateDB) getObject(addr common.Address) *object {
	if ref, ok := s.objects[addr]; ok {
		if ref.dead {
			return nil
		}
		return ref.obj
	}
	acc, err := s.backend.Account(addr)
	if err != nil {
		s.setErr(fmt.Errorf("read account %s: %w", addr, err))
		return nil
	}
	if acc == nil {
		s.objects[addr] = &slotRef{dead: true, obj: nil}
		return nil
	}
	o := newObject(addr, acc)
	s.objects[addr] = &slotRef{obj: o}
	return o
}

func (s *StateDB) getOrNewObject(addr common.Address) *object {
	if o := s.getObject(addr); o != nil {
		return o
	}
	return s.createObject(addr)
}

// createObject replaces whatever addr holds with a fresh empty account.
func (s *StateDB) createObject(addr common.Address) *object {
	prev := s.objects[addr]
	o := newObject(addr, nil)
	if prev != nil {
		if prev.obj != nil {
			o.origin = prev.obj.origin
			o.wiped = prev.obj.wiped
			if prev.dead {
				// Re-created after deletion in this block: the old storage is gone.
				o.wiped = true
			}
			// keep the backend slot cache only while it is still visible
			if !o.wiped {
				o.originSt = prev.obj.originSt
			}
		}
	} else {
		// Never loaded: remember the backend origin for the diff.
		acc, err := s.backend.Account(addr)
		if err != nil {
			s.setErr(fmt.Errorf("read account %s: %w", addr, err))
		}
		o.origin = acc
	}
	s.append(journalEntry{addr: addr, kind: jCreate, prevRef: prev})
	s.objects[addr] = &slotRef{obj: o}
	return o
}

// --- vm.StateDB: accounts ---------------------------------------------------

func (s *StateDB) CreateAccount(addr common.Address) { s.createObject(addr) }

func (s *StateDB) CreateContract(addr common.Address) {
	o := s.getObject(addr)
	if o == nil || o.newContract {
		return
	}
	o.newContract = true
	s.append(journalEntry{addr: addr, kind: jNewContract})
}

func (s *StateDB) IsNewContract(addr common.Address) bool {
	o := s.getObject(addr)
	return o != nil && o.newContract
}

func (s *StateDB) Exist(addr common.Address) bool { return s.getObject(addr) != nil }

func (s *StateDB) Empty(addr common.Address) bool {
	o := s.getObject(addr)
	return o == nil || o.empty()
}

func (s *StateDB) Touch(addr common.Address) { s.getObject(addr) }

func (s *StateDB) GetBalance(addr common.Address) *uint256.Int {
	if o := s.getObject(addr); o != nil {
		return o.data.Balance
	}
	return common.U2560
}

func (s *StateDB) setBalance(o *object, v *uint256.Int) {
	s.append(journalEntry{addr: o.addr, kind: jBalance, prevBal: o.data.Balance})
	o.data.Balance = v
}

func (s *StateDB) AddBalance(addr common.Address, amount *uint256.Int, reason tracing.BalanceChangeReason) uint256.Int {
	o := s.getOrNewObject(addr)
	prev := *o.data.Balance
	if amount.IsZero() {
		if o.empty() {
			s.append(journalEntry{addr: addr, kind: jTouch}) // EIP-161 touch
		}
		return prev
	}
	s.setBalance(o, new(uint256.Int).Add(o.data.Balance, amount))
	if s.hooks != nil {
		s.balanceHook(addr, &prev, o.data.Balance, reason)
	}
	return prev
}

func (s *StateDB) SubBalance(addr common.Address, amount *uint256.Int, reason tracing.BalanceChangeReason) uint256.Int {
	o := s.getOrNewObject(addr)
	prev := *o.data.Balance
	if amount.IsZero() {
		return prev
	}
	s.setBalance(o, new(uint256.Int).Sub(o.data.Balance, amount))
	if s.hooks != nil {
		s.balanceHook(addr, &prev, o.data.Balance, reason)
	}
	return prev
}

// SetBalance sets an account balance (state overrides, simulation).
func (s *StateDB) SetBalance(addr common.Address, amount *uint256.Int) {
	s.setBalance(s.getOrNewObject(addr), new(uint256.Int).Set(amount))
}

func (s *StateDB) GetNonce(addr common.Address) uint64 {
	if o := s.getObject(addr); o != nil {
		return o.data.Nonce
	}
	return 0
}

func (s *StateDB) SetNonce(addr common.Address, nonce uint64, reason tracing.NonceChangeReason) {
	o := s.getOrNewObject(addr)
	prev := o.data.Nonce
	s.append(journalEntry{addr: addr, kind: jNonce, prevNum: prev})
	o.data.Nonce = nonce
	if s.hooks != nil {
		s.nonceHook(addr, prev, nonce, reason)
	}
}

func (s *StateDB) GetCodeHash(addr common.Address) common.Hash {
	if o := s.getObject(addr); o != nil {
		return o.data.CodeHash
	}
	return common.Hash{}
}

func (s *StateDB) GetCode(addr common.Address) []byte {
	o := s.getObject(addr)
	if o == nil {
		return nil
	}
	return s.loadCode(o)
}

func (s *StateDB) loadCode(o *object) []byte {
	if o.codeSet {
		return o.code
	}
	o.codeSet = true
	if o.data.CodeHash == types.EmptyCodeHash {
		return nil
	}
	if s.codeCache != nil {
		if code, ok := s.codeCache.get(o.data.CodeHash); ok {
			o.code = code
			return code
		}
	}
	code, err := s.backend.Code(o.data.CodeHash)
	if err != nil {
		s.setErr(fmt.Errorf("read code %s of %s: %w", o.data.CodeHash, o.addr, err))
	} else if s.codeCache != nil && len(code) > 0 {
		s.codeCache.add(o.data.CodeHash, code)
	}
	o.code = code
	return code
}

func (s *StateDB) GetCodeSize(addr common.Address) int { return len(s.GetCode(addr)) }

func (s *StateDB) SetCode(addr common.Address, code []byte, reason tracing.CodeChangeReason) []byte {
	o := s.getOrNewObject(addr)
	prev := s.loadCode(o)
	prevHash := o.data.CodeHash
	s.append(journalEntry{addr: addr, kind: jCode, prevCode: prev, prevVal: prevHash})
	o.code = code
	o.codeSet = true
	if len(code) == 0 {
		o.data.CodeHash = types.EmptyCodeHash
	} else {
		o.data.CodeHash = crypto.Keccak256Hash(code)
	}
	if s.hooks != nil {
		s.codeHook(addr, prev, code, reason)
	}
	return prev
}

// --- storage ----------------------------------------------------------------

// committed returns the value of slot at the start of the block view: the
// backend value, or zero when the backend storage is wiped.
func (s *StateDB) committed(o *object, slot common.Hash) common.Hash {
	if o.wiped {
		return common.Hash{}
	}
	if v, ok := o.originSt[slot]; ok {
		return v
	}
	v, err := s.backend.Storage(o.addr, slot)
	if err != nil {
		s.setErr(fmt.Errorf("read slot %s of %s: %w", slot, o.addr, err))
	}
	if o.originSt == nil {
		o.originSt = make(map[common.Hash]common.Hash)
	}
	o.originSt[slot] = v
	return v
}

// current is the slot's value now: written in this block view, else
// committed.
func (s *StateDB) current(o *object, slot common.Hash) common.Hash {
	if v, ok := o.storage[slot]; ok {
		return v
	}
	return s.committed(o, slot)
}

func (s *StateDB) GetState(addr common.Address, slot common.Hash) common.Hash {
	o := s.getObject(addr)
	if o == nil {
		return common.Hash{}
	}
	return s.current(o, slot)
}

// GetStateAndCommittedState returns the current value and the value at the
// start of the current transaction (EIP-2200 "original value").
func (s *StateDB) GetStateAndCommittedState(addr common.Address, slot common.Hash) (common.Hash, common.Hash) {
	o := s.getObject(addr)
	if o == nil {
		return common.Hash{}, common.Hash{}
	}
	cur := s.current(o, slot)
	if v, ok := o.txStart[slot]; ok {
		return cur, v
	}
	return cur, cur
}

func (s *StateDB) SetState(addr common.Address, slot, value common.Hash) common.Hash {
	o := s.getOrNewObject(addr)
	prev := s.current(o, slot)
	if prev == value {
		return prev
	}
	o.writable()
	_, hadStart := o.txStart[slot]
	if !hadStart {
		o.txStart[slot] = prev
	}
	s.append(journalEntry{addr: addr, kind: jStorage, slot: slot, prevVal: prev, hadStart: hadStart})
	o.storage[slot] = value
	o.written[slot] = struct{}{}
	o.writtenAt[slot] = struct{}{}
	if s.hooks != nil && s.hooks.OnStorageChange != nil {
		s.hooks.OnStorageChange(addr, slot, prev, value)
	}
	return prev
}

// ReplaceStorage replaces the whole storage of addr (the `state` override):
// the backend storage becomes invisible and only the given slots are set.
func (s *StateDB) ReplaceStorage(addr common.Address, slots map[common.Hash]common.Hash) {
	o := s.getOrNewObject(addr)
	// Override-only path: not journaled, applied between transactions.
	o.wiped = true
	o.originSt, o.storage, o.txStart = nil, nil, nil
	o.writable()
	put(&s.wipedBlock, addr, struct{}{})
	put(&s.wipedDiff, addr, struct{}{})
	put(&s.touchedBlock, addr, struct{}{})
	put(&s.touchedDiff, addr, struct{}{})
	for k, v := range slots {
		o.storage[k] = v
		o.written[k] = struct{}{}
		o.writtenAt[k] = struct{}{}
	}
}

// --- transient storage (EIP-1153) ---------------------------------------------

func (s *StateDB) GetTransientState(addr common.Address, key common.Hash) common.Hash {
	return s.transient[addr][key]
}

func (s *StateDB) SetTransientState(addr common.Address, key, value common.Hash) {
	prev := s.GetTransientState(addr, key)
	if prev == value {
		return
	}
	s.journal = append(s.journal, journalEntry{addr: addr, kind: jTransient, slot: key, prevVal: prev})
	s.setTransient(addr, key, value)
}

func (s *StateDB) setTransient(addr common.Address, key, value common.Hash) {
	m := s.transient[addr]
	if m == nil {
		m = make(map[common.Hash]common.Hash)
		put(&s.transient, addr, m)
	}
	m[key] = value
}

// --- self-destruct ------------------------------------------------------------

func (s *StateDB) SelfDestruct(addr common.Address) {
	o := s.getObject(addr)
	if o == nil || o.selfDestructed {
		return
	}
	s.append(journalEntry{addr: addr, kind: jDestruct})
	o.selfDestructed = true
}

func (s *StateDB) HasSelfDestructed(addr common.Address) bool {
	o := s.getObject(addr)
	return o != nil && o.selfDestructed
}

// --- refunds ------------------------------------------------------------------

func (s *StateDB) AddRefund(gas uint64) {
	s.journal = append(s.journal, journalEntry{kind: jRefund, prevNum: s.refund})
	s.refund += gas
}

func (s *StateDB) SubRefund(gas uint64) {
	s.journal = append(s.journal, journalEntry{kind: jRefund, prevNum: s.refund})
	if gas > s.refund {
		// Same invariant go-ethereum enforces: the EVM never subtracts more
		// than it added; reaching this is a bug in the gas accounting.
		panic(fmt.Sprintf("refund counter below zero (gas: %d > refund: %d)", gas, s.refund))
	}
	s.refund -= gas
}

func (s *StateDB) GetRefund() uint64 { return s.refund }

// --- access list (EIP-2929/2930) ---------------------------------------------

// The access list is accessAdr (addresses and their slots) plus the
// addresses of accessPre.

func (s *StateDB) AddressInAccessList(addr common.Address) bool {
	if _, ok := s.accessAdr[addr]; ok {
		return true
	}
	return s.precompileInAccessList(addr)
}

// precompileInAccessList reports whether addr is one of accessPre.
func (s *StateDB) precompileInAccessList(addr common.Address) bool {
	for _, p := range s.accessPre {
		if p == addr {
			return true
		}
	}
	return false
}

func (s *StateDB) SlotInAccessList(addr common.Address, slot common.Hash) (bool, bool) {
	slots, ok := s.accessAdr[addr]
	if !ok {
		return s.precompileInAccessList(addr), false
	}
	_, sok := slots[slot]
	return true, sok
}

func (s *StateDB) AddAddressToAccessList(addr common.Address) {
	if s.AddressInAccessList(addr) {
		return
	}
	put(&s.accessAdr, addr, nil)
	s.journal = append(s.journal, journalEntry{addr: addr, kind: jAccessAddr})
}

func (s *StateDB) AddSlotToAccessList(addr common.Address, slot common.Hash) {
	slots, ok := s.accessAdr[addr]
	if !ok {
		// Journals the address unless it is a precompile (in the list
		// already); its slot map below is then not journaled: reverting
		// the slot leaves an empty map, and the address stays listed
		// either way.
		s.AddAddressToAccessList(addr)
	}
	if _, ok := slots[slot]; ok {
		return
	}
	if slots == nil {
		slots = make(map[common.Hash]struct{})
		s.accessAdr[addr] = slots
	}
	slots[slot] = struct{}{}
	s.journal = append(s.journal, journalEntry{addr: addr, kind: jAccessSlot, slot: slot})
}

// Prepare resets the per-transaction access list and transient storage, as
// go-ethereum's StateDB does at the start of every transaction.
func (s *StateDB) Prepare(rules params.Rules, sender, coinbase common.Address, dst *common.Address, precompiles []common.Address, list types.AccessList) {
	if rules.IsEIP2929 {
		// A fresh list, not journaled (as go-ethereum's): nothing can revert
		// to before Prepare within the transaction. The previous
		// transaction's map is cleared and refilled rather than allocated
		// again (a block of many calls, e.g. eth_simulateV1, prepares
		// one per call and per system call); nothing keeps it.
		al := s.accessAdr
		if al == nil {
			al = make(map[common.Address]map[common.Hash]struct{}, len(list)+3)
		} else {
			clear(al)
		}
		al[sender] = nil
		if dst != nil {
			al[*dst] = nil
		}
		s.accessPre = precompiles
		for _, a := range s.extraWarm {
			al[a] = nil
		}
		for _, el := range list {
			slots := al[el.Address]
			if slots == nil && len(el.StorageKeys) > 0 {
				slots = make(map[common.Hash]struct{}, len(el.StorageKeys))
			}
			for _, key := range el.StorageKeys {
				slots[key] = struct{}{}
			}
			al[el.Address] = slots
		}
		if _, listed := al[coinbase]; rules.IsShanghai && !listed {
			al[coinbase] = nil // keeps slots the transaction's list gave it
		}
		s.accessAdr = al
	}
	if len(s.transient) > 0 {
		s.transient = nil
	}
}

// --- logs -----------------------------------------------------------------

func (s *StateDB) SetTxContext(thash common.Hash, ti int, _ uint32) {
	s.thash = thash
	s.txIndex = ti
}

// TxIndex returns the index set by SetTxContext.
func (s *StateDB) TxIndex() int { return s.txIndex }

func (s *StateDB) AddLog(l *types.Log) {
	s.journal = append(s.journal, journalEntry{kind: jLog, slot: s.thash})
	l.TxHash = s.thash
	l.TxIndex = uint(s.txIndex)
	l.Index = s.logSize
	put(&s.logs, s.thash, append(s.logs[s.thash], l))
	s.logSize++
	if s.hooks != nil && s.hooks.OnLog != nil {
		s.hooks.OnLog(l)
	}
}

// GetLogs returns the logs of txHash with the block fields filled in.
func (s *StateDB) GetLogs(txHash common.Hash, blockNumber uint64, blockHash common.Hash, blockTime uint64) []*types.Log {
	logs := s.logs[txHash]
	for _, l := range logs {
		l.BlockNumber = blockNumber
		l.BlockHash = blockHash
		l.BlockTimestamp = blockTime
	}
	return logs
}

// LogCount is the number of logs emitted so far in the block.
func (s *StateDB) LogCount() uint { return s.logSize }

// SetLogCount sets the log index base (the pending layer continues a block
// across several StateDB instances).
func (s *StateDB) SetLogCount(n uint) { s.logSize = n }

func (s *StateDB) AddPreimage(common.Hash, []byte) {}

// Witness and AccessEvents are only used by stateless/verkle execution,
// which tipnode does not support.
func (s *StateDB) Witness() *stateless.Witness       { return nil }
func (s *StateDB) AccessEvents() *state.AccessEvents { return nil }

// --- snapshots and finalisation -------------------------------------------

func (s *StateDB) Snapshot() int { return len(s.journal) }

func (s *StateDB) RevertToSnapshot(id int) {
	for i := len(s.journal) - 1; i >= id; i-- {
		s.revert(s.journal[i])
	}
	s.journal = s.journal[:id]
}

// Finalise ends a transaction: accounts self-destructed in it, and (from
// EIP-158) empty accounts it touched, are deleted; the journal is cleared.
func (s *StateDB) Finalise(rules params.Rules) *bal.ConstructionBlockAccessList {
	if s.hooks != nil {
		s.destructHooks(rules)
	}
	for addr := range s.dirties {
		ref := s.objects[addr]
		if ref == nil || ref.dead || ref.obj == nil {
			continue
		}
		o := ref.obj
		put(&s.touchedBlock, addr, struct{}{})
		put(&s.touchedDiff, addr, struct{}{})
		if o.selfDestructed || (rules.IsEIP158 && o.empty()) {
			ref.dead = true
			// Storage of a deleted account is gone for the rest of the block.
			if o.origin != nil || len(o.written) > 0 {
				put(&s.wipedBlock, addr, struct{}{})
				put(&s.wipedDiff, addr, struct{}{})
			}
			o.wiped = true
			o.storage, o.originSt, o.written, o.writtenAt = nil, nil, nil, nil
		}
		o.selfDestructed = false
		o.newContract = false
		clear(o.txStart)
		if o.codeSet && o.data.CodeHash != types.EmptyCodeHash && o.code != nil {
			if o.origin == nil || o.origin.CodeHash != o.data.CodeHash {
				if _, known := s.codes[o.data.CodeHash]; !known {
					put(&s.codes, o.data.CodeHash, o.code)
					put(&s.codesDiff, o.data.CodeHash, o.code)
				}
			}
		}
	}
	clear(s.dirties)
	s.journal = s.journal[:0]
	s.refund = 0
	return nil
}

// --- journal ----------------------------------------------------------------

type journalKind uint8

const (
	jCreate journalKind = iota
	jNewContract
	jTouch
	jBalance
	jNonce
	jCode
	jStorage
	jTransient
	jDestruct
	jRefund
	jAccessAddr
	jAccessSlot
	jLog
)

type journalEntry struct {
	kind     journalKind
	hadStart bool
	addr     common.Address
	slot     common.Hash
	// prevVal: the slot's previous value (jStorage, jTransient) or the
	// previous code hash (jCode).
	prevVal common.Hash
	// prevNum: the previous nonce (jNonce) or refund counter (jRefund).
	prevNum  uint64
	prevBal  *uint256.Int
	prevCode []byte
	prevRef  *slotRef
}

// append records an account-level change, which also marks addr dirty.
func (s *StateDB) append(e journalEntry) {
	s.journal = append(s.journal, e)
	s.dirties[e.addr]++
}

func (s *StateDB) undirty(addr common.Address) {
	if s.dirties[addr]--; s.dirties[addr] <= 0 {
		delete(s.dirties, addr)
	}
}

func (s *StateDB) revert(e journalEntry) {
	switch e.kind {
	case jCreate:
		if e.prevRef == nil {
			delete(s.objects, e.addr)
		} else {
			s.objects[e.addr] = e.prevRef
		}
		s.undirty(e.addr)
	case jNewContract:
		s.objects[e.addr].obj.newContract = false
		s.undirty(e.addr)
	case jTouch:
		s.undirty(e.addr)
	case jBalance:
		s.objects[e.addr].obj.data.Balance = e.prevBal
		s.undirty(e.addr)
	case jNonce:
		s.objects[e.addr].obj.data.Nonce = e.prevNum
		s.undirty(e.addr)
	case jCode:
		o := s.objects[e.addr].obj
		o.code, o.data.CodeHash, o.codeSet = e.prevCode, e.prevVal, true
		s.undirty(e.addr)
	case jStorage:
		o := s.objects[e.addr].obj
		o.storage[e.slot] = e.prevVal
		if !e.hadStart {
			delete(o.txStart, e.slot)
		}
		s.undirty(e.addr)
	case jDestruct:
		s.objects[e.addr].obj.selfDestructed = false
		s.undirty(e.addr)
	case jTransient:
		s.setTransient(e.addr, e.slot, e.prevVal)
	case jRefund:
		s.refund = e.prevNum
	case jAccessAddr:
		delete(s.accessAdr, e.addr)
	case jAccessSlot:
		delete(s.accessAdr[e.addr], e.slot)
	case jLog:
		logs := s.logs[e.slot]
		if len(logs) == 1 {
			delete(s.logs, e.slot)
		} else {
			s.logs[e.slot] = logs[:len(logs)-1]
		}
		s.logSize--
	}
}

// --- diffs ----------------------------------------------------------------

// BlockDiff returns the complete state change since the StateDB was created
// (call after the last Finalise of the block). Slots written but back at
// their backend value are omitted unless the account's storage was wiped.
func (s *StateDB) BlockDiff() *store.StateDiff {
	return s.diff(s.touchedBlock, s.wipedBlock, s.codes, func(o *object) map[common.Hash]struct{} { return o.written }, true)
}

// TakeDiff returns the state change since the previous TakeDiff (or since
// creation) and starts a new interval. The pending layer stacks these as
// copy-on-write layers. Values are absolute (not deltas).
func (s *StateDB) TakeDiff() *store.StateDiff {
	d := s.diff(s.touchedDiff, s.wipedDiff, s.codesDiff, func(o *object) map[common.Hash]struct{} { return o.writtenAt }, false)
	// Only what this interval touched is reset: the cost follows the new
	// diff, not everything the block has loaded so far.
	for addr := range s.touchedDiff {
		if ref := s.objects[addr]; ref != nil && ref.obj != nil {
			clear(ref.obj.writtenAt)
		}
	}
	s.touchedDiff, s.wipedDiff, s.codesDiff = nil, nil, nil
	return d
}

func (s *StateDB) diff(touched, wiped map[common.Address]struct{}, codes map[common.Hash][]byte, slotsOf func(*object) map[common.Hash]struct{}, filter bool) *store.StateDiff {
	d := store.NewStateDiff()
	for addr := range wiped {
		d.Wiped[addr] = struct{}{}
	}
	for addr := range touched {
		ref := s.objects[addr]
		if ref == nil {
			continue
		}
		o := ref.obj
		if ref.dead {
			if o != nil && (o.origin != nil || !filter) {
				d.Accounts[addr] = nil
			}
			continue
		}
		acc := store.Account{Nonce: o.data.Nonce, Balance: new(uint256.Int).Set(o.data.Balance), CodeHash: o.data.CodeHash}
		if !filter || o.origin == nil || *o.origin.Balance != *acc.Balance || o.origin.Nonce != acc.Nonce || o.origin.CodeHash != acc.CodeHash || o.wiped {
			d.Accounts[addr] = &acc
		}
		var slots map[common.Hash]common.Hash
		for slot := range slotsOf(o) {
			v := o.storage[slot]
			if filter && !o.wiped && v == o.originSt[slot] {
				continue
			}
			if slots == nil {
				slots = make(map[common.Hash]common.Hash)
			}
			slots[slot] = v
		}
		if slots != nil {
			d.Storage[addr] = slots
		}
	}
	maps.Copy(d.Codes, codes)
	return d
}
