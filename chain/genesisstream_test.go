package chain_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/chain"
)

// TestReadGenesisRefusals: what go-ethereum's decoder refuses is refused,
// naming the account and member; what the stream cannot reproduce is
// ErrGenesisUnstreamable.
func TestReadGenesisRefusals(t *testing.T) {
	const head = `{"config":{"chainId":1},"gasLimit":"0x1","difficulty":"0x0",`
	const a = `"1000000000000000000000000000000000000001"`
	tests := []struct {
		name, spec string
		want       string // in the error
		unstream   bool
	}{
		{"not an object", `[]`, "not a JSON object", false},
		{"trailing data", head + `"alloc":{}} {}`, "data after the genesis object", false},
		{"truncated", head + `"alloc":{` + a + `:{"balance":"0x1"`, "unexpected EOF", false},
		{"no alloc", `{"config":{"chainId":1},"gasLimit":"0x1","difficulty":"0x0"}`, "missing required field 'alloc'", false},
		{"null alloc", head + `"alloc":null}`, "missing required field 'alloc'", false},
		{"alloc array", head + `"alloc":[]}`, "alloc is not an object", false},
		{"no gasLimit", `{"config":{"chainId":1},"difficulty":"0x0","alloc":{}}`, "missing required field 'gasLimit'", false},
		{"no config", `{"gasLimit":"0x1","difficulty":"0x0","alloc":{}}`, `missing "config"`, false},
		{"no chain id", `{"config":{},"gasLimit":"0x1","difficulty":"0x0","alloc":{}}`, "no chainId", false},
		{"short address", head + `"alloc":{"0x10":{"balance":"0x1"}}}`, `account "0x10"`, false},
		{"bad address", head + `"alloc":{"zz00000000000000000000000000000000000001":{"balance":"0x1"}}}`, "zz0000", false},
		{"null account", head + `"alloc":{` + a + `:null}}`, "0x1000000000000000000000000000000000000001: null: missing required field 'balance'", false},
		{"account string", head + `"alloc":{` + a + `:"x"}}`, "not an object", false},
		{"no balance", head + `"alloc":{` + a + `:{"nonce":"0x1"}}}`, "0x1000000000000000000000000000000000000001: missing required field 'balance'", false},
		{"bad balance", head + `"alloc":{` + a + `:{"balance":"0xzz"}}}`, "0x1000000000000000000000000000000000000001", false},
		{"balance too big", head + `"alloc":{` + a + `:{"balance":"0x1` + strings.Repeat("0", 64) + `"}}}`, "0x1000000000000000000000000000000000000001", false},
		{"bad nonce", head + `"alloc":{` + a + `:{"balance":"0x1","nonce":"x"}}}`, "0x1000000000000000000000000000000000000001", false},
		{"code without 0x", head + `"alloc":{` + a + `:{"balance":"0x1","code":"6001"}}}`, "0x1000000000000000000000000000000000000001", false},
		{"storage array", head + `"alloc":{` + a + `:{"balance":"0x1","storage":[]}}}`, "storage is not an object", false},
		{"long slot", head + `"alloc":{` + a + `:{"balance":"0x1","storage":{"0x` + strings.Repeat("1", 66) + `":"0x1"}}}}`, "more than 64 hex digits", false},
		{"odd slot", head + `"alloc":{` + a + `:{"balance":"0x1","storage":{"0x1":"0x1"}}}}`, `storage key "0x1": odd number`, false},
		{"0X slot", head + `"alloc":{` + a + `:{"balance":"0x1","storage":{"0X01":"0x1"}}}}`, "invalid hex", false},
		{"number value", head + `"alloc":{` + a + `:{"balance":"0x1","storage":{"0x01":1}}}}`, "not a hex string", false},
		{"object value", head + `"alloc":{` + a + `:{"balance":"0x1","storage":{"0x01":{}}}}}`, "not a hex string", false},
		{"bad value", head + `"alloc":{` + a + `:{"balance":"0x1","storage":{"0x01":"0xgg"}}}}`, `value "0xgg"`, false},
		{"negative balance", head + `"alloc":{` + a + `:{"balance":"-1"}}}`, "negative balance", true},
		{"alloc twice", head + `"alloc":{},"alloc":{}}`, `"alloc" given twice`, true},
		{"storage twice", head + `"alloc":{` + a + `:{"balance":"0x1","storage":{},"storage":{}}}}`, `"storage" given twice`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := chain.ReadGenesis(strings.NewReader(tt.spec), &allocCollector{})
			if err == nil || !errors.Is(err, chain.ErrGenesis) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want ErrGenesis saying %q", err, tt.want)
			}
			if errors.Is(err, chain.ErrGenesisUnstreamable) != tt.unstream {
				t.Fatalf("unstreamable %v, want %v (%v)", !tt.unstream, tt.unstream, err)
			}
		})
	}
}

// allocCollector keeps a streamed alloc as go-ethereum's decoder would:
// the last of a repeated account or slot wins.
type allocCollector struct {
	accounts map[common.Address]collected
	slots    map[common.Hash]common.Hash // of the account being read
	addr     *common.Address
}

type collected struct {
	nonce   uint64
	balance string
	code    string
	storage map[common.Hash]common.Hash
}

func (c *allocCollector) Storage(addr common.Address, slot, value common.Hash) error {
	if c.addr == nil {
		c.addr, c.slots = &addr, make(map[common.Hash]common.Hash)
	} else if *c.addr != addr {
		return fmt.Errorf("slot of %s while reading %s", addr, c.addr)
	}
	c.slots[slot] = value
	return nil
}

func (c *allocCollector) Account(addr common.Address, nonce uint64, balance *uint256.Int, code []byte) error {
	if c.addr != nil && *c.addr != addr {
		return fmt.Errorf("account %s after slots of %s", addr, c.addr)
	}
	if c.accounts == nil {
		c.accounts = make(map[common.Address]collected)
	}
	c.accounts[addr] = collected{nonce, balance.Dec(), string(code), c.slots}
	c.addr, c.slots = nil, nil
	return nil
}

// FuzzReadGenesis: the streaming reader agrees with ParseGenesis
// (go-ethereum's decoder on the whole spec): both refuse, or both accept
// with the same genesis members and the same accounts and slots (the last
// of a repeated one winning, as go-ethereum keeps it). The only refusals
// of the stream ParseGenesis does not share are ErrGenesisUnstreamable's.
func FuzzReadGenesis(f *testing.F) {
	const head = `{"config":{"chainId":1},"gasLimit":"0x1","difficulty":"0x0",`
	for _, s := range []string{
		opGenesis,
		head + `"alloc":{}}`,
		head + `"alloc":{"0x1000000000000000000000000000000000000001":{"balance":"10","nonce":"0x2","code":"0x60","storage":{"0x01":"0x02","":null,"03":""}}}}`,
		head + `"Alloc":{"1000000000000000000000000000000000000001":{"Balance":1,"STORAGE":{"0x01":"0x02"}},"1000000000000000000000000000000000000001":{"balance":"0x3"}}}`,
		head + `"ALLOC":{"1000000000000000000000000000000000000002":{"BALANCE":"0x1","Nonce":2,"Storage":{"0x01":"0x02"}}}}`,
		head + `"alloc":{"1000000000000000000000000000000000000001":{"balance":"-1"}}}`,
		head + `"alloc":{"1000000000000000000000000000000000000001":null}}`,
		head + `"alloc":{},"alloc":null}`,
		`{"config":{"chainId":1,"optimism":{"eip1559Elasticity":6,"eip1559Denominator":50},"bedrockBlock":0},"gasLimit":1,"difficulty":0,"alloc":{}} `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var c allocCollector
		g, _, err := chain.ReadGenesis(bytes.NewReader(data), &c)
		if err != nil && !errors.Is(err, chain.ErrGenesis) {
			t.Fatalf("error without ErrGenesis: %v", err)
		}
		if errors.Is(err, chain.ErrGenesisUnstreamable) {
			return
		}
		want, werr := parseGenesisNoPanic(data)
		switch {
		case err != nil && werr != nil:
			return
		case err != nil:
			t.Fatalf("stream refuses (%v), ParseGenesis accepts", err)
		case werr != nil:
			t.Fatalf("stream accepts, ParseGenesis refuses: %v", werr)
		}
		if len(g.Core.Alloc) != 0 || g.Block != nil {
			t.Fatal("ReadGenesis built an alloc or a block")
		}
		if (g.OP == nil) != (want.OP == nil) {
			t.Fatalf("OP %v, ParseGenesis %v", g.OP, want.OP)
		}
		members := *want.Core
		members.Alloc = g.Core.Alloc
		a, _ := json.Marshal(g.Core)
		b, _ := json.Marshal(&members)
		if !bytes.Equal(a, b) {
			t.Fatalf("genesis members\n%s\nParseGenesis\n%s", a, b)
		}
		if len(c.accounts) != len(want.Core.Alloc) {
			t.Fatalf("%d accounts, ParseGenesis %d", len(c.accounts), len(want.Core.Alloc))
		}
		for addr, acc := range want.Core.Alloc {
			got, ok := c.accounts[addr]
			switch {
			case !ok:
				t.Fatalf("account %s missing", addr)
			case got.nonce != acc.Nonce || got.balance != acc.Balance.String() || got.code != string(acc.Code):
				t.Fatalf("account %s: %+v, ParseGenesis %+v", addr, got, acc)
			case len(got.storage) != len(acc.Storage):
				t.Fatalf("account %s: %d slots, ParseGenesis %d", addr, len(got.storage), len(acc.Storage))
			}
			for k, v := range acc.Storage {
				if gv, ok := got.storage[k]; !ok || gv != v {
					t.Fatalf("account %s slot %s: %s, ParseGenesis %s", addr, k, gv, v)
				}
			}
		}
	})
}

// parseGenesisNoPanic is ParseGenesis with go-ethereum's panic on a
// negative balance (in ToBlock) as an error.
func parseGenesisNoPanic(data []byte) (g *chain.Genesis, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return chain.ParseGenesis(data)
}
