package stream

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

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
