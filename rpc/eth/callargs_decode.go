package eth

import (
	"bytes"
	"encoding/json"

	"github.com/tipnode/tipnode/rpc"
)

// A reflection-free decoder for the call object, the argument of every
// eth_call, eth_estimateGas and eth_createAccessList (and of each call of
// eth_simulateV1). encoding/json spends more time validating, scanning and
// reflecting over the object than the hex decoding itself takes; the
// object clients send is almost always flat: lower-camel keys with string
// (hex) or null values.
//
// decodeCallArgsFast accepts exactly that shape and nothing else: an
// object whose keys are the exact field names, without escapes, and whose
// values are strings without escapes or control characters, or null (the
// list-valued fields: null only). Each string goes to the field type's own
// UnmarshalJSON, the method encoding/json would call on the same bytes.
// Anything else (another key spelling, which encoding/json matches
// case-insensitively, unknown keys, numbers, arrays, escapes, a value
// rejected by its type, invalid JSON) makes it report false, and
// CallArgs.UnmarshalJSON decodes with encoding/json as before: results and
// errors are those of encoding/json by construction (FuzzCallArgsDecoders
// compares the two).

// decodeCallArgsFast decodes data into a; ok false means "not handled":
// a is then unspecified and the caller must decode with encoding/json.
func decodeCallArgsFast(data []byte, a *CallArgs) (ok bool) {
	i := skipWS(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = skipWS(data, i+1)
	if i < len(data) && data[i] == '}' {
		return skipWS(data, i+1) == len(data)
	}
	for {
		key, next, ok := scanPlainString(data, i)
		if !ok {
			return false
		}
		i = skipWS(data, next)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		i = skipWS(data, i+1)
		var val []byte // the quoted string, or nil for null
		switch {
		case i < len(data) && data[i] == '"':
			_, end, ok := scanPlainString(data, i)
			if !ok {
				return false
			}
			val, i = data[i:end], end
		case bytes.HasPrefix(data[i:], []byte("null")):
			i += 4
		default:
			return false
		}
		if !setCallField(a, key, val) {
			return false
		}
		i = skipWS(data, i)
		if i >= len(data) {
			return false
		}
		switch data[i] {
		case ',':
			i = skipWS(data, i+1)
		case '}':
			return skipWS(data, i+1) == len(data)
		default:
			return false
		}
	}
}

// setCallField sets the field named key from the quoted string val (nil:
// null, which clears the field as encoding/json does); false for an
// unknown key, a list field given a string, or a value its type rejects.
func setCallField(a *CallArgs, key, val []byte) bool {
	switch string(key) {
	case "from":
		return setField(&a.From, val)
	case "to":
		return setField(&a.To, val)
	case "gas":
		return setField(&a.Gas, val)
	case "gasPrice":
		return setField(&a.GasPrice, val)
	case "maxFeePerGas":
		return setField(&a.MaxFeePerGas, val)
	case "maxPriorityFeePerGas":
		return setField(&a.MaxPriorityFeePerGas, val)
	case "maxFeePerBlobGas":
		return setField(&a.MaxFeePerBlobGas, val)
	case "value":
		return setField(&a.Value, val)
	case "nonce":
		return setField(&a.Nonce, val)
	case "input":
		return setField(&a.Input, val)
	case "data":
		return setField(&a.DataField, val)
	case "type":
		return setField(&a.Type, val)
	case "chainId":
		return setField(&a.ChainID, val)
	case "accessList":
		a.AccessList = nil
		return val == nil
	case "blobVersionedHashes":
		a.BlobVersionedHashes = nil
		return val == nil
	case "authorizationList":
		a.AuthorizationList = nil
		return val == nil
	}
	return false
}

// setField decodes the quoted string val into a new *T (nil val: null,
// *dst = nil) with T's UnmarshalJSON.
func setField[T any, PT interface {
	*T
	json.Unmarshaler
}](dst **T, val []byte) bool {
	if val == nil {
		*dst = nil
		return true
	}
	v := new(T)
	if err := PT(v).UnmarshalJSON(val); err != nil {
		return false
	}
	*dst = v
	return true
}

// scanPlainString scans the JSON string starting at data[i] (which must
// be '"'); it returns its contents and the index after the closing quote.
// Strings with escapes or control characters are not handled (false).
func scanPlainString(data []byte, i int) (s []byte, end int, ok bool) {
	if i >= len(data) || data[i] != '"' {
		return nil, 0, false
	}
	j := rpc.StringRun(data, i+1)
	if j >= len(data) || data[j] != '"' {
		return nil, 0, false
	}
	return data[i+1 : j], j + 1, true
}

// skipWS returns the index of the first non-whitespace byte at or after i.
func skipWS(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}
