package chain

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/params"
)

// TestAccessListMatchesGeth runs random access-list operations (Prepare
// with the fork's precompiles and a transaction access list, adding
// addresses and slots, snapshots and reverts) on our StateDB and on
// go-ethereum's, and compares every membership answer, for precompiles,
// listed and other addresses, after every operation.
func TestAccessListMatchesGeth(t *testing.T) {
	rules := params.MergedTestChainConfig.Rules(common.Big0, true, 0)
	pre := vm.ActivePrecompiles(rules)
	addrs := append([]common.Address{{0xaa}, {0xbb}, {0xcc}, {0xdd}}, pre[0], pre[1], pre[len(pre)-1])
	slots := []common.Hash{{1}, {2}, {3}}
	r := rand.New(rand.NewPCG(5, 6))
	for round := 0; round < 50; round++ {
		ours := NewStateDB(&codeBackend{})
		geth, err := state.New(types.EmptyRootHash, state.NewDatabaseForTesting())
		if err != nil {
			t.Fatal(err)
		}
		var ourSnaps, gethSnaps []int
		var log []string
		for op := 0; op < 60; op++ {
			a, k := addrs[r.IntN(len(addrs))], slots[r.IntN(len(slots))]
			switch n := r.IntN(10); {
			case n == 0:
				dst := addrs[r.IntN(len(addrs))]
				list := types.AccessList{{Address: a, StorageKeys: []common.Hash{k}}, {Address: pre[2]}}
				ours.Prepare(rules, addrs[0], addrs[1], &dst, pre, list)
				geth.Prepare(rules, addrs[0], addrs[1], &dst, pre, list)
				ourSnaps, gethSnaps = nil, nil
				log = append(log, fmt.Sprintf("prepare dst %x list %x/%x", dst[:1], a[:1], k[:1]))
			case n < 4:
				ours.AddAddressToAccessList(a)
				geth.AddAddressToAccessList(a)
				log = append(log, fmt.Sprintf("add %x", a))
			case n < 7:
				ours.AddSlotToAccessList(a, k)
				geth.AddSlotToAccessList(a, k)
				log = append(log, fmt.Sprintf("add %x/%x", a, k[:1]))
			case n < 9:
				ourSnaps, gethSnaps = append(ourSnaps, ours.Snapshot()), append(gethSnaps, geth.Snapshot())
				log = append(log, "snapshot")
			default:
				if len(ourSnaps) == 0 {
					continue
				}
				i := r.IntN(len(ourSnaps))
				ours.RevertToSnapshot(ourSnaps[i])
				geth.RevertToSnapshot(gethSnaps[i])
				ourSnaps, gethSnaps = ourSnaps[:i], gethSnaps[:i]
				log = append(log, fmt.Sprintf("revert to snapshot %d", i))
			}
			for _, a := range addrs {
				if got, want := ours.AddressInAccessList(a), geth.AddressInAccessList(a); got != want {
					t.Fatalf("round %d after %v: address %x listed %v, go-ethereum %v", round, log, a, got, want)
				}
				for _, k := range slots {
					ga, gs := ours.SlotInAccessList(a, k)
					wa, ws := geth.SlotInAccessList(a, k)
					if ga != wa || gs != ws {
						t.Fatalf("round %d after %v: slot %x/%x listed (%v, %v), go-ethereum (%v, %v)", round, log, a, k[:1], ga, gs, wa, ws)
					}
				}
			}
		}
	}
}
