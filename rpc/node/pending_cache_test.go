package node_test

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/tipnode/tipnode/pending/pendingtest"
)

// TestReadsMatchModelAcrossSwapsSealsUnwinds: every interval three
// transactions write known values to a few slots; after every interval
// both `latest` and `pending` (eth_getStorageAt, and eth_call reading the
// slot through the EVM) must equal a model: pending = every write so far,
// latest = every write outside the pending block. Reads go through the
// snapshots' overlays and the store's state cache, which is written
// through at each seal; twice the dev chain reverts to an evm_snapshot
// (the store unwinds: the cache's epoch moves) and the same block numbers
// are written again with other values, so a cache entry of the abandoned
// branch, or one a seal left stale, makes a read differ from the model.
// One slot (abandoned) is written only on the branches that are reverted:
// after a revert the chain grows past those blocks' numbers without
// writing it again, and is not read until the head has passed them (a
// read would refill the cache), so only the unwind's invalidation keeps
// its old value.
func TestReadsMatchModelAcrossSwapsSealsUnwinds(t *testing.T) {
	e := newEnvWith(t, envOptions{dev: true})
	if err := e.Pool.Add(e.Tx(0, nil, big.NewInt(0), 200_000, pendingtest.InitCode(slotRuntime))); err != nil {
		t.Fatal(err)
	}
	e.Seal()
	contract := crypto.CreateAddress(e.Accs[0].Address, 0)
	const slots = 6
	const abandoned = slots // written only between an evm_snapshot and its evm_revert
	slot := func(i int) common.Hash { return common.BigToHash(big.NewInt(int64(i))) }

	type write struct {
		tx   common.Hash
		slot int
		val  int64
	}
	var writes []write
	model := func() (latest, pend map[int]int64) {
		inPending := map[common.Hash]bool{}
		for _, tx := range e.Mgr.Current().Transactions() {
			inPending[tx.Hash()] = true
		}
		latest, pend = map[int]int64{}, map[int]int64{}
		for _, w := range writes {
			pend[w.slot] = w.val
			if !inPending[w.tx] {
				latest[w.slot] = w.val
			}
		}
		return latest, pend
	}
	var branchTop uint64 // the highest block sealed on a reverted branch
	check := func(step int, viaCall bool) {
		t.Helper()
		latest, pend := model()
		for tag, m := range map[string]map[int]int64{"latest": latest, "pending": pend} {
			for i := 0; i <= abandoned; i++ {
				if i == abandoned && e.Mgr.Head().Number() <= branchTop {
					continue
				}
				want := hexutil.Encode(common.BigToHash(big.NewInt(m[i])).Bytes())
				if got := e.str("eth_getStorageAt", contract, slot(i), tag); got != want {
					t.Fatalf("step %d: eth_getStorageAt slot %d at %s = %s, want %s", step, i, tag, got, want)
				}
				if viaCall {
					args := map[string]any{"to": contract, "input": hexutil.Bytes(slot(i).Bytes())}
					if got := e.str("eth_call", args, tag); got != want {
						t.Fatalf("step %d: eth_call slot %d at %s = %s, want %s", step, i, tag, got, want)
					}
				}
			}
		}
	}

	v := int64(0)
	var (
		snapID     string
		snapWrites []write
		snapNonces []uint64
		reverts    int
		seals      int
	)
	for step := 0; step < 100; step++ {
		for k := 0; k < 3; k++ {
			v++
			i := int(v*5) % slots
			if k == 0 && snapID != "" {
				i = abandoned
			}
			tx := e.Tx(int(v)%len(e.Accs), &contract, big.NewInt(0), 60_000,
				append(slot(i).Bytes(), common.BigToHash(big.NewInt(v)).Bytes()...))
			if err := e.Pool.Add(tx); err != nil {
				t.Fatal(err)
			}
			writes = append(writes, write{tx.Hash(), i, v})
		}
		before := e.Mgr.Current().Number()
		e.Tick(1)
		if e.Mgr.Current().Number() != before {
			seals++
		}
		check(step, step%5 == 0)
		switch step {
		case 12, 40: // remember this point (head and pending block)
			snapID = e.str("evm_snapshot")
			snapWrites = append([]write(nil), writes...)
			snapNonces = snapNonces[:0]
			for i := range e.Accs {
				snapNonces = append(snapNonces, e.Nonce(i))
			}
		case 33, 62: // back to it: the store unwinds the blocks sealed since
			branchTop = e.Mgr.Head().Number()
			if string(e.call("evm_revert", snapID)) != "true" {
				t.Fatalf("step %d: evm_revert %s refused", step, snapID)
			}
			writes = snapWrites
			for i, n := range snapNonces {
				e.SetNonce(i, n)
			}
			snapID = ""
			reverts++
			check(step, true)
		}
	}
	if seals < 5 || reverts != 2 || e.Mgr.Head().Number() <= branchTop {
		t.Fatalf("%d seals, %d reverts: the test did not exercise them", seals, reverts)
	}
}
