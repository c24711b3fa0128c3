package rpc

import (
	"encoding/json"
	"testing"
)

func TestErrorMarshal(t *testing.T) {
	b, _ := json.Marshal(&Error{Code: -32000, Message: "m"})
	if string(b) != `{"code":-32000,"message":"m"}` {
		t.Errorf("%s", b)
	}
	b, _ = json.Marshal(ErrReverted([]byte{0x08, 0xc3}))
	if string(b) != `{"code":-32000,"message":"execution reverted","data":"0x08c3"}` {
		t.Errorf("%s", b)
	}
	b, _ = json.Marshal(ErrReverted(nil))
	if string(b) != `{"code":-32000,"message":"execution reverted","data":"0x"}` {
		t.Errorf("%s", b)
	}
	var e error = ErrTimeout()
	if e.Error() != "request timed out" {
		t.Error(e)
	}
}
