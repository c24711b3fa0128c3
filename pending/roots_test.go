package pending

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"runtime/metrics"
	"slices"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/trie"

	"github.com/tipnode/tipnode/store/chaintypes"
)

// rootsFixture makes n transactions with their receipts, the mix of the
// side-by-side benchmark's feed: even ones ERC-20 transfers (68 bytes of
// calldata, one Transfer log with three topics), odd ones ether transfers;
// with deposits, every seventh is an OP deposit with a deposit receipt (its
// nonce and version set, nil, or the nonce alone: Regolith before Canyon).
func rootsFixture(tb testing.TB, n int, deposits bool, seed uint64) (chaintypes.Txs, chaintypes.Receipts) {
	tb.Helper()
	key, err := crypto.ToECDSA(crypto.Keccak256([]byte("roots fixture")))
	if err != nil {
		tb.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 7))
	signer := types.LatestSignerForChainID(big.NewInt(901))
	transfer := crypto.Keccak256Hash([]byte("Transfer(address,address,uint256)"))
	txs := make(chaintypes.Txs, n)
	receipts := make(chaintypes.Receipts, n)
	var cum uint64
	for i := 0; i < n; i++ {
		to := common.Address{0xbe, byte(i), byte(r.Uint32())}
		rc := &chaintypes.Receipt{}
		rc.Status = types.ReceiptStatusSuccessful
		if deposits && i%7 == 0 {
			txs[i] = chaintypes.NewDeposit(chaintypes.DepositFields{
				SourceHash: common.Hash{byte(i), byte(seed)}, From: common.Address{0xde, byte(i)}, To: &to,
				Mint: big.NewInt(int64(r.IntN(1000))), Value: big.NewInt(int64(i)), Gas: 100_000, Data: make([]byte, r.IntN(40)),
			})
			rc.Type = chaintypes.DepositTxType
			cum += 50_000
			nonce, version := uint64(i), uint64(1)
			switch r.IntN(3) {
			case 0:
				rc.OP = &chaintypes.OPReceipt{DepositNonce: &nonce, DepositReceiptVersion: &version}
			case 1:
				rc.OP = &chaintypes.OPReceipt{DepositNonce: &nonce}
			default:
				rc.OP = &chaintypes.OPReceipt{}
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

// BenchmarkSnapshotRoots/swaps builds one block in 10 snapshots of 20
// transactions each (rootsFixture's mix) the way Builder.cut does, and
// asks both roots of every snapshot, as the stream encoder (receipts root)
// and a pending-block read (both) do. seal/derive is what sealing that
// block cost before the roots were incremental (DeriveSha over both lists
// of 200); seal/incremental what Builder.Seal costs now once the last
// snapshot's roots were asked (the stream encoder asks every one).
func BenchmarkSnapshotRoots(b *testing.B) {
	const per, snaps = 20, 10
	txs, receipts := rootsFixture(b, per*snaps, false, 1)
	b.Run("swaps", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			var prev *Snapshot
			for k := 1; k <= snaps; k++ {
				s := nextTestSnapshot(prev, txs, receipts, k*per)
				_, _ = s.TxRoot(), s.ReceiptsRoot()
				prev = s
			}
		}
	})
	b.Run("seal/derive", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_ = types.DeriveSha(txs, trie.NewStackTrie(nil))
			_ = types.DeriveSha(receipts, trie.NewStackTrie(nil))
		}
	})
	// seal/first: Builder.Seal when no snapshot's roots were asked (no
	// stream encoder): both lists of 200 added to empty tries at once.
	b.Run("seal/first", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			last := nextTestSnapshot(nil, txs, receipts, len(txs))
			_, _ = last.TxRoot(), last.ReceiptsRoot()
		}
	})
	b.Run("seal/incremental", func(b *testing.B) {
		last := nextTestSnapshot(nil, txs, receipts, len(txs))
		_, _ = last.TxRoot(), last.ReceiptsRoot()
		bd := &Builder{txs: txs, snap: last}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			_ = bd.roots(receipts)
		}
	})
}

// nextTestSnapshot is what Builder.cut makes of the first n items of a
// block's lists after prev (nil: what Builder.open makes).
func nextTestSnapshot(prev *Snapshot, txs chaintypes.Txs, receipts chaintypes.Receipts, n int) *Snapshot {
	block := new(blockRoots)
	if prev != nil {
		block = prev.block
	}
	return &Snapshot{roots: new(roots), block: block, txs: txs[:n:n], receipts: receipts[:n:n]}
}

// checkRoots compares s's roots with go-ethereum's DeriveSha over its
// lists.
func checkRoots(t *testing.T, s *Snapshot, what string) {
	t.Helper()
	if got, want := s.TxRoot(), types.DeriveSha(s.txs, trie.NewStackTrie(nil)); got != want {
		t.Fatalf("%s: %d transactions: root %s, DeriveSha %s", what, len(s.txs), got.Hex(), want.Hex())
	}
	if got, want := s.ReceiptsRoot(), types.DeriveSha(s.receipts, trie.NewStackTrie(nil)); got != want {
		t.Fatalf("%s: %d receipts: root %s, DeriveSha %s", what, len(s.receipts), got.Hex(), want.Hex())
	}
}

// The incremental roots of successive snapshots of one block equal
// DeriveSha's at every step: appends of 0..300 items, lengths landing on
// and crossing 0, 127/128 (the key's RLP grows from one byte to two) and
// 255/256 (two to three), with OP deposits and deposit receipts of every
// encoding. Each snapshot is asked once its successor exists too (an
// older snapshot asked late is derived afresh).
func TestSnapshotRootsIncremental(t *testing.T) {
	const max = 800
	for _, deposits := range []bool{false, true} {
		txs, receipts := rootsFixture(t, max, deposits, 3)
		cases := []struct {
			name    string
			lengths []int
		}{
			{"one by one", append(seq(0, 135), seq(250, 262)...)},
			{"boundaries", []int{0, 0, 1, 2, 126, 127, 128, 129, 254, 255, 256, 257, 300}},
			{"jumps over the boundaries", []int{0, 127, 255, 256, 556, 557}},
			{"from inside", []int{1, 128, 256, 512}},
			{"first holds 0 and 1", []int{2, 128, 129, 256, 258}},
			{"over 127 at once", []int{100, 200, 300}},
			{"all at once", []int{max}},
		}
		for seed := uint64(0); seed < 4; seed++ {
			r := rand.New(rand.NewPCG(seed, 11))
			lengths, limit := []int{r.IntN(3)}, max
			for {
				next := lengths[len(lengths)-1] + r.IntN(301)
				if seed%2 == 1 {
					next, limit = lengths[len(lengths)-1]+r.IntN(40), 300 // small steps: more of them
				}
				if next > limit {
					break
				}
				lengths = append(lengths, next)
			}
			cases = append(cases, struct {
				name    string
				lengths []int
			}{fmt.Sprintf("random %d", seed), lengths})
		}
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/deposits=%v", c.name, deposits), func(t *testing.T) {
				var prev *Snapshot
				for step, n := range c.lengths {
					s := nextTestSnapshot(prev, txs, receipts, n)
					checkRoots(t, s, fmt.Sprintf("step %d", step))
					if prev != nil {
						late := *prev
						late.roots = new(roots)
						checkRoots(t, &late, fmt.Sprintf("step %d, the previous snapshot asked late", step))
					}
					prev = s
				}
			})
		}
	}
}

func seq(from, to int) []int {
	out := make([]int, 0, to-from+1)
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// A snapshot whose lists do not extend what the block's trie holds (other
// items at an index, a shorter list) is derived afresh, and the trie stays
// right for the snapshots that do extend it.
func TestSnapshotRootsForeignPrefix(t *testing.T) {
	txs, receipts := rootsFixture(t, 300, true, 5)
	otherTxs, otherReceipts := rootsFixture(t, 300, true, 6)
	s := nextTestSnapshot(nil, txs, receipts, 140)
	checkRoots(t, s, "first")
	for _, c := range []struct {
		name     string
		txs      chaintypes.Txs
		receipts chaintypes.Receipts
	}{
		{"one item replaced", spliced(txs, otherTxs, 200, 3), spliced(receipts, otherReceipts, 200, 3)},
		{"last held item replaced", spliced(txs, otherTxs, 200, 139), spliced(receipts, otherReceipts, 200, 139)},
		{"other block", otherTxs[:200], otherReceipts[:200]},
		{"shorter", txs[:139], receipts[:139]},
		{"empty", nil, nil},
	} {
		f := &Snapshot{roots: new(roots), block: s.block, txs: c.txs, receipts: c.receipts}
		checkRoots(t, f, c.name)
	}
	for _, n := range []int{140, 141, 256, 300} {
		checkRoots(t, nextTestSnapshot(s, txs, receipts, n), fmt.Sprintf("own list of %d after the foreign ones", n))
	}
}

// spliced is a copy of the first n items of a with b's item at i.
func spliced[E any](a, b []E, n, i int) []E {
	out := slices.Clone(a[:n])
	out[i] = b[i]
	return out
}

// Readers ask the roots of a block's snapshots concurrently, in any order,
// while later snapshots are cut (run with -race): every answer is
// DeriveSha's.
func TestSnapshotRootsConcurrent(t *testing.T) {
	txs, receipts := rootsFixture(t, 400, true, 9)
	var (
		snaps []*Snapshot
		prev  *Snapshot
	)
	for n := 0; n <= 400; n += 25 {
		prev = nextTestSnapshot(prev, txs, receipts, n)
		snaps = append(snaps, prev)
	}
	want := make([][2]common.Hash, len(snaps))
	for i, s := range snaps {
		want[i] = [2]common.Hash{types.DeriveSha(s.txs, trie.NewStackTrie(nil)), types.DeriveSha(s.receipts, trie.NewStackTrie(nil))}
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4*len(snaps))
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range snaps {
				i := k
				if g%2 == 1 {
					i = len(snaps) - 1 - k // backwards: late askers
				}
				s := snaps[i]
				if got := [2]common.Hash{s.TxRoot(), s.ReceiptsRoot()}; got != want[i] {
					errs <- fmt.Sprintf("snapshot %d: roots %x, DeriveSha %x", i, got, want[i])
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestSnapshotRootsOnCallersGoroutine: deriving the roots of 300 items at
// once (a seal whose snapshots' roots nobody asked) hashes on the caller's
// goroutine, so a seal's section keeps its low priority; go-ethereum's trie
// hashes 100 or more pending changes in 16 goroutines of its own, per trie
// (hashBatch).
func TestSnapshotRootsOnCallersGoroutine(t *testing.T) {
	txs, receipts := rootsFixture(t, 300, false, 1)
	created := func() uint64 {
		s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	s := nextTestSnapshot(nil, txs, receipts, len(txs))
	before := created()
	checkRoots(t, s, "300 at once")
	if n := created() - before; n >= 16 {
		t.Fatalf("deriving both roots of 300 items started %d goroutines, want none (the trie hashed in parallel)", n)
	}
}
