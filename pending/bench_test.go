package pending

import (
	"math/big"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/store"
)

// bigDiff touches n slots spread over n/100 contracts.
func bigDiff(n int) *store.StateDiff {
	d := store.NewStateDiff()
	for i := 0; i < n; i++ {
		a := common.Address{0xc0, byte(i / 100 >> 8), byte(i / 100)}
		if d.Storage[a] == nil {
			d.Storage[a] = make(map[common.Hash]common.Hash)
			d.Accounts[a] = &store.Account{Nonce: 1, Balance: uint256.NewInt(0), CodeHash: types.EmptyCodeHash}
		}
		d.Storage[a][common.BigToHash(big.NewInt(int64(i)))] = common.Hash{1}
	}
	return d
}

// txDiff is what 100 storage-writing transactions change: 100 senders, one
// slot each in one contract, the coinbase.
func txDiff(round int) (*store.StateDiff, map[common.Hash]int) {
	d := store.NewStateDiff()
	txs := make(map[common.Hash]int, 100)
	target := common.Address{0xee}
	d.Storage[target] = make(map[common.Hash]common.Hash, 100)
	for i := 0; i < 100; i++ {
		d.Accounts[common.Address{0xa0, byte(i)}] = &store.Account{Nonce: uint64(round), Balance: uint256.NewInt(1e18), CodeHash: types.EmptyCodeHash}
		d.Storage[target][common.BigToHash(big.NewInt(int64(round*100+i)))] = common.Hash{2}
		txs[common.Hash{byte(round), byte(i)}] = round*100 + i
	}
	d.Accounts[common.Address{}] = &store.Account{Balance: uint256.NewInt(uint64(round)), CodeHash: types.EmptyCodeHash}
	return d, txs
}

// BenchmarkSnapshotSwap100Txs: build a snapshot from the diff of 100 new
// transactions on a pending state already holding 10,000 touched slots, and
// swap it in. The pending block restarts every 10 pre-confirmations.
func BenchmarkSnapshotSwap100Txs(b *testing.B) {
	base := pushLayer(nil, bigDiff(10_000), nil)
	const perBlock = 10
	diffs := make([]*store.StateDiff, perBlock)
	txmaps := make([]map[common.Hash]int, perBlock)
	for i := range diffs {
		diffs[i], txmaps[i] = txDiff(i)
	}
	header := &types.Header{Number: big.NewInt(1)}
	var cur atomic.Pointer[Snapshot]
	prev := &Snapshot{layers: base, header: header}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := i % perBlock
		if k == 0 {
			prev = &Snapshot{layers: base, header: header}
		}
		s := &Snapshot{
			anchor: header, header: types.CopyHeader(header), index: prev.index + 1,
			layers: pushLayer(prev.layers, diffs[k], txmaps[k]), created: time.Time{},
		}
		cur.Store(s)
		prev = s
	}
}

// BenchmarkPendingStorageRead reads a slot through a snapshot of a block
// with ten pre-confirmations over 10,000 touched slots: a hit in the oldest
// (largest) layer, and a miss that falls through every layer to the base.
func BenchmarkPendingStorageRead(b *testing.B) {
	l := pushLayer(nil, bigDiff(10_000), nil)
	for i := 0; i < 10; i++ {
		d, txs := txDiff(i)
		l = pushLayer(l, d, txs)
	}
	o := (&Snapshot{layers: l}).State(nilStore{})
	hit := common.Address{0xc0, 0, 50}
	slot := common.BigToHash(big.NewInt(5050))
	b.Run("hit", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if v, _ := o.Storage(hit, slot); v != (common.Hash{1}) {
				b.Fatal("wrong value")
			}
		}
	})
	b.Run("miss", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			o.Storage(common.Address{0xdd}, slot)
		}
	})
	b.ReportMetric(float64(l.depth), "layers")
}

type nilStore struct{}

func (nilStore) Account(common.Address) (*store.Account, error)           { return nil, nil }
func (nilStore) Storage(common.Address, common.Hash) (common.Hash, error) { return common.Hash{}, nil }
func (nilStore) Code(common.Hash) ([]byte, error)                         { return nil, nil }
