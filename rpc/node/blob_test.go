package node_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto/kzg4844"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/pending/pendingtest"
	"github.com/tipnode/tipnode/pending/sequencer"
)

// testBlob is a blob with a pattern in every field element (each 32-byte
// element starts with a zero byte, so it is below the field modulus), with
// its commitment, its blob proof (sidecar version 0) and its cell proofs
// (version 1).
type testBlob struct {
	blob       kzg4844.Blob
	commitment kzg4844.Commitment
	proof      kzg4844.Proof
	cellProofs []kzg4844.Proof
}

func newTestBlob(t *testing.T, seed byte) *testBlob {
	t.Helper()
	b := &testBlob{}
	for i := range b.blob {
		if i%32 != 0 {
			b.blob[i] = seed + byte(i)
		}
	}
	var err error
	if b.commitment, err = kzg4844.BlobToCommitment(&b.blob); err != nil {
		t.Fatal(err)
	}
	if b.proof, err = kzg4844.ComputeBlobProof(&b.blob, b.commitment); err != nil {
		t.Fatal(err)
	}
	if b.cellProofs, err = kzg4844.ComputeCellProofs(&b.blob); err != nil {
		t.Fatal(err)
	}
	return b
}

// sidecar repeats the blob n times in a sidecar of the given version.
func (b *testBlob) sidecar(n int, version byte) *types.BlobTxSidecar {
	sc := &types.BlobTxSidecar{Version: version}
	for range n {
		sc.Blobs = append(sc.Blobs, b.blob)
		sc.Commitments = append(sc.Commitments, b.commitment)
		if version == types.BlobSidecarVersion0 {
			sc.Proofs = append(sc.Proofs, b.proof)
		} else {
			sc.Proofs = append(sc.Proofs, b.cellProofs...)
		}
	}
	return sc
}

// blobTx signs a blob transaction from account i with nonce n carrying sc
// (hashes from sc unless given).
func (e *env) blobTx(i int, nonce uint64, sc *types.BlobTxSidecar, blobFeeCap uint64, hashes []common.Hash) *types.Transaction {
	e.t.Helper()
	if hashes == nil {
		hashes = sc.BlobHashes()
	}
	return pendingtest.SignTx(e.t, e.Signer, e.Accs[i].Key, &types.BlobTx{
		ChainID: uint256.MustFromBig(e.Genesis.Config.ChainID), Nonce: nonce,
		GasTipCap: uint256.NewInt(params.GWei), GasFeeCap: uint256.NewInt(10 * params.GWei), Gas: 21_000,
		To: common.Address{0xb1}, BlobFeeCap: uint256.NewInt(blobFeeCap), BlobHashes: hashes, Sidecar: sc,
	})
}

// Blob transactions in their network form are pooled (sidecar, commitments
// and proofs verified), pre-confirmed and sealed within the block's blob gas
// limit (the ones that do not fit wait for the next block, none is
// dropped), and the blocks hold them without their sidecars.
func TestBlobTransactionsIncludedWithinTheBlobLimit(t *testing.T) {
	e := newEnv(t)
	b := newTestBlob(t, 1)
	maxBlobs := e.Genesis.Config.BlobConfig(e.Genesis.Config.LatestFork(e.Mgr.Current().Header().Time)).Max
	// Transactions of three blobs each from four senders: 12 blobs, more
	// than one block takes.
	per := 3
	n := maxBlobs/per + 1
	var txs []*types.Transaction
	for i := range n {
		tx := e.blobTx(i, 0, b.sidecar(per, types.BlobSidecarVersion1), 10, nil)
		e.sendRaw(tx) // through eth_sendRawTransaction: up to 1 MiB
		txs = append(txs, tx)
	}
	var got struct {
		Hashes []common.Hash `json:"blobVersionedHashes"`
		Fee    *hexutil.Big  `json:"maxFeePerBlobGas"`
	}
	if err := json.Unmarshal(e.call("eth_getTransactionByHash", txs[0].Hash()), &got); err != nil || len(got.Hashes) != per {
		t.Fatalf("pooled blob transaction by hash: %+v %v", got, err)
	}
	e.Seal()
	e.Seal()
	included := 0
	for num := uint64(1); num <= 2; num++ {
		var blk struct {
			Txs         []common.Hash  `json:"transactions"`
			BlobGasUsed hexutil.Uint64 `json:"blobGasUsed"`
			Size        hexutil.Uint64 `json:"size"`
		}
		if err := json.Unmarshal(e.call("eth_getBlockByNumber", hexutil.EncodeUint64(num), false), &blk); err != nil {
			t.Fatal(err)
		}
		if blobs := uint64(blk.BlobGasUsed) / params.BlobTxBlobGasPerBlob; blobs > uint64(maxBlobs) || blobs != uint64(len(blk.Txs)*per) {
			t.Fatalf("block %d: %d blobs in %d transactions (max %d per block)", num, blobs, len(blk.Txs), maxBlobs)
		}
		if blk.Size > 10_000 {
			t.Fatalf("block %d is %d bytes: sidecars stored in the block", num, blk.Size)
		}
		included += len(blk.Txs)
	}
	if included != n || e.Pool.Len() != 0 {
		t.Fatalf("%d of %d blob transactions included, %d still pooled", included, n, e.Pool.Len())
	}
	for _, tx := range txs {
		var r struct {
			Status       hexutil.Uint64 `json:"status"`
			BlobGasUsed  hexutil.Uint64 `json:"blobGasUsed"`
			BlobGasPrice *hexutil.Big   `json:"blobGasPrice"`
		}
		if err := json.Unmarshal(e.call("eth_getTransactionReceipt", tx.Hash()), &r); err != nil || r.Status != 1 || uint64(r.BlobGasUsed) != uint64(per)*params.BlobTxBlobGasPerBlob || r.BlobGasPrice == nil {
			t.Fatalf("receipt of %s: %+v %v", tx.Hash(), r, err)
		}
	}
}

// What the pool refuses of blob transactions, each with its reason.
func TestBlobTransactionRefusals(t *testing.T) {
	e := newEnv(t)
	b := newTestBlob(t, 2)
	other := newTestBlob(t, 3)
	badProof := b.sidecar(1, types.BlobSidecarVersion1)
	badProof.Proofs = append([]kzg4844.Proof(nil), badProof.Proofs...)
	badProof.Proofs[5] = other.cellProofs[5]
	wrongCommitment := b.sidecar(1, types.BlobSidecarVersion1)
	wrongCommitment.Commitments = []kzg4844.Commitment{other.commitment}
	for _, tc := range []struct {
		name string
		tx   *types.Transaction
		want error
	}{
		{"no sidecar", e.blobTx(0, 0, nil, 10, b.sidecar(1, 1).BlobHashes()), sequencer.ErrBlobSidecar},
		{"blob fee cap below the blob base fee", e.blobTx(0, 0, b.sidecar(1, 1), 0, nil), sequencer.ErrBlobFeeCapTooLow},
		{"more blobs than a transaction may carry", e.blobTx(0, 0, b.sidecar(params.BlobTxMaxBlobs+1, 1), 10, nil), sequencer.ErrBlobSidecar},
		{"over 1 MiB with the sidecar", e.blobTx(0, 0, b.sidecar(8, 1), 10, nil), sequencer.ErrOversized},
		{"hashes not the commitments'", e.blobTx(0, 0, b.sidecar(1, 1), 10, other.sidecar(1, 1).BlobHashes()), sequencer.ErrBlobSidecar},
		{"commitment not the blob's", e.blobTx(0, 0, wrongCommitment, 10, nil), sequencer.ErrBlobSidecar},
		{"a cell proof that does not verify", e.blobTx(0, 0, badProof, 10, nil), sequencer.ErrBlobSidecar},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := e.Pool.Add(tc.tx); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	if e.Pool.Len() != 0 {
		t.Fatalf("%d refused transactions pooled", e.Pool.Len())
	}
	// A version-0 sidecar (blob proofs) once Osaka is active is converted
	// to cell proofs, as go-ethereum's eth_sendRawTransaction does.
	v0 := e.blobTx(1, 0, b.sidecar(1, types.BlobSidecarVersion0), 10, nil)
	if err := e.Pool.Add(v0); err != nil {
		t.Fatal(err)
	}
	if sc := e.Pool.Get(v0.Hash()).BlobTxSidecar(); sc == nil || sc.Version != types.BlobSidecarVersion1 || len(sc.Proofs) != kzg4844.CellProofsPerBlob {
		t.Fatalf("pooled sidecar not converted: %+v", sc)
	}
	e.Tick(1)
	if _, _, _, ok := e.Mgr.Current().Transaction(v0.Hash()); !ok {
		t.Fatal("converted blob transaction not pre-confirmed")
	}
}
