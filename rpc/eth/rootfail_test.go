package eth

import (
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/tipnode/tipnode/rpc"
)

// TestPendingRootFailure: on a replica (roots deferred), a pending block
// whose state root cannot be computed (its trie reads fail) answers an
// error naming the cause where the root is presented -- pending's block
// and header (stateRoot), eth_getProof at pending -- never a zero root;
// newFlashblocks sends nothing for it (a notification has no error to
// carry, and a zero root would read as a node without roots). Reads that
// need no root still answer (eth_getBalance at pending). (Before, pending
// showed a zero stateRoot, the proof was refused as if the node kept no
// trie, and newFlashblocks sent the zero root.)
func TestPendingRootFailure(t *testing.T) {
	r := newDeferredRig(t)
	r.gv.fail.Store(true)
	r.publish(t, r.s0, "index 0")
	s1 := r.cut(t, 0)
	r.publish(t, s1, "index 1")

	wantRootErr := func(what string, resp rpcResp) {
		t.Helper()
		if resp.Error == nil {
			t.Fatalf("%s: answered %s, want an error", what, resp.Result)
		}
		if resp.Error.Code != rpc.CodeServerError || !strings.Contains(resp.Error.Message, "cannot compute the pending block's state root") ||
			!strings.Contains(resp.Error.Message, errTrieRead.Error()) {
			t.Fatalf("%s: error %d %q, want %d naming the failure and its cause", what, resp.Error.Code, resp.Error.Message, rpc.CodeServerError)
		}
	}
	wantRootErr("eth_getBlockByNumber(pending, false)", callRPC(t, r.url, "eth_getBlockByNumber", "pending", false))
	wantRootErr("eth_getBlockByNumber(pending, true)", callRPC(t, r.url, "eth_getBlockByNumber", "pending", true))
	wantRootErr("eth_getHeaderByNumber(pending)", callRPC(t, r.url, "eth_getHeaderByNumber", "pending"))
	wantRootErr("eth_getProof(pending)", callRPC(t, r.url, "eth_getProof", common.Address{0xb0, 0xb0}, []string{}, "pending"))

	// The pending state is still served: the transfer is there.
	var bal string
	wantResult(t, callRPC(t, r.url, "eth_getBalance", common.Address{0xb0, 0xb0}, "pending"), &bal)
	if bal != "0x1" {
		t.Fatalf("pending balance %s, want 0x1", bal)
	}

	// No notification for either snapshot.
	select {
	case m := <-r.blocks:
		t.Fatalf("newFlashblocks sent a block without its state root: %s", m)
	case <-time.After(300 * time.Millisecond):
	}
}
