package rpc

import (
	"encoding/json"
	"testing"
)

// Arguments keep the position the client sent them at through Rest, so a
// subscription handler (which sees eth_subscribe's params after the kind)
// names them right.
func TestParamsRestNumbersAsSent(t *testing.T) {
	p := NewParams(json.RawMessage(`"logs"`), json.RawMessage(`{"address":1}`), json.RawMessage(`2`)).Rest(1)
	var m map[string]string
	for _, tc := range []struct {
		err  error
		want string
	}{
		{p.Decode(0, "filter", &m), `invalid argument 1 (filter): cannot unmarshal number into string`},
		{p.AtMost(1), "too many arguments, want at most 2"},
		{p.Missing(5, "x"), "missing value for required argument 6 (x)"},
		{p.ArgError(1, "y", "bad %d", 3), "invalid argument 2 (y): bad 3"},
		{p.Rest(1).ArgError(0, "z", "bad"), "invalid argument 2 (z): bad"},
	} {
		if tc.err == nil || tc.err.Error() != tc.want {
			t.Errorf("got %v, want %q", tc.err, tc.want)
		}
	}
}
