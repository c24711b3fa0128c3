package replica

import (
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	dto "github.com/prometheus/client_model/go"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/chain/op"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/pendingtest"
	"github.com/tipnode/tipnode/pending/stream"
	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// opChainID is the test OP chain's id.
const opChainID = 901

// opSpec is an OP genesis (op-geth's format, every fork through Karst at
// genesis, Jovian extraData) funding accs. The L1Block predeploy holds fee
// parameters in its storage (L1 base fee 20 gwei, blob base fee 3 wei,
// Ecotone scalars 1368 / 810949, operator fee scalar 1 and constant 1000,
// DA footprint scalar 400) and its code is STOP: the L1-info deposit runs
// and leaves them, so every user transaction pays an L1 data fee and an
// operator fee and the block has a DA footprint. The message passer has a
// storage slot (an Isthmus withdrawals root other than the empty one).
func opSpec(accs []common.Address) []byte {
	var alloc strings.Builder
	for _, a := range accs {
		fmt.Fprintf(&alloc, `"%s":{"balance":"0x56bc75e2d63100000"},`, a.Hex()[2:])
	}
	return []byte(fmt.Sprintf(`{"config":{"chainId":%d,"homesteadBlock":0,"eip150Block":0,"eip155Block":0,"eip158Block":0,
"byzantiumBlock":0,"constantinopleBlock":0,"petersburgBlock":0,"istanbulBlock":0,"muirGlacierBlock":0,"berlinBlock":0,
"londonBlock":0,"arrowGlacierBlock":0,"grayGlacierBlock":0,"mergeNetsplitBlock":0,"terminalTotalDifficulty":0,
"shanghaiTime":0,"cancunTime":0,"pragueTime":0,"bedrockBlock":0,"regolithTime":0,"canyonTime":0,"deltaTime":0,
"ecotoneTime":0,"fjordTime":0,"graniteTime":0,"holoceneTime":0,"isthmusTime":0,"jovianTime":0,"karstTime":0,
"optimism":{"eip1559Elasticity":6,"eip1559Denominator":50,"eip1559DenominatorCanyon":250}},
"gasLimit":"0x3938700","difficulty":"0x0","baseFeePerGas":"0x3b9aca00","timestamp":"%#x","extraData":"0x01000000fa000000060000000000000000",
"alloc":{%s
"4200000000000000000000000000000000000016":{"balance":"0x0","code":"0x00","storage":{"0x01":"0x0000000000000000000000000000000000000000000000000000000000000005"}},
"4200000000000000000000000000000000000015":{"balance":"0x0","code":"0x00","storage":{
"0x01":"0x00000000000000000000000000000000000000000000000000000004a817c800",
"0x03":"0x0000000000000000000000000000000000000558000c5fc50000000000000000",
"0x07":"0x0000000000000000000000000000000000000000000000000000000000000003",
"0x08":"0x00000000000000000000000000000000000001900000000100000000000003e8"}}}}`,
		opChainID, pendingtest.GenesisTime, alloc.String()))
}

// opSeq is an OP sequencer built directly on a pending.Builder (the way
// chain/kona_test.go builds OP blocks): each block opens with the L1-info
// deposit (Jovian encoding) and the given user deposits in its index 0,
// then the sequenced transactions, one message per add; messages are the
// publisher's encoding (stream.Encode) of each snapshot.
type opSeq struct {
	t      testing.TB
	db     *store.DB
	g      *chain.Genesis
	w      *chain.Writer
	b      *pending.Builder
	keys   []*ecdsa.PrivateKey
	addrs  []common.Address
	nonces []uint64
	signer types.Signer
	l1     uint64
}

func newOPSeq(t testing.TB, keys int) *opSeq {
	t.Helper()
	s := &opSeq{t: t, signer: types.LatestSignerForChainID(big.NewInt(opChainID)), l1: 100}
	for _, a := range pendingtest.Accounts(t, keys) {
		s.keys = append(s.keys, a.Key)
		s.addrs = append(s.addrs, a.Address)
	}
	s.nonces = make([]uint64, keys)
	s.db, s.g, s.w = chaintest.InitStore(t, opSpec(s.addrs))
	if s.g.OP == nil {
		t.Fatal("the test genesis is not an OP chain")
	}
	s.b = pending.NewBuilder(s.g.Executor())
	t.Cleanup(s.b.Close)
	return s
}

func (s *opSeq) spec() []byte { return opSpec(s.addrs) }

func (s *opSeq) msg(snap *pending.Snapshot) sent {
	s.t.Helper()
	if snap == nil {
		s.t.Fatal("no snapshot")
	}
	p, err := stream.Encode(snap)
	if err != nil {
		s.t.Fatal(err)
	}
	// As OP subblocks send it: the withdrawals root zero (the replica's
	// pending header carries its own, checked against the sequencer's).
	p.Diff.WithdrawalsRoot = common.Hash{}
	return sent{p: p, snap: snap}
}

// l1Info is the L1-info deposit of the block at number n.
func (s *opSeq) l1Info(n uint64) *chaintypes.Deposit {
	s.t.Helper()
	l1hash := crypto.Keccak256Hash([]byte("l1"), new(big.Int).SetUint64(s.l1).Bytes())
	info := &op.L1Info{
		Version: op.L1InfoJovian, Number: s.l1, Time: pendingtest.GenesisTime + n*2, BaseFee: big.NewInt(20e9), BlockHash: l1hash,
		SequenceNumber: n, BaseFeeScalar: 1368, BlobBaseFeeScalar: 810949, BlobBaseFee: big.NewInt(3),
		OperatorFeeScalar: 1, OperatorFeeConstant: 1000, DAFootprintGasScalar: 400,
	}
	data, err := info.Marshal()
	if err != nil {
		s.t.Fatal(err)
	}
	to := op.L1BlockAddr
	return chaintypes.NewDeposit(chaintypes.DepositFields{
		SourceHash: op.L1InfoDepositSourceHash(l1hash, n), From: op.L1InfoDepositor, To: &to, Gas: 1_000_000, Data: data,
	})
}

// userDeposit mints to and sends value to `to` (an L1→L2 deposit).
func (s *opSeq) userDeposit(logIndex uint64, from, to common.Address, mint, value int64) *chaintypes.Deposit {
	return chaintypes.NewDeposit(chaintypes.DepositFields{
		SourceHash: op.UserDepositSourceHash(common.Hash{0x11}, logIndex), From: from, To: &to,
		Mint: big.NewInt(mint), Value: big.NewInt(value), Gas: 100_000,
	})
}

// tx is a signed dynamic-fee transaction of account i.
func (s *opSeq) tx(i int, to *common.Address, value int64, gas uint64, data []byte) *types.Transaction {
	tx := types.MustSignNewTx(s.keys[i], s.signer, &types.DynamicFeeTx{
		ChainID: big.NewInt(opChainID), Nonce: s.nonces[i], GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(100 * params.GWei),
		Gas: gas, To: to, Value: big.NewInt(value), Data: data,
	})
	s.nonces[i]++
	return tx
}

// open starts the block after the head (or after the open block, sealed
// first when seal is set) and returns its index 0: the L1-info deposit
// and deposits.
func (s *opSeq) open(deposits ...*chaintypes.Deposit) sent {
	s.t.Helper()
	head, view, err := s.w.OpenHead()
	if err != nil {
		s.t.Fatal(err)
	}
	parent := head.Header()
	cfg := s.g.OP
	ts := parent.Time + 2
	baseFee, err := op.CalcBaseFee(cfg, parent, ts)
	if err != nil {
		s.t.Fatal(err)
	}
	extra, err := op.ExtraDataFromAttributes(cfg, ts, []byte{0, 0, 0, 250, 0, 0, 0, 6}, new(uint64))
	if err != nil {
		s.t.Fatal(err)
	}
	n := parent.Number.Uint64() + 1
	tmpl := pending.BuildHeader(s.g.Config, parent, pending.BlockContext{
		ParentHash: head.Hash(), Number: new(big.Int).SetUint64(n), Time: ts, Coinbase: op.SequencerFeeVault,
		GasLimit: parent.GasLimit, Extra: extra, PrevRandao: common.Hash{byte(n)}, BaseFee: baseFee, BeaconRoot: common.Hash{0xbe, byte(n)},
	})
	tmpl.BlobGasUsed, tmpl.ExcessBlobGas = op.BlobGasFields(cfg, ts, 0)
	tmpl.WithdrawalsHash = parent.WithdrawalsHash // no withdrawal: the message passer's root stays
	if _, err := s.b.Open(head, view, tmpl, time.Unix(int64(ts), 0)); err != nil {
		view.Close()
		s.t.Fatal(err)
	}
	for _, d := range append([]*chaintypes.Deposit{s.l1Info(n)}, deposits...) {
		if _, err := s.b.Add(d); err != nil {
			s.t.Fatal(err)
		}
	}
	return s.msg(s.b.CutOpen(time.Unix(int64(ts), 0)))
}

// add executes txs as the next message.
func (s *opSeq) add(txs ...chaintypes.Tx) sent {
	s.t.Helper()
	for _, tx := range txs {
		if _, err := s.b.Add(tx); err != nil {
			s.t.Fatal(err)
		}
	}
	return s.msg(s.b.Cut(time.Now()))
}

// seal writes the open block to the sequencer's store.
func (s *opSeq) seal() *chaintypes.Block {
	s.t.Helper()
	sealed, err := s.b.Seal()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := s.w.Seal(sealed.Write, nil, nil); err != nil {
		s.t.Fatal(err)
	}
	return sealed.Block
}

// opReplica is a replica of s's chain that records what it publishes.
func opReplica(t testing.TB, s *opSeq) (*repSide, *[]*pending.Snapshot) {
	r := newRepSide(t, s.spec(), DefaultConfig())
	var pub []*pending.Snapshot
	unsub := r.mgr.SubscribePreconfirmations(func(snap *pending.Snapshot) { pub = append(pub, snap) })
	t.Cleanup(unsub)
	return r, &pub
}

// checkOP compares the replica's pending with the sequencer's snapshot of
// want: the OP header fields, every receipt (with the L1 fee fields and
// deposit fields) and the balances of the accounts and fee vaults.
func checkOP(t *testing.T, s *opSeq, r *repSide, want sent, extra ...common.Address) {
	t.Helper()
	rd, err := r.mgr.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	got := rd.Snapshot
	if got == nil {
		t.Fatalf("block %d index %d: the replica serves no pending block", want.snap.Number(), want.snap.Index())
	}
	wh, gh := want.snap.Header(), got.Header()
	if gh.Number.Cmp(wh.Number) != 0 || gh.BaseFee.Cmp(wh.BaseFee) != 0 || string(gh.Extra) != string(wh.Extra) || gh.GasUsed != wh.GasUsed ||
		*gh.BlobGasUsed != *wh.BlobGasUsed || *gh.ExcessBlobGas != 0 || *gh.WithdrawalsHash != *wh.WithdrawalsHash || got.Index() != want.snap.Index() {
		t.Fatalf("pending header: replica %d base %v extra %x gas %d blob %d/%d wr %s index %d; sequencer %d base %v extra %x gas %d blob %d wr %s index %d",
			gh.Number, gh.BaseFee, gh.Extra, gh.GasUsed, *gh.BlobGasUsed, *gh.ExcessBlobGas, gh.WithdrawalsHash.Hex(), got.Index(),
			wh.Number, wh.BaseFee, wh.Extra, wh.GasUsed, *wh.BlobGasUsed, wh.WithdrawalsHash.Hex(), want.snap.Index())
	}
	wr, gr := want.snap.Receipts(), got.Receipts()
	if len(wr) != len(gr) {
		t.Fatalf("%d receipts, sequencer %d", len(gr), len(wr))
	}
	for i := range wr {
		a, b := mustJSON(t, wr[i]), mustJSON(t, gr[i])
		if a != b {
			t.Fatalf("receipt %d:\n replica   %s\n sequencer %s", i, b, a)
		}
	}
	st, err := rd.PendingState()
	if err != nil {
		t.Fatal(err)
	}
	ws, release := snapshotState(t, s.w, want.snap)
	defer release()
	for _, a := range append(append([]common.Address{op.SequencerFeeVault, op.BaseFeeVault, op.L1FeeVault, op.OperatorFeeVault}, s.addrs...), extra...) {
		wb, wn := balanceOf(t, ws, a)
		gb, gn := balanceOf(t, st, a)
		if wb.Cmp(gb) != 0 || wn != gn {
			t.Fatalf("account %s: replica %v/%d, sequencer %v/%d", a.Hex(), gb, gn, wb, wn)
		}
	}
}

func mustJSON(t *testing.T, r *chaintypes.Receipt) string {
	t.Helper()
	b, err := json.Marshal(struct {
		R  *types.Receipt
		OP *chaintypes.OPReceipt
	}{&r.Receipt, r.OP})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestOPReplica: a replica of an OP chain executes index 0's deposits (the
// L1-info deposit and a user deposit minting ETH) and each later message's
// transactions under OP rules, and serves what the sequencer's snapshots
// hold: OP header fields (base fee, Jovian extraData, DA footprint as
// blobGasUsed, Isthmus withdrawals root), receipts with the L1 fee fields
// and deposit nonces, fee vault balances. Index 0 stays index 0 (a relay
// re-publishes the sequencer's very bytes); the next block's index 0 seals
// the pending block to the sequencer's hash; the canonical block imports
// with full OP verification and the window rebases onto it.
func TestOPReplica(t *testing.T) {
	s := newOPSeq(t, 3)
	r, pub := opReplica(t, s)
	recv := common.Address{0xd0}
	contract := crypto.CreateAddress(s.addrs[1], 0)

	var msgs []sent
	msgs = append(msgs, s.open(s.userDeposit(0, common.Address{0xaa}, recv, 2e18, 1e18)))
	msgs = append(msgs, s.add(s.tx(0, &recv, 1000, 21000, nil), s.tx(1, nil, 0, 300_000, pendingtest.InitCode(contextCode))))
	msgs = append(msgs, s.add(s.tx(2, &contract, 0, 200_000, nil)))
	for i, m := range msgs {
		r.feed(m)
		checkOP(t, s, r, m, recv, contract, common.Address{0xaa})
		if i == 0 && (len(m.p.Diff.Transactions) != 2 || m.p.Diff.Transactions[0][0] != chaintypes.DepositTxType) {
			t.Fatalf("index 0 carries %d transactions", len(m.p.Diff.Transactions))
		}
	}
	last := msgs[len(msgs)-1].snap
	for _, rc := range last.Receipts()[2:] {
		if rc.OP == nil || rc.OP.L1Fee == nil || rc.OP.L1Fee.Sign() <= 0 || rc.BlobGasUsed == 0 {
			t.Fatalf("receipt %s: no L1 fee / DA footprint: %+v", rc.TxHash.Hex(), rc.OP)
		}
	}
	if dep := last.Receipts()[1]; dep.OP == nil || dep.OP.DepositNonce == nil {
		t.Fatalf("deposit receipt without its nonce: %+v", dep.OP)
	}
	if *last.Header().BlobGasUsed == 0 {
		t.Fatal("no DA footprint in blobGasUsed")
	}
	// A relay re-publishes the sequencer's bytes, index 0 included (with
	// its own withdrawals root where the sequencer's subblocks had zero:
	// the sequencer's snapshot encoded as tipnode publishes it).
	if len(*pub) != len(msgs) {
		t.Fatalf("the replica published %d snapshots for %d messages", len(*pub), len(msgs))
	}
	for i, snap := range *pub {
		p, err := stream.Encode(snap)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(p)
		want, err := stream.Encode(msgs[i].snap)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(want)
		if string(a) != string(b) {
			t.Fatalf("message %d re-published differently:\n%s\n%s", i, a, b)
		}
	}

	// Block 2 opens on pending block 1: its announced parent hash is the
	// sequencer's sealed hash, which the replica's own seal must equal.
	b1 := s.seal()
	m2 := s.open()
	r.feed(m2)
	checkOP(t, s, r, m2)
	if n := counter(t, r.metrics.mismatches, "parent_hash"); n != 0 {
		t.Fatalf("%v parent hash mismatches", n)
	}
	if gauge(t, r.metrics.depth) != 2 {
		t.Fatalf("window depth %v", gauge(t, r.metrics.depth))
	}
	m3 := s.add(s.tx(0, &recv, 5, 21000, nil))
	r.feed(m3)
	checkOP(t, s, r, m3)
	// Block 1 becomes canonical on the replica with full OP verification;
	// block 2 rebases onto it.
	if err := r.w.ImportBlock(b1); err != nil {
		t.Fatal(err)
	}
	r.d.Sync()
	checkOP(t, s, r, m3)
	if counter(t, r.metrics.rebases, "rebased") != 1 {
		t.Fatalf("rebased %v", counter(t, r.metrics.rebases, "rebased"))
	}
}

// TestOPReplicaRefusesBadHeader: an index 0 whose base fee breaks the OP
// rule (op.CalcBaseFee of the parent), or whose extraData is not the Jovian
// form, opens no pending block: counted as a mismatch by field, nothing
// served.
func TestOPReplicaRefusesBadHeader(t *testing.T) {
	for _, tc := range []struct {
		field string
		edit  func(b *stream.Base)
	}{
		{"base_fee", func(b *stream.Base) {
			b.BaseFeePerGas = (*hexutil.Big)(new(big.Int).Add(b.BaseFeePerGas.ToInt(), common.Big1))
		}},
		{"extra_data", func(b *stream.Base) { b.ExtraData = []byte{0, 0, 0, 0, 250, 0, 0, 0, 6} }},
	} {
		t.Run(tc.field, func(t *testing.T) {
			s := newOPSeq(t, 1)
			r, _ := opReplica(t, s)
			m := s.open()
			bad := *m.p
			base := *bad.Base
			tc.edit(&base)
			bad.Base = &base
			r.feed(sent{p: &bad})
			if v := pendingOf(t, r.mgr); v.served {
				v.close()
				t.Fatal("a block with a bad header is served")
			} else {
				v.close()
			}
			if counter(t, r.metrics.mismatches, tc.field) != 1 || counter(t, r.metrics.resets, "mismatch") != 1 {
				t.Fatalf("mismatches %v, resets %v", counter(t, r.metrics.mismatches, tc.field), counter(t, r.metrics.resets, "mismatch"))
			}
			// The true index 0 opens it.
			r.feed(m)
			checkOP(t, s, r, m)
		})
	}
}

// TestOPReplicaCrossCheck: metadata receipts and balances (the
// rollup-boost / op-rbuilder kind) that agree with the replica's execution
// count nothing; wrong ones are counted by field and never served: pending
// shows the replica's own execution.
func TestOPReplicaCrossCheck(t *testing.T) {
	s := newOPSeq(t, 2)
	r, _ := opReplica(t, s)
	recv := common.Address{0xd0}
	m0 := s.open(s.userDeposit(0, common.Address{0xaa}, recv, 2e18, 1e18))
	m1 := s.add(s.tx(0, &recv, 1000, 21000, nil))
	meta := func(snap *pending.Snapshot, cumDelta uint64, balDelta int64) stream.Metadata {
		receipts := map[common.Hash]any{}
		for _, rc := range snap.NewReceipts() {
			v := map[string]any{"status": hexutil.Uint64(rc.Status), "cumulativeGasUsed": hexutil.Uint64(rc.CumulativeGasUsed + cumDelta), "logs": []any{}}
			if rc.OP != nil && rc.OP.DepositNonce != nil {
				v["depositNonce"] = hexutil.Uint64(*rc.OP.DepositNonce)
			}
			tag := map[uint8]string{0x7e: "Deposit", 2: "Eip1559"}[rc.Type]
			receipts[rc.TxHash] = map[string]any{tag: v}
		}
		st, release := snapshotState(t, s.w, snap)
		defer release()
		bal, _ := balanceOf(t, st, recv)
		b := new(big.Int).Add(bal.ToBig(), big.NewInt(balDelta))
		out := stream.Metadata{BlockNumber: snap.Number()}
		out.Receipts, _ = json.Marshal(receipts)
		out.NewAccountBalances, _ = json.Marshal(map[common.Address]*hexutil.Big{recv: (*hexutil.Big)(b)})
		return out
	}
	good := *m0.p
	good.Metadata = meta(m0.snap, 0, 0)
	r.feed(sent{p: &good, snap: m0.snap})
	checkOP(t, s, r, m0, recv)
	if c := counter(t, r.metrics.metaDiffs, "cumulative_gas_used") + counter(t, r.metrics.metaDiffs, "balance"); c != 0 {
		t.Fatalf("%v mismatches on agreeing metadata", c)
	}
	bad := *m1.p
	bad.Metadata = meta(m1.snap, 7, 1)
	r.feed(sent{p: &bad, snap: m1.snap})
	checkOP(t, s, r, m1, recv) // served: the replica's execution
	if counter(t, r.metrics.metaDiffs, "cumulative_gas_used") != 1 || counter(t, r.metrics.metaDiffs, "balance") != 1 {
		t.Fatalf("mismatches: gas %v balance %v", counter(t, r.metrics.metaDiffs, "cumulative_gas_used"), counter(t, r.metrics.metaDiffs, "balance"))
	}
	var c dto.Metric
	if err := r.metrics.metaChecks.Write(&c); err != nil || c.GetCounter().GetValue() != 2 {
		t.Fatalf("%v metadata checks (%v)", c.GetCounter().GetValue(), err)
	}
}
