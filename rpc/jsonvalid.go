package rpc

import (
	"encoding/binary"
	"math/bits"
)

// validJSON reports whether data is one JSON value (with optional
// surrounding whitespace), accepting exactly what encoding/json.Valid
// accepts (FuzzValidJSON compares them): RFC 8259 grammar, any byte from
// 0x20 up inside strings (invalid UTF-8 included, as encoding/json), at
// most maxJSONDepth nested arrays/objects. It exists for speed: a request
// body is mostly one long hex string (call data), which encoding/json's
// byte-at-a-time state machine crosses several times slower than the
// string loop here.
func validJSON(data []byte) bool {
	v := jsonValidator{data: data}
	i, ok := v.value(v.ws(0), 0)
	return ok && v.ws(i) == len(data)
}

// maxJSONDepth is encoding/json's nesting limit.
const maxJSONDepth = 10000

type jsonValidator struct{ data []byte }

func (v *jsonValidator) ws(i int) int {
	for i < len(v.data) {
		switch v.data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// value validates the value at i (no leading whitespace) at nesting depth
// and returns the index after it.
func (v *jsonValidator) value(i, depth int) (int, bool) {
	d := v.data
	if i >= len(d) {
		return i, false
	}
	switch c := d[i]; {
	case c == '"':
		return v.str(i)
	case c == '{':
		if depth >= maxJSONDepth {
			return i, false
		}
		i = v.ws(i + 1)
		if i < len(d) && d[i] == '}' {
			return i + 1, true
		}
		for {
			var ok bool
			if i >= len(d) || d[i] != '"' {
				return i, false
			}
			if i, ok = v.str(i); !ok {
				return i, false
			}
			i = v.ws(i)
			if i >= len(d) || d[i] != ':' {
				return i, false
			}
			if i, ok = v.value(v.ws(i+1), depth+1); !ok {
				return i, false
			}
			var done bool
			if i, done, ok = v.afterItem(i, '}'); done || !ok {
				return i, ok
			}
		}
	case c == '[':
		if depth >= maxJSONDepth {
			return i, false
		}
		i = v.ws(i + 1)
		if i < len(d) && d[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = v.value(i, depth+1); !ok {
				return i, false
			}
			var done bool
			if i, done, ok = v.afterItem(i, ']'); done || !ok {
				return i, ok
			}
		}
	case c == '-' || (c >= '0' && c <= '9'):
		return v.number(i)
	case c == 't':
		return v.literal(i, "true")
	case c == 'f':
		return v.literal(i, "false")
	case c == 'n':
		return v.literal(i, "null")
	}
	return i, false
}

// afterItem reads what follows an object member or array element ending at
// i: a ',' (returns the index of the next item, done false) or the
// container's closing byte (returns the index after it, done true).
func (v *jsonValidator) afterItem(i int, closing byte) (next int, done, ok bool) {
	i = v.ws(i)
	switch {
	case i >= len(v.data):
		return i, false, false
	case v.data[i] == ',':
		return v.ws(i + 1), false, true
	case v.data[i] == closing:
		return i + 1, true, true
	}
	return i, false, false
}

func (v *jsonValidator) literal(i int, lit string) (int, bool) {
	if len(v.data)-i < len(lit) || string(v.data[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// str validates the string starting at the quote at i.
func (v *jsonValidator) str(i int) (int, bool) {
	d := v.data
	for i++; ; i++ {
		i = StringRun(d, i)
		if i >= len(d) {
			return i, false
		}
		switch c := d[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		}
		// An escape.
		i++
		if i >= len(d) {
			return i, false
		}
		switch d[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		case 'u':
			if len(d)-i < 5 {
				return i, false
			}
			for _, h := range d[i+1 : i+5] {
				if !isHex(h) {
					return i, false
				}
			}
			i += 4
		default:
			return i, false
		}
	}
}

// StringRun returns the index of the first byte of d at or after i that
// ends a plain run of a JSON string's contents: a quote, a backslash or a
// control character (below 0x20); len(d) when there is none. It tests
// eight bytes at a time (a request's call data is one long hex string,
// crossed by the validator and again by the parameter decoders).
func StringRun(d []byte, i int) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	for ; i+8 <= len(d); i += 8 {
		x := binary.LittleEndian.Uint64(d[i:])
		// The high bit of a byte of x-n*ones (x's high bit clear) is set
		// when that byte is below n, or when a lower byte was (the
		// borrow): the lowest one flagged is exact. Equality with c is a
		// zero byte of x^(c*ones).
		m := ((x - 0x20*ones) | ((x ^ '"'*ones) - ones) | ((x ^ '\\'*ones) - ones)) &^ x & highs
		if m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(d); i++ {
		if c := d[i]; c < 0x20 || c == '"' || c == '\\' {
			return i
		}
	}
	return len(d)
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// number validates -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at i.
func (v *jsonValidator) number(i int) (int, bool) {
	d := v.data
	if d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		i = v.digits(i)
	default:
		return i, false
	}
	if i < len(d) && d[i] == '.' {
		j := v.digits(i + 1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := v.digits(i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

func (v *jsonValidator) digits(i int) int {
	for i < len(v.data) && v.data[i] >= '0' && v.data[i] <= '9' {
		i++
	}
	return i
}
