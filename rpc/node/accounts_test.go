package node_test

import (
	"crypto/ecdsa"
	"encoding/json"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/pending/pendingtest"
	"github.com/tipnode/tipnode/rpc"
)

// recoverSig returns the signer of hash from a 65-byte signature with
// v = 27/28.
func recoverSig(t *testing.T, hash []byte, sig hexutil.Bytes) common.Address {
	t.Helper()
	if len(sig) != 65 || (sig[64] != 27 && sig[64] != 28) {
		t.Fatalf("signature %x: want 65 bytes with v 27 or 28", sig)
	}
	s := append([]byte(nil), sig...)
	s[64] -= 27
	pub, err := crypto.SigToPub(hash, s)
	if err != nil {
		t.Fatal(err)
	}
	return crypto.PubkeyToAddress(*pub)
}

// eip191 is the EIP-191 hash of a personal message, written out.
func eip191(msg []byte) []byte {
	return crypto.Keccak256([]byte("\x19Ethereum Signed Message:\n"+big.NewInt(int64(len(msg))).String()), msg)
}

// mailTypedData is the example of EIP-712 (signed there by the key
// keccak256("cow")), with chainId as a number, the way libraries send it.
const mailTypedData = `{
  "types": {
    "EIP712Domain": [{"name":"name","type":"string"},{"name":"version","type":"string"},{"name":"chainId","type":"uint256"},{"name":"verifyingContract","type":"address"}],
    "Person": [{"name":"name","type":"string"},{"name":"wallet","type":"address"}],
    "Mail": [{"name":"from","type":"Person"},{"name":"to","type":"Person"},{"name":"contents","type":"string"}]
  },
  "primaryType": "Mail",
  "domain": {"name":"Ether Mail","version":"1","chainId":1,"verifyingContract":"0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC"},
  "message": {
    "from": {"name":"Cow","wallet":"0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"},
    "to": {"name":"Bob","wallet":"0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB"},
    "contents": "Hello, Bob!"
  }
}`

// The signature EIP-712 gives for mailTypedData.
const mailSignature = "0x4355c47d63924e8a72e509b65029052eb6c299d53a04e167c5775fd466751c9d07299936d304c153f6443dfa05f40ff007d72911b6f72307f996231605b915621c"

// On a dev node the dev accounts are listed and sign messages (EIP-191)
// and typed data (EIP-712) with their keys.
func TestDevAccountsSign(t *testing.T) {
	cow := crypto.ToECDSAUnsafe(crypto.Keccak256([]byte("cow")))
	e := newEnvWith(t, envOptions{keys: append(devKeys(t), cow)})
	var accs []common.Address
	if err := json.Unmarshal(e.call("eth_accounts"), &accs); err != nil || len(accs) != 11 || accs[0] != e.Accs[0].Address || accs[10] != crypto.PubkeyToAddress(cow.PublicKey) {
		t.Fatalf("eth_accounts %v, %v", accs, err)
	}
	msg := []byte("hello tipnode")
	var s1, s2 hexutil.Bytes
	json.Unmarshal(e.call("eth_sign", e.Accs[1].Address, hexutil.Bytes(msg)), &s1)
	json.Unmarshal(e.call("personal_sign", hexutil.Bytes(msg), e.Accs[1].Address), &s2)
	if recoverSig(t, eip191(msg), s1) != e.Accs[1].Address || !strings.EqualFold(s1.String(), s2.String()) {
		t.Fatalf("eth_sign %s / personal_sign %s do not recover account 1", s1, s2)
	}
	// EIP-712: the specification's own example and signature, sent as a
	// JSON string (ethers, viem) and as an object.
	cowAddr := crypto.PubkeyToAddress(cow.PublicKey)
	for _, td := range []any{mailTypedData, json.RawMessage(mailTypedData)} {
		var sig hexutil.Bytes
		if err := json.Unmarshal(e.call("eth_signTypedData_v4", cowAddr, td), &sig); err != nil || sig.String() != mailSignature {
			t.Fatalf("eth_signTypedData_v4 of the EIP-712 example: %s, want %s (%v)", sig, mailSignature, err)
		}
	}
	// Large integers in a message stay exact.
	big712 := `{"types":{"EIP712Domain":[{"name":"chainId","type":"uint256"}],"V":[{"name":"v","type":"uint256"}]},"primaryType":"V","domain":{"chainId":1337},"message":{"v":115792089237316195423570985008687907853269984665640564039457584007913129639935}}`
	bigHex := strings.Replace(big712, "115792089237316195423570985008687907853269984665640564039457584007913129639935", `"0xffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"`, 1)
	var a1, a2 hexutil.Bytes
	json.Unmarshal(e.call("eth_signTypedData_v4", e.Accs[0].Address, big712), &a1)
	json.Unmarshal(e.call("eth_signTypedData_v4", e.Accs[0].Address, bigHex), &a2)
	if len(a1) != 65 || a1.String() != a2.String() {
		t.Fatalf("a uint256 as a JSON number and as hex sign differently: %s / %s", a1, a2)
	}
	// Errors name the argument, or the account.
	for _, tc := range []struct {
		method string
		params []any
		code   int
		msg    string
	}{
		{"eth_sign", []any{common.Address{0x99}, "0x01"}, rpc.CodeServerError, "unknown account 0x9900000000000000000000000000000000000000"},
		{"eth_signTypedData_v4", []any{e.Accs[0].Address, `{"types":{}}`}, rpc.CodeInvalidParams, "invalid argument 1 (typed data)"},
		{"eth_signTypedData_v4", []any{e.Accs[0].Address}, rpc.CodeInvalidParams, "missing value for required argument 1 (typed data)"},
		{"eth_sendTransaction", []any{map[string]any{"to": common.Address{1}}}, rpc.CodeInvalidParams, `invalid argument 0 (transaction): "from" is required`},
	} {
		_, rerr := e.callErr(tc.method, tc.params...)
		if rerr == nil || rerr.Code != tc.code || !strings.Contains(rerr.Message, tc.msg) {
			t.Fatalf("%s: %+v, want %d %q", tc.method, rerr, tc.code, tc.msg)
		}
	}
}

func devKeys(t *testing.T) []*ecdsa.PrivateKey {
	t.Helper()
	return pendingtest.Keys(pendingtest.Accounts(t, 10))
}

// eth_sendTransaction fills in nonce (pool included: three in a row),
// gas and fees, signs with the dev key and pools the transaction;
// eth_signTransaction returns the same kind of transaction, signed, unsent.
func TestSendTransactionFromDevAccount(t *testing.T) {
	e := newEnv(t)
	from := e.Accs[2].Address
	to := common.Address{0xc0}
	var hashes []common.Hash
	for i := range 3 {
		var h common.Hash
		if err := json.Unmarshal(e.call("eth_sendTransaction", map[string]any{"from": from, "to": to, "value": hexutil.EncodeUint64(uint64(i + 1))}), &h); err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, h)
	}
	// A contract creation without gas: estimated.
	var deploy common.Hash
	json.Unmarshal(e.call("eth_sendTransaction", map[string]any{"from": from, "data": hexutil.Bytes(pendingtest.InitCode(pairRuntime))}), &deploy)
	hashes = append(hashes, deploy)
	if n := e.pendingNonce(from); n != 4 {
		t.Fatalf("pending nonce %d after four sends", n)
	}
	e.Tick(1)
	for i, h := range hashes {
		tx, _, _, ok := e.Mgr.Current().Transaction(h)
		if !ok {
			t.Fatalf("send %d (%s) not pre-confirmed", i, h)
		}
		var r struct {
			Status hexutil.Uint64 `json:"status"`
			From   common.Address `json:"from"`
		}
		json.Unmarshal(e.call("eth_getTransactionReceipt", h), &r)
		if tx.Nonce() != uint64(i) || tx.Type() != types.DynamicFeeTxType || r.Status != 1 || r.From != from || tx.(*types.Transaction).ChainId().Cmp(e.Genesis.Config.ChainID) != 0 {
			t.Fatalf("send %d: nonce %d type %d status %d from %s", i, tx.Nonce(), tx.Type(), r.Status, r.From)
		}
		if i == 3 && (tx.Gas() < 50_000 || tx.Gas() > 200_000) {
			t.Fatalf("deployment gas %d not an estimate", tx.Gas())
		}
	}
	// A legacy transaction when asked for one with gasPrice.
	var lh common.Hash
	json.Unmarshal(e.call("eth_sendTransaction", map[string]any{"from": from, "to": to, "gasPrice": hexutil.EncodeUint64(5 * params.GWei)}), &lh)
	if tx := e.Pool.Get(lh); tx == nil || tx.Type() != types.LegacyTxType || tx.GasPrice().Uint64() != 5*params.GWei || tx.Gas() != 21_000 {
		t.Fatalf("legacy send: %v", tx)
	}
	// eth_signTransaction: signed, filled, not sent.
	var raw hexutil.Bytes
	json.Unmarshal(e.call("eth_signTransaction", map[string]any{"from": from, "to": to, "value": "0x5"}), &raw)
	tx := new(types.Transaction)
	if err := tx.UnmarshalBinary(raw); err != nil {
		t.Fatal(err)
	}
	signer, err := types.Sender(e.Signer, tx)
	if err != nil || signer != from || tx.Nonce() != 5 || tx.Value().Uint64() != 5 || tx.Gas() != 21_000 || e.Pool.Get(tx.Hash()) != nil {
		t.Fatalf("signed transaction: from %s nonce %d value %v gas %d pooled %v", signer, tx.Nonce(), tx.Value(), tx.Gas(), e.Pool.Get(tx.Hash()) != nil)
	}
	// A send whose execution reverts is refused as eth_estimateGas refuses
	// it: -32000 "execution reverted" with the revert data.
	var dh common.Hash
	json.Unmarshal(e.call("eth_sendTransaction", map[string]any{"from": from, "data": hexutil.Bytes(pendingtest.InitCode(common.FromHex("602a60005260206000fd")))}), &dh)
	e.Tick(1)
	reverter := crypto.CreateAddress(from, 5)
	_, rerr := e.callErr("eth_sendTransaction", map[string]any{"from": from, "to": reverter})
	if rerr == nil || rerr.Code != rpc.CodeCallReverted || rerr.Message != "execution reverted" || rerr.Data != common.BigToHash(big.NewInt(42)).Hex() {
		t.Fatalf("reverting send: %+v", rerr)
	}
}

// Without node-held accounts (tipnode run) eth_accounts is [] and every
// signing method says so.
func TestNoAccountsOnRun(t *testing.T) {
	e := newEnvWith(t, envOptions{keys: []*ecdsa.PrivateKey{}})
	if got := string(e.call("eth_accounts")); got != "[]" {
		t.Fatalf("eth_accounts %s, want []", got)
	}
	a0 := e.Accs[0].Address
	tx := map[string]any{"from": a0, "to": a0}
	for _, c := range []struct {
		method string
		params []any
	}{
		{"eth_sendTransaction", []any{tx}},
		{"eth_signTransaction", []any{tx}},
		{"eth_sign", []any{a0, "0x01"}},
		{"personal_sign", []any{"0x01", a0}},
		{"eth_signTypedData_v4", []any{a0, mailTypedData}},
	} {
		_, rerr := e.callErr(c.method, c.params...)
		if rerr == nil || rerr.Code != rpc.CodeServerError || !strings.Contains(rerr.Message, "this node holds no accounts") {
			t.Fatalf("%s: %+v", c.method, rerr)
		}
	}
}
