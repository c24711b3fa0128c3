package eth

import (
	"bytes"
	"encoding/json"
)

// A reflection-light decoder for eth_simulateV1's payload, in the manner of
// decodeCallArgsFast: encoding/json validates and scans the whole payload,
// then again each member it hands to a json.Unmarshaler (every call,
// every state override), and reflects over the rest.
//
// decodeSimPayloadFast accepts the shape clients send: an object whose
// keys are exactly the field names (each at most once), true/false flags,
// blockStateCalls an array of objects with keys blockOverrides,
// stateOverrides and calls (each at most once), calls an array of call
// objects. Each block override, state override and call goes to the
// decoder encoding/json would call on the same bytes (encoding/json for
// BlockOverrides, StateOverride.UnmarshalJSON, CallArgs.UnmarshalJSON).
// Anything else (other spellings, unknown keys, null where not listed, a
// member its decoder rejects) makes it report false, and
// simPayload.UnmarshalJSON decodes the whole payload with encoding/json:
// results and errors are encoding/json's by construction
// (FuzzSimPayloadDecoders compares the two).

// UnmarshalJSON decodes the payload, with decodeSimPayloadFast when it
// handles the input.
func (p *simPayload) UnmarshalJSON(data []byte) error {
	var q simPayload
	if decodeSimPayloadFast(data, &q) {
		*p = q
		return nil
	}
	return p.unmarshalJSONReflect(data)
}

// unmarshalJSONReflect is UnmarshalJSON with encoding/json: the fallback
// and the fuzz target's reference.
func (p *simPayload) unmarshalJSONReflect(data []byte) error {
	type plain simPayload
	return json.Unmarshal(data, (*plain)(p))
}

// decodeSimPayloadFast decodes data into p; false means "not handled": p
// is then unspecified.
func decodeSimPayloadFast(data []byte, p *simPayload) bool {
	var seen [4]bool
	end, ok := scanObject(data, skipWS(data, 0), func(key []byte, i int) (int, bool) {
		var k int
		switch string(key) {
		case "blockStateCalls":
			k = 0
		case "traceTransfers":
			k = 1
		case "validation":
			k = 2
		case "returnFullTransactions":
			k = 3
		default:
			return 0, false
		}
		if seen[k] {
			return 0, false
		}
		seen[k] = true
		if k == 0 {
			return decodeSimBlocks(data, i, p)
		}
		var v bool
		switch {
		case bytes.HasPrefix(data[i:], []byte("true")):
			v, i = true, i+4
		case bytes.HasPrefix(data[i:], []byte("false")):
			i += 5
		default:
			return 0, false
		}
		switch k {
		case 1:
			p.TraceTransfers = v
		case 2:
			p.Validation = v
		case 3:
			p.ReturnFullTransactions = v
		}
		return i, true
	})
	return ok && skipWS(data, end) == len(data)
}

// decodeSimBlocks decodes the blockStateCalls array starting at data[i].
func decodeSimBlocks(data []byte, i int, p *simPayload) (int, bool) {
	p.BlockStateCalls = []simBlockInput{}
	return scanArray(data, i, func(i int) (int, bool) {
		var (
			b    simBlockInput
			seen [3]bool
		)
		end, ok := scanObject(data, i, func(key []byte, i int) (int, bool) {
			var k int
			switch string(key) {
			case "blockOverrides":
				k = 0
			case "stateOverrides":
				k = 1
			case "calls":
				k = 2
			default:
				return 0, false
			}
			if seen[k] {
				return 0, false
			}
			seen[k] = true
			if k == 2 {
				b.Calls = []CallArgs{}
				return scanArray(data, i, func(i int) (int, bool) {
					end, ok := skipValue(data, i)
					if !ok || data[i] != '{' {
						return 0, false
					}
					var c CallArgs
					if c.UnmarshalJSON(data[i:end]) != nil {
						return 0, false
					}
					b.Calls = append(b.Calls, c)
					return end, true
				})
			}
			end, ok := skipValue(data, i)
			if !ok || data[i] != '{' {
				return 0, false
			}
			if k == 0 {
				b.BlockOverrides = new(BlockOverrides)
				return end, json.Unmarshal(data[i:end], b.BlockOverrides) == nil
			}
			return end, b.StateOverrides.UnmarshalJSON(data[i:end]) == nil
		})
		if ok {
			p.BlockStateCalls = append(p.BlockStateCalls, b)
		}
		return end, ok
	})
}

// scanObject walks the object starting at data[i]: member is called with
// each key (a plain string, see scanPlainString) and the index of its
// value, and returns the index after the value. It returns the index after
// the object.
func scanObject(data []byte, i int, member func(key []byte, i int) (int, bool)) (int, bool) {
	if i >= len(data) || data[i] != '{' {
		return 0, false
	}
	i = skipWS(data, i+1)
	if i < len(data) && data[i] == '}' {
		return i + 1, true
	}
	for {
		key, next, ok := scanPlainString(data, i)
		if !ok {
			return 0, false
		}
		i = skipWS(data, next)
		if i >= len(data) || data[i] != ':' {
			return 0, false
		}
		if i, ok = member(key, skipWS(data, i+1)); !ok {
			return 0, false
		}
		var done bool
		if i, done, ok = afterItem(data, i, '}'); !ok || done {
			return i, ok
		}
	}
}

// scanArray walks the array starting at data[i]: elem is called with the
// index of each element and returns the index after it. It returns the
// index after the array.
func scanArray(data []byte, i int, elem func(i int) (int, bool)) (int, bool) {
	if i >= len(data) || data[i] != '[' {
		return 0, false
	}
	i = skipWS(data, i+1)
	if i < len(data) && data[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = elem(i); !ok {
			return 0, false
		}
		var done bool
		if i, done, ok = afterItem(data, i, ']'); !ok || done {
			return i, ok
		}
	}
}

// afterItem reads what follows a member or element at data[i]: a comma
// (the index of the next item, done false) or the closing byte (the index
// after it, done true); anything else is not ok.
func afterItem(data []byte, i int, closing byte) (next int, done, ok bool) {
	i = skipWS(data, i)
	if i >= len(data) {
		return 0, false, false
	}
	switch data[i] {
	case ',':
		return skipWS(data, i+1), false, true
	case closing:
		return i + 1, true, true
	}
	return 0, false, false
}

// skipValue returns the index after the object or array starting at
// data[i], matching brackets outside strings. It does not validate what
// is inside: the caller hands the value to a decoder that does.
func skipValue(data []byte, i int) (int, bool) {
	depth := 0
	for j := i; j < len(data); j++ {
		switch data[j] {
		case '"':
			for j++; j < len(data) && data[j] != '"'; j++ {
				if data[j] == '\\' {
					j++
				}
			}
			if j >= len(data) {
				return 0, false
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1, true
			}
			if depth < 0 {
				return 0, false
			}
		default:
			if depth == 0 {
				return 0, false // not an object or array
			}
		}
	}
	return 0, false
}
