package stream

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/gorilla/websocket"
)

// FuzzDecode: any frame, text or binary, decodes or fails with one of the
// documented sentinels, never panics; what decodes satisfies the documented
// invariants and survives a re-encode/decode round trip unchanged.
func FuzzDecode(f *testing.F) {
	for _, index := range []uint64{0, 1, 5} {
		data := encode(f, msgTree(f, index))
		f.Add(data)
		f.Add(compress(f, data))
	}
	f.Add(edit(f, 2, func(m map[string]any) {
		sub(m, "metadata")["receipts"] = map[string]any{"0x01": map[string]any{"status": "0x1"}}
		sub(m, "metadata")["new_account_balances"] = map[string]any{"0x0000000000000000000000000000000000000001": "0x1"}
	}))
	f.Add(edit(f, 1, func(m map[string]any) { m["index"] = "1" }))
	f.Add(edit(f, 1, func(m map[string]any) { m["index"] = MaxIndex + 1 }))
	f.Add(edit(f, 0, func(m map[string]any) { delete(m, "base") }))
	f.Add([]byte(`{"payload_id":"0x0000000000000000","index":1,"diff":{"gas_used":"0x0","receipts_root":"0x0000000000000000000000000000000000000000000000000000000000000000","transactions":["0x"]},"metadata":{"block_number":1}}`))
	for _, name := range []string{"base-mainnet-37646058-index10.json", "base-mainnet-26600873-index0.json"} {
		data, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(compress(f, data))
	}
	f.Add([]byte("{}"))
	f.Add([]byte{0x1b, 0x00})
	f.Add([]byte{})

	sentinels := []error{ErrFrameType, ErrTooLarge, ErrMalformed, ErrMissingField, ErrBadIndex, ErrInconsistent}
	const limit = 1 << 20
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, mt := range []int{websocket.TextMessage, websocket.BinaryMessage} {
			p, err := DecodeLimit(mt, data, limit)
			if err != nil {
				if p != nil {
					t.Fatalf("message and error %v", err)
				}
				known := false
				for _, s := range sentinels {
					known = known || errors.Is(err, s)
				}
				if !known {
					t.Fatalf("error without a sentinel: %v", err)
				}
				continue
			}
			if p.Index > MaxIndex {
				t.Fatalf("index %d above the limit", p.Index)
			}
			if (p.Base != nil) != (p.Index == 0) {
				t.Fatalf("base %v on index %d", p.Base, p.Index)
			}
			if p.Base != nil && uint64(p.Base.BlockNumber) != p.Metadata.BlockNumber {
				t.Fatalf("block numbers %d and %d", p.Base.BlockNumber, p.Metadata.BlockNumber)
			}
			if len(p.Diff.Withdrawals) != 0 {
				t.Fatal("withdrawals accepted")
			}
			if _, err := p.Txs(); err != nil && !errors.Is(err, ErrBadTransaction) {
				t.Fatalf("Txs error without the sentinel: %v", err)
			}
			enc, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			again, err := DecodeLimit(websocket.TextMessage, enc, 4*limit)
			if err != nil {
				t.Fatalf("re-encoded message does not decode: %v\n%s", err, enc)
			}
			if enc2, _ := json.Marshal(again); !bytes.Equal(enc, enc2) {
				t.Fatalf("round trip changed the message:\n%s\n%s", enc, enc2)
			}
		}
	})
}

// FuzzMetadata: any metadata.receipts / new_account_balances object parses
// or fails with ErrMetadata, never panics; what parses has a transaction
// type that fits a byte, and every parsed receipt survives a re-encode in
// the internally tagged shape unchanged.
func FuzzMetadata(f *testing.F) {
	for _, name := range []string{"base-mainnet-37646058-index10.json", "base-mainnet-26600873-index0.json"} {
		data, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		var m struct{ Metadata Metadata }
		if err := json.Unmarshal(data, &m); err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(m.Metadata.Receipts), []byte(m.Metadata.NewAccountBalances))
	}
	f.Add([]byte(`{"0x9999999999999999999999999999999999999999999999999999999999999999":{"type":"0x7e","status":"0x1","cumulativeGasUsed":"0xc350","logs":[],"depositNonce":"0x7","depositReceiptVersion":"0x1"}}`), []byte(`{}`))
	f.Add([]byte(`{"0x9999999999999999999999999999999999999999999999999999999999999999":{"Deposit":{}}}`), []byte(`{"0x00000000000000000000000000000000000000aa":"0x0"}`))
	f.Fuzz(func(t *testing.T, receipts, balances []byte) {
		m := Metadata{Receipts: receipts, NewAccountBalances: balances}
		rs, err := m.ParseReceipts()
		if err != nil && !errors.Is(err, ErrMetadata) {
			t.Fatalf("receipts error without the sentinel: %v", err)
		}
		if _, err := m.ParseBalances(); err != nil && !errors.Is(err, ErrMetadata) {
			t.Fatalf("balances error without the sentinel: %v", err)
		}
		for h, r := range rs {
			if r.Type > 0x7f {
				t.Fatalf("type %d", r.Type)
			}
			w := map[string]any{"type": hexutil.Uint64(r.Type)}
			if r.Status != nil {
				w["status"] = hexutil.Uint64(*r.Status)
			}
			if r.CumulativeGasUsed != nil {
				w["cumulativeGasUsed"] = hexutil.Uint64(*r.CumulativeGasUsed)
			}
			if r.Logs != nil {
				w["logs"] = r.Logs
			}
			if r.DepositNonce != nil {
				w["depositNonce"] = hexutil.Uint64(*r.DepositNonce)
			}
			if r.DepositReceiptVersion != nil {
				w["depositReceiptVersion"] = hexutil.Uint64(*r.DepositReceiptVersion)
			}
			enc, err := json.Marshal(map[common.Hash]any{h: w})
			if err != nil {
				t.Fatal(err)
			}
			again, err := (&Metadata{Receipts: enc}).ParseReceipts()
			if err != nil {
				t.Fatalf("re-encoded receipt does not parse: %v\n%s", err, enc)
			}
			if !reflect.DeepEqual(again[h], r) {
				t.Fatalf("round trip changed the receipt:\n%+v\n%+v", r, again[h])
			}
		}
	})
}
