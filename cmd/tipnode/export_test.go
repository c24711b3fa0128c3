package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/consensus/beacon"
	"github.com/ethereum/go-ethereum/consensus/ethash"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rlp"
	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain/devnet"
)

// TestDevChainImportsIntoGeth: blocks a tipnode dev chain seals (value
// transfers, a contract creation writing storage, calls changing and
// clearing slots) carry their real state roots: exported with
// debug_getRawBlock and with the genesis from tipnode_genesis, they import
// into go-ethereum with its full validation (state root, receipts,
// gas, bloom), ending at tipnode's head. `tipnode export` writes the same
// bytes, and `tipnode verify` passes on the store.
func TestDevChainImportsIntoGeth(t *testing.T) {
	dir := t.TempDir()
	d := openDev(t, devOptions{dir: dir, log: zerolog.New(io.Discard), accounts: 4, keys: true})
	n, clock, accs, g := d.n, d.clock, d.accs, d.g
	stop := func() { d.stop(t) }
	t.Cleanup(stop)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rc, err := gethrpc.DialContext(ctx, "http://"+n.Server.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	chainID := big.NewInt(int64(devnet.DefaultChainID))
	signer := types.LatestSignerForChainID(chainID)
	nonces := make([]uint64, len(accs))
	send := func(from int, to *common.Address, value int64, data []byte, gas uint64) common.Hash {
		t.Helper()
		tx, err := types.SignNewTx(accs[from].Key, signer, &types.DynamicFeeTx{
			ChainID: chainID, Nonce: nonces[from], GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(100 * params.GWei),
			Gas: gas, To: to, Value: big.NewInt(value), Data: data,
		})
		if err != nil {
			t.Fatal(err)
		}
		enc, _ := tx.MarshalBinary()
		var h common.Hash
		if err := rc.CallContext(ctx, &h, "eth_sendRawTransaction", hexutil.Bytes(enc)); err != nil {
			t.Fatalf("send from %d: %v", from, err)
		}
		nonces[from]++
		return h
	}
	seal := func() {
		t.Helper()
		tick(t, n, clock, 10)
	}
	// Runtime: SSTORE(calldata[0:32], calldata[32:64]). Init: store 1 at
	// slots 0..2, return the runtime.
	runtime := []byte{0x60, 0x20, 0x35, 0x60, 0x00, 0x35, 0x55, 0x00}
	initCode := []byte{0x60, 0x01, 0x60, 0x00, 0x55, 0x60, 0x01, 0x60, 0x01, 0x55, 0x60, 0x01, 0x60, 0x02, 0x55}
	initCode = append(initCode, 0x60, byte(len(runtime)), 0x80, 0x60, byte(len(initCode)+11), 0x60, 0x00, 0x39, 0x60, 0x00, 0xf3)
	initCode = append(initCode, runtime...)
	dead := common.HexToAddress("0x000000000000000000000000000000000000dEaD")
	send(0, &dead, params.GWei, nil, 21_000)
	send(1, &accs[2].Address, 12345, nil, 21_000)
	send(3, nil, 0, initCode, 200_000)
	seal()
	contract := crypto.CreateAddress(accs[3].Address, 0)
	arg := func(slot, val int64) []byte {
		return append(common.BigToHash(big.NewInt(slot)).Bytes(), common.BigToHash(big.NewInt(val)).Bytes()...)
	}
	send(0, &contract, 0, arg(1, 0), 100_000) // clears slot 1
	send(1, &contract, 0, arg(7, 9), 100_000) // a new slot
	send(2, &dead, 1, nil, 21_000)
	seal()
	send(3, &contract, 0, arg(0, 0), 100_000)
	seal()
	seal() // an empty block
	for slot, want := range map[int64]int64{0: 0, 1: 0, 2: 1, 7: 9} {
		var v common.Hash
		if err := rc.CallContext(ctx, &v, "eth_getStorageAt", contract, common.BigToHash(big.NewInt(slot)), "latest"); err != nil || v != common.BigToHash(big.NewInt(want)) {
			t.Fatalf("contract slot %d = %s (%v), want %d", slot, v, err, want)
		}
	}
	var head hexutil.Uint64
	if err := rc.CallContext(ctx, &head, "eth_blockNumber"); err != nil || head < 4 {
		t.Fatalf("head %d %v", head, err)
	}
	var spec json.RawMessage
	if err := rc.CallContext(ctx, &spec, "tipnode_genesis"); err != nil {
		t.Fatal(err)
	}
	gspec := new(core.Genesis)
	if err := json.Unmarshal(spec, gspec); err != nil {
		t.Fatal(err)
	}
	var raw []byte
	var blocks types.Blocks
	for i := uint64(1); i <= uint64(head); i++ {
		var enc hexutil.Bytes
		if err := rc.CallContext(ctx, &enc, "debug_getRawBlock", hexutil.Uint64(i)); err != nil {
			t.Fatal(err)
		}
		raw = append(raw, enc...)
		b := new(types.Block)
		if err := rlp.DecodeBytes(enc, b); err != nil {
			t.Fatal(err)
		}
		if b.Root() == (common.Hash{}) {
			t.Fatalf("block %d sealed without a state root", i)
		}
		blocks = append(blocks, b)
	}
	var tipHead struct {
		Hash common.Hash `json:"hash"`
	}
	if err := rc.CallContext(ctx, &tipHead, "eth_getBlockByNumber", hexutil.Uint64(head), false); err != nil {
		t.Fatal(err)
	}
	bc, err := core.NewBlockChain(rawdb.NewMemoryDatabase(), gspec, beacon.New(ethash.NewFaker()), core.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Stop()
	if bc.Genesis().Hash() != g.Block.Hash() {
		t.Fatalf("go-ethereum's genesis %s, tipnode's %s", bc.Genesis().Hash(), g.Block.Hash())
	}
	if i, err := bc.InsertChain(blocks); err != nil {
		t.Fatalf("go-ethereum refuses block %d: %v", i+1, err)
	}
	if got := bc.CurrentBlock().Hash(); got != tipHead.Hash {
		t.Fatalf("go-ethereum's head %s, tipnode's %s", got, tipHead.Hash)
	}
	stop()

	file := filepath.Join(t.TempDir(), "chain.rlp")
	var out bytes.Buffer
	if err := runExport(ctx, []string{"--datadir", dir, "--log.level", "error", file}, &out, &out); err != nil {
		t.Fatalf("export: %v (%s)", err, out.String())
	}
	exported, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(exported, raw) {
		t.Fatalf("tipnode export wrote %d bytes, debug_getRawBlock gave %d", len(exported), len(raw))
	}
	out.Reset()
	if err := runVerify(ctx, []string{"--datadir", dir, "--log.level", "error"}, &out, &out); err != nil || !strings.Contains(out.String(), "OK") {
		t.Fatalf("verify: %v\n%s", err, out.String())
	}
}
