package rpc

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// request is one decoded JSON-RPC request (or batch element).
type request struct {
	// id is the raw id exactly as sent; nil when the member is absent
	// (a notification). JSON null is the 4 bytes "null".
	id     json.RawMessage
	method string
	params []json.RawMessage
	// objParams is set when params was a JSON object (answered -32602 after
	// the method lookup).
	objParams bool
	// err is set when the element is not a valid request; it is answered
	// with this error (and id, or null) without executing anything.
	err *Error
}

// detached returns r with its parameters copied into one new buffer: a
// handler that may outlive the answer (a hand-off answered at its deadline)
// must not read the message's buffer, which the transport reuses once the
// message is answered (fasthttp's request body).
func (r *request) detached() *request {
	n := 0
	for _, p := range r.params {
		n += len(p)
	}
	d := *r
	if n == 0 {
		return &d
	}
	buf := make([]byte, 0, n)
	d.params = make([]json.RawMessage, len(r.params))
	for i, p := range r.params {
		start := len(buf)
		buf = append(buf, p...)
		d.params[i] = buf[start:len(buf):len(buf)]
	}
	return &d
}

// isNotification reports whether no response must be sent.
func (r *request) isNotification() bool { return r.id == nil && r.err == nil }

// decodeMessage decodes one message (HTTP body or websocket message).
// It returns the requests and whether the message was a batch. When the
// message as a whole is invalid (parse error, empty batch, batch too long),
// reqs is nil and msgErr is the single error to answer with id null.
func decodeMessage(body []byte, maxBatch int) (reqs []*request, batch bool, msgErr *Error) {
	body = bytes.TrimLeft(body, " \t\r\n")
	if len(body) == 0 {
		return nil, false, ErrParse("empty message")
	}
	if body[0] == '[' {
		if !validJSON(body) {
			var elems []json.RawMessage
			err := json.Unmarshal(body, &elems) // for encoding/json's description
			detail := "invalid JSON"
			if err != nil {
				detail = err.Error()
			}
			return nil, false, ErrParse(detail)
		}
		elems := splitArray(body)
		if len(elems) == 0 {
			return nil, false, ErrInvalidRequest("empty batch")
		}
		if maxBatch > 0 && len(elems) > maxBatch {
			return nil, false, ErrLimit("batch too large (%d elements, limit %d)", len(elems), maxBatch)
		}
		reqs = make([]*request, len(elems))
		for i, e := range elems {
			reqs[i] = parseRequest(e)
		}
		return reqs, true, nil
	}
	if !validJSON(body) { // encoding/json.Valid's verdict, faster (jsonvalid.go)
		var v json.RawMessage
		err := json.Unmarshal(body, &v)
		detail := "invalid JSON"
		if err != nil {
			detail = err.Error()
		}
		return nil, false, ErrParse(detail)
	}
	return []*request{parseRequest(body)}, false, nil
}

// parseRequest validates one syntactically valid JSON value as a request.
func parseRequest(raw json.RawMessage) *request {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 || raw[0] != '{' {
		return &request{err: ErrInvalidRequest("not a JSON object")}
	}
	m, ok := scanEnvelope(raw)
	if !ok { // escaped member names: let encoding/json unescape them
		var all map[string]json.RawMessage
		if err := json.Unmarshal(raw, &all); err != nil {
			return &request{err: ErrInvalidRequest(err.Error())}
		}
		m = envelope{id: all["id"], jsonrpc: all["jsonrpc"], method: all["method"], params: all["params"]}
	}
	r := &request{}
	if id := m.id; id != nil {
		if !validID(id) {
			return &request{err: ErrInvalidRequest("id must be a string, number or null")}
		}
		if id[0] == '"' && !validUnicode(id) {
			// The id is echoed byte for byte: one that is not valid
			// Unicode would make the answer invalid JSON (RFC 8259
			// section 8) for strict parsers. Refused, id null.
			return &request{err: ErrParse("id is not valid UTF-8 (invalid bytes or an escaped lone surrogate)")}
		}
		r.id = id
	}
	fail := func(e *Error) *request {
		r.err = e
		if r.id == nil {
			r.id = json.RawMessage("null")
		}
		return r
	}
	v := m.jsonrpc
	var version string
	if v == nil || (string(v) != `"2.0"` && (json.Unmarshal(v, &version) != nil || version != "2.0")) {
		return fail(ErrInvalidRequest(`"jsonrpc" must be "2.0"`))
	}
	mv := m.method
	if len(mv) == 0 || mv[0] != '"' {
		return fail(ErrInvalidRequest(`"method" must be a string`))
	}
	if plain := mv[1 : len(mv)-1]; bytes.IndexByte(plain, '\\') < 0 {
		r.method = string(plain)
	} else if json.Unmarshal(mv, &r.method) != nil {
		return fail(ErrInvalidRequest(`"method" must be a string`))
	}
	if r.method == "" {
		return fail(ErrInvalidRequest(`"method" must not be empty`))
	}
	if p := m.params; p != nil {
		switch p[0] {
		case 'n': // null
		case '[':
			r.params = splitArray(p)
		case '{':
			r.objParams = true
		default:
			return fail(ErrInvalidRequest(`"params" must be an array`))
		}
	}
	return r
}

// validUnicode reports whether the JSON string s (quotes included, valid
// JSON) is valid UTF-8 and has no \u escape of a lone UTF-16 surrogate.
func validUnicode(s []byte) bool {
	if !utf8.Valid(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		i++
		if s[i] != 'u' {
			continue
		}
		r := hex4(s[i+1 : i+5])
		i += 4
		switch {
		case r >= 0xdc00 && r <= 0xdfff: // a low surrogate first
			return false
		case r >= 0xd800 && r <= 0xdbff: // a high one: a low one must follow
			if i+6 >= len(s) || s[i+1] != '\\' || s[i+2] != 'u' {
				return false
			}
			if lo := hex4(s[i+3 : i+7]); lo < 0xdc00 || lo > 0xdfff {
				return false
			}
			i += 6
		}
	}
	return true
}

// hex4 decodes four hex digits (valid JSON: they are).
func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// validID reports whether raw (a valid JSON value) is a string, number or null.
func validID(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	switch c := raw[0]; {
	case c == '"', c == 'n', c == '-', c >= '0' && c <= '9':
		return true
	}
	return false
}

var nullID = json.RawMessage("null")

// RawResult is a handler result that is already encoded: one valid,
// compact JSON value, written into the response as is. encoding/json
// validates and compacts the output of every json.Marshaler again (for a
// large result, more CPU than writing it); a handler that writes its own
// JSON returns RawResult instead and answers for its validity.
type RawResult []byte

// encodeResult builds {"jsonrpc":"2.0","id":ID,"result":RESULT}.
func encodeResult(id, result json.RawMessage) []byte {
	if id == nil {
		id = nullID
	}
	b := make([]byte, 0, len(id)+len(result)+32)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, '}')
}

// encodeError builds {"jsonrpc":"2.0","id":ID,"error":{…}}.
func encodeError(id json.RawMessage, e *Error) []byte {
	if id == nil {
		id = nullID
	}
	eb, err := json.Marshal(e)
	if err != nil { // Data not marshallable: drop it.
		eb, _ = json.Marshal(&Error{Code: e.Code, Message: e.Message})
	}
	b := make([]byte, 0, len(id)+len(eb)+32)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"error":`...)
	b = append(b, eb...)
	return append(b, '}')
}

// encodeNotification builds an eth_subscription notification.
func encodeNotification(subID string, result json.RawMessage) []byte {
	b := make([]byte, 0, len(result)+128)
	b = append(b, `{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":`...)
	b = strconv.AppendQuote(b, subID)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, `}}`...)
}

// joinBatch encodes batch element responses as one JSON array; nil when
// there is nothing to send (all notifications).
func joinBatch(parts [][]byte) []byte {
	n, total := 0, 2
	for _, p := range parts {
		if p != nil {
			n++
			total += len(p) + 1
		}
	}
	if n == 0 {
		return nil
	}
	b := make([]byte, 0, total)
	b = append(b, '[')
	first := true
	for _, p := range parts {
		if p == nil {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, p...)
	}
	return append(b, ']')
}

// The scanners below walk JSON that is already known to be valid (the
// message passed json.Valid, or is an element of a batch that
// json.Unmarshal accepted): they only find where values start and end, so
// the envelope is read in one pass instead of encoding/json's validate-then-
// decode passes at every level. Values are sub-slices of the message, as
// json.RawMessage from encoding/json would hold (without surrounding
// whitespace).

// envelope holds the members of a request object that JSON-RPC reads; nil
// is an absent member (a present one is never empty).
type envelope struct {
	id, jsonrpc, method, params json.RawMessage
}

// scanEnvelope returns the id, jsonrpc, method and params members of a
// valid JSON object (later duplicates win, as with encoding/json; other
// members are skipped), without a map or a string per member. ok is false
// when a member name holds an escape or a non-ASCII byte (encoding/json
// unescapes names and replaces invalid UTF-8), which the caller leaves to
// encoding/json.
func scanEnvelope(obj []byte) (e envelope, ok bool) {
	i := skipSpace(obj, 1)
	for i < len(obj) && obj[i] == '"' {
		end := skipString(obj, i)
		name := obj[i+1 : end-1]
		if !plainName(name) {
			return envelope{}, false
		}
		i = skipSpace(obj, skipSpace(obj, end)+1) // past ':'
		vend := skipValue(obj, i)
		v := json.RawMessage(obj[i:vend:vend])
		switch string(name) {
		case "id":
			e.id = v
		case "jsonrpc":
			e.jsonrpc = v
		case "method":
			e.method = v
		case "params":
			e.params = v
		}
		i = skipSpace(obj, vend)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	return e, true
}

// splitArray returns the elements of a valid JSON array (never nil).
func splitArray(arr []byte) []json.RawMessage {
	out := make([]json.RawMessage, 0, 4)
	i := skipSpace(arr, 1)
	for i < len(arr) && arr[i] != ']' {
		end := skipValue(arr, i)
		out = append(out, arr[i:end:end])
		i = skipSpace(arr, end)
		if i < len(arr) && arr[i] == ',' {
			i = skipSpace(arr, i+1)
		}
	}
	return out
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index past the string starting at b[i] == '"'.
func skipString(b []byte, i int) int {
	for i++; i < len(b); {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return len(b)
		}
		i += j
		// An odd run of backslashes before the quote escapes it.
		n := 0
		for k := i - 1; b[k] == '\\'; k-- {
			n++
		}
		i++
		if n%2 == 0 {
			return i
		}
	}
	return len(b)
}

// skipValue returns the index past the value starting at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return len(b)
	default: // number, true, false, null
		for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
			i++
		}
		return i
	}
}

// plainName reports whether a member name is ASCII without escapes.
func plainName(name []byte) bool {
	for _, c := range name {
		if c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}
