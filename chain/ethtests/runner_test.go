package ethtests

import (
	"math/big"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// The runner itself can fail: each check, given a fixture changed to
// contradict what tipnode does, reports the difference.
func TestRunnerDetectsDivergence(t *testing.T) {
	path := filepath.Join(suiteDir(t), "ValidBlocks", "bcEIP1153-transientStorage", "tloadDoesNotPersistAcrossBlocks.json")
	load := func() *Fixture {
		tests, err := LoadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(tests) != 1 || len(tests[0].Blocks) < 2 || tests[0].PostState == nil {
			t.Fatalf("%s: want one test of at least 2 blocks with a postState", path)
		}
		return tests[0]
	}
	if err := Run(load()); err != nil {
		t.Fatalf("unchanged fixture: %v", err)
	}
	// anAccount returns an account of the post state with storage.
	anAccount := func(f *Fixture) common.Address {
		for addr, acc := range f.PostState {
			if len(acc.Storage) > 0 {
				return addr
			}
		}
		t.Fatal("no account with storage in the post state")
		return common.Address{}
	}
	cases := []struct {
		name   string
		change func(f *Fixture)
		want   string
	}{
		{"balance", func(f *Fixture) {
			a := anAccount(f)
			acc := f.PostState[a]
			acc.Balance = new(big.Int).Add(acc.Balance, common.Big1)
			f.PostState[a] = acc
		}, "balance"},
		{"nonce", func(f *Fixture) {
			a := anAccount(f)
			acc := f.PostState[a]
			acc.Nonce++
			f.PostState[a] = acc
		}, "nonce"},
		{"code", func(f *Fixture) {
			a := anAccount(f)
			acc := f.PostState[a]
			acc.Code = append([]byte{0x00}, acc.Code...)
			f.PostState[a] = acc
		}, "code"},
		{"slot value", func(f *Fixture) {
			a := anAccount(f)
			for k, v := range f.PostState[a].Storage {
				v[31] ^= 1
				f.PostState[a].Storage[k] = v
				break
			}
		}, "slot"},
		{"extra slot in the state", func(f *Fixture) {
			a := anAccount(f)
			for k := range f.PostState[a].Storage {
				delete(f.PostState[a].Storage, k)
				break
			}
		}, "want 0x0000000000000000000000000000000000000000000000000000000000000000"},
		{"missing slot", func(f *Fixture) {
			f.PostState[anAccount(f)].Storage[common.Hash{0xee}] = common.Hash{0x01}
		}, "missing"},
		{"extra account in the state", func(f *Fixture) { delete(f.PostState, anAccount(f)) }, "extra account"},
		{"missing account", func(f *Fixture) {
			f.PostState[common.Address{0xee}] = types.Account{Balance: common.Big1}
		}, "account 0xee00000000000000000000000000000000000000 missing"},
		{"lastblockhash", func(f *Fixture) { f.LastBlockHash[0] ^= 1 }, "lastblockhash"},
		{"postStateHash", func(f *Fixture) { f.PostStateHash = &common.Hash{0x01} }, "poststatehash"},
		{"genesis hash", func(f *Fixture) { f.GenesisBlockHeader.Hash[0] ^= 1 }, "genesis block hash"},
		{"valid block marked invalid", func(f *Fixture) { f.Blocks[1].ExpectException = "made up" }, "imported although it must be refused"},
		{"valid block that does not decode", func(f *Fixture) {
			b := &f.Blocks[1]
			b.RLP = b.RLP[:len(b.RLP)-2] // cut: does not decode
		}, "block 1 refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := load()
			tc.change(f)
			err := Run(f)
			if err == nil || !strings.Contains(strings.ToLower(err.Error()), tc.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}
