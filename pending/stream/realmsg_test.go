package stream

import (
	"encoding/json"
	"errors"
	"math/big"
	"os"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/gorilla/websocket"

	"github.com/tipnode/tipnode/chain/op"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// Real messages, published by others (testdata/README.md names their
// origin): the decoder must take them as they are, as a text frame and as
// a brotli-compressed binary frame (what the flashblocks websocket proxy
// sends).

func readMsg(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestRealIndex10: Base mainnet block 37,646,058, index 10 (from
// okx/xlayer-reth): decodes unchanged from both frame kinds, its eleven
// transactions decode, and its metadata (externally tagged receipts keyed
// by transaction hash, balances) parses to the values it holds.
func TestRealIndex10(t *testing.T) {
	raw := readMsg(t, "base-mainnet-37646058-index10.json")
	for _, frame := range []struct {
		name string
		typ  int
		data []byte
	}{
		{"text", websocket.TextMessage, raw},
		{"binary JSON", websocket.BinaryMessage, raw},
		{"binary brotli", websocket.BinaryMessage, compress(t, raw)},
	} {
		t.Run(frame.name, func(t *testing.T) {
			p, err := Decode(frame.typ, frame.data)
			if err != nil {
				t.Fatal(err)
			}
			if p.Index != 10 || p.Base != nil || p.Metadata.BlockNumber != 37646058 ||
				p.PayloadID != [8]byte{0x03, 0x16, 0xec, 0xb1, 0xaa, 0x16, 0x71, 0xb5} ||
				uint64(p.Diff.GasUsed) != 0x2907796 ||
				p.Diff.ReceiptsRoot != common.HexToHash("0x2c4203e9aa87258627bf23ab4d5f9d92da30285ea11dc0b3e140a5a8d4b63e26") ||
				p.Diff.BlockHash != common.HexToHash("0x2d902e3fcb5bd57e0bf878cbbda1386e7fb8968d518912d58678a35e58261c46") {
				t.Fatalf("decoded %+v", p)
			}
			txs, err := p.Txs()
			if err != nil {
				t.Fatal(err)
			}
			if len(txs) != 11 {
				t.Fatalf("%d transactions", len(txs))
			}
			byHash := map[common.Hash]chaintypes.Tx{}
			for _, tx := range txs {
				if chaintypes.IsDeposit(tx) {
					t.Fatalf("a deposit at index 10: %s", tx.Hash())
				}
				byHash[tx.Hash()] = tx
			}
			receipts, err := p.Metadata.ParseReceipts()
			if err != nil {
				t.Fatal(err)
			}
			if len(receipts) != 2 {
				t.Fatalf("%d receipts", len(receipts))
			}
			r := receipts[common.HexToHash("0x2cd6b4825b5ee40b703c947e15630336dceda97825b70412da54ccc27f484496")]
			if r == nil || r.Type != 2 || r.Status == nil || *r.Status != 1 || r.CumulativeGasUsed == nil || *r.CumulativeGasUsed != 0x28cca69 ||
				len(r.Logs) != 2 || r.Logs[1].Address != common.HexToAddress("0x833589fcd6edb6e08f4c7c32d4f71b54bda02913") ||
				len(r.Logs[1].Topics) != 3 || r.Logs[1].Topics[0] != common.HexToHash("0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef") ||
				new(big.Int).SetBytes(r.Logs[1].Data).Int64() != 1000 || r.DepositNonce != nil {
				t.Fatalf("EIP-1559 receipt %+v", r)
			}
			legacy := receipts[common.HexToHash("0x1a766690fd6d0febffc488f12fbd7385c43fbe1e07113a1316f22f176355297e")]
			if legacy == nil || legacy.Type != 0 || legacy.CumulativeGasUsed == nil || *legacy.CumulativeGasUsed != 0x2868d76 {
				t.Fatalf("legacy receipt %+v", legacy)
			}
			// The receipts are keyed by the hashes of the message's
			// transactions: our hashing agrees with the producer's.
			for h, mr := range receipts {
				tx, ok := byHash[h]
				if !ok {
					t.Fatalf("receipt of %s: no such transaction in the message", h.Hex())
				}
				if tx.Type() != mr.Type {
					t.Fatalf("%s: receipt type %d, transaction type %d", h.Hex(), mr.Type, tx.Type())
				}
			}
			balances, err := p.Metadata.ParseBalances()
			if err != nil {
				t.Fatal(err)
			}
			want, _ := new(big.Int).SetString("23281e39594556899", 16)
			if got := balances[common.HexToAddress("0x0000000071727de22e5e9d8baf0edac6f37da032")]; got == nil || got.Cmp(want) != 0 {
				t.Fatalf("balance %v, want %v (of %d)", got, want, len(balances))
			}
			// Re-encoding keeps the metadata (a relay forwards it as is).
			again, err := Decode(websocket.TextMessage, encode(t, p))
			if err != nil {
				t.Fatal(err)
			}
			if r2, err := again.Metadata.ParseReceipts(); err != nil || len(r2) != 2 {
				t.Fatalf("re-encoded metadata: %d receipts, %v", len(r2), err)
			}
		})
	}
}

// TestRealIndex0: Base mainnet block 26,600,873, index 0 (from
// base/node-reth's websocket proxy tests). Its authors trimmed it to what
// their filter reads (no base, diff holds only the transactions): the
// decoder refuses it naming the first missing field, as it must (a
// replica cannot open a block without base). What the message holds is
// read as it is: the L1-info deposit decodes, its calldata is the Isthmus
// encoding with Base's values, and the externally tagged deposit receipt
// (logs only: a user deposit through the standard bridge, whose
// transaction the authors trimmed away) and the balances parse.
func TestRealIndex0(t *testing.T) {
	raw := readMsg(t, "base-mainnet-26600873-index0.json")
	for _, frame := range [][]byte{raw, compress(t, raw)} {
		_, err := Decode(websocket.BinaryMessage, frame)
		if !errors.Is(err, ErrMissingField) || !strings.Contains(err.Error(), "diff.gas_used") {
			t.Fatalf("trimmed message: %v", err)
		}
	}
	var msg struct {
		Diff     struct{ Transactions []hexutil.Bytes }
		Metadata Metadata
	}
	if err := json.Unmarshal(raw, &msg); err != nil {
		t.Fatal(err)
	}
	if len(msg.Diff.Transactions) != 1 {
		t.Fatalf("%d transactions", len(msg.Diff.Transactions))
	}
	tx, err := chaintypes.DecodeTx(msg.Diff.Transactions[0])
	if err != nil {
		t.Fatal(err)
	}
	d, ok := tx.(*chaintypes.Deposit)
	if !ok || d.From() != op.L1InfoDepositor || d.To() == nil || *d.To() != op.L1BlockAddr || d.Gas() != 1_000_000 {
		t.Fatalf("not the L1-info deposit: %T %+v", tx, tx)
	}
	info, err := op.ParseL1Info(d.Data())
	if err != nil {
		t.Fatal(err)
	}
	if info.Version != op.L1InfoIsthmus || info.Number != 0x813aea || info.Time != 0x683f28fc || info.SequenceNumber != 0 ||
		info.BaseFeeScalar != 0x44d || info.BlobBaseFeeScalar != 0xa118b || info.BaseFee.Int64() != 0x94a || info.BlobBaseFee.Int64() != 1 ||
		info.BatcherHash != common.HexToHash("0x000000000000000000000000fc56e7272eebbba5bc6c544e159483c4a38f8ba3") ||
		info.OperatorFeeScalar != 0 || info.OperatorFeeConstant != 0 {
		t.Fatalf("L1 info %+v", info)
	}
	receipts, err := msg.Metadata.ParseReceipts()
	if err != nil {
		t.Fatal(err)
	}
	r, ok := receipts[common.HexToHash("0x3fb39b336c13a09d04a34f72cd88a7b0066d65dcf246288ac5bdbba33376eb41")]
	if !ok || len(receipts) != 1 {
		t.Fatalf("receipts %v", receipts)
	}
	if r.Type != chaintypes.DepositTxType || r.Status != nil || r.CumulativeGasUsed != nil || len(r.Logs) != 1 ||
		r.Logs[0].Address != common.HexToAddress("0x4200000000000000000000000000000000000010") || len(r.Logs[0].Topics) != 2 || len(r.Logs[0].Data) != 0 {
		t.Fatalf("deposit receipt %+v", r)
	}
	balances, err := msg.Metadata.ParseBalances()
	if err != nil {
		t.Fatal(err)
	}
	if len(balances) != 2 || balances[common.HexToAddress("0x4200000000000000000000000000000000000007")].Cmp(big.NewInt(0xf61bc4ad468f1bd)) != 0 {
		t.Fatalf("balances %v", balances)
	}
}

// TestParseReceiptShapes: both receipt shapes (op-alloy's internally
// tagged one current producers send, and the externally tagged one of
// older rollup-boost) parse to the same receipt; what is neither is
// refused with ErrMetadata.
func TestParseReceiptShapes(t *testing.T) {
	const hash = `"0x9999999999999999999999999999999999999999999999999999999999999999"`
	const body = `"status":"0x1","cumulativeGasUsed":"0x5208","logs":[{"address":"0x00000000000000000000000000000000000000aa","topics":["0x00000000000000000000000000000000000000000000000000000000000000a1"],"data":"0x0102"}]`
	const dep = `"status":"0x0","cumulativeGasUsed":"0xc350","logs":[],"depositNonce":"0x7","depositReceiptVersion":"0x1"`
	for _, tc := range []struct {
		name, receipts string
		typ            uint8
		status, cum    uint64
		logs           int
		nonce          *uint64
		err            bool
	}{
		{name: "internally tagged", receipts: `{` + hash + `:{"type":"0x2",` + body + `}}`, typ: 2, status: 1, cum: 21000, logs: 1},
		{name: "externally tagged", receipts: `{` + hash + `:{"Eip1559":{` + body + `}}}`, typ: 2, status: 1, cum: 21000, logs: 1},
		{name: "deposit, internally tagged", receipts: `{` + hash + `:{"type":"0x7e",` + dep + `}}`, typ: 0x7e, cum: 50000, nonce: new(uint64)},
		{name: "deposit, externally tagged", receipts: `{` + hash + `:{"Deposit":{` + dep + `}}}`, typ: 0x7e, cum: 50000, nonce: new(uint64)},
		{name: "legacy", receipts: `{` + hash + `:{"Legacy":{` + body + `}}}`, typ: 0, status: 1, cum: 21000, logs: 1},
		{name: "no type", receipts: `{` + hash + `:{` + body + `}}`, err: true},
		{name: "unknown variant", receipts: `{` + hash + `:{"Eip9999":{` + body + `}}}`, err: true},
		{name: "type beyond a byte", receipts: `{` + hash + `:{"type":"0x100",` + body + `}}`, err: true},
		{name: "bad key", receipts: `{"0x12":{"type":"0x2",` + body + `}}`, err: true},
		{name: "bad status", receipts: `{` + hash + `:{"type":"0x2","status":1}}`, err: true},
		{name: "receipt not an object", receipts: `{` + hash + `:[]}`, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := Metadata{Receipts: json.RawMessage(tc.receipts)}
			got, err := m.ParseReceipts()
			if tc.err {
				if !errors.Is(err, ErrMetadata) {
					t.Fatalf("err %v, want ErrMetadata", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r := got[common.HexToHash(strings.Trim(hash, `"`))]
			if r == nil || r.Type != tc.typ || *r.Status != tc.status || *r.CumulativeGasUsed != tc.cum || len(r.Logs) != tc.logs || r.Logs == nil {
				t.Fatalf("receipt %+v", r)
			}
			if tc.nonce != nil && (r.DepositNonce == nil || *r.DepositNonce != 7 || *r.DepositReceiptVersion != 1) {
				t.Fatalf("deposit fields %v %v", r.DepositNonce, r.DepositReceiptVersion)
			}
			if tc.logs == 1 && (len(r.Logs[0].Data) != 2 || r.Logs[0].Topics[0] != common.HexToHash("0xa1")) {
				t.Fatalf("log %+v", r.Logs[0])
			}
		})
	}
	for _, bad := range []string{`{"0x00000000000000000000000000000000000000aa":null}`, `{"0xaa":"0x1"}`, `{"0x00000000000000000000000000000000000000aa":"12"}`} {
		m := Metadata{NewAccountBalances: json.RawMessage(bad)}
		if _, err := m.ParseBalances(); !errors.Is(err, ErrMetadata) {
			t.Fatalf("balances %s: %v", bad, err)
		}
	}
	// Metadata that is not an object is refused by the decoder itself.
	for _, field := range []string{"receipts", "new_account_balances"} {
		data := edit(t, 1, func(m map[string]any) { sub(m, "metadata")[field] = []any{} })
		if _, err := Decode(websocket.TextMessage, data); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), field) {
			t.Fatalf("%s as an array: %v", field, err)
		}
		data = edit(t, 1, func(m map[string]any) { sub(m, "metadata")[field] = nil })
		if p, err := Decode(websocket.TextMessage, data); err != nil || p.Metadata.Receipts != nil || p.Metadata.NewAccountBalances != nil {
			t.Fatalf("%s null: %v", field, err)
		}
	}
}
