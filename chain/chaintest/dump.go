package chaintest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/tipnode/tipnode/store"
)

// DumpJSONL writes the state of db at block n as go-ethereum's `geth dump
// --iterative` does: a line {"root": …} (block n's state root, from its
// header) and one account per line (decimal balance, nonce, code, hashed
// key, storage values without leading zeros, address). Accounts come in
// address order (go-ethereum's are in hashed order: readers must not
// depend on it).
func DumpJSONL(t testing.TB, db *store.DB, n uint64) []byte {
	t.Helper()
	view, err := db.View()
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	hash, err := view.CanonicalHash(n)
	if err != nil {
		t.Fatal(err)
	}
	h, err := view.Header(n, hash)
	if err != nil {
		t.Fatal(err)
	}
	st, err := view.StateAt(n)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "{\"root\":%q}\n", h.Root.Hex())
	type account struct {
		Balance  string            `json:"balance"`
		Nonce    uint64            `json:"nonce"`
		CodeHash hexutil.Bytes     `json:"codeHash"`
		Code     hexutil.Bytes     `json:"code,omitempty"`
		Storage  map[string]string `json:"storage,omitempty"`
		Address  common.Address    `json:"address"`
		Key      hexutil.Bytes     `json:"key"`
	}
	err = st.ForEachAccount(func(addr common.Address, acc *store.Account) error {
		a := account{Balance: acc.Balance.Dec(), Nonce: acc.Nonce, CodeHash: acc.CodeHash[:], Address: addr, Key: crypto.Keccak256(addr[:])}
		if acc.CodeHash != types.EmptyCodeHash {
			if a.Code, err = st.Code(acc.CodeHash); err != nil {
				return err
			}
		}
		err := st.ForEachStorage(addr, func(slot, value common.Hash) error {
			if a.Storage == nil {
				a.Storage = make(map[string]string)
			}
			a.Storage[slot.Hex()] = common.Bytes2Hex(common.TrimLeftZeroes(value[:]))
			return nil
		})
		if err != nil {
			return err
		}
		line, err := json.Marshal(a)
		if err != nil {
			return err
		}
		buf.Write(line)
		buf.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
