package chaintypes_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/ethereum/go-ethereum/trie"

	"github.com/tipnode/tipnode/store/chaintypes"
)

// A published L1-info deposit (Base Sepolia, in base/node-reth's
// flashblocks tests) and the hash its authors give for it.
const (
	realDeposit     = "0x7ef8f8a042a8ae5ec231af3d0f90f68543ec8bca1da4f7edd712d5b51b490688355a6db794deaddeaddeaddeaddeaddeaddeaddeaddead00019442000000000000000000000000000000000000158080830f424080b8a4440a5e200000044d000a118b00000000000000040000000067cb7cb0000000000077dbd4000000000000000000000000000000000000000000000000000000000000000a00000000000000000000000000000000000000000000000000000000000000014edd27304108914dd6503b19b9eeb9956982ef197febbeeed8a9eac3dbaaabdf000000000000000000000000fc56e7272eebbba5bc6c544e159483c4a38f8ba3"
	realDepositHash = "0x2be2e6f8b01b03b87ae9f0ebca8bbd420f174bef0fbcc18c7802c5378b78f548"
)

func TestRealDeposit(t *testing.T) {
	enc := hexutil.MustDecode(realDeposit)
	tx, err := chaintypes.DecodeTx(enc)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := tx.(*chaintypes.Deposit)
	if !ok {
		t.Fatalf("decoded %T, want a deposit", tx)
	}
	if d.Hash() != common.HexToHash(realDepositHash) {
		t.Fatalf("hash %s, want %s", d.Hash().Hex(), realDepositHash)
	}
	if d.From() != common.HexToAddress("0xdeaddeaddeaddeaddeaddeaddeaddeaddead0001") ||
		*d.To() != common.HexToAddress("0x4200000000000000000000000000000000000015") ||
		d.Gas() != 1_000_000 || d.IsSystemTx() || d.MintValue().Sign() != 0 || d.Value().Sign() != 0 ||
		!bytes.Equal(d.Data()[:4], []byte{0x44, 0x0a, 0x5e, 0x20}) || d.Size() != uint64(len(enc)) {
		t.Fatalf("fields %+v", d.Fields())
	}
	again, err := d.MarshalBinary()
	if err != nil || !bytes.Equal(again, enc) {
		t.Fatalf("re-encoding differs: %x, %v", again, err)
	}
	// Rebuilt from its fields, the deposit is the same.
	if re := chaintypes.NewDeposit(d.Fields()); re.Hash() != d.Hash() {
		t.Fatalf("NewDeposit(Fields()) hash %s", re.Hash().Hex())
	}
}

func TestDepositFields(t *testing.T) {
	to := common.Address{0x42}
	cases := []chaintypes.DepositFields{
		{SourceHash: common.Hash{1}, From: common.Address{2}, To: &to, Mint: big.NewInt(1e18), Value: big.NewInt(5), Gas: 100_000, Data: []byte{1, 2, 3}},
		{SourceHash: common.Hash{3}, From: common.Address{4}, Gas: 21_000, IsSystemTx: true},                    // create, no mint, nil value
		{SourceHash: common.Hash{5}, From: common.Address{6}, To: &to, Mint: new(big.Int), Value: new(big.Int)}, // zero mint = none
	}
	for i, f := range cases {
		d := chaintypes.NewDeposit(f)
		enc, err := d.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if enc[0] != chaintypes.DepositTxType || d.Hash() != crypto.Keccak256Hash(enc) || d.Size() != uint64(len(enc)) {
			t.Fatalf("case %d: encoding %x, hash %s", i, enc, d.Hash())
		}
		back, err := chaintypes.DecodeTx(enc)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		g := back.(*chaintypes.Deposit).Fields()
		if g.SourceHash != f.SourceHash || g.From != f.From || (g.To == nil) != (f.To == nil) || g.Gas != f.Gas || g.IsSystemTx != f.IsSystemTx || !bytes.Equal(g.Data, f.Data) {
			t.Fatalf("case %d: round trip %+v, want %+v", i, g, f)
		}
		if want := f.Mint; (want == nil || want.Sign() == 0) != (g.Mint.Sign() == 0) || (want != nil && want.Cmp(g.Mint) != 0) {
			t.Fatalf("case %d: mint %v, want %v", i, g.Mint, want)
		}
		if back.Hash() != d.Hash() {
			t.Fatalf("case %d: decoded hash differs", i)
		}
		// In a body (a string element of the list) and back.
		body := &chaintypes.Body{Transactions: chaintypes.Txs{d}}
		benc, err := rlp.EncodeToBytes(body)
		if err != nil {
			t.Fatal(err)
		}
		var b2 chaintypes.Body
		if err := rlp.DecodeBytes(benc, &b2); err != nil || len(b2.Transactions) != 1 || b2.Transactions[0].Hash() != d.Hash() {
			t.Fatalf("case %d: body round trip: %v", i, err)
		}
	}
}

func TestDecodeTxRefusesGarbage(t *testing.T) {
	for name, b := range map[string][]byte{
		"empty":            nil,
		"type only":        {0x7e},
		"not a list":       {0x7e, 0x01},
		"too few fields":   append([]byte{0x7e}, mustRLP(t, []any{common.Hash{}, common.Address{}})...),
		"unknown type":     {0x55, 0xc0},
		"truncated legacy": {0xf8, 0x10, 0x01},
	} {
		if _, err := chaintypes.DecodeTx(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	if _, err := chaintypes.DecodeTx([]byte{0x7e, 0xc0}); !errors.Is(err, chaintypes.ErrDepositDecode) {
		t.Errorf("empty deposit list: %v, want ErrDepositDecode", err)
	}
}

func mustRLP(t *testing.T, v any) []byte {
	t.Helper()
	b, err := rlp.EncodeToBytes(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// conformanceBlocks reads the 54-block conformance chain as go-ethereum
// blocks (skipping when ../shared is absent).
func conformanceBlocks(t *testing.T) [][]byte {
	t.Helper()
	dir := os.Getenv("TIPNODE_CONFORMANCE")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "conformance")
	}
	raw, err := os.ReadFile(filepath.Join(dir, "chain", "chain.rlp"))
	if err != nil {
		t.Skipf("conformance chain not available (%v): skipping", err)
	}
	var out [][]byte
	for len(raw) > 0 {
		_, content, rest, err := rlp.Split(raw)
		if err != nil {
			t.Fatal(err)
		}
		n := len(raw) - len(rest)
		out = append(out, raw[:n])
		_ = content
		raw = rest
	}
	return out
}

// TestL1BlocksUnchanged: every block of the conformance chain (every L1
// transaction type, uncles, withdrawals) decodes into a Block whose
// encoding, hash, size, transactions root and transaction encodings are
// go-ethereum's, byte for byte.
func TestL1BlocksUnchanged(t *testing.T) {
	for i, enc := range conformanceBlocks(t) {
		var eb types.Block
		if err := rlp.DecodeBytes(enc, &eb); err != nil {
			t.Fatal(err)
		}
		var xb chaintypes.Block
		if err := rlp.DecodeBytes(enc, &xb); err != nil {
			t.Fatalf("block %d: %v", i, err)
		}
		again, err := rlp.EncodeToBytes(&xb)
		if err != nil || !bytes.Equal(again, enc) {
			t.Fatalf("block %d: re-encoding differs (%v)", i, err)
		}
		if xb.Hash() != eb.Hash() || xb.Size() != eb.Size() || len(xb.Transactions()) != len(eb.Transactions()) {
			t.Fatalf("block %d: hash/size/count differ", i)
		}
		if r := types.DeriveSha(xb.Transactions(), trie.NewStackTrie(nil)); r != eb.TxHash() {
			t.Fatalf("block %d: transactions root %s, header %s", i, r, eb.TxHash())
		}
		ebody, _ := rlp.EncodeToBytes(eb.Body())
		xbody, _ := rlp.EncodeToBytes(xb.Body())
		if !bytes.Equal(ebody, xbody) {
			t.Fatalf("block %d: body encoding differs", i)
		}
		if back, ok := xb.Eth(); !ok || back.Hash() != eb.Hash() {
			t.Fatalf("block %d: Eth() differs", i)
		}
		if fb := chaintypes.FromEthBlock(&eb); fb.Hash() != eb.Hash() || len(fb.Transactions()) != len(eb.Transactions()) {
			t.Fatalf("block %d: FromEthBlock differs", i)
		}
		rebuilt := chaintypes.NewBlock(eb.Header(), xb.Body(), nil, nil)
		if rebuilt.TxHash() != eb.TxHash() || rebuilt.Header().UncleHash != eb.UncleHash() {
			t.Fatalf("block %d: NewBlock roots differ", i)
		}
	}
}

func sampleReceipts() chaintypes.Receipts {
	nonce, version := uint64(7), uint64(1)
	scalar := uint64(1368)
	log := &types.Log{Address: common.Address{9}, Topics: []common.Hash{{1}}, Data: []byte{2}}
	rs := chaintypes.Receipts{
		{Receipt: types.Receipt{Type: types.LegacyTxType, PostState: common.Hash{5}.Bytes(), CumulativeGasUsed: 21000}},
		{Receipt: types.Receipt{Type: types.DynamicFeeTxType, Status: 1, CumulativeGasUsed: 50000, Logs: []*types.Log{log}}},
		{Receipt: types.Receipt{Type: chaintypes.DepositTxType, Status: 1, CumulativeGasUsed: 90000}, OP: &chaintypes.OPReceipt{DepositNonce: &nonce, DepositReceiptVersion: &version}},
		{Receipt: types.Receipt{Type: types.DynamicFeeTxType, Status: 0, CumulativeGasUsed: 120000}, OP: &chaintypes.OPReceipt{
			L1GasPrice: big.NewInt(1055991687), L1GasUsed: big.NewInt(4471), L1Fee: big.NewInt(24681034813),
			L1BaseFeeScalar: &scalar, L1BlobBaseFee: big.NewInt(1), L1BlobBaseFeeScalar: &scalar}},
	}
	for _, r := range rs {
		r.Bloom = types.CreateBloom(&r.Receipt)
	}
	return rs
}

// TestStoredReceiptsCompatible: receipts without OP fields are stored
// exactly as go-ethereum's ReceiptForStorage (stores written before OP
// support read unchanged); OP fields survive a round trip.
func TestStoredReceiptsCompatible(t *testing.T) {
	rs := sampleReceipts()
	l1 := rs[:2]
	ours, err := chaintypes.EncodeStored(l1)
	if err != nil {
		t.Fatal(err)
	}
	theirs, _ := rlp.EncodeToBytes([]*types.ReceiptForStorage{(*types.ReceiptForStorage)(&l1[0].Receipt), (*types.ReceiptForStorage)(&l1[1].Receipt)})
	if !bytes.Equal(ours, theirs) {
		t.Fatalf("L1 storage encoding differs from go-ethereum's:\n%x\n%x", ours, theirs)
	}
	all, err := chaintypes.EncodeStored(rs)
	if err != nil {
		t.Fatal(err)
	}
	back, err := chaintypes.DecodeStored(all)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range back {
		w := rs[i]
		if r.Status != w.Status || !bytes.Equal(r.PostState, w.PostState) || r.CumulativeGasUsed != w.CumulativeGasUsed || len(r.Logs) != len(w.Logs) || (r.OP == nil) != (w.OP == nil) {
			t.Fatalf("receipt %d: %+v, want %+v", i, r, w)
		}
	}
	if op := back[2].OP; *op.DepositNonce != 7 || *op.DepositReceiptVersion != 1 || op.L1Fee != nil {
		t.Fatalf("deposit OP fields %+v", op)
	}
	if op := back[3].OP; op.L1Fee.Int64() != 24681034813 || *op.L1BaseFeeScalar != 1368 || op.DepositNonce != nil || op.OperatorFeeScalar != nil {
		t.Fatalf("fee OP fields %+v", op)
	}
	if _, err := chaintypes.DecodeStored([]byte{0xc1, 0x05}); err == nil {
		t.Fatal("garbage decoded")
	}
}

// TestDepositReceiptEncoding: a deposit receipt's consensus encoding is
// 0x7e ‖ RLP([status, cumulativeGas, bloom, logs, depositNonce,
// depositReceiptVersion]); other receipts are go-ethereum's.
func TestDepositReceiptEncoding(t *testing.T) {
	rs := sampleReceipts()
	var buf bytes.Buffer
	rs.EncodeIndex(2, &buf)
	want := append([]byte{0x7e}, mustRLP(t, []any{[]byte{1}, uint64(90000), rs[2].Bloom, []*types.Log{}, uint64(7), uint64(1)})...)
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("deposit receipt encoding\n%x\nwant\n%x", buf.Bytes(), want)
	}
	// Pre-Canyon: the nonce is not hashed; pre-Regolith: there is none.
	nonce := uint64(7)
	rs[2].OP = &chaintypes.OPReceipt{DepositNonce: &nonce}
	buf.Reset()
	rs.EncodeIndex(2, &buf)
	want = append([]byte{0x7e}, mustRLP(t, []any{[]byte{1}, uint64(90000), rs[2].Bloom, []*types.Log{}})...)
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("pre-Canyon deposit receipt encoding %x", buf.Bytes())
	}
	rs[2].OP = nil
	buf.Reset()
	rs.EncodeIndex(2, &buf)
	want = append([]byte{0x7e}, mustRLP(t, []any{[]byte{1}, uint64(90000), rs[2].Bloom, []*types.Log{}})...)
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("pre-Regolith deposit receipt encoding %x", buf.Bytes())
	}
	// Non-deposit receipts (OP fields or not) hash as go-ethereum's.
	eth := types.Receipts{&rs[0].Receipt, &rs[1].Receipt, &rs[3].Receipt}
	ours := chaintypes.Receipts{rs[0], rs[1], rs[3]}
	if types.DeriveSha(ours, trie.NewStackTrie(nil)) != types.DeriveSha(eth, trie.NewStackTrie(nil)) {
		t.Fatal("receipts root of non-deposit receipts differs from go-ethereum's")
	}
	if ours.Bloom() != types.MergeBloom(eth) {
		t.Fatal("bloom differs from go-ethereum's")
	}
}

// TestDeriveFieldsDeposit: a deposit's derived receipt fields.
func TestDeriveFieldsDeposit(t *testing.T) {
	key, _ := crypto.GenerateKey()
	signer := types.LatestSigner(params.MergedTestChainConfig)
	tx := types.MustSignNewTx(key, signer, &types.DynamicFeeTx{ChainID: params.MergedTestChainConfig.ChainID, Gas: 21000, GasFeeCap: big.NewInt(10), GasTipCap: big.NewInt(1), To: &common.Address{1}})
	nonce := uint64(3)
	dep := chaintypes.NewDeposit(chaintypes.DepositFields{From: common.Address{0xaa}, Gas: 100000, Mint: big.NewInt(1)})
	rs := chaintypes.Receipts{
		{Receipt: types.Receipt{Status: 1, CumulativeGasUsed: 40000, Logs: []*types.Log{{Address: common.Address{1}}}}, OP: &chaintypes.OPReceipt{DepositNonce: &nonce}},
		{Receipt: types.Receipt{Status: 1, CumulativeGasUsed: 61000}},
	}
	if err := rs.DeriveFields(params.MergedTestChainConfig, common.Hash{9}, 5, 100, big.NewInt(2), nil, chaintypes.Txs{dep, tx}); err != nil {
		t.Fatal(err)
	}
	r0, r1 := rs[0], rs[1]
	if r0.Type != chaintypes.DepositTxType || r0.TxHash != dep.Hash() || r0.GasUsed != 40000 || r0.EffectiveGasPrice.Sign() != 0 ||
		r0.ContractAddress != crypto.CreateAddress(common.Address{0xaa}, 3) || r0.Logs[0].Index != 0 || r0.Logs[0].TxHash != dep.Hash() || r0.BlockNumber.Uint64() != 5 {
		t.Fatalf("deposit receipt %+v", r0.Receipt)
	}
	if r1.Type != types.DynamicFeeTxType || r1.GasUsed != 21000 || r1.EffectiveGasPrice.Int64() != 3 || r1.TransactionIndex != 1 {
		t.Fatalf("second receipt %+v", r1.Receipt)
	}
}

func TestUnmarshalTxJSON(t *testing.T) {
	d := chaintypes.NewDeposit(chaintypes.DepositFields{SourceHash: common.Hash{1}, From: common.Address{2}, Mint: big.NewInt(7), Value: big.NewInt(3), Gas: 50000, Data: []byte{0xab}})
	good := `{"type":"0x7e","hash":"` + d.Hash().Hex() + `","sourceHash":"` + common.Hash{1}.Hex() + `","from":"` + common.Address{2}.Hex() +
		`","to":null,"mint":"0x7","value":"0x3","gas":"0xc350","input":"0xab","nonce":"0x5","gasPrice":"0x0","v":"0x0","r":"0x0","s":"0x0"}`
	tx, err := chaintypes.UnmarshalTxJSON([]byte(good))
	if err != nil || tx.Hash() != d.Hash() {
		t.Fatalf("decoded %v, %v", tx, err)
	}
	bad := bytes.Replace([]byte(good), []byte(`"mint":"0x7"`), []byte(`"mint":"0x8"`), 1)
	if _, err := chaintypes.UnmarshalTxJSON(bad); !errors.Is(err, chaintypes.ErrDepositDecode) {
		t.Fatalf("wrong announced hash: %v", err)
	}
	missing := bytes.Replace([]byte(good), []byte(`"sourceHash"`), []byte(`"other"`), 1)
	if _, err := chaintypes.UnmarshalTxJSON(missing); !errors.Is(err, chaintypes.ErrDepositDecode) {
		t.Fatalf("missing sourceHash: %v", err)
	}
}

// FuzzDecodeTx: no input makes the decoders panic, and whatever decodes
// re-encodes to the same bytes with a hash over them.
func FuzzDecodeTx(f *testing.F) {
	f.Add(hexutil.MustDecode(realDeposit))
	f.Add([]byte{0x7e, 0xc0})
	f.Add([]byte{0x02, 0xc0})
	f.Fuzz(func(t *testing.T, b []byte) {
		tx, err := chaintypes.DecodeTx(b)
		if err != nil {
			return
		}
		if d, ok := tx.(*chaintypes.Deposit); ok {
			enc, err := d.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if d.Hash() != crypto.Keccak256Hash(b) {
				t.Fatal("hash is not over the input")
			}
			if back, err := chaintypes.DecodeTx(enc); err != nil || back.Hash() != chaintypes.NewDeposit(d.Fields()).Hash() {
				t.Fatalf("re-encoding does not decode: %v", err)
			}
		}
		var body chaintypes.Body
		_ = rlp.DecodeBytes(b, &body)
	})
}

// TestReceiptJSON: a receipt as OP nodes serve it decodes with its OP
// fields (a deposit's nonce and version then hash into the receipts root);
// an L1 receipt decodes without any.
func TestReceiptJSON(t *testing.T) {
	common := `"status":"0x1","cumulativeGasUsed":"0x5208","logs":[],"logsBloom":"0x` + strings.Repeat("00", 256) + `","transactionHash":"0x` + strings.Repeat("11", 32) + `","gasUsed":"0x5208","effectiveGasPrice":"0x0","transactionIndex":"0x0","contractAddress":null`
	var dep chaintypes.Receipt
	if err := json.Unmarshal([]byte(`{"type":"0x7e",`+common+`,"depositNonce":"0x7","depositReceiptVersion":"0x1"}`), &dep); err != nil {
		t.Fatal(err)
	}
	if dep.OP == nil || *dep.OP.DepositNonce != 7 || *dep.OP.DepositReceiptVersion != 1 || dep.Type != chaintypes.DepositTxType {
		t.Fatalf("deposit receipt %+v / %+v", dep.Receipt, dep.OP)
	}
	var buf bytes.Buffer
	chaintypes.Receipts{&dep}.EncodeIndex(0, &buf)
	want := append([]byte{0x7e}, mustRLP(t, []any{[]byte{1}, uint64(21000), types.Bloom{}, []*types.Log{}, uint64(7), uint64(1)})...)
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("decoded deposit receipt encodes as %x", buf.Bytes())
	}
	var fee chaintypes.Receipt
	if err := json.Unmarshal([]byte(`{"type":"0x2",`+common+`,"l1GasPrice":"0x3e8","l1GasUsed":"0x640","l1Fee":"0x1234","l1FeeScalar":"0.684"}`), &fee); err != nil {
		t.Fatal(err)
	}
	if fee.OP == nil || fee.OP.L1Fee.Int64() != 0x1234 || fee.OP.L1FeeScalar.Int64() != 684000 || fee.OP.DepositNonce != nil {
		t.Fatalf("fee receipt OP %+v", fee.OP)
	}
	var l1 chaintypes.Receipt
	if err := json.Unmarshal([]byte(`{"type":"0x2",`+common+`}`), &l1); err != nil || l1.OP != nil {
		t.Fatalf("an L1 receipt decodes with OP fields %+v (%v)", l1.OP, err)
	}
	if err := json.Unmarshal([]byte(`{"type":"0x2",`+common+`,"l1FeeScalar":"abc"}`), &l1); err == nil {
		t.Fatal("a bad l1FeeScalar decoded")
	}
}

// NewBlockWithRoots given DeriveSha's roots builds NewBlock's block; empty
// lists get the empty roots whatever is given; other roots are taken as
// given (not derived).
func TestNewBlockWithRoots(t *testing.T) {
	key, _ := crypto.GenerateKey()
	signer := types.LatestSignerForChainID(big.NewInt(1))
	to := common.Address{1}
	var (
		txs      chaintypes.Txs
		receipts chaintypes.Receipts
	)
	for i := 0; i < 3; i++ {
		tx := types.MustSignNewTx(key, signer, &types.DynamicFeeTx{ChainID: big.NewInt(1), Nonce: uint64(i), Gas: 21000, GasFeeCap: big.NewInt(1), To: &to})
		txs = append(txs, tx)
		r := &chaintypes.Receipt{Receipt: types.Receipt{Type: tx.Type(), Status: 1, CumulativeGasUsed: 21000 * uint64(i+1),
			Logs: []*types.Log{{Address: to, Topics: []common.Hash{{byte(i)}}}}}}
		r.Bloom = types.CreateBloom(&r.Receipt)
		receipts = append(receipts, r)
	}
	header := &types.Header{Number: big.NewInt(5), Difficulty: new(big.Int), GasLimit: 30_000_000, BaseFee: big.NewInt(1)}
	body := &chaintypes.Body{Transactions: txs, Withdrawals: []*types.Withdrawal{}}
	want := chaintypes.NewBlock(header, body, receipts, nil)
	roots := chaintypes.Roots{Tx: types.DeriveSha(txs, trie.NewStackTrie(nil)), Receipts: types.DeriveSha(receipts, trie.NewStackTrie(nil))}
	got := chaintypes.NewBlockWithRoots(header, body, receipts, roots)
	if got.Hash() != want.Hash() || got.Header().Bloom != want.Header().Bloom || len(got.Transactions()) != 3 {
		t.Fatalf("block %s, NewBlock's %s", got.Hash(), want.Hash())
	}
	bogus := chaintypes.Roots{Tx: common.Hash{1}, Receipts: common.Hash{2}}
	if h := chaintypes.NewBlockWithRoots(header, body, receipts, bogus).Header(); h.TxHash != bogus.Tx || h.ReceiptHash != bogus.Receipts {
		t.Fatalf("given roots not taken: %s %s", h.TxHash, h.ReceiptHash)
	}
	if h := chaintypes.NewBlockWithRoots(header, nil, nil, bogus).Header(); h.TxHash != types.EmptyTxsHash || h.ReceiptHash != types.EmptyReceiptsHash {
		t.Fatalf("empty block roots %s %s", h.TxHash, h.ReceiptHash)
	}
}
