package stream_test

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/pending/pendingtest"
)

// newSeqNode is a dev chain funding four keys with a real sequencer driven
// by a manual clock; opts.OnPublish and opts.Publisher are set up before
// the sequencer starts, so they see the first index 0.
func newSeqNode(t *testing.T, opts pendingtest.Options) *pendingtest.Harness {
	t.Helper()
	opts.Keys, opts.FeeCap = 4, big.NewInt(100*params.GWei)
	return pendingtest.New(t, opts)
}

// logger pools a deployment from account i whose constructor emits one log
// (topic t).
func logger(n *pendingtest.Harness, i int, topic byte) *types.Transaction {
	// PUSH1 0x2a PUSH1 0 MSTORE PUSH1 topic PUSH1 0x20 PUSH1 0 LOG1 STOP
	return n.Send(i, nil, big.NewInt(1), 100_000, []byte{0x60, 0x2a, 0x60, 0x00, 0x52, 0x60, topic, 0x60, 0x20, 0x60, 0x00, 0xa1, 0x00})
}
