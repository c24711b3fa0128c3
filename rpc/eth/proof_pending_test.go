package eth

import (
	"bytes"
	"encoding/json"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
)

// TestGetProofPending: eth_getProof at `pending` proves against the
// pending block's own state root (go-ethereum's trie.VerifyProof accepts
// every account and slot proof), the root eth_getBlockByNumber("pending")
// shows; once the block is sealed, the same request at its number answers
// byte for byte the same.
func TestGetProofPending(t *testing.T) {
	d := newDevPendingNode(t, true)
	recipient := common.HexToAddress("0x00000000000000000000000000000000000b0b09")
	tx, err := types.SignNewTx(d.accs[0].Key, types.LatestSigner(d.g.Config), &types.DynamicFeeTx{
		ChainID: d.g.Config.ChainID, Nonce: 0, GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(10 * params.GWei),
		Gas: 21_000, To: &recipient, Value: big.NewInt(params.Ether),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.pool.Add(tx); err != nil {
		t.Fatal(err)
	}
	d.clock.Advance(d.seqCfg.PreconfInterval)
	d.seq.Sync()
	snap := d.mgr.Current()
	root, ok := snap.StateRoot()
	if !ok || len(snap.Transactions()) != 1 {
		t.Fatalf("pending snapshot: %d txs, state root %v", len(snap.Transactions()), ok)
	}
	var pend struct {
		Number    hexU64      `json:"number"`
		StateRoot common.Hash `json:"stateRoot"`
	}
	wantResult(t, callRPC(t, d.url, "eth_getBlockByNumber", "pending", false), &pend)
	if pend.StateRoot != root {
		t.Fatalf("pending block's stateRoot %s, snapshot's %s", pend.StateRoot, root)
	}
	// The sender, the recipient, an absent account; the EIP-2935 history
	// contract's slot 0 (block 1's parent hash, written by the pending
	// block's pre-execution system call) and an empty slot.
	history := common.HexToAddress("0x0000F90827F1C53a10cb7A02335B175320002935")
	asks := []struct {
		addr common.Address
		keys []string
	}{
		{d.accs[0].Address, nil},
		{recipient, []string{"0x0"}},
		{common.Address{0xde, 0xad}, []string{"0x1"}},
		{history, []string{"0x0", "0x2"}},
	}
	answers := make([]json.RawMessage, len(asks))
	for i, a := range asks {
		keys := a.keys
		if keys == nil {
			keys = []string{}
		}
		r := callRPC(t, d.url, "eth_getProof", a.addr, keys, "pending")
		if r.Error != nil {
			t.Fatalf("eth_getProof %s at pending: %v", a.addr, r.Error)
		}
		verifyProof(t, r.Result, root)
		answers[i] = r.Result
	}
	var h proofResult
	if err := json.Unmarshal(answers[3], &h); err != nil || h.StorageProof[0].Value.ToInt().Sign() == 0 || len(h.StorageProof[0].Proof) == 0 {
		t.Fatalf("history contract's slot 0 at pending: %s (%v)", answers[3], err)
	}
	if err := json.Unmarshal(answers[1], &h); err != nil || h.Balance.ToInt().Cmp(big.NewInt(params.Ether)) != 0 {
		t.Fatalf("recipient at pending: %s (%v)", answers[1], err)
	}
	d.clock.Advance(d.seqCfg.BlockTime)
	d.seq.Sync()
	var sealed struct {
		StateRoot common.Hash `json:"stateRoot"`
	}
	wantResult(t, callRPC(t, d.url, "eth_getBlockByNumber", pend.Number, false), &sealed)
	if sealed.StateRoot != root {
		t.Fatalf("sealed block's state root %s, pending's %s", sealed.StateRoot, root)
	}
	for i, a := range asks {
		keys := a.keys
		if keys == nil {
			keys = []string{}
		}
		r := callRPC(t, d.url, "eth_getProof", a.addr, keys, pend.Number)
		if r.Error != nil {
			t.Fatal(r.Error)
		}
		if !bytes.Equal(r.Result, answers[i]) {
			t.Fatalf("%s at block %d:\n%s\nat pending:\n%s", a.addr, pend.Number, r.Result, answers[i])
		}
	}
}
