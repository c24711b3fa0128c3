package follow

import "errors"

// Sentinel errors of the follower. Callers match them with errors.Is; every
// returned error wraps one of these (or a chain / store sentinel) with the
// blocks, hashes and upstream answer involved.
var (
	// ErrConfig: Config.Validate failed.
	ErrConfig = errors.New("invalid follow configuration")

	// Fatal: following stops (the node keeps serving the chain it has).

	// ErrGenesisMismatch: the upstream's block 0 is not the store's genesis.
	ErrGenesisMismatch = errors.New("upstream genesis differs from the store's")
	// ErrAnchorMismatch: the upstream's block at the store's anchor (a
	// store initialised from a state dump) is not the store's, or unknown.
	ErrAnchorMismatch = errors.New("upstream block at the store's anchor differs from the store's")
	// ErrChainIDMismatch: the upstream's chain id is not the store's.
	ErrChainIDMismatch = errors.New("upstream chain id differs from the store's")
	// ErrReorgTooDeep: the upstream switched to a branch whose common
	// ancestor with ours is more than Config.MaxReorg blocks below our head.
	ErrReorgTooDeep = errors.New("reorg deeper than the limit")
	// ErrReorgBelowFinalized: the upstream's chain differs from ours at or
	// below our finalized block.
	ErrReorgBelowFinalized = errors.New("reorg below the finalized block")
	// ErrDivergence: a block failed verification twice (re-execution does
	// not match its header, or its body does not match its roots). It also
	// wraps chain.ErrInvalidBlock. Nothing of the block was written.
	ErrDivergence = errors.New("upstream block failed verification")
	// ErrUpstreamPruned: the upstream answered "pruned history
	// unavailable" (4444) for a block or header this node needs (its
	// history starts above our head, or it does not hold block 0 or our
	// anchor block): it never will serve it. The error names the upstream,
	// the request and its answer.
	ErrUpstreamPruned = errors.New("upstream does not hold the history this node needs")

	// Transient: the follower reconnects with backoff.

	// ErrUpstream: the upstream could not be reached or failed a request.
	ErrUpstream = errors.New("upstream request failed")
	// ErrBadResponse: the upstream answered something that does not decode
	// or does not hold together (a header whose fields do not hash to the
	// announced hash, a transaction whose hash differs, a block that fails
	// verification once).
	ErrBadResponse = errors.New("bad upstream response")
	// ErrUnknownBlock: the upstream does not have a block it announced or
	// that its head implies (it moved, rewound or lies).
	ErrUnknownBlock = errors.New("upstream does not have the block")
)

// errMoved: the upstream's chain changed while we fetched from it (a block
// does not link to the one before); the sync starts over from its new head
// at once. Internal, never returned.
var errMoved = errors.New("upstream chain moved during the fetch")
