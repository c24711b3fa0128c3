package pending

import (
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/store/xtypes"
)

// rootsFixture makes n transactions with their receipts, the mix of the
// side-by-side benchmark's feed: even ones ERC-20 transfers (68 bytes of
// calldata, one Transfer log with three topics), odd ones ether transfers;
// with deposits, every seventh is an OP deposit with a deposit receipt (its
// nonce and version set, nil, or the nonce alone: Regolith before Canyon).
func rootsFixture(tb testing.TB, n int, deposits bool, seed uint64) (xtypes.Txs, xtypes.Receipts) {
	tb.Helper()
	key, err := crypto.ToECDSA(crypto.Keccak256([]byte("roots fixture")))
	if err != nil {
		tb.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 7))
	signer := types.LatestSignerForChainID(big.NewInt(901))
	transfer := crypto.Keccak256Hash([]byte("Transfer(address,address,uint256)"))
	txs := make(xtypes.Txs, n)
	receipts := make(xtypes.Receipts, n)
	var cum uint64
	for i := 0; i < n; i++ {
		to := common.Address{0xbe, byte(i), byte(r.Uint32())}
		rc := &xtypes.Receipt{}
		rc.Status = types.ReceiptStatusSuccessful
		if deposits && i%7 == 0 {
			txs[i] = xtypes.NewDeposit(xtypes.DepositFields{
				SourceHash: common.Hash{byte(i), byte(seed)}, From: common.Address{0xde, byte(i)}, To: &to,
				Mint: big.NewInt(int64(r.IntN(1000))), Value: big.NewInt(int64(i)), Gas: 100_000, Data: make([]byte, r.IntN(40)),
			})
			rc.Type = xtypes.DepositTxType
			cum += 50_000
			nonce, version := uint64(i), uint64(1)
			switch r.IntN(3) {
			case 0:
				rc.OP = &xtypes.OPReceipt{DepositNonce: &nonce, DepositReceiptVersion: &version}
			case 1:
				rc.OP = &xtypes.OPReceipt{DepositNonce: &nonce}
			default:
				rc.OP = &xtypes.OPReceipt{}
			}
		} else {
			var data []byte
			gas := uint64(21_000)
			if i%2 == 0 {
				data = make([]byte, 68)
				copy(data[16:36], to[:])
				data[67] = byte(i)
				gas = 52_000
			}
			tx, err := types.SignNewTx(key, signer, &types.DynamicFeeTx{
				ChainID: big.NewInt(901), Nonce: uint64(i), GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(params.GWei),
				Gas: gas + 10_000, To: &to, Value: big.NewInt(int64(r.IntN(1 << 20))), Data: data,
			})
			if err != nil {
				tb.Fatal(err)
			}
			txs[i] = tx
			rc.Type = types.DynamicFeeTxType
			cum += gas
			if i%2 == 0 {
				rc.Logs = []*types.Log{{
					Address: common.Address{0x70},
					Topics:  []common.Hash{transfer, common.BytesToHash(to[:]), {byte(i)}},
					Data:    common.LeftPadBytes([]byte{byte(i)}, 32),
				}}
			}
		}
		rc.CumulativeGasUsed = cum
		rc.Bloom = types.CreateBloom(&rc.Receipt)
		receipts[i] = rc
	}
	return txs, receipts
}

// BenchmarkSnapshotRoots builds one block in 10 snapshots of 20
// transactions each (rootsFixture's mix) the way Builder.cut does, and
// asks both roots of every snapshot, as the stream encoder (receipts root)
// and a pending-block read (both) do.
func BenchmarkSnapshotRoots(b *testing.B) {
	const per, snaps = 20, 10
	txs, receipts := rootsFixture(b, per*snaps, false, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var prev *Snapshot
		for k := 1; k <= snaps; k++ {
			s := nextTestSnapshot(prev, txs, receipts, k*per)
			_, _ = s.TxRoot(), s.ReceiptsRoot()
			prev = s
		}
	}
}

// nextTestSnapshot is what Builder.cut makes of the next n items of a
// block's lists (prev nil: the block's first snapshot).
func nextTestSnapshot(prev *Snapshot, txs xtypes.Txs, receipts xtypes.Receipts, n int) *Snapshot {
	return &Snapshot{roots: new(roots), txs: txs[:n:n], receipts: receipts[:n:n]}
}
