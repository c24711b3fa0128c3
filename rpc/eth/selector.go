package eth

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/tipnode/tipnode/rpc"
)

// BlockTag is a named block.
type BlockTag uint8

// Block tags. TagNone means the selector names a number or a hash.
const (
	TagNone      BlockTag = iota
	TagLatest             // "latest": the head block
	TagPending            // "pending": the pre-confirmed state
	TagSafe               // "safe"
	TagFinalized          // "finalized"
	TagEarliest           // "earliest": genesis
)

var tagNames = [...]string{"", "latest", "pending", "safe", "finalized", "earliest"}

// String returns the JSON name of the tag ("" for TagNone).
func (t BlockTag) String() string {
	if int(t) < len(tagNames) {
		return tagNames[t]
	}
	return fmt.Sprintf("BlockTag(%d)", uint8(t))
}

func parseTag(s string) (BlockTag, bool) {
	for i, n := range tagNames {
		if i > 0 && n == s {
			return BlockTag(i), true
		}
	}
	return TagNone, false
}

// BlockSelector names the block a method reads at. A decoded selector has
// exactly one of: Tag != TagNone, Number != nil, Hash != nil.
// RequireCanonical is only meaningful with Hash (EIP-1898).
//
// Accepted JSON:
//   - a tag string: "latest", "pending", "safe", "finalized", "earliest";
//   - a hex quantity string: "0x0", "0x1b4" (no leading zeros, at most
//     2^63-1, like go-ethereum);
//   - a 32-byte hash string "0x…" (64 hex digits), as go-ethereum accepts;
//   - EIP-1898 objects {"blockHash":"0x…","requireCanonical":bool} or
//     {"blockNumber":"0x…" | tag}; both keys (or neither) is an error.
type BlockSelector struct {
	Tag              BlockTag
	Number           *uint64
	Hash             *common.Hash
	RequireCanonical bool
}

// Latest returns the "latest" selector.
func Latest() BlockSelector { return BlockSelector{Tag: TagLatest} }

// SelectHash returns a selector for the block with hash h.
func SelectHash(h common.Hash, requireCanonical bool) BlockSelector {
	return BlockSelector{Hash: &h, RequireCanonical: requireCanonical}
}

// String describes the selector (for logs and error messages).
func (s BlockSelector) String() string {
	switch {
	case s.Hash != nil:
		if s.RequireCanonical {
			return s.Hash.Hex() + " (canonical)"
		}
		return s.Hash.Hex()
	case s.Number != nil:
		return hexutil.EncodeUint64(*s.Number)
	default:
		return s.Tag.String()
	}
}

// MarshalJSON encodes the selector in the form it was decoded from (a hash
// selector as an EIP-1898 object).
func (s BlockSelector) MarshalJSON() ([]byte, error) {
	switch {
	case s.Hash != nil:
		return json.Marshal(struct {
			BlockHash        common.Hash `json:"blockHash"`
			RequireCanonical bool        `json:"requireCanonical,omitempty"`
		}{*s.Hash, s.RequireCanonical})
	case s.Number != nil:
		return json.Marshal(hexutil.EncodeUint64(*s.Number))
	case s.Tag != TagNone:
		return json.Marshal(s.Tag.String())
	}
	return nil, errors.New("empty block selector")
}

// UnmarshalJSON implements json.Unmarshaler.
func (s *BlockSelector) UnmarshalJSON(data []byte) error {
	if len(data) == 0 {
		return errors.New("empty block selector")
	}
	switch data[0] {
	case '"':
		if str, ok := plainJSONString(data); ok {
			return s.fromString(str, true)
		}
		var str string
		if err := json.Unmarshal(data, &str); err != nil {
			return err
		}
		return s.fromString(str, true)
	case '{':
		var obj struct {
			BlockNumber      *string      `json:"blockNumber"`
			BlockHash        *common.Hash `json:"blockHash"`
			RequireCanonical *bool        `json:"requireCanonical"`
		}
		if err := json.Unmarshal(data, &obj); err != nil {
			return err
		}
		switch {
		case obj.BlockNumber != nil && obj.BlockHash != nil:
			return errors.New(`block selector: "blockNumber" and "blockHash" are mutually exclusive`)
		case obj.BlockHash != nil:
			*s = BlockSelector{Hash: obj.BlockHash, RequireCanonical: obj.RequireCanonical != nil && *obj.RequireCanonical}
			return nil
		case obj.BlockNumber != nil:
			if obj.RequireCanonical != nil {
				return errors.New(`block selector: "requireCanonical" is only allowed with "blockHash"`)
			}
			return s.fromString(*obj.BlockNumber, false)
		}
		return errors.New(`block selector object needs "blockNumber" or "blockHash"`)
	}
	return fmt.Errorf("invalid block selector %s: want a hex block number, a tag or an EIP-1898 object", quoteInput(string(data)))
}

// plainJSONString returns the contents of a JSON string made of printable
// ASCII without escapes ("latest", "0x1b4"), which is what encoding/json
// would decode it to; ok false for anything else (escapes, control or
// non-ASCII bytes, which encoding/json rewrites, or not one string),
// left to encoding/json.
func plainJSONString(data []byte) (string, bool) {
	if len(data) < 2 || data[0] != '"' || data[len(data)-1] != '"' {
		return "", false
	}
	in := data[1 : len(data)-1]
	for _, c := range in {
		if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return "", false
		}
	}
	return string(in), true
}

func (s *BlockSelector) fromString(str string, allowHash bool) error {
	if t, ok := parseTag(str); ok {
		*s = BlockSelector{Tag: t}
		return nil
	}
	if allowHash && len(str) == 66 {
		var h common.Hash
		if err := h.UnmarshalText([]byte(str)); err != nil {
			return fmt.Errorf("invalid block hash %s: %v", quoteInput(str), err)
		}
		*s = BlockSelector{Hash: &h}
		return nil
	}
	if strings.HasPrefix(str, "-") {
		return fmt.Errorf("invalid block number %s: negative (want 0x followed by hex digits, or a tag)", quoteInput(str))
	}
	n, err := hexutil.DecodeUint64(str)
	if err != nil {
		return fmt.Errorf("invalid block number %s: %v", quoteInput(str), err)
	}
	if n > math.MaxInt64 {
		return fmt.Errorf("invalid block number %s: larger than 2^63-1", quoteInput(str))
	}
	*s = BlockSelector{Number: &n}
	return nil
}

// DecodeSelector decodes argument i (called name) as a BlockSelector; an
// absent or null argument means "latest". Errors are invalid-params *Error.
func DecodeSelector(p rpc.Params, i int, name string) (BlockSelector, error) {
	var s BlockSelector
	present, err := p.DecodeOptional(i, name, &s)
	if err != nil {
		return BlockSelector{}, err
	}
	if !present {
		return Latest(), nil
	}
	return s, nil
}
