package eth

// Node identity methods clients probe: net_listening, net_peerCount,
// web3_sha3 and rpc_modules. tipnode has no peer-to-peer layer: it listens
// (for JSON-RPC) and has no peers.

import (
	"context"
	"sync"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/tipnode/tipnode/rpc"
)

// registerNet installs the identity methods.
func (a *API) registerNet(s *rpc.Server) {
	s.RegisterInline("net_listening", a.netListening)
	s.RegisterInline("net_peerCount", a.netPeerCount)
	s.RegisterInline("web3_sha3", a.web3Sha3)
	s.RegisterInline("rpc_modules", a.rpcModules)
}

func (a *API) netListening(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(0); err != nil {
		return nil, err
	}
	return true, nil
}

func (a *API) netPeerCount(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(0); err != nil {
		return nil, err
	}
	return hexutil.Uint(0), nil
}

// web3Sha3 is keccak-256 of the argument's bytes. Its size is bounded by
// the transport's request size.
func (a *API) web3Sha3(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(1); err != nil {
		return nil, err
	}
	var data hexutil.Bytes
	if err := p.Decode(0, "data", &data); err != nil {
		return nil, err
	}
	return hexutil.Bytes(crypto.Keccak256(data)), nil
}

// modules are rpc_modules' namespaces, each "1.0" as go-ethereum answers;
// the dev namespaces are added by RegisterDev.
type modules struct {
	mu  sync.Mutex
	set map[string]string
}

func (m *modules) add(names ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.set == nil {
		m.set = make(map[string]string)
	}
	for _, n := range names {
		m.set[n] = "1.0"
	}
}

func (a *API) rpcModules(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(0); err != nil {
		return nil, err
	}
	a.modules.mu.Lock()
	defer a.modules.mu.Unlock()
	out := make(map[string]string, len(a.modules.set))
	for k, v := range a.modules.set {
		out[k] = v
	}
	return out, nil
}
