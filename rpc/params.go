package rpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
)

// Params is the positional parameter array of a request. Absent and null
// params are an empty Params; object-form params never reach a handler (the
// framework answers them with CodeInvalidParams).
//
// Arguments are addressed by index. Decode treats a missing or JSON-null
// argument as missing; DecodeOptional treats both as "not present". Every
// error returned by the methods of Params is an *Error with CodeInvalidParams
// naming the argument as `invalid argument I (NAME): …`, so a handler can
// return it unchanged.
type Params struct {
	raw []json.RawMessage
	// base is the position of raw[0] in the request's params: Rest(i)
	// keeps counting, so that errors name the argument as the client sent
	// it (an eth_subscribe kind's handler sees params[1:], and its
	// argument 0 is the request's argument 1).
	base int
	// valid: every raw value comes from a message the server validated
	// (codec.go), so decoders that implement json.Unmarshaler are called
	// directly, without encoding/json's second validation pass.
	valid bool
	// budget is the response budget of the message the request belongs to
	// (nil: only limit applies; both zero: unbounded, for direct calls).
	budget *respBudget
	limit  int
}

// NewParams builds Params from raw JSON values (for tests and for methods
// that re-dispatch).
func NewParams(raw ...json.RawMessage) Params { return Params{raw: raw} }

// ParamsOf marshals each value with encoding/json and builds Params from
// them; it panics if a value cannot be marshalled (tests only).
func ParamsOf(values ...any) Params {
	raw := make([]json.RawMessage, len(values))
	for i, v := range values {
		b, err := json.Marshal(v)
		if err != nil {
			panic(fmt.Sprintf("rpc.ParamsOf: argument %d: %v", i, err))
		}
		raw[i] = b
	}
	return Params{raw: raw}
}

// ResponseRoom is how many bytes of encoded result the request may still
// produce: what is left of Config.MaxResponseBytes for its message (a batch
// shares one budget among its elements). A handler about to build a large
// result (return data, logs, simulated blocks) checks its size against it
// first and answers ErrResponseTooLarge instead of building what would be
// refused anyway. Unbounded (math.MaxInt) for Params not from the server.
func (p Params) ResponseRoom() int {
	switch {
	case p.budget != nil:
		return int(max(0, p.budget.room()))
	case p.limit > 0:
		return p.limit
	}
	return math.MaxInt
}

// CheckResponse returns ErrResponseTooLarge when a result of about n
// encoded bytes does not fit in ResponseRoom, else nil. In a batch, that
// answer spends the batch's budget (in element order): its elements not
// started yet are not run.
func (p Params) CheckResponse(n int) error {
	if n <= p.ResponseRoom() {
		return nil
	}
	limit := p.limit
	if p.budget != nil {
		limit = int(p.budget.limit)
	}
	return ErrResponseTooLarge(limit)
}

// Len is the number of positional arguments sent (including trailing nulls).
func (p Params) Len() int { return len(p.raw) }

// Raw returns argument i as sent, or nil when absent.
func (p Params) Raw(i int) json.RawMessage {
	if i < 0 || i >= len(p.raw) {
		return nil
	}
	return p.raw[i]
}

// Rest returns the arguments from index i on (empty when i >= Len()).
func (p Params) Rest(i int) Params {
	if i >= len(p.raw) {
		return Params{}
	}
	if i < 0 {
		i = 0
	}
	return Params{raw: p.raw[i:], base: p.base + i, valid: p.valid, budget: p.budget, limit: p.limit}
}

// Present reports whether argument i was sent and is not JSON null.
func (p Params) Present(i int) bool {
	r := p.Raw(i)
	return r != nil && string(r) != "null"
}

// AtMost returns an invalid-params error when more than n arguments were
// sent. Trailing nulls count: clients should not send them (like go-ethereum,
// which only tolerates them for optional arguments, we are strict).
func (p Params) AtMost(n int) error {
	if len(p.raw) > n {
		return ErrInvalidParams("too many arguments, want at most %d", p.base+n)
	}
	return nil
}

// Decode unmarshals required argument i (called name in errors) into dst.
// A missing or null argument is an error.
func (p Params) Decode(i int, name string, dst any) error {
	if !p.Present(i) {
		return p.Missing(i, name)
	}
	return decodeArg(p.raw[i], p.base+i, name, dst, p.valid)
}

// Missing is the error of a required argument i (called name) that is
// absent or null.
func (p Params) Missing(i int, name string) *Error {
	return ErrInvalidParams("missing value for required argument %d (%s)", p.base+i, name)
}

// ArgError is the package-level ArgError for argument i of p, numbered as
// the client sent it (see Rest).
func (p Params) ArgError(i int, name string, format string, args ...any) *Error {
	return ArgError(p.base+i, name, format, args...)
}

// DecodeOptional unmarshals argument i into dst when it is present and not
// null. present reports whether it was; dst is untouched otherwise.
func (p Params) DecodeOptional(i int, name string, dst any) (present bool, err error) {
	if !p.Present(i) {
		return false, nil
	}
	return true, decodeArg(p.raw[i], p.base+i, name, dst, p.valid)
}

func decodeArg(raw json.RawMessage, i int, name string, dst any, valid bool) error {
	var err error
	if u, ok := dst.(json.Unmarshaler); ok && valid {
		// raw is an element of a validated message: encoding/json would
		// validate it again and call the decoder with the same bytes.
		err = u.UnmarshalJSON(raw)
	} else {
		err = json.Unmarshal(raw, dst)
	}
	if err != nil {
		var e *Error
		if errors.As(err, &e) { // a decoder chose its own error: keep code, prefix position.
			return &Error{Code: e.Code, Message: fmt.Sprintf("invalid argument %d (%s): %s", i, name, e.Message), Data: e.Data}
		}
		return ErrInvalidParams("invalid argument %d (%s): %s", i, name, DescribeJSONError(err))
	}
	return nil
}

// ArgError builds an invalid-params error for argument i (called name) from a
// validation failure found after decoding.
func ArgError(i int, name string, format string, args ...any) *Error {
	return ErrInvalidParams("invalid argument %d (%s): %s", i, name, fmt.Sprintf(format, args...))
}

// DescribeJSONError turns encoding/json (and go-ethereum hexutil) errors into
// a short human message without the "json: " prefix and Go type noise where
// possible. Params uses it for argument errors; decoders of nested values
// (rpc/eth's overrides and log filters) use it so their messages read alike.
func DescribeJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		msg := te.Value
		switch msg { // hexutil's wordings
		case "non-string":
			msg = "must be a hex string"
		case "hex string without 0x prefix": // also for "-0x1": say what is wanted
			msg = "not a " + typeName(te.Type.String()) + ": want 0x followed by hex digits, without a sign"
		}
		switch strings.SplitN(te.Value, " ", 2)[0] {
		case "string", "number", "object", "array", "bool", "null":
			msg = "cannot unmarshal " + te.Value + " into " + typeName(te.Type.String())
		}
		if te.Field != "" {
			msg += fmt.Sprintf(" (field %q)", te.Field)
		}
		return msg
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func typeName(t string) string {
	switch t {
	case "*hexutil.Big", "hexutil.Big", "*hexutil.Uint64", "hexutil.Uint64", "hexutil.Uint", "*hexutil.Uint":
		return "hex quantity"
	case "hexutil.Bytes", "*hexutil.Bytes":
		return "hex data"
	case "common.Address", "*common.Address":
		return "address"
	case "common.Hash", "*common.Hash":
		return "32-byte hash"
	}
	return t
}
