package statedump

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/store"
)

// memSink collects what Load hands over.
type memSink struct {
	accounts map[common.Address]*store.Account
	slots    int
	codes    int
}

func newMemSink() *memSink { return &memSink{accounts: make(map[common.Address]*store.Account)} }

func (m *memSink) Account(addr common.Address, acc *store.Account) error {
	m.accounts[addr] = acc
	return nil
}
func (m *memSink) Storage(common.Address, common.Hash, common.Hash) error { m.slots++; return nil }
func (m *memSink) Code(common.Hash, []byte) error                         { m.codes++; return nil }

// headState returns the conformance dump at block 54 (one object) and
// block 54's state root.
func headState(t *testing.T) ([]byte, common.Hash) {
	t.Helper()
	dir := chaintest.Dir(t)
	raw, err := os.ReadFile(filepath.Join(dir, "chain", "headstate.json"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := chaintest.Blocks(t)
	return raw, blocks[len(blocks)-1].Root()
}

// iterative rewrites a one-object dump as geth's --iterative JSONL:
// {"root":…} then one account per line with its address (accounts in the
// given order, edit applied to each account object).
func iterative(t *testing.T, raw []byte, edit func(i int, acc map[string]any) map[string]any) []byte {
	t.Helper()
	var d struct {
		Root     string                    `json:"root"`
		Accounts map[string]map[string]any `json:"accounts"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	addrs := make([]string, 0, len(d.Accounts))
	for a := range d.Accounts {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "{\"root\":\"0x%s\"}\n", strings.TrimPrefix(d.Root, "0x"))
	for i, a := range addrs {
		acc := d.Accounts[a]
		acc["address"] = a
		if edit != nil {
			if acc = edit(i, acc); acc == nil {
				continue
			}
		}
		line, err := json.Marshal(acc)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

func load(t *testing.T, dump []byte, expected common.Hash) (Result, *memSink, error) {
	t.Helper()
	sink := newMemSink()
	res, err := Load(context.Background(), bytes.NewReader(dump), sink, Config{TempDir: t.TempDir(), MemBytes: 1 << 20, Expected: expected})
	return res, sink, err
}

// TestLoadConformanceDump: go-ethereum's dump of the conformance chain at
// block 54, as one object and as JSONL, makes block 54's state root (the
// oracle: the header geth sealed) with every account handed over.
func TestLoadConformanceDump(t *testing.T) {
	raw, root := headState(t)
	for _, tc := range []struct {
		name   string
		dump   []byte
		format string
	}{
		{"object", raw, FormatGethObject},
		{"iterative", iterative(t, raw, nil), FormatGethIterative},
		{"reth", iterative(t, raw, rethAccount), FormatReth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, sink, err := load(t, tc.dump, root)
			if err != nil {
				t.Fatal(err)
			}
			if res.Root != root || res.Format != tc.format || res.Accounts != 114 || len(sink.accounts) != 114 {
				t.Fatalf("result %+v, %d accounts handed over", res, len(sink.accounts))
			}
			if res.Slots == 0 || int64(sink.slots) != res.Slots || sink.codes == 0 {
				t.Fatalf("slots %d (sink %d), codes %d", res.Slots, sink.slots, sink.codes)
			}
		})
	}
}

// rethAccount rewrites an account as reth's init-state JSONL has it: hex
// balance, nonce as a hex string, 32-byte 0x storage values, no hashed
// key, code hash or storage root.
func rethAccount(_ int, acc map[string]any) map[string]any {
	bal, ok := new(big.Int).SetString(acc["balance"].(string), 10)
	if !ok {
		panic("balance")
	}
	out := map[string]any{"balance": fmt.Sprintf("0x%064x", bal), "nonce": fmt.Sprintf("0x%x", uint64(acc["nonce"].(float64))), "address": acc["address"]}
	if c, ok := acc["code"]; ok {
		out["code"] = c
	}
	if st, ok := acc["storage"].(map[string]any); ok {
		m := make(map[string]string, len(st))
		for k, v := range st {
			m[k] = fmt.Sprintf("0x%064s", v.(string))
		}
		out["storage"] = m
	}
	return out
}

// TestLoadRefusals: every broken dump is refused with what is wrong and
// where.
func TestLoadRefusals(t *testing.T) {
	raw, root := headState(t)
	good := iterative(t, raw, nil)
	lines := strings.Split(string(good), "\n")
	withLine := func(i int, s string) []byte {
		l := append([]string(nil), lines...)
		l[i] = s
		return []byte(strings.Join(l, "\n"))
	}
	firstWithStorage := 0
	for i, l := range lines {
		if strings.Contains(l, `"storage":{"`) {
			firstWithStorage = i
			break
		}
	}
	for _, tc := range []struct {
		name     string
		dump     []byte
		expected common.Hash
		err      error
		msg      string
	}{
		{"malformed line", withLine(5, `{"balance": "1", "nonce": 0,, }`), root, ErrMalformed, "line 6"},
		{"bad balance", withLine(3, `{"balance":"12x","nonce":0,"address":"0x1000000000000000000000000000000000000001"}`), root, ErrMalformed, "line 4"},
		{"truncated", good[:len(good)-40], root, ErrMalformed, "line"},
		{"duplicate account", []byte(strings.Join(append(append([]string(nil), lines[:len(lines)-1]...), lines[7]), "\n")), root, ErrDuplicate, "lines 8 and 116"},
		{"missing account", []byte(strings.Join(append(append([]string(nil), lines[:7]...), lines[8:]...), "\n")), root, ErrRootMismatch, root.Hex()},
		{"wrong block", good, common.Hash{1}, ErrRootLine, root.Hex()},
		{"no address", iterative(t, raw, func(i int, acc map[string]any) map[string]any {
			if i == 3 {
				delete(acc, "address")
			}
			return acc
		}), root, ErrNoAddress, "line 5"},
		{"missing slot", iterative(t, raw, func(i int, acc map[string]any) map[string]any {
			if i == firstWithStorage-1 {
				st := acc["storage"].(map[string]any)
				for k := range st {
					delete(st, k)
					break
				}
			}
			return acc
		}), root, ErrMismatch, fmt.Sprintf("line %d", firstWithStorage+1)},
		{"not a dump", []byte(`[1,2]`), root, ErrMalformed, "line 1"},
		{"no root line", []byte(`{"balance":"1","nonce":0,"address":"0x1000000000000000000000000000000000000001"}`), root, ErrMalformed, "line 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := load(t, tc.dump, tc.expected)
			if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want %v mentioning %q", err, tc.err, tc.msg)
			}
		})
	}
}
