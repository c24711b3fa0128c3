package stream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/gorilla/websocket"
)

// testTxs are two signed transactions (a dynamic-fee transfer and a legacy
// contract creation), EIP-2718 encoded.
func testTxs(t testing.TB) ([]*types.Transaction, []hexutil.Bytes) {
	t.Helper()
	key, _ := crypto.ToECDSA(common.FromHex("b71c71a67e1177ad4e901695e1b4b9ee17ae16c6668d313eac2f96dbcda3f291"))
	signer := types.LatestSignerForChainID(params.AllDevChainProtocolChanges.ChainID)
	to := common.HexToAddress("0x1111111111111111111111111111111111111111")
	a := types.MustSignNewTx(key, signer, &types.DynamicFeeTx{ChainID: signer.ChainID(), Nonce: 0, GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(1e9), Gas: 21000, To: &to, Value: big.NewInt(5)})
	b := types.MustSignNewTx(key, signer, &types.LegacyTx{Nonce: 1, GasPrice: big.NewInt(1e9), Gas: 100000, Data: []byte{0x60, 0x00}})
	var raw []hexutil.Bytes
	for _, tx := range []*types.Transaction{a, b} {
		enc, err := tx.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		raw = append(raw, enc)
	}
	return []*types.Transaction{a, b}, raw
}

// testPayload is a valid message (block 7) carrying the testTxs.
func testPayload(t testing.TB, index uint64) *Payload {
	t.Helper()
	_, raw := testTxs(t)
	p := &Payload{
		PayloadID: [8]byte{1, 2, 3, 4, 5, 6, 7, 8},
		Index:     index,
		Diff: Diff{
			ReceiptsRoot: common.HexToHash("0xaa"), GasUsed: 121000, Transactions: raw,
			Withdrawals: []*types.Withdrawal{}, WithdrawalsRoot: types.EmptyWithdrawalsHash,
		},
		Metadata: Metadata{BlockNumber: 7},
	}
	if index == 0 {
		p.Base = &Base{
			ParentHash: common.HexToHash("0xbb"), FeeRecipient: common.HexToAddress("0xcc"), PrevRandao: common.HexToHash("0xdd"),
			BlockNumber: 7, GasLimit: 30_000_000, Timestamp: 1_700_000_000, ExtraData: []byte("tipnode"), BaseFeePerGas: (*hexutil.Big)(big.NewInt(875_000_000)),
		}
	}
	return p
}

// msgTree is a valid message as a generic JSON tree, for tests to mutate.
func msgTree(t testing.TB, index uint64) map[string]any {
	t.Helper()
	enc := encode(t, testPayload(t, index))
	var tree map[string]any
	if err := json.Unmarshal(enc, &tree); err != nil {
		t.Fatal(err)
	}
	return tree
}

func encode(t testing.TB, v any) []byte {
	t.Helper()
	enc, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return enc
}

func compress(t testing.TB, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := brotli.NewWriterLevel(&buf, brotli.BestSpeed)
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// edit returns a copy of a message tree with f applied.
func edit(t testing.TB, index uint64, f func(m map[string]any)) []byte {
	m := msgTree(t, index)
	f(m)
	return encode(t, m)
}

func sub(m map[string]any, key string) map[string]any { return m[key].(map[string]any) }

func TestDecode(t *testing.T) {
	txs, _ := testTxs(t)
	text0 := encode(t, msgTree(t, 0))
	text3 := encode(t, msgTree(t, 3))
	tests := []struct {
		name  string
		mt    int
		data  []byte
		want  error  // nil: decodes
		index uint64 // when it decodes
	}{
		{"text index 0", websocket.TextMessage, text0, nil, 0},
		{"text index 3", websocket.TextMessage, text3, nil, 3},
		{"binary raw JSON", websocket.BinaryMessage, text3, nil, 3},
		{"binary raw JSON, leading whitespace", websocket.BinaryMessage, append([]byte(" \n\t"), text0...), nil, 0},
		{"binary brotli", websocket.BinaryMessage, compress(t, text0), nil, 0},
		{"binary brotli index 3", websocket.BinaryMessage, compress(t, text3), nil, 3},
		{"legacy metadata with receipts and balances", websocket.TextMessage, edit(t, 2, func(m map[string]any) {
			md := sub(m, "metadata")
			md["receipts"] = map[string]any{"0x01": map[string]any{"Eip1559": map[string]any{"status": "0x1", "cumulativeGasUsed": "0x5208", "logs": []any{}}}}
			md["new_account_balances"] = map[string]any{"0x0000000000000000000000000000000000000001": "0xffffffff"}
		}), nil, 2},
		{"unknown top-level and diff keys", websocket.TextMessage, edit(t, 1, func(m map[string]any) {
			m["future"] = 1
			sub(m, "diff")["extra"] = []any{1, 2}
		}), nil, 1},
		{"optional diff fields absent", websocket.TextMessage, edit(t, 1, func(m map[string]any) {
			d := sub(m, "diff")
			for _, k := range []string{"state_root", "logs_bloom", "block_hash", "withdrawals", "withdrawals_root", "blob_gas_used"} {
				delete(d, k)
			}
		}), nil, 1},
		{"index at the limit", websocket.TextMessage, edit(t, 1, func(m map[string]any) { m["index"] = MaxIndex }), nil, MaxIndex},

		{"ping frame", websocket.PingMessage, text0, ErrFrameType, 0},
		{"close frame", websocket.CloseMessage, nil, ErrFrameType, 0},
		{"empty text", websocket.TextMessage, nil, ErrMalformed, 0},
		{"empty binary", websocket.BinaryMessage, nil, ErrMalformed, 0},
		{"garbage text", websocket.TextMessage, []byte("hello"), ErrMalformed, 0},
		{"garbage binary", websocket.BinaryMessage, []byte{0xff, 0x00, 0x13, 0x37, 0x42}, ErrMalformed, 0},
		{"truncated JSON", websocket.TextMessage, text0[:len(text0)/2], ErrMalformed, 0},
		{"truncated brotli", websocket.BinaryMessage, compress(t, text0)[:40], ErrMalformed, 0},
		{"brotli of garbage", websocket.BinaryMessage, compress(t, []byte("not json")), ErrMalformed, 0},
		{"trailing data", websocket.TextMessage, append(append([]byte{}, text0...), "{}"...), ErrMalformed, 0},
		{"array", websocket.TextMessage, []byte("[1,2]"), ErrMalformed, 0},
		{"null", websocket.TextMessage, []byte("null"), ErrMissingField, 0},
		{"empty object", websocket.TextMessage, []byte("{}"), ErrMissingField, 0},
		{"bad payload_id", websocket.TextMessage, edit(t, 0, func(m map[string]any) { m["payload_id"] = "0x0102" }), ErrMalformed, 0},

		{"missing payload_id", websocket.TextMessage, edit(t, 0, func(m map[string]any) { delete(m, "payload_id") }), ErrMissingField, 0},
		{"missing index", websocket.TextMessage, edit(t, 1, func(m map[string]any) { delete(m, "index") }), ErrMissingField, 0},
		{"null index", websocket.TextMessage, edit(t, 1, func(m map[string]any) { m["index"] = nil }), ErrMissingField, 0},
		{"missing diff", websocket.TextMessage, edit(t, 1, func(m map[string]any) { delete(m, "diff") }), ErrMissingField, 0},
		{"missing metadata.block_number", websocket.TextMessage, edit(t, 1, func(m map[string]any) { delete(sub(m, "metadata"), "block_number") }), ErrMissingField, 0},
		{"missing diff.gas_used", websocket.TextMessage, edit(t, 1, func(m map[string]any) { delete(sub(m, "diff"), "gas_used") }), ErrMissingField, 0},
		{"missing diff.receipts_root", websocket.TextMessage, edit(t, 1, func(m map[string]any) { delete(sub(m, "diff"), "receipts_root") }), ErrMissingField, 0},
		{"missing diff.transactions", websocket.TextMessage, edit(t, 1, func(m map[string]any) { delete(sub(m, "diff"), "transactions") }), ErrMissingField, 0},
		{"null diff.transactions", websocket.TextMessage, edit(t, 1, func(m map[string]any) { sub(m, "diff")["transactions"] = nil }), ErrMissingField, 0},
		{"missing base on index 0", websocket.TextMessage, edit(t, 0, func(m map[string]any) { delete(m, "base") }), ErrMissingField, 0},
		{"missing base.parent_hash", websocket.TextMessage, edit(t, 0, func(m map[string]any) { delete(sub(m, "base"), "parent_hash") }), ErrMissingField, 0},
		{"missing base.base_fee_per_gas", websocket.TextMessage, edit(t, 0, func(m map[string]any) { delete(sub(m, "base"), "base_fee_per_gas") }), ErrMissingField, 0},
		{"missing base.timestamp", websocket.TextMessage, edit(t, 0, func(m map[string]any) { delete(sub(m, "base"), "timestamp") }), ErrMissingField, 0},

		{"index as string", websocket.TextMessage, edit(t, 1, func(m map[string]any) { m["index"] = "1" }), ErrBadIndex, 0},
		{"index as hex string", websocket.TextMessage, edit(t, 1, func(m map[string]any) { m["index"] = "0x1" }), ErrBadIndex, 0},
		{"index negative", websocket.TextMessage, []byte(strings.Replace(string(text3), `"index":3`, `"index":-3`, 1)), ErrBadIndex, 0},
		{"index fractional", websocket.TextMessage, []byte(strings.Replace(string(text3), `"index":3`, `"index":3.5`, 1)), ErrBadIndex, 0},
		{"index exponent", websocket.TextMessage, []byte(strings.Replace(string(text3), `"index":3`, `"index":3e0`, 1)), ErrBadIndex, 0},
		{"index as bool", websocket.TextMessage, edit(t, 1, func(m map[string]any) { m["index"] = true }), ErrBadIndex, 0},
		{"huge index", websocket.TextMessage, edit(t, 1, func(m map[string]any) { m["index"] = MaxIndex + 1 }), ErrBadIndex, 0},
		{"index beyond 64 bits", websocket.TextMessage, []byte(strings.Replace(string(text3), `"index":3`, `"index":184467440737095516160`, 1)), ErrBadIndex, 0},
		{"index 2^64", websocket.TextMessage, []byte(strings.Replace(string(text3), `"index":3`, `"index":18446744073709551616`, 1)), ErrBadIndex, 0},
		{"block_number as string", websocket.TextMessage, edit(t, 1, func(m map[string]any) { sub(m, "metadata")["block_number"] = "0x7" }), ErrMalformed, 0},

		{"base on index 1", websocket.TextMessage, edit(t, 1, func(m map[string]any) { m["base"] = sub(msgTree(t, 0), "base") }), ErrInconsistent, 0},
		{"block numbers differ", websocket.TextMessage, edit(t, 0, func(m map[string]any) { sub(m, "metadata")["block_number"] = 8 }), ErrInconsistent, 0},
		{"withdrawals", websocket.TextMessage, edit(t, 1, func(m map[string]any) {
			sub(m, "diff")["withdrawals"] = []any{map[string]any{"index": "0x0", "validatorIndex": "0x0", "address": "0x0000000000000000000000000000000000000001", "amount": "0x1"}}
		}), ErrInconsistent, 0},
		{"gas_used as number", websocket.TextMessage, edit(t, 1, func(m map[string]any) { sub(m, "diff")["gas_used"] = 5 }), ErrMalformed, 0},
		{"transaction not hex", websocket.TextMessage, edit(t, 1, func(m map[string]any) { sub(m, "diff")["transactions"] = []any{"zz"} }), ErrMalformed, 0},
		{"negative base fee", websocket.TextMessage, edit(t, 0, func(m map[string]any) { sub(m, "base")["base_fee_per_gas"] = "-0x1" }), ErrMalformed, 0},

		{"oversize frame", websocket.TextMessage, append(append([]byte{}, text0...), bytes.Repeat([]byte(" "), DefaultMaxMessageBytes)...), ErrTooLarge, 0},
		{"brotli bomb", websocket.BinaryMessage, compress(t, append(append([]byte{}, text0...), bytes.Repeat([]byte(" "), DefaultMaxMessageBytes)...)), ErrTooLarge, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Decode(tt.mt, tt.data)
			if tt.want != nil {
				if !errors.Is(err, tt.want) {
					t.Fatalf("error %v, want %v", err, tt.want)
				}
				if p != nil {
					t.Fatal("a message with the error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Index != tt.index || p.Metadata.BlockNumber != 7 || p.PayloadID != [8]byte{1, 2, 3, 4, 5, 6, 7, 8} {
				t.Fatalf("decoded %+v", p)
			}
			if (p.Base != nil) != (tt.index == 0) {
				t.Fatalf("base %v on index %d", p.Base, p.Index)
			}
			if p.Base != nil && (p.Base.BlockNumber != 7 || p.Base.BaseFeePerGas.ToInt().Int64() != 875_000_000 || string(p.Base.ExtraData) != "tipnode") {
				t.Fatalf("base %+v", p.Base)
			}
			if p.Diff.GasUsed != 121000 || p.Diff.ReceiptsRoot != common.HexToHash("0xaa") {
				t.Fatalf("diff %+v", p.Diff)
			}
			got, err := p.Txs()
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(txs) {
				t.Fatalf("%d transactions, want %d", len(got), len(txs))
			}
			for i := range got {
				if got[i].Hash() != txs[i].Hash() {
					t.Fatalf("transaction %d: hash %s, want %s", i, got[i].Hash(), txs[i].Hash())
				}
			}
		})
	}
}

// TestDecodeRoundTrip: what json.Marshal of a Payload writes (the publisher's
// encoding) decodes to an equal Payload.
func TestDecodeRoundTrip(t *testing.T) {
	for _, index := range []uint64{0, 1, 9} {
		data := encode(t, testPayload(t, index))
		p, err := Decode(websocket.TextMessage, data)
		if err != nil {
			t.Fatal(err)
		}
		if again := encode(t, p); !bytes.Equal(again, data) {
			t.Fatalf("index %d: re-encoded\n%s\nwant\n%s", index, again, data)
		}
	}
}

func TestDecodeLimit(t *testing.T) {
	data := encode(t, msgTree(t, 0))
	if _, err := DecodeLimit(websocket.TextMessage, data, len(data)); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	if _, err := DecodeLimit(websocket.TextMessage, data, len(data)-1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("one byte over: %v", err)
	}
	z := compress(t, data)
	if _, err := DecodeLimit(websocket.BinaryMessage, z, len(data)); err != nil {
		t.Fatalf("brotli at the limit: %v", err)
	}
	if _, err := DecodeLimit(websocket.BinaryMessage, z, len(data)-1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("brotli one byte over: %v", err)
	}
}

func TestTxs(t *testing.T) {
	_, raw := testTxs(t)
	tests := []struct {
		name string
		txs  []hexutil.Bytes
		ok   bool
	}{
		{"none", []hexutil.Bytes{}, true},
		{"valid", raw, true},
		{"empty entry", []hexutil.Bytes{raw[0], {}}, false},
		{"unknown type", []hexutil.Bytes{{0x7f, 0xc0}}, false},
		{"truncated", []hexutil.Bytes{raw[0][:len(raw[0])-3]}, false},
		{"trailing bytes", []hexutil.Bytes{append(append([]byte{}, raw[1]...), 0x00)}, false},
		{"garbage", []hexutil.Bytes{{0xde, 0xad, 0xbe, 0xef}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Payload{Diff: Diff{Transactions: tt.txs}}
			got, err := p.Txs()
			if tt.ok != (err == nil) || (err != nil && !errors.Is(err, ErrBadTransaction)) {
				t.Fatalf("error %v, ok %v", err, tt.ok)
			}
			if err == nil && len(got) != len(tt.txs) {
				t.Fatalf("%d transactions, want %d", len(got), len(tt.txs))
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		_, raw := testTxs(b)
		m := msgTree(b, 1)
		txs := make([]hexutil.Bytes, n)
		for i := range txs {
			txs[i] = raw[i%2]
		}
		sub(m, "diff")["transactions"] = txs
		data := encode(b, m)
		z := compress(b, data)
		b.Run(fmt.Sprint(n)+"tx/text", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := Decode(websocket.TextMessage, data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprint(n)+"tx/brotli", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := Decode(websocket.BinaryMessage, z); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprint(n)+"tx/text+Txs", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				p, err := Decode(websocket.TextMessage, data)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := p.Txs(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
