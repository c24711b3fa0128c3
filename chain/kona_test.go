package chain_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/op"
	"github.com/tipnode/tipnode/chain/op/optest"
	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// konaChainConfig is the chain config (op-geth's genesis format) of the
// fixture's rollup configuration.
func konaChainConfig(t *testing.T, f *optest.Fixture) *chain.Genesis {
	t.Helper()
	r := f.Rollup
	if r.RegolithTime == nil { // OP Sepolia started at Regolith; kona omits the zero time
		zero := uint64(0)
		r.RegolithTime = &zero
	}
	cfg := map[string]any{
		"chainId": r.L2ChainID, "homesteadBlock": 0, "eip150Block": 0, "eip155Block": 0, "eip158Block": 0,
		"byzantiumBlock": 0, "constantinopleBlock": 0, "petersburgBlock": 0, "istanbulBlock": 0, "muirGlacierBlock": 0,
		"berlinBlock": 0, "londonBlock": 0, "arrowGlacierBlock": 0, "grayGlacierBlock": 0, "mergeNetsplitBlock": 0,
		"terminalTotalDifficulty": 0, "bedrockBlock": 0,
		"regolithTime": r.RegolithTime, "canyonTime": r.CanyonTime, "deltaTime": r.DeltaTime, "ecotoneTime": r.EcotoneTime,
		"fjordTime": r.FjordTime, "graniteTime": r.GraniteTime, "holoceneTime": r.HoloceneTime,
		"isthmusTime": r.IsthmusTime, "jovianTime": r.JovianTime,
		"optimism": map[string]any{
			"eip1559Elasticity": r.ChainOpConfig.EIP1559Elasticity, "eip1559Denominator": r.ChainOpConfig.EIP1559Denominator,
			"eip1559DenominatorCanyon": r.ChainOpConfig.EIP1559DenominatorCanyon,
		},
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g, err := chain.ParseChainConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	if g.OP == nil {
		t.Fatal("the fixture's config is not read as an OP chain")
	}
	return g
}

// parentOnly resolves the parent header alone (BLOCKHASH of older blocks is
// not in the fixture).
type parentOnly struct{ h *types.Header }

func (p parentOnly) HeaderByHash(hash common.Hash) (*types.Header, error) {
	if hash == p.h.Hash() {
		return p.h, nil
	}
	return nil, fmt.Errorf("header %s is not in the fixture", hash)
}

func (p parentOnly) HeaderByNumber(n uint64) (*types.Header, error) {
	if n == p.h.Number.Uint64() {
		return p.h, nil
	}
	return nil, fmt.Errorf("header %d is not in the fixture", n)
}

// buildKonaBlock builds block N from the fixture's payload attributes on
// its parent state, as a sequencer or derivation does: OP header fields,
// every transaction executed under OP rules, roots computed. The state
// root comes from go-ethereum's trie over the fixture's nodes and the
// block's state diff.
func buildKonaBlock(t *testing.T, f *optest.Fixture, g *chain.Genesis) (*chaintypes.Block, chaintypes.Receipts) {
	t.Helper()
	b, rs, _ := buildKonaBlockDiff(t, f, g)
	return b, rs
}

// buildKonaBlockDiff is buildKonaBlock, also returning the block's state
// diff.
func buildKonaBlockDiff(t *testing.T, f *optest.Fixture, g *chain.Genesis) (*chaintypes.Block, chaintypes.Receipts, *store.StateDiff) {
	t.Helper()
	cfg, parent, a := g.OP, f.Parent, f.Attributes
	ts := a.Timestamp
	baseFee, err := op.CalcBaseFee(cfg, parent, ts)
	if err != nil {
		t.Fatal(err)
	}
	extra, err := op.ExtraDataFromAttributes(cfg, ts, a.EIP1559Params, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &types.Header{
		ParentHash: parent.Hash(), UncleHash: types.EmptyUncleHash, Coinbase: a.SuggestedFeeRecipient,
		Number: new(big.Int).Add(parent.Number, common.Big1), GasLimit: a.GasLimit, Time: ts, Extra: extra,
		MixDigest: a.PrevRandao, Difficulty: new(big.Int), BaseFee: baseFee, ParentBeaconRoot: a.ParentBeaconBlockRoot,
	}
	if g.Config.IsCancun(h.Number, ts) {
		zero := uint64(0)
		h.BlobGasUsed, h.ExcessBlobGas = &zero, new(uint64)
	}
	exec := g.Executor()
	state := chain.NewStateDB(f.State())
	proc := exec.NewBlockProcessor(h, parent, common.Hash{}, state, parentOnly{parent}, vm.Config{})
	for i, tx := range a.Transactions {
		if _, err := proc.ApplyTx(tx); err != nil {
			t.Fatalf("block %d transaction %d (%s, type 0x%x): %v", f.Number, i, tx.Hash(), tx.Type(), err)
		}
	}
	var withdrawals types.Withdrawals
	if g.Config.IsShanghai(h.Number, ts) {
		withdrawals = types.Withdrawals{}
	}
	if _, err := proc.Finish(withdrawals, nil); err != nil {
		t.Fatal(err)
	}
	h.GasUsed = proc.GasUsed()
	if h.BlobGasUsed != nil {
		used, excess := op.BlobGasFields(cfg, ts, proc.BlobGasUsed())
		h.BlobGasUsed, h.ExcessBlobGas = used, excess
	}
	diff := state.BlockDiff()
	root, err := f.PostStateRoot(diff)
	if err != nil {
		t.Fatalf("block %d: post-state root: %v", f.Number, err)
	}
	h.Root = root
	body := &chaintypes.Body{Transactions: chaintypes.Txs(a.Transactions), Withdrawals: withdrawals}
	return chaintypes.NewBlock(h, body, proc.Receipts(), nil), proc.Receipts(), diff
}

// TestKonaBlocks: seven real OP Sepolia blocks (Holocene), each built from
// its payload attributes on its real parent state, hash to the real block
// hash, which covers the state root, receipts root (deposit nonces and
// versions), transactions root, bloom, gas used, base fee and extraData.
// Each block then imports through the executor's full verification.
func TestKonaBlocks(t *testing.T) {
	for _, n := range optest.Blocks() {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			f := optest.Load(t, n)
			g := konaChainConfig(t, f)
			block, receipts := buildKonaBlock(t, f, g)
			if block.Hash() != f.ExpectedHash {
				h := block.Header()
				t.Fatalf("block %d hashes to %s, the real one is %s (gas used %d, state root %s, receipts root %s, tx root %s)",
					n, block.Hash(), f.ExpectedHash, h.GasUsed, h.Root, h.ReceiptHash, h.TxHash)
			}
			deposits := 0
			for i, tx := range block.Transactions() {
				if chaintypes.IsDeposit(tx) {
					deposits++
					if r := receipts[i]; r.OP == nil || r.OP.DepositNonce == nil || r.OP.DepositReceiptVersion == nil {
						t.Fatalf("deposit %d receipt lacks its nonce or version", i)
					}
				} else if r := receipts[i]; r.OP == nil || r.OP.L1Fee == nil || r.OP.L1Fee.Sign() <= 0 {
					t.Fatalf("transaction %d receipt has no L1 fee", i)
				}
			}
			if deposits == 0 {
				t.Fatal("no deposit in the block")
			}
			// The importer's verification accepts the real block.
			if _, err := g.Executor().ExecuteBlockOn(block, f.Parent, parentOnly{f.Parent}, f.State()); err != nil {
				t.Fatalf("import of the real block: %v", err)
			}
			// And refuses it, naming the block and the field, with a wrong
			// extraData, a deposit moved after a user transaction, a
			// missing L1-info deposit, or a receipt (an L1 fee) that is not
			// the block's.
			refused := func(what string, b *chaintypes.Block, want string) {
				t.Helper()
				_, err := g.Executor().ExecuteBlockOn(b, f.Parent, parentOnly{f.Parent}, f.State())
				if !errors.Is(err, chain.ErrInvalidBlock) || !strings.Contains(err.Error(), fmt.Sprint(n)) || !strings.Contains(err.Error(), want) {
					t.Fatalf("%s: %v, want ErrInvalidBlock naming block %d and %q", what, err, n, want)
				}
			}
			bad := block.Header()
			bad.Extra = append([]byte{}, bad.Extra...)
			bad.Extra[0] = 9
			refused("bad extraData", block.WithSeal(bad), "extraData")
			txs := block.Transactions()
			if deposits < len(txs) {
				moved := append(append(chaintypes.Txs{}, txs[:deposits-1]...), txs[deposits:]...)
				moved = append(moved, txs[deposits-1])
				refused("deposit after a user transaction", chaintypes.NewBlock(block.Header(), &chaintypes.Body{Transactions: moved, Withdrawals: block.Withdrawals()}, nil, nil), "deposit")
			}
			refused("no L1-info deposit", chaintypes.NewBlock(block.Header(), &chaintypes.Body{Transactions: txs[1:], Withdrawals: block.Withdrawals()}, nil, nil), "L1-info")
			wrong := block.Header()
			wrong.ReceiptHash = common.Hash{1}
			refused("wrong receipts (L1 fee) root", block.WithSeal(wrong), "receipts root")
		})
	}
}
