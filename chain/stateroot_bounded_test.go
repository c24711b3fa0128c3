package chain

import (
	"encoding/binary"
	"math/big"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/store"
)

// synthState is a generated flat state: n accounts, account i holding
// slots(i) slots; nothing is kept in memory.
type synthState struct {
	n     int
	slots func(i int) int
}

func (s synthState) addr(i int) common.Address {
	var a common.Address
	binary.BigEndian.PutUint64(a[12:], uint64(i)+1)
	return a
}

func (s synthState) account(i int) *store.Account {
	return &store.Account{Nonce: uint64(i % 7), Balance: uint256.NewInt(uint64(i)*1e9 + 1), CodeHash: types.EmptyCodeHash}
}

func (s synthState) Account(common.Address) (*store.Account, error)           { panic("iterate only") }
func (s synthState) Storage(common.Address, common.Hash) (common.Hash, error) { panic("iterate only") }
func (s synthState) Code(common.Hash) ([]byte, error)                         { panic("iterate only") }
func (s synthState) ForEachAccount(fn func(common.Address, *store.Account) error) error {
	for i := range s.n {
		if err := fn(s.addr(i), s.account(i)); err != nil {
			return err
		}
	}
	return nil
}

func (s synthState) ForEachStorage(addr common.Address, fn func(slot, value common.Hash) error) error {
	i := int(binary.BigEndian.Uint64(addr[12:])) - 1
	for k := range s.slots(i) {
		slot := common.BigToHash(big.NewInt(int64(k)))
		if err := fn(slot, crypto.Keccak256Hash(addr[:], slot[:])); err != nil {
			return err
		}
	}
	return nil
}

// TestStateRootBounded: the bounded-memory root (accounts sorted
// externally, an account's slots too beyond the in-memory bound), with
// budgets small enough that both spill, is StateRoot's; so is it for an
// empty state and an account without slots.
func TestStateRootBounded(t *testing.T) {
	for _, c := range []struct {
		name string
		s    synthState
	}{
		{"empty", synthState{n: 0, slots: func(int) int { return 0 }}},
		{"one", synthState{n: 1, slots: func(int) int { return 0 }}},
		{"spilling", synthState{n: 30_000, slots: func(i int) int {
			switch {
			case i == 17:
				return 20_000 // spills its slots
			case i%100 == 0:
				return 40
			}
			return 0
		}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			want, err := StateRoot(c.s)
			if err != nil {
				t.Fatal(err)
			}
			got, err := stateRootBounded(c.s, 1<<20, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("bounded root %s, StateRoot %s", got, want)
			}
		})
	}
}

// BenchmarkFlatStateRoot compares the peak heap of StateRoot and
// StateRootBounded (the deep reorg's) over generated states of 250k and 1M
// accounts without storage (peak-heap-MB: the highest HeapInuse sampled
// every millisecond, above the heap before the call). Run with
// -benchtime 1x.
func BenchmarkFlatStateRoot(b *testing.B) {
	for _, c := range []struct {
		name string
		fn   func(IterableBackend) (common.Hash, error)
		n    int
	}{
		{"in-memory-250k", StateRoot, 250_000}, {"bounded-250k", StateRootBounded, 250_000},
		{"in-memory-1M", StateRoot, 1_000_000}, {"bounded-1M", StateRootBounded, 1_000_000},
	} {
		s := synthState{n: c.n, slots: func(int) int { return 0 }}
		b.Run(c.name, func(b *testing.B) {
			var peak uint64
			for range b.N {
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				base := ms.HeapInuse
				var (
					max  atomic.Uint64
					stop = make(chan struct{})
					wg   sync.WaitGroup
				)
				wg.Add(1)
				go func() {
					defer wg.Done()
					t := time.NewTicker(time.Millisecond)
					defer t.Stop()
					for {
						select {
						case <-stop:
							return
						case <-t.C:
							var ms runtime.MemStats
							runtime.ReadMemStats(&ms)
							if ms.HeapInuse > max.Load() {
								max.Store(ms.HeapInuse)
							}
						}
					}
				}()
				if _, err := c.fn(s); err != nil {
					b.Fatal(err)
				}
				close(stop)
				wg.Wait()
				if m := max.Load(); m > base {
					peak = m - base
				}
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
		})
	}
}
