package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain/devnet"
	"github.com/tipnode/tipnode/chain/op"
	"github.com/tipnode/tipnode/chain/op/preset"
	"github.com/tipnode/tipnode/chain/remotestate"
	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// forkOPBlock is the part of a block the OP fork test checks.
type forkOPBlock struct {
	Number          hexutil.Uint64  `json:"number"`
	Hash            *common.Hash    `json:"hash"`
	Timestamp       hexutil.Uint64  `json:"timestamp"`
	StateRoot       common.Hash     `json:"stateRoot"`
	WithdrawalsRoot *common.Hash    `json:"withdrawalsRoot"`
	BlobGasUsed     *hexutil.Uint64 `json:"blobGasUsed"`
	ExtraData       hexutil.Bytes   `json:"extraData"`
	BaseFee         *hexutil.Big    `json:"baseFeePerGas"`
	Transactions    []struct {
		Hash  common.Hash    `json:"hash"`
		Type  hexutil.Uint64 `json:"type"`
		From  common.Address `json:"from"`
		To    common.Address `json:"to"`
		Input hexutil.Bytes  `json:"input"`
	} `json:"transactions"`
}

func getOPBlock(t *testing.T, url string, tag string) forkOPBlock {
	t.Helper()
	var b *forkOPBlock
	if err := rpcCall(url, "eth_getBlockByNumber", &b, tag, true); err != nil || b == nil {
		t.Fatalf("block %s at %s: %v, %v", tag, url, b, err)
	}
	return *b
}

// l1InfoOf parses the L1-info deposit that opens block b.
func l1InfoOf(t *testing.T, b forkOPBlock) *op.L1Info {
	t.Helper()
	if len(b.Transactions) == 0 || b.Transactions[0].Type != chaintypes.DepositTxType || b.Transactions[0].From != op.L1InfoDepositor || b.Transactions[0].To != op.L1BlockAddr {
		t.Fatalf("block %d does not open with the L1-info deposit: %+v", b.Number, b.Transactions)
	}
	info, err := op.ParseL1Info(b.Transactions[0].Input)
	if err != nil {
		t.Fatalf("block %d: %v", b.Number, err)
	}
	return info
}

// TestForkOPE2E runs real processes: `tipnode dev --op` as the upstream,
// with L1 fee parameters other than the defaults, and `tipnode dev --fork
// URL@F` of it, given no OP flag at all. The fork finds the upstream's OP
// chain config (tipnode_genesis) and runs OP rules: the chain id is the
// upstream's; its first block opens with the L1-info deposit continuing
// the upstream's (the same L1 origin with the next sequence number, or a
// later origin; the upstream's fee parameters); its header carries the
// Jovian extraData with the upstream's minimum base fee, a DA footprint,
// and zero state and withdrawals roots (a fork holds no trie); a transfer
// is pre-confirmed (`pending`) before its block is sealed, and its receipt
// charges the L1 and operator fees with the upstream's parameters, the L1
// fee being what the GasPriceOracle predeploy answers; tipnode_sendDeposit
// gives a deposit receipt. A restart on the data directory without --fork
// is still an OP chain.
func TestForkOPE2E(t *testing.T) {
	bin := processTestBin(t)
	upDir, upAddr, upURL := processNode(t)
	forkDir, forkAddr, forkURL := processNode(t)
	const (
		l1BaseFee   = 20_000_000_000
		baseScalar  = 2000
		opScalar    = 7
		opConstant  = 1000
		minBaseFee  = 1000
		upChainID   = devnet.DefaultChainID
		forkTimeout = 30 * time.Second
	)
	up := startDevOP(t, bin, upDir, upAddr, "100ms",
		"--op.l1.basefee", fmt.Sprint(l1BaseFee), "--op.l1.basefeescalar", fmt.Sprint(baseScalar),
		"--op.operatorfee.scalar", fmt.Sprint(opScalar), "--op.operatorfee.constant", fmt.Sprint(opConstant),
		"--op.minbasefee", fmt.Sprint(minBaseFee))
	deadline := time.Now().Add(forkTimeout)
	for blockNumber(t, upURL) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the upstream seals no blocks:\n%s", up.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	forkBlock := blockNumber(t, upURL)
	upBlock := getOPBlock(t, upURL, hexutil.EncodeUint64(forkBlock))
	upInfo := l1InfoOf(t, upBlock)

	// A long block time: blocks are sealed by evm_mine, so pre-confirmed
	// state can be seen before its block.
	startFork := func(args ...string) *process {
		p := startProcess(t, bin, append([]string{"dev", "--datadir", forkDir, "--http.addr", forkAddr,
			"--preconf.interval", "50ms", "--block.time", "1h", "--log.level", "warn"}, args...)...)
		waitRPC(t, forkURL, p)
		return p
	}
	fork := startFork("--fork", fmt.Sprintf("%s@%d", upURL, forkBlock))
	var id hexutil.Uint64
	if err := rpcCall(forkURL, "eth_chainId", &id); err != nil || uint64(id) != upChainID {
		t.Fatalf("eth_chainId %d, %v; the upstream's is %d", id, err, upChainID)
	}
	if n := blockNumber(t, forkURL); n != forkBlock {
		t.Fatalf("the fork's head %d, the fork block %d", n, forkBlock)
	}

	// A transfer: pre-confirmed before its block is sealed.
	accs, err := devnet.Accounts(devnet.Mnemonic, 1)
	if err != nil {
		t.Fatal(err)
	}
	chainID := new(big.Int).SetUint64(upChainID)
	to := common.HexToAddress("0x00000000000000000000000000000000000f0a4e")
	value := big.NewInt(12345)
	txData := &types.DynamicFeeTx{ChainID: chainID, Nonce: 0, GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(10 * params.GWei), Gas: 21_000, To: &to, Value: value}
	tx, txHash, err := sendSigned(t, forkURL, accs[0].Key, chainID, txData)
	if err != nil {
		t.Fatal(err)
	}
	pre := waitReceipt(t, forkURL, txHash, fork)
	if uint64(pre.BlockNumber) != forkBlock+1 {
		t.Fatalf("pre-confirmed receipt in block %d, want %d", pre.BlockNumber, forkBlock+1)
	}
	var bal hexutil.Big
	if err := rpcCall(forkURL, "eth_getBalance", &bal, to, "pending"); err != nil || bal.ToInt().Cmp(value) != 0 {
		t.Fatalf("pending balance %v, %v; want %v", bal.ToInt(), err, value)
	}
	if n := blockNumber(t, forkURL); n != forkBlock {
		t.Fatalf("the head moved to %d before evm_mine", n)
	}
	pb := getOPBlock(t, forkURL, "pending")
	if uint64(pb.Number) != forkBlock+1 || len(pb.Transactions) != 2 || pb.Transactions[1].Hash != txHash {
		t.Fatalf("pending block %d with %d transactions", pb.Number, len(pb.Transactions))
	}
	if pb.WithdrawalsRoot == nil || *pb.WithdrawalsRoot != (common.Hash{}) || pb.StateRoot != (common.Hash{}) {
		t.Fatalf("pending block %d: state root %s, withdrawals root %v: a fork's are zero, as its sealed blocks'", pb.Number, pb.StateRoot, pb.WithdrawalsRoot)
	}
	if err := rpcCall(forkURL, "evm_mine", new(json.RawMessage)); err != nil {
		t.Fatal(err)
	}
	b := getOPBlock(t, forkURL, hexutil.EncodeUint64(forkBlock+1))
	info := l1InfoOf(t, b)
	switch {
	case info.Number < upInfo.Number:
		t.Fatalf("the fork's L1 origin %d is before the upstream's %d", info.Number, upInfo.Number)
	case info.Number == upInfo.Number && (info.SequenceNumber != upInfo.SequenceNumber+1 || info.Time != upInfo.Time || info.BlockHash != upInfo.BlockHash):
		t.Fatalf("the fork's L1 origin %+v does not continue the upstream's %+v", info, upInfo)
	case info.Number > upInfo.Number && (info.SequenceNumber != 0 || info.Time <= upInfo.Time):
		t.Fatalf("the fork's new L1 origin %+v after the upstream's %+v", info, upInfo)
	}
	if info.BaseFee.Uint64() != l1BaseFee || info.BaseFeeScalar != baseScalar || info.BlobBaseFeeScalar != upInfo.BlobBaseFeeScalar ||
		info.OperatorFeeScalar != opScalar || info.OperatorFeeConstant != opConstant || info.DAFootprintGasScalar != upInfo.DAFootprintGasScalar {
		t.Fatalf("the fork's L1-info %+v does not carry the upstream's fee parameters %+v", info, upInfo)
	}
	if b.WithdrawalsRoot == nil || *b.WithdrawalsRoot != (common.Hash{}) || b.StateRoot != (common.Hash{}) {
		t.Fatalf("block %d: state root %s, withdrawals root %v: a fork's are zero", b.Number, b.StateRoot, b.WithdrawalsRoot)
	}
	extra, err := op.DecodeExtraData(b.ExtraData, true)
	if err != nil || extra.MinBaseFee != minBaseFee {
		t.Fatalf("block %d extraData %x (%+v, %v): want Jovian's with the upstream's minBaseFee %d", b.Number, b.ExtraData, extra, err, minBaseFee)
	}
	if b.BlobGasUsed == nil || *b.BlobGasUsed == 0 {
		t.Fatalf("block %d blobGasUsed %v: want the transfer's DA footprint", b.Number, b.BlobGasUsed)
	}
	r := waitReceipt(t, forkURL, txHash, fork)
	if r.Status != 1 || uint64(r.BlockNumber) != forkBlock+1 || r.L1Fee == nil || r.L1Fee.ToInt().Sign() <= 0 || r.L1GasUsed == nil ||
		r.L1GasPrice == nil || r.L1GasPrice.ToInt().Uint64() != l1BaseFee || r.L1BaseFeeScalar == nil || *r.L1BaseFeeScalar != baseScalar ||
		r.OperatorFeeScalar == nil || *r.OperatorFeeScalar != opScalar || r.OperatorFeeConst == nil || *r.OperatorFeeConst != opConstant {
		t.Fatalf("transfer receipt %+v: want the L1 and operator fees with the upstream's parameters", r)
	}
	if pre.L1Fee == nil || pre.L1Fee.ToInt().Cmp(r.L1Fee.ToInt()) != 0 {
		t.Fatalf("pre-confirmed l1Fee %v, sealed %v", pre.L1Fee, r.L1Fee)
	}
	// The GasPriceOracle answers what the receipt charged (a transfer's
	// size is under Fjord's floor, signed or not).
	gpo, err := devnet.GasPriceOracleABI()
	if err != nil {
		t.Fatal(err)
	}
	unsigned, _ := rlp.EncodeToBytes([]any{tx.ChainId(), tx.Nonce(), tx.GasTipCap(), tx.GasFeeCap(), tx.Gas(), tx.To(), tx.Value(), tx.Data(), tx.AccessList()})
	call, _ := gpo.Pack("getL1Fee", append([]byte{types.DynamicFeeTxType}, unsigned...))
	var out hexutil.Bytes
	if err := rpcCall(forkURL, "eth_call", &out, map[string]any{"to": devnet.GasPriceOracleAddr, "data": hexutil.Bytes(call)}, "latest"); err != nil {
		t.Fatal(err)
	}
	if got := new(big.Int).SetBytes(out); got.Cmp(r.L1Fee.ToInt()) != 0 {
		t.Fatalf("GasPriceOracle.getL1Fee %v, the receipt's l1Fee %v", got, r.L1Fee)
	}
	// A user deposit.
	minted := common.HexToAddress("0xd0d0000000000000000000000000000000000f0a")
	var depHash common.Hash
	if err := rpcCall(forkURL, "tipnode_sendDeposit", &depHash, map[string]any{"from": minted, "to": minted, "mint": hexutil.EncodeBig(big.NewInt(params.Ether)), "gas": "0x186a0"}); err != nil {
		t.Fatal(err)
	}
	if err := rpcCall(forkURL, "evm_mine", new(json.RawMessage)); err != nil {
		t.Fatal(err)
	}
	dr := waitReceipt(t, forkURL, depHash, fork)
	if dr.Status != 1 || dr.Type != chaintypes.DepositTxType || dr.DepositNonce == nil || dr.L1Fee != nil {
		t.Fatalf("deposit receipt %+v", dr)
	}
	if err := rpcCall(forkURL, "eth_getBalance", &bal, minted, "latest"); err != nil || bal.ToInt().Cmp(big.NewInt(params.Ether)) != 0 {
		t.Fatalf("minted balance %v, %v", bal.ToInt(), err)
	}
	head := blockNumber(t, forkURL)

	// A restart without --fork resumes the OP fork.
	if err := fork.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := fork.cmd.Wait(); err != nil {
		t.Fatalf("fork exit: %v\n%s", err, fork.out.String())
	}
	fork = startFork()
	if n := blockNumber(t, forkURL); n != head {
		t.Fatalf("head %d after the restart, want %d", n, head)
	}
	if _, txHash, err = sendSigned(t, forkURL, accs[0].Key, chainID, &types.DynamicFeeTx{ChainID: chainID, Nonce: 1,
		GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(10 * params.GWei), Gas: 21_000, To: &to, Value: value}); err != nil {
		t.Fatal(err)
	}
	waitReceipt(t, forkURL, txHash, fork)
	if err := rpcCall(forkURL, "evm_mine", new(json.RawMessage)); err != nil {
		t.Fatal(err)
	}
	r2 := waitReceipt(t, forkURL, txHash, fork)
	if r2.L1Fee == nil || r2.L1Fee.ToInt().Cmp(r.L1Fee.ToInt()) != 0 || r2.L1BaseFeeScalar == nil || *r2.L1BaseFeeScalar != baseScalar {
		t.Fatalf("receipt after the restart %+v: want OP fees as before (l1Fee %v)", r2, r.L1Fee)
	}
	l1InfoOf(t, getOPBlock(t, forkURL, hexutil.EncodeUint64(uint64(r2.BlockNumber))))
}

// fakeUpstream is a JSON-RPC upstream answering eth_chainId, eth_blockNumber
// and the account methods (code at codeAt), and nothing else.
func fakeUpstream(t *testing.T, chainID uint64, codeAt map[common.Address][]byte) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var reqs []struct {
			ID     json.RawMessage   `json:"id"`
			Method string            `json:"method"`
			Params []json.RawMessage `json:"params"`
		}
		batch := len(body) > 0 && body[0] == '['
		if !batch {
			body = append(append([]byte{'['}, body...), ']')
		}
		if err := json.Unmarshal(body, &reqs); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var out []map[string]any
		for _, q := range reqs {
			resp := map[string]any{"jsonrpc": "2.0", "id": q.ID}
			switch q.Method {
			case "eth_chainId":
				resp["result"] = hexutil.EncodeUint64(chainID)
			case "eth_blockNumber":
				resp["result"] = "0x5"
			case "eth_getBalance", "eth_getTransactionCount":
				resp["result"] = "0x0"
			case "eth_getCode":
				var a common.Address
				json.Unmarshal(q.Params[0], &a)
				resp["result"] = hexutil.Bytes(codeAt[a])
			default:
				resp["error"] = map[string]any{"code": -32601, "message": "the method " + q.Method + " does not exist/is not available"}
			}
			out = append(out, resp)
		}
		w.Header().Set("Content-Type", "application/json")
		if batch {
			json.NewEncoder(w).Encode(out)
		} else {
			json.NewEncoder(w).Encode(out[0])
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// The refusals of `dev --fork` on OP: an OP Stack upstream whose chain
// config is not found (no tipnode_genesis, no preset of its chain id, no
// debug_chainConfig) names what was tried and --chain; --op on an L1
// upstream; --chain of another chain than the upstream's; --chain FILE
// that is not an OP chain config; --chain without --fork. Nothing is
// written to the data directory.
func TestForkOPRefusals(t *testing.T) {
	log := zerolog.New(io.Discard)
	accs, err := devnet.Accounts(devnet.Mnemonic, 1)
	if err != nil {
		t.Fatal(err)
	}
	opUp := fakeUpstream(t, 4242, map[common.Address][]byte{op.L1BlockAddr: {0x60, 0x00}})
	l1Up := fakeUpstream(t, 4242, nil)
	l1File := filepath.Join(t.TempDir(), "l1.json")
	spec, err := devnet.Genesis(devnet.GenesisConfig{ChainID: 4242})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l1File, spec, 0o644); err != nil {
		t.Fatal(err)
	}
	opFile := filepath.Join(t.TempDir(), "op.json")
	if spec, err = devnet.OPGenesis(devnet.GenesisConfig{ChainID: 4242}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(opFile, spec, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		fo       forkOptions
		want     []string
		sentinel error
	}{
		{"OP upstream, config not found", forkOptions{Target: opUp}, []string{"is an OP Stack chain", "tipnode_genesis", "debug_chainConfig", "chain id 4242", "--chain NAME", "op-mainnet"}, remotestate.ErrChain},
		{"--op on an L1 upstream", forkOptions{Target: l1Up, OP: true}, []string{"--op", "not an OP Stack chain", op.L1BlockAddr.Hex()}, remotestate.ErrChain},
		{"--chain preset of another chain", forkOptions{Target: opUp, Chain: "op-mainnet"}, []string{"--chain op-mainnet is chain 10", "chain 4242"}, remotestate.ErrChain},
		{"--chain file of an L1 chain", forkOptions{Target: opUp, Chain: l1File}, []string{"not an OP Stack chain"}, remotestate.ErrChain},
		{"--chain unknown", forkOptions{Target: opUp, Chain: "no-such-chain"}, []string{"unknown chain preset", "op-mainnet"}, preset.ErrUnknown},
		{"--chain on an L1 upstream", forkOptions{Target: l1Up, Chain: opFile}, []string{"no code at the L1Block predeploy"}, remotestate.ErrChain},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := store.DefaultConfig(dir)
			cfg.SyncWrites = false
			db, err := openStore(cfg, log)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			_, _, err = forkChain(context.Background(), db, tc.fo, accs, dir, log)
			if !errors.Is(err, tc.sentinel) {
				t.Fatalf("error %v, want %v", err, tc.sentinel)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not say %q", err, w)
				}
			}
			if _, err := db.Latest(); err == nil {
				t.Fatal("the refused fork wrote a chain")
			}
		})
	}
	// --chain without --fork.
	err = runDev(context.Background(), []string{"--datadir", t.TempDir(), "--chain", "op-mainnet", "--http.addr", "127.0.0.1:0"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--chain needs --fork") {
		t.Fatalf("--chain without --fork: %v", err)
	}
}

// An OP fork's sequencer takes the --op.* values not given, the batcher
// hash and the EIP-1559 parameters from its head block; a flag given
// wins.
func TestForkOPContinueL1(t *testing.T) {
	var nf NodeFlags
	nf.register(newFlagSet(), true)
	min := uint64(77)
	fh := forkHead{
		L1: &op.L1Info{Version: op.L1InfoJovian, BaseFee: big.NewInt(31e9), BlobBaseFee: big.NewInt(5), BaseFeeScalar: 5227, BlobBaseFeeScalar: 1014213,
			OperatorFeeScalar: 3, OperatorFeeConstant: 9, DAFootprintGasScalar: 321, BatcherHash: common.HexToHash("0xba7c4e")},
		EIP1559: &op.EIP1559Params{Denominator: 8, Elasticity: 2, MinBaseFee: min}, MinBaseFee: &min,
	}
	nf.OPBlobBaseFeeScalar = 42 // as if given
	nf.continueL1(fh, map[string]bool{"op.l1.blobbasefeescalar": true})
	pc, err := nf.producerConfig()
	if err != nil {
		t.Fatal(err)
	}
	l1 := pc.L1
	if l1.BaseFee.Int64() != 31e9 || l1.BlobBaseFee.Int64() != 5 || l1.BaseFeeScalar != 5227 || l1.BlobBaseFeeScalar != 42 ||
		l1.OperatorFeeScalar != 3 || l1.OperatorFeeConstant != 9 || l1.DAFootprintGasScalar != 321 || l1.BatcherHash != fh.L1.BatcherHash ||
		pc.MinBaseFee != 77 || pc.EIP1559Denominator != 8 || pc.EIP1559Elasticity != 2 || l1.BlockTime != op.DefaultL1BlockTime {
		t.Fatalf("producer config %+v (L1 %+v)", pc, l1)
	}
}
