package rpc

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzDecodeRequest checks the envelope decoder never panics, that every
// decoded request is either valid or carries an error, and that every
// response it would produce is valid JSON.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":"0x00000000000000000000000000000000000000aa"},"latest"]}`,
		`{"jsonrpc":"2.0","method":"notify"}`,
		`{"jsonrpc":"2.0","id":null,"method":"x","params":null}`,
		`{"jsonrpc":"2.0","id":"s","method":"x","params":{"a":1}}`,
		`{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1.5e3,"method":"x","params":"x"}`,
		`{"jsonrpc":"1.0","id":{},"method":1}`,
		`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"},1,null,[]]`,
		`[]`, `[`, `{`, ``, ` `, `null`, `42`, `"str"`, `[[]]`, `{"id":[1]}`,
		"\xef\xbb\xbf{}", `{"jsonrpc":"2.0","id":1,"method":"\u0000"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		reqs, batch, msgErr := decodeMessage(data, 10)
		if msgErr != nil {
			if reqs != nil {
				t.Fatal("message error with requests")
			}
			if !json.Valid(encodeError(nil, msgErr)) {
				t.Fatal("invalid error response")
			}
			return
		}
		if len(reqs) == 0 || (!batch && len(reqs) != 1) || len(reqs) > 10 {
			t.Fatalf("bad request count %d batch=%v", len(reqs), batch)
		}
		for _, r := range reqs {
			if r.err == nil && r.method == "" {
				t.Fatal("valid request without method")
			}
			if r.id != nil && !validID(r.id) {
				t.Fatalf("invalid id kept: %s", r.id)
			}
			var resp []byte
			if r.err != nil {
				resp = encodeError(r.id, r.err)
			} else {
				resp = encodeResult(r.id, json.RawMessage(`null`))
			}
			if !json.Valid(resp) {
				t.Fatalf("invalid response %s", resp)
			}
			if r.id != nil && r.err == nil {
				var back struct{ ID json.RawMessage }
				if err := json.Unmarshal(resp, &back); err != nil || !bytes.Equal(back.ID, r.id) {
					t.Fatalf("id not echoed: %s vs %s", back.ID, r.id)
				}
			}
		}
	})
}
