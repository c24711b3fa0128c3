package eth

// tipnode's own methods and the sync status source.
//
// tipnode_genesis answers the genesis spec the node was initialised with
// (go-ethereum's genesis JSON, as stored, read from the store per call): a follower initialises its
// store from it (tipnode init --genesis-from URL). eth_syncing reports the progress given by SetSyncProgress (the
// follower's catch-up), false without one.

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/tipnode/tipnode/rpc"
)

// registerTipnode installs tipnode_genesis.
func (a *API) registerTipnode(s *rpc.Server) {
	s.Register("tipnode_genesis", a.tipnodeGenesis)
}

func (a *API) tipnodeGenesis(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(0); err != nil {
		return nil, err
	}
	// Read from the store on each call: a node loads only the chain config
	// and block 0 at start (chain.LoadGenesis), never the spec, which is
	// hundreds of MB for a large alloc.
	r, err := a.open(ctx)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	spec, err := r.View.GenesisSpec()
	if err != nil {
		return nil, err
	}
	if !json.Valid(spec) {
		return nil, errors.New("the stored genesis spec is not JSON")
	}
	return json.RawMessage(spec), nil
}

// SyncProgress is what eth_syncing answers while the node catches up.
type SyncProgress struct {
	StartingBlock hexutil.Uint64 `json:"startingBlock"`
	CurrentBlock  hexutil.Uint64 `json:"currentBlock"`
	HighestBlock  hexutil.Uint64 `json:"highestBlock"`
}

// SetSyncProgress installs the source of eth_syncing: fn returns the
// progress and whether the node is catching up (the follower's status).
// Without one, or when fn says no, eth_syncing answers false.
func (a *API) SetSyncProgress(fn func() (SyncProgress, bool)) {
	a.syncProgress.Store(&fn)
}

// syncing is eth_syncing's answer: the progress, or false.
func (a *API) syncing() any {
	if fn := a.syncProgress.Load(); fn != nil {
		if p, ok := (*fn)(); ok {
			return p
		}
	}
	return false
}
