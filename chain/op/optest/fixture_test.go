package optest

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tipnode/tipnode/store/chaintypes"
)

func TestLoadAll(t *testing.T) {
	txs := map[uint64]int{26207960: 10, 26207961: 12, 26207962: 48, 26207963: 32, 26208384: 26, 26208858: 20, 26211680: 18}
	for _, n := range Blocks() {
		f := Load(t, n)
		t.Logf("block %d: %d preimages, %d txs, parent %s root %s", n, len(f.Preimages), len(f.Attributes.Transactions), f.Parent.Hash(), f.Parent.Root)
		if got := len(f.Attributes.Transactions); got != txs[n] {
			t.Errorf("block %d: %d transactions, README says %d", n, got, txs[n])
		}
		if f.Attributes.Transactions[0].Type() != chaintypes.DepositTxType {
			t.Errorf("block %d: first transaction is type %d, want the L1-info deposit", n, f.Attributes.Transactions[0].Type())
		}
		if f.Rollup.L2ChainID != 11155420 || f.Rollup.HoloceneTime == nil || f.Attributes.Timestamp < *f.Rollup.HoloceneTime || f.Rollup.IsthmusTime == nil || f.Attributes.Timestamp >= *f.Rollup.IsthmusTime {
			t.Errorf("block %d: not OP Sepolia in the Holocene era: %+v", n, f.Rollup)
		}
		if f.Attributes.Timestamp != f.Parent.Time+f.Rollup.BlockTime {
			t.Errorf("block %d: timestamp %d, parent %d", n, f.Attributes.Timestamp, f.Parent.Time)
		}
		if len(f.Attributes.EIP1559Params) != 8 || f.Attributes.ParentBeaconBlockRoot == nil || f.Attributes.GasLimit != f.Parent.GasLimit {
			t.Errorf("block %d: attributes %+v", n, f.Attributes)
		}
	}
}

// TestParentHashChain: the fixtures of three consecutive blocks chain, so
// Load's hash check does run (and a header decoding that dropped or
// altered a field would fail it).
func TestParentHashChain(t *testing.T) {
	prev := Load(t, 26207960)
	for _, n := range []uint64{26207961, 26207962, 26207963} {
		f := Load(t, n)
		if f.Parent.Hash() != prev.ExpectedHash {
			t.Fatalf("block %d: parent hash %s, fixture %d expects %s", n, f.Parent.Hash(), n-1, prev.ExpectedHash)
		}
		prev = f
	}
	// Load's own check refuses a parent header with one field changed.
	dir := filepath.Join(Dir(t), "kona")
	if err := checkParentHash(dir, prev); err != nil {
		t.Fatal(err)
	}
	h := types.CopyHeader(prev.Parent)
	h.Extra = common.CopyBytes(h.Extra)
	h.Extra[len(h.Extra)-1]++
	bad := *prev
	bad.Parent = h
	if err := checkParentHash(dir, &bad); !errors.Is(err, ErrFixture) {
		t.Fatalf("altered parent header: got %v, want ErrFixture", err)
	}
}
