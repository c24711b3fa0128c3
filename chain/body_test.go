package chain_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto/kzg4844"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// A blob transaction in its network form (blobs, commitments and proofs
// attached) inside a block body is refused, as go-ethereum refuses it
// ("unexpected blob sidecar"), and nothing of the block is written. Found by
// the Ethereum conformance suite (test_reject_valid_full_blob_in_block_rlp,
// chain/ethtests), which tipnode's import accepted.
func TestBlockWithBlobSidecarRefused(t *testing.T) {
	db, g, w := chaintest.GenesisStore(t)
	blob := &types.BlobTx{
		ChainID:    uint256.MustFromBig(g.Config.ChainID),
		GasTipCap:  uint256.NewInt(1),
		GasFeeCap:  uint256.NewInt(1e9),
		Gas:        21000,
		BlobFeeCap: uint256.NewInt(1),
		BlobHashes: []common.Hash{{0x01}},
		Sidecar:    types.NewBlobTxSidecar(types.BlobSidecarVersion0, []kzg4844.Blob{{}}, []kzg4844.Commitment{{}}, []kzg4844.Proof{{}}),
	}
	tx := types.NewTx(blob)
	if tx.BlobTxSidecar() == nil {
		t.Fatal("test transaction lost its sidecar")
	}
	txs := chaintypes.FromEth(types.Transactions{tx})
	h := &types.Header{ParentHash: g.Block.Hash(), Number: common.Big1, UncleHash: types.EmptyUncleHash,
		TxHash: types.DeriveSha(txs, trie.NewStackTrie(nil)), Difficulty: common.Big0, GasLimit: g.Block.GasLimit()}
	block := chaintypes.NewBlockWithHeader(h).WithBody(chaintypes.Body{Transactions: txs})
	err := w.ImportBlock(block)
	if !errors.Is(err, chain.ErrInvalidBlock) || !strings.Contains(err.Error(), "unexpected blob sidecar in transaction 0") {
		t.Fatalf("got %v, want ErrInvalidBlock: unexpected blob sidecar", err)
	}
	view := openView(t, db)
	if n, err := view.Tag(store.TagLatest); err != nil || n != 0 {
		t.Fatalf("latest moved to %d (%v)", n, err)
	}
	if _, err := view.NumberByHash(block.Hash()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("refused block written: %v", err)
	}
	// The same block without the blobs passes the body check (and fails
	// later, on its header).
	stripped := chaintypes.FromEth(types.Transactions{tx.WithoutBlobTxSidecar()})
	h.TxHash = types.DeriveSha(stripped, trie.NewStackTrie(nil))
	err = w.ImportBlock(chaintypes.NewBlockWithHeader(h).WithBody(chaintypes.Body{Transactions: stripped}))
	if err == nil || strings.Contains(err.Error(), "sidecar") {
		t.Fatalf("without sidecar: %v, want a refusal for another reason", err)
	}
}
