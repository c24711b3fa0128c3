package node_test

import (
	"crypto/ecdsa"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/tipnode/tipnode/rpc"
)

// devMethodNames is every dev-chain method name.
var devMethodNames = []string{
	"anvil_setBalance", "hardhat_setBalance", "anvil_setCode", "hardhat_setCode",
	"anvil_setNonce", "hardhat_setNonce", "anvil_setStorageAt", "hardhat_setStorageAt",
	"anvil_mine", "hardhat_mine", "evm_mine", "evm_increaseTime", "evm_setNextBlockTimestamp",
	"anvil_impersonateAccount", "hardhat_impersonateAccount", "anvil_stopImpersonatingAccount",
	"hardhat_stopImpersonatingAccount", "anvil_autoImpersonateAccount", "evm_snapshot", "evm_revert",
	"evm_setAutomine", "anvil_setAutomine", "anvil_getAutomine", "hardhat_getAutomine",
	"evm_setIntervalMining", "anvil_setIntervalMining", "anvil_reset",
	"tipnode_sendDeposit",
}

func (e *env) str(method string, params ...any) string {
	e.t.Helper()
	var s string
	if err := json.Unmarshal(e.call(method, params...), &s); err != nil {
		e.t.Fatalf("%s: %v", method, err)
	}
	return s
}

func (e *env) blockField(tag, field string) string {
	e.t.Helper()
	var b map[string]any
	if err := json.Unmarshal(e.call("eth_getBlockByNumber", tag, false), &b); err != nil {
		e.t.Fatal(err)
	}
	s, _ := b[field].(string)
	return s
}

// The state setters: visible on pending when the call returns, on latest
// only after the next seal; both spellings.
func TestDevStateSetters(t *testing.T) {
	e := newEnvWith(t, envOptions{dev: true})
	code := "0x602a60005260206000f3"
	for _, prefix := range []string{"anvil_", "hardhat_"} {
		addr := common.HexToAddress("0x00000000000000000000000000000000000000a1")
		if prefix == "hardhat_" {
			addr = common.HexToAddress("0x00000000000000000000000000000000000000b2")
		}
		for _, tc := range []struct {
			method string
			params []any
			read   string
			args   []any
			want   string
			result string
		}{
			{"setBalance", []any{addr, "0xde0b6b3a7640000"}, "eth_getBalance", []any{addr}, "0xde0b6b3a7640000", "null"},
			{"setNonce", []any{addr, "0x7"}, "eth_getTransactionCount", []any{addr}, "0x7", "null"},
			{"setCode", []any{addr, code}, "eth_getCode", []any{addr}, code, "null"},
			{"setStorageAt", []any{addr, "0x1", "0x00000000000000000000000000000000000000000000000000000000000000ff"}, "eth_getStorageAt", []any{addr, "0x1"},
				"0x00000000000000000000000000000000000000000000000000000000000000ff", "true"},
		} {
			if got := string(e.call(prefix+tc.method, tc.params...)); got != tc.result {
				t.Fatalf("%s%s returned %s, want %s", prefix, tc.method, got, tc.result)
			}
			if got := e.str(tc.read, append(tc.args, "pending")...); got != tc.want {
				t.Fatalf("%s%s: %s at pending = %s, want %s", prefix, tc.method, tc.read, got, tc.want)
			}
			if got := e.str(tc.read, append(tc.args, "latest")...); got == tc.want {
				t.Fatalf("%s%s: %s at latest already %s before the seal", prefix, tc.method, tc.read, got)
			}
		}
		if got := e.str("evm_mine"); got != "0x0" {
			t.Fatalf("evm_mine returned %s", got)
		}
		for read, want := range map[string]string{"eth_getBalance": "0xde0b6b3a7640000", "eth_getTransactionCount": "0x7", "eth_getCode": code} {
			if got := e.str(read, addr, "latest"); got != want {
				t.Fatalf("after the seal %s at latest = %s, want %s", read, got, want)
			}
		}
	}
	// A balance in decimal (a JSON number and a string) is taken too.
	e.call("anvil_setBalance", common.Address{0xd1}, 1000)
	e.call("anvil_setBalance", common.Address{0xd2}, "1000")
	if a, b := e.str("eth_getBalance", common.Address{0xd1}, "pending"), e.str("eth_getBalance", common.Address{0xd2}, "pending"); a != "0x3e8" || b != "0x3e8" {
		t.Fatalf("decimal balances: %s, %s", a, b)
	}
}

// Mining and time: anvil_mine N blocks interval seconds apart, evm_mine
// with a timestamp, evm_setNextBlockTimestamp, evm_increaseTime's total.
func TestDevMineAndTime(t *testing.T) {
	e := newEnvWith(t, envOptions{dev: true})
	n0 := hexutil.MustDecodeUint64(e.str("eth_blockNumber"))
	e.call("anvil_mine")
	e.call("hardhat_mine", "0x3", "0x64")
	if n := hexutil.MustDecodeUint64(e.str("eth_blockNumber")); n != n0+4 {
		t.Fatalf("block %d after mining 1 + 3, from %d", n, n0)
	}
	t2 := hexutil.MustDecodeUint64(e.blockField(hexutil.EncodeUint64(n0+2), "timestamp"))
	t4 := hexutil.MustDecodeUint64(e.blockField("latest", "timestamp"))
	if t4-t2 != 200 {
		t.Fatalf("hardhat_mine interval 100: blocks at %d and %d", t2, t4)
	}
	e.call("evm_mine", hexutil.EncodeUint64(t4+1000))
	if ts := hexutil.MustDecodeUint64(e.blockField("latest", "timestamp")); ts != t4+1000 {
		t.Fatalf("evm_mine timestamp %d, want %d", ts, t4+1000)
	}
	e.call("evm_setNextBlockTimestamp", t4+5000)
	if ts := hexutil.MustDecodeUint64(e.blockField("pending", "timestamp")); ts != t4+5000 {
		t.Fatalf("pending timestamp %d after evm_setNextBlockTimestamp", ts)
	}
	e.call("evm_mine", map[string]any{"blocks": 2})
	if ts := hexutil.MustDecodeUint64(e.blockField("latest", "timestamp")); ts <= t4+5000 {
		t.Fatalf("latest timestamp %d after mining on from %d", ts, t4+5000)
	}
	var total int64
	json.Unmarshal(e.call("evm_increaseTime", 3600), &total)
	var total2 int64
	json.Unmarshal(e.call("evm_increaseTime", "0x3c"), &total2)
	if total2-total != 60 {
		t.Fatalf("evm_increaseTime totals %d then %d", total, total2)
	}
	if ts := hexutil.MustDecodeUint64(e.blockField("pending", "timestamp")); ts < uint64(e.Clock.Now().Unix()+total2) {
		t.Fatalf("pending timestamp %d below clock + offset %d", ts, e.Clock.Now().Unix()+total2)
	}
}

// Impersonation: eth_sendTransaction from an address without its key,
// pre-confirmed at once, shown with its sender, sealed; refused again
// after stopImpersonating; auto-impersonation.
func TestDevImpersonation(t *testing.T) {
	e := newEnvWith(t, envOptions{dev: true})
	whale := common.HexToAddress("0x000000000000000000000000000000000000beef")
	to := common.Address{0xc0}
	send := func() (json.RawMessage, *rpcErr) {
		return e.callErr("eth_sendTransaction", map[string]any{"from": whale, "to": to, "value": "0x5"})
	}
	if _, rerr := send(); rerr == nil || !strings.Contains(rerr.Message, "unknown account") {
		t.Fatalf("not impersonated: %+v", rerr)
	}
	e.call("anvil_setBalance", whale, "0xde0b6b3a7640000")
	for _, prefix := range []string{"anvil_", "hardhat_"} {
		e.call(prefix+"impersonateAccount", whale)
		res, rerr := send()
		if rerr != nil {
			t.Fatalf("%simpersonateAccount then send: %+v", prefix, rerr)
		}
		var hash common.Hash
		json.Unmarshal(res, &hash)
		var rcpt map[string]any
		json.Unmarshal(e.call("eth_getTransactionReceipt", hash), &rcpt)
		if rcpt == nil || rcpt["status"] != "0x1" || !strings.EqualFold(rcpt["from"].(string), whale.Hex()) {
			t.Fatalf("receipt right after the send: %v", rcpt)
		}
		var tx map[string]any
		json.Unmarshal(e.call("eth_getTransactionByHash", hash), &tx)
		if !strings.EqualFold(tx["from"].(string), whale.Hex()) {
			t.Fatalf("transaction from %v", tx["from"])
		}
		e.call("evm_mine")
		json.Unmarshal(e.call("eth_getTransactionReceipt", hash), &rcpt)
		if rcpt["blockHash"] == "0x0000000000000000000000000000000000000000000000000000000000000000" || !strings.EqualFold(rcpt["from"].(string), whale.Hex()) {
			t.Fatalf("sealed receipt %v", rcpt)
		}
		e.call(prefix+"stopImpersonatingAccount", whale)
		if _, rerr := send(); rerr == nil || !strings.Contains(rerr.Message, "unknown account") {
			t.Fatalf("after %sstopImpersonatingAccount: %+v", prefix, rerr)
		}
	}
	if got := e.str("eth_getBalance", to, "latest"); got != "0xa" {
		t.Fatalf("recipient has %s, want 0xa", got)
	}
	e.call("anvil_autoImpersonateAccount", true)
	if _, rerr := e.callErr("eth_sendTransaction", map[string]any{"from": common.Address{0x77}, "to": to}); rerr == nil || !strings.Contains(rerr.Message, "insufficient funds") {
		// auto-impersonated, but the account has no ether for gas
		t.Fatalf("auto-impersonated send without funds: %+v", rerr)
	}
}

// evm_snapshot / evm_revert: ids, state and blocks back, later ids gone.
func TestDevSnapshotRevert(t *testing.T) {
	e := newEnvWith(t, envOptions{dev: true})
	addr := common.Address{0xab}
	e.call("anvil_setBalance", addr, "0x1")
	id := e.str("evm_snapshot")
	if id != "0x1" {
		t.Fatalf("first snapshot id %s", id)
	}
	n := e.str("eth_blockNumber")
	e.call("anvil_setBalance", addr, "0x2")
	e.call("anvil_mine", 3)
	id2 := e.str("evm_snapshot")
	e.call("anvil_setBalance", addr, "0x3")
	if string(e.call("evm_revert", id)) != "true" {
		t.Fatal("evm_revert of a live snapshot is not true")
	}
	if got := e.str("eth_getBalance", addr, "pending"); got != "0x1" {
		t.Fatalf("balance after revert %s, want 0x1 (the pending state at the snapshot)", got)
	}
	if got := e.str("eth_blockNumber"); got != n {
		t.Fatalf("block number after revert %s, want %s", got, n)
	}
	for _, dead := range []string{id, id2, "0x63"} {
		if string(e.call("evm_revert", dead)) != "false" {
			t.Fatalf("evm_revert %s (dropped or unknown) is not false", dead)
		}
	}
}

// evm_revert across more blocks than the in-memory header window (the
// issue's reproduction: snapshot, mine 300, revert) keeps the node serving:
// it used to panic in chain.(*Head).Recent.
func TestDevRevertDeeperThanHeadWindow(t *testing.T) {
	e := newEnvWith(t, envOptions{dev: true})
	n := e.str("eth_blockNumber")
	hash := e.blockField("latest", "hash")
	id := e.str("evm_snapshot")
	e.call("anvil_mine", "0x12c")
	if string(e.call("evm_revert", id)) != "true" {
		t.Fatal("evm_revert of a live snapshot is not true")
	}
	if got := e.str("eth_blockNumber"); got != n || e.blockField("latest", "hash") != hash {
		t.Fatalf("block number after revert %s, want %s (hash %s)", got, n, hash)
	}
	e.call("anvil_mine", "0x1")
	if got := e.blockField(n, "hash"); got != hash {
		t.Fatalf("block %s after revert and mine: %s, want %s", n, got, hash)
	}
}

// Bad arguments: -32602 with a message naming what is wrong.
func TestDevMethodErrors(t *testing.T) {
	e := newEnvWith(t, envOptions{dev: true})
	a := common.Address{1}
	twoTo256 := "0x1" + strings.Repeat("0", 64)
	for _, tc := range []struct {
		method string
		params []any
		msg    string
	}{
		{"anvil_setBalance", []any{"0x12", "0x1"}, "invalid argument 0 (address)"},
		{"anvil_setBalance", []any{a}, "missing value for required argument 1 (balance)"},
		{"anvil_setBalance", []any{a, -1}, "negative number"},
		{"anvil_setBalance", []any{a, twoTo256}, "invalid argument 1 (balance)"},
		{"anvil_setBalance", []any{a, "0xzz"}, "invalid hex number"},
		{"anvil_setNonce", []any{a, "0x10000000000000000"}, "does not fit in 64 bits"},
		{"anvil_setCode", []any{a, "0x6"}, "invalid argument 1 (code)"},
		{"anvil_setStorageAt", []any{a, "0x1"}, "missing value for required argument 2 (value)"},
		{"anvil_mine", []any{0}, "0 blocks: want 1 to 10000"},
		{"anvil_mine", []any{10001}, "want 1 to 10000"},
		{"evm_setNextBlockTimestamp", []any{5}, "timestamp 5 is not after the latest block's"},
		{"evm_mine", []any{7}, "timestamp 7 is not after the latest block's"},
		{"evm_increaseTime", []any{"abc"}, "invalid argument 0 (seconds)"},
		{"evm_revert", []any{}, "missing value for required argument 0 (snapshot id)"},
		{"evm_snapshot", []any{1}, "too many arguments"},
		{"anvil_autoImpersonateAccount", []any{"yes"}, "invalid argument 0 (enabled)"},
	} {
		_, rerr := e.callErr(tc.method, tc.params...)
		if rerr == nil || rerr.Code != rpc.CodeInvalidParams || !strings.Contains(rerr.Message, tc.msg) {
			t.Errorf("%s %v: %+v, want -32602 %q", tc.method, tc.params, rerr, tc.msg)
		}
	}
}

// A node that is not a dev chain (`run`, even with --sequencer) has none of
// them.
func TestDevMethodsAbsentOnRun(t *testing.T) {
	e := newEnvWith(t, envOptions{keys: []*ecdsa.PrivateKey{}})
	for _, m := range devMethodNames {
		_, rerr := e.callErr(m)
		if rerr == nil || rerr.Code != rpc.CodeMethodNotFound {
			t.Errorf("%s on a non-dev node: %+v, want -32601", m, rerr)
		}
	}
	// ...and they are all there on the dev chain.
	d := newEnvWith(t, envOptions{dev: true})
	for _, m := range devMethodNames {
		if _, rerr := d.callErr(m); rerr != nil && rerr.Code == rpc.CodeMethodNotFound {
			t.Errorf("%s missing on the dev chain", m)
		}
	}
}

// tipnode_sendDeposit refuses bad arguments and, on an L1 dev chain,
// every deposit, with -32602 saying why (the OP path: pending's
// TestOPSequencer and cmd/tipnode's TestOPSequencerE2E).
func TestDevSendDepositRefusals(t *testing.T) {
	e := newEnvWith(t, envOptions{dev: true})
	from := common.HexToAddress("0x00000000000000000000000000000000000000d1")
	for _, tc := range []struct {
		name   string
		params []any
		want   string
	}{
		{"no argument", nil, "deposit"},
		{"no from", []any{map[string]any{"to": from}}, "from is required"},
		{"data and input differ", []any{map[string]any{"from": from, "data": "0x01", "input": "0x02"}}, "differ"},
		{"two arguments", []any{map[string]any{"from": from}, 1}, ""},
		{"an L1 chain", []any{map[string]any{"from": from, "mint": "0x1"}}, "OP Stack"},
	} {
		_, rerr := e.callErr("tipnode_sendDeposit", tc.params...)
		if rerr == nil || rerr.Code != rpc.CodeInvalidParams || !strings.Contains(rerr.Message, tc.want) {
			t.Errorf("%s: %+v, want -32602 mentioning %q", tc.name, rerr, tc.want)
		}
	}
}
