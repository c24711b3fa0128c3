package statedump

import (
	"bytes"
	"context"
	"fmt"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"
)

// TestLoadMatchesGethStateDB: a dump with one contract of 300k slots
// (more than the parser keeps in memory: the rest goes through its file)
// and accounts of every kind, read with a 1 MiB sort budget (many spilled
// runs), makes the state root go-ethereum's StateDB computes for the same
// state, and the sink gets every entry once.
func TestLoadMatchesGethStateDB(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 300k slots")
	}
	const slots = slotSpill + 44_000
	sdb, err := state.New(types.EmptyRootHash, state.NewDatabaseForTesting())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	buf.WriteString("{\"root\":\"ROOT\"}\n")
	for i := range 500 {
		addr := common.BigToAddress(big.NewInt(int64(i + 1)))
		bal := uint256.NewInt(uint64(i+1) * 1_000_003) // no empty account: go-ethereum deletes those (EIP-158)
		sdb.AddBalance(addr, bal, tracing.BalanceChangeUnspecified)
		sdb.SetNonce(addr, uint64(i%5), tracing.NonceChangeUnspecified)
		fmt.Fprintf(&buf, "{\"balance\":\"0x%x\",\"nonce\":%d,\"address\":%q}\n", bal.ToBig(), i%5, addr.Hex())
	}
	token := common.HexToAddress("0x00000000000000000000000000000000000c0de0")
	code := []byte{0x60, 0x01, 0x60, 0x00, 0x55, 0x00}
	sdb.SetCode(token, code, tracing.CodeChangeUnspecified)
	sdb.SetNonce(token, 1, tracing.NonceChangeUnspecified)
	fmt.Fprintf(&buf, "{\"balance\":\"0\",\"nonce\":1,\"code\":\"0x%x\",\"storage\":{", code)
	for i := range slots {
		slot := common.BigToHash(big.NewInt(int64(i*7 + 1)))
		val := common.BigToHash(big.NewInt(int64(i + 1)))
		sdb.SetState(token, slot, val)
		if i > 0 {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, "%q:\"%x\"", slot.Hex(), i+1)
	}
	fmt.Fprintf(&buf, "},\"address\":%q}\n", token.Hex())
	root := sdb.IntermediateRoot(params.MergedTestChainConfig.Rules(big.NewInt(1), true, 1))
	dump := bytes.Replace(buf.Bytes(), []byte("ROOT"), []byte(root.Hex()), 1)

	sink := newMemSink()
	res, err := Load(context.Background(), bytes.NewReader(dump), sink, Config{TempDir: t.TempDir(), MemBytes: 1 << 20, Expected: root})
	if err != nil {
		t.Fatal(err)
	}
	if res.Root != root || res.Accounts != 501 || res.Slots != slots || sink.slots != slots || len(sink.accounts) != 501 || sink.codes != 1 {
		t.Fatalf("result %+v; sink %d accounts %d slots %d codes", res, len(sink.accounts), sink.slots, sink.codes)
	}
}
