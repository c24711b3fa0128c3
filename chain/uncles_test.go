package chain_test

import (
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus/ethash"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// Before the merge the importer verifies a block's uncles as go-ethereum
// does (the engine's VerifyUncles): at most two, each a valid header whose
// parent is a recent ancestor other than the block's parent, none included
// before. Found by the Ethereum conformance suite (londonUncles_BerlinToLondonAt5,
// DaoTransactions_UncleExtradata_HomesteadToDaoAt5, chain/ethtests): an
// invalid uncle was accepted and rewarded.
func TestUnclesVerified(t *testing.T) {
	config, engine := londonPoW(), ethash.NewFaker()
	// uncleOn returns an uncle on block n (a header whose parent is block
	// n, with its own coinbase); AddUncle sets its time, difficulty, gas
	// limit and base fee.
	uncleOn := func(b *core.BlockGen, n int, tag byte) *types.Header {
		p := b.PrevBlock(n - 1)
		return &types.Header{ParentHash: p.Hash(), Number: new(big.Int).Add(p.Number(), common.Big1), Coinbase: common.Address{0xc0, tag},
			UncleHash: types.EmptyUncleHash, TxHash: types.EmptyTxsHash, ReceiptHash: types.EmptyReceiptsHash, Root: p.Root()}
	}
	cases := []struct {
		name    string
		gen     func(i int, b *core.BlockGen) // block i+1
		edit    func(blocks []*types.Block)   // after generation
		bad     int                           // the refused block (0: none)
		wantErr string
	}{
		{name: "valid uncle", gen: func(i int, b *core.BlockGen) {
			if i == 2 {
				b.AddUncle(uncleOn(b, 1, 1))
			}
		}},
		{name: "uncle included twice", gen: func(i int, b *core.BlockGen) {
			if i == 2 {
				b.AddUncle(uncleOn(b, 1, 1))
			}
		}, edit: func(blocks []*types.Block) {
			// Block 4 includes block 3's uncle again (read from the
			// store: block 3's body).
			h := blocks[3].Header()
			uncles := blocks[2].Uncles()
			h.UncleHash = types.CalcUncleHash(uncles)
			blocks[3] = types.NewBlockWithHeader(h).WithBody(types.Body{Transactions: blocks[3].Transactions(), Uncles: uncles})
		}, bad: 4, wantErr: "duplicate uncle"},
		{name: "uncle extra too long", gen: func(i int, b *core.BlockGen) {
			if i == 2 {
				u := uncleOn(b, 1, 1)
				u.Extra = make([]byte, 33)
				b.AddUncle(u)
			}
		}, bad: 3, wantErr: "extra-data too long"},
		{name: "three uncles", gen: func(i int, b *core.BlockGen) {
			if i == 3 {
				for tag := byte(1); tag <= 3; tag++ {
					b.AddUncle(uncleOn(b, 2, tag))
				}
			}
		}, bad: 4, wantErr: "too many uncles"},
		{name: "uncle on the parent", gen: func(i int, b *core.BlockGen) {
			if i == 2 {
				b.AddUncle(uncleOn(b, 2, 1))
			}
		}, bad: 3, wantErr: "uncle's parent is not ancestor"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gg := newGethGenesis(config, engine)
			_, blocks, _ := core.GenerateChainWithGenesis(gg.gspec, engine, 4, tc.gen)
			if tc.edit != nil {
				tc.edit(blocks)
			}
			db, _, w := gg.initStore(t)
			for _, b := range blocks {
				err := w.ImportBlock(chaintypes.FromEthBlock(b))
				if int(b.NumberU64()) != tc.bad {
					if err != nil {
						t.Fatalf("block %d: %v", b.NumberU64(), err)
					}
					continue
				}
				if !errors.Is(err, chain.ErrInvalidBlock) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("block %d: %v, want ErrInvalidBlock: %s", b.NumberU64(), err, tc.wantErr)
				}
				view := openView(t, db)
				if _, err := view.NumberByHash(b.Hash()); !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("refused block %d written: %v", b.NumberU64(), err)
				}
				return
			}
			if tc.bad != 0 {
				t.Fatalf("block %d imported, want it refused (%s)", tc.bad, tc.wantErr)
			}
		})
	}
}
