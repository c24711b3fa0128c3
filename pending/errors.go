package pending

import "errors"

// Sentinel errors of the pending package (the Builder, the Manager, the
// snapshots). The pool's and the sequencer's are in pending/sequencer.
// Every error returned here wraps one of these (errors.Is) with the detail;
// JSON-RPC codes are assigned in package rpc/eth.
var (
	// ErrNoState: the state to read or validate against could not be opened
	// (Manager.Open; the pool's validation wraps it too).
	ErrNoState = errors.New("pending state unavailable")
	// ErrHeader: a driver asked the Builder to open a block whose header
	// does not extend the given head.
	ErrHeader = errors.New("pending header does not extend the head")
	// ErrOverride: a dev-chain state override is invalid (Builder.Override).
	ErrOverride = errors.New("invalid state override")
	// ErrNoStateTrie: the pending snapshot has no state trie (the store
	// keeps none, a fork; or its builder could not update it: see
	// Snapshot.StateTrie).
	ErrNoStateTrie = errors.New("pending block has no state trie")
	// ErrStateRoot: the pending block's state trie update failed (a store
	// read error, a corrupt trie node under it): the snapshot has no state
	// root, and says why (Snapshot.RootErr). Not ErrNoStateTrie: the node
	// keeps a trie, and a zero root would be a wrong answer, not "none".
	ErrStateRoot = errors.New("cannot compute the pending block's state root")
)
