package eth

import (
	"bytes"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rlp"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/devnet"
	"github.com/tipnode/tipnode/chain/op"
	"github.com/tipnode/tipnode/pending/pendingtest"
	"github.com/tipnode/tipnode/pending/sequencer"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// opDepositNode is the OP dev chain (every fork through Jovian at genesis)
// with a sequencer on a manual clock, served over HTTP.
func opDepositNode(t *testing.T) (*pendingtest.Harness, string) {
	t.Helper()
	accs := pendingtest.Accounts(t, 2)
	spec, err := devnet.OPGenesis(devnet.GenesisConfig{ChainID: pendingtest.ChainID, Accounts: []common.Address{accs[0].Address, accs[1].Address},
		Timestamp: pendingtest.GenesisTime})
	if err != nil {
		t.Fatal(err)
	}
	pc := chain.DefaultProducerConfig()
	cfg := sequencer.DefaultConfig()
	cfg.Dev, cfg.Chain, cfg.Coinbase = true, &pc, op.SequencerFeeVault
	h := pendingtest.New(t, pendingtest.Options{Accounts: accs, Spec: spec, Config: &cfg})
	acfg := DefaultAPIConfig()
	acfg.Preconfirmations = true
	_, url := startAPI(t, acfg, h.Genesis, h.Mgr, h.Writer, h.Pool)
	return h, url
}

// depositJSON is what the transaction objects of a deposit show of its
// receipt.
type depositJSON struct {
	Hash                  common.Hash     `json:"hash"`
	Type                  hexutil.Uint64  `json:"type"`
	Nonce                 hexutil.Uint64  `json:"nonce"`
	DepositReceiptVersion *hexutil.Uint64 `json:"depositReceiptVersion"`
}

// TestOPDepositObjects pins three answers to op-geth's
// (internal/ethapi/api.go, core/types/receipt.go, eth/gasprice):
//   - a deposit in a full block object (canonical or pending) and from
//     eth_getTransactionByBlock{Number,Hash}AndIndex shows the nonce and
//     depositReceiptVersion of its receipt, as from eth_getTransactionByHash
//     (op-geth's newRPCTransactionFromBlockIndex reads the receipts; tipnode
//     showed nonce 0 and no version);
//   - debug_getRawReceipts encodes a deposit receipt with its depositNonce
//     and depositReceiptVersion (op-geth's Receipt.MarshalBinary; tipnode's
//     was 2 bytes short);
//   - eth_feeHistory's blobGasUsedRatio is 0 on an OP chain (op-geth has no
//     blob schedule there) though a Jovian header's blobGasUsed holds the
//     DA footprint.
func TestOPDepositObjects(t *testing.T) {
	h, url := opDepositNode(t)
	minted := common.Address{0xd0}
	// Two deposits from one account (nonces 0 and 1) and a user
	// transaction (a non-zero DA footprint), over two blocks.
	if _, _, err := h.Seq.SendDeposit(chaintypes.DepositFields{From: minted, To: &minted, Mint: big.NewInt(params.Ether), Gas: 100_000}); err != nil {
		t.Fatal(err)
	}
	h.Seal()
	if _, _, err := h.Seq.SendDeposit(chaintypes.DepositFields{From: minted, To: &minted, Mint: big.NewInt(1), Gas: 100_000}); err != nil {
		t.Fatal(err)
	}
	h.Send(0, &common.Address{0xbe}, big.NewInt(1), 21_000, make([]byte, 0))
	h.Tick(1)
	checkDeposits := func(tag any, pendingBlock bool) {
		t.Helper()
		var block struct {
			Number       hexutil.Uint64 `json:"number"`
			Hash         *common.Hash   `json:"hash"`
			BlobGasUsed  hexutil.Uint64 `json:"blobGasUsed"`
			Transactions []depositJSON  `json:"transactions"`
		}
		wantResult(t, callRPC(t, url, "eth_getBlockByNumber", tag, true), &block)
		deposits := 0
		for i, tx := range block.Transactions {
			if tx.Type != chaintypes.DepositTxType {
				continue
			}
			deposits++
			var r struct {
				DepositNonce          *hexutil.Uint64 `json:"depositNonce"`
				DepositReceiptVersion *hexutil.Uint64 `json:"depositReceiptVersion"`
			}
			wantResult(t, callRPC(t, url, "eth_getTransactionReceipt", tx.Hash), &r)
			if r.DepositNonce == nil || r.DepositReceiptVersion == nil || *r.DepositReceiptVersion != 1 {
				t.Fatalf("block %v deposit %d: receipt %+v", tag, i, r)
			}
			var byHash, byIndex depositJSON
			wantResult(t, callRPC(t, url, "eth_getTransactionByHash", tx.Hash), &byHash)
			wantResult(t, callRPC(t, url, "eth_getTransactionByBlockNumberAndIndex", tag, hexutil.Uint64(i)), &byIndex)
			for name, got := range map[string]depositJSON{"block object": tx, "by hash": byHash, "by block and index": byIndex} {
				if got.Nonce != *r.DepositNonce || got.DepositReceiptVersion == nil || *got.DepositReceiptVersion != *r.DepositReceiptVersion {
					t.Errorf("block %v deposit %d %s: nonce %d version %v, its receipt: nonce %d version %d",
						tag, i, name, got.Nonce, got.DepositReceiptVersion, *r.DepositNonce, *r.DepositReceiptVersion)
				}
			}
			if !pendingBlock {
				var byHashIdx depositJSON
				wantResult(t, callRPC(t, url, "eth_getTransactionByBlockHashAndIndex", block.Hash, hexutil.Uint64(i)), &byHashIdx)
				if byHashIdx.Nonce != *r.DepositNonce || byHashIdx.DepositReceiptVersion == nil {
					t.Errorf("block %v deposit %d by hash and index: %+v", tag, i, byHashIdx)
				}
			}
		}
		if deposits < 2 {
			t.Fatalf("block %v: %d deposits", tag, deposits)
		}
	}
	checkDeposits("pending", true)
	h.Seal()
	head := h.Writer.Head().Number()
	// Block 1: the L1-info deposit (the depositor's nonce) and the
	// account's first deposit; block 2: its second (nonce 1) and a user
	// transaction.
	checkDeposits(hexutil.Uint64(head-1), false)
	checkDeposits(hexutil.Uint64(head), false)

	// debug_getRawReceipts: deposits as op-geth's MarshalBinary encodes
	// them (go-ethereum's RLP of [status, cumulativeGasUsed, bloom, logs,
	// depositNonce, depositReceiptVersion]); other receipts unchanged.
	var raws []hexutil.Bytes
	wantResult(t, callRPC(t, url, "debug_getRawReceipts", hexutil.Uint64(head)), &raws)
	var blk struct {
		Transactions []common.Hash `json:"transactions"`
	}
	wantResult(t, callRPC(t, url, "eth_getBlockByNumber", hexutil.Uint64(head), false), &blk)
	if len(raws) != len(blk.Transactions) || len(raws) < 3 {
		t.Fatalf("%d raw receipts for %d transactions", len(raws), len(blk.Transactions))
	}
	for i, hash := range blk.Transactions {
		var r struct {
			Type                  hexutil.Uint64  `json:"type"`
			Status                hexutil.Uint64  `json:"status"`
			CumulativeGasUsed     hexutil.Uint64  `json:"cumulativeGasUsed"`
			LogsBloom             types.Bloom     `json:"logsBloom"`
			Logs                  []*types.Log    `json:"logs"`
			DepositNonce          *hexutil.Uint64 `json:"depositNonce"`
			DepositReceiptVersion *hexutil.Uint64 `json:"depositReceiptVersion"`
		}
		wantResult(t, callRPC(t, url, "eth_getTransactionReceipt", hash), &r)
		if r.Type != chaintypes.DepositTxType {
			var dec types.Receipt
			if err := dec.UnmarshalBinary(raws[i]); err != nil || dec.CumulativeGasUsed != uint64(r.CumulativeGasUsed) {
				t.Fatalf("receipt %d: %v %+v", i, err, dec)
			}
			continue
		}
		status := []byte{}
		if r.Status == 1 {
			status = []byte{1}
		}
		logs := r.Logs
		if logs == nil {
			logs = []*types.Log{}
		}
		body, err := rlp.EncodeToBytes([]any{status, uint64(r.CumulativeGasUsed), r.LogsBloom, logs, uint64(*r.DepositNonce), uint64(*r.DepositReceiptVersion)})
		if err != nil {
			t.Fatal(err)
		}
		want := append([]byte{chaintypes.DepositTxType}, body...)
		if !bytes.Equal(raws[i], want) {
			t.Errorf("receipt %d (deposit nonce %d): raw %x, want %x", i, *r.DepositNonce, []byte(raws[i]), want)
		}
	}

	// eth_feeHistory: blobGasUsedRatio 0 although blobGasUsed > 0.
	var hdr struct {
		BlobGasUsed hexutil.Uint64 `json:"blobGasUsed"`
	}
	wantResult(t, callRPC(t, url, "eth_getBlockByNumber", hexutil.Uint64(head), false), &hdr)
	if hdr.BlobGasUsed == 0 {
		t.Fatal("the block with a user transaction has no DA footprint")
	}
	var fh struct {
		BlobGasUsedRatio []float64 `json:"blobGasUsedRatio"`
		GasUsedRatio     []float64 `json:"gasUsedRatio"`
	}
	wantResult(t, callRPC(t, url, "eth_feeHistory", hexutil.Uint64(head), hexutil.Uint64(head), []float64{}), &fh)
	if len(fh.BlobGasUsedRatio) != int(head) {
		t.Fatalf("blobGasUsedRatio %v", fh.BlobGasUsedRatio)
	}
	for i, r := range fh.BlobGasUsedRatio {
		if r != 0 {
			t.Errorf("blobGasUsedRatio[%d] = %v, op-geth gives 0", i, r)
		}
	}
}
