package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/core/vm/program"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/chain/devnet"
	"github.com/tipnode/tipnode/chain/op"
	"github.com/tipnode/tipnode/chain/op/optest"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// The differential oracle against op-geth (issue 19): `make op-geth-diff`
// builds op-geth v1.101702.3's cmd/geth from the Go module proxy and runs
// TestOPGethDifferential with TIPNODE_OPGETH naming it. The test drives
// op-geth's engine API as a minimal op-node would, over a chain whose
// genesis is a real one (issue 37), as op-geth's `dumpgenesis` writes it
// (../shared/op/chains; opDiffChains: OP Sepolia and Zora with the
// Bedrock-era predeploys behind their proxies, World Chain from Ecotone,
// Unichain from Granite), with the fork times re-timed so that every fork
// from Canyon through Jovian that is not active at genesis activates during
// the run (Karst unset: op-geth v1.101702.3 has none), and a few test
// accounts and contracts added to the alloc. The
// activation blocks of Ecotone, Fjord, Isthmus and Jovian hold the
// network-upgrade deposits op-node inserts (chain/devnet UpgradeTxs: the
// spec's senders, gas, calldata and source hashes; tipnode's own
// implementations deployed at the spec's addresses behind the real proxies;
// the EIP-4788 and EIP-2935 contracts), and no pool transactions. The chain
// holds user deposits, every transaction type op-geth accepts, withdrawals
// through the real message passer, non-zero L1 and operator fees, and
// zero-valued SystemConfig parameters (every L1 fee scalar 0, with the L1
// blob base fee at its minimum of 1 wei or above; no operator fee;
// eip1559Params zero; minBaseFee 0; daFootprintGasScalar 0, the Jovian
// default). tipnode, fed op-geth's
// `export` through `import` and following op-geth through `run
// --follow.rpc`, must have op-geth's blocks, receipts, transactions,
// balances, nonces, code, storage and eth_call answers at every height. It
// ends with the import throughput of this OP chain against an L1 chain of
// about the same gas.

// opDiff are the chain's parameters: fork offsets from the genesis time, in
// seconds (blocks are 2 s apart). Canyon's falls on a block: the
// create2Deployer is set in the block at exactly canyonTime.
const (
	opDiffBlockTime = 2
	opCanyonAt      = 4  // block 2
	opEcotoneAt     = 10 // block 5
	opFjordAt       = 20 // block 10
	opGraniteAt     = 24 // block 12
	opHoloceneAt    = 30 // block 15
	opIsthmusAt     = 40 // block 20
	opJovianAt      = 50 // block 25
	opForkBlocks    = 32 // blocks of the fork phase
	opLoadBlocks    = 16 // blocks of the load phase (import throughput)
	opLoadTxs       = 200
	opGasLimit      = 60_000_000
)

// Contracts of the test chain (genesis alloc), written as raw EVM code.
var (
	logContract    = common.HexToAddress("0x000000000000000000000000000000000000c0d1")
	revertContract = common.HexToAddress("0x000000000000000000000000000000000000c0d2")
	loadContract   = common.HexToAddress("0x000000000000000000000000000000000000c0d3")
)

// logCode: slot 0 += calldata word 0; LOG1(calldata, topic = caller).
func logCode() []byte {
	return program.New().
		Push(0).Op(vm.CALLDATALOAD).Push(0).Op(vm.SLOAD, vm.ADD).Push(0).Op(vm.SSTORE).
		Op(vm.CALLDATASIZE).Push(0).Push(0).Op(vm.CALLDATACOPY).
		Op(vm.CALLER, vm.CALLDATASIZE).Push(0).Op(vm.LOG1, vm.STOP).Bytes()
}

// loadCode: storage[calldata word 0] = calldata word 1; LOG0(calldata).
func loadCode() []byte {
	return program.New().
		Push(32).Op(vm.CALLDATALOAD).Push(0).Op(vm.CALLDATALOAD, vm.SSTORE).
		Op(vm.CALLDATASIZE).Push(0).Push(0).Op(vm.CALLDATACOPY).
		Op(vm.CALLDATASIZE).Push(0).Op(vm.LOG0, vm.STOP).Bytes()
}

func revertCode() []byte {
	return program.New().Push(1).Push(0).Op(vm.SSTORE).Push(0).Push(0).Op(vm.REVERT).Bytes()
}

func initCode(runtime []byte) []byte { return program.New().ReturnViaCodeCopy(runtime).Bytes() }

// opKey is a deterministic test key.
func opKey(name string) *ecdsa.PrivateKey {
	k, err := crypto.ToECDSA(crypto.Keccak256([]byte("op-geth-diff " + name)))
	if err != nil {
		panic(err)
	}
	return k
}

// opDiffSpec is the test chain: the real genesis it starts from, its
// genesis time, keys and the genesis JSON.
type opDiffSpec struct {
	base    map[string]json.RawMessage // the real genesis, as dumpgenesis wrote it
	chainID uint64
	t0      uint64
	senders map[string]*ecdsa.PrivateKey // legacy, accesslist, dynamic, setcode, load
	auth    *ecdsa.PrivateKey            // the EIP-7702 authority
}

// newOPDiffSpec reads the real genesis file.
func newOPDiffSpec(t *testing.T, file string) *opDiffSpec {
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s := &opDiffSpec{senders: map[string]*ecdsa.PrivateKey{}, auth: opKey("authority")}
	if err := json.Unmarshal(raw, &s.base); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var head struct {
		Config struct {
			ChainID uint64 `json:"chainId"`
		} `json:"config"`
		Timestamp hexutil.Uint64 `json:"timestamp"`
	}
	if err := json.Unmarshal(raw, &head); err != nil || head.Config.ChainID == 0 {
		t.Fatalf("%s: no chain id or timestamp (%v)", file, err)
	}
	s.chainID, s.t0 = head.Config.ChainID, uint64(head.Timestamp)
	for _, n := range []string{"legacy", "accesslist", "dynamic", "setcode", "load"} {
		s.senders[n] = opKey(n)
	}
	return s
}

// genesisJSON is the real genesis with the OP forks from Canyon that are
// not active at genesis re-timed after it (each with the L1 fork it stands
// for: Shanghai, Cancun, Prague), Karst and Delta unset, and the test's senders and contracts
// added to the alloc; everything else (the predeploys, proxies and their
// storage, the header fields, the EIP-1559 constants) is the file's.
func (s *opDiffSpec) genesisJSON() []byte {
	var cfg map[string]any
	dec := json.NewDecoder(bytes.NewReader(s.base["config"]))
	dec.UseNumber() // numbers as written (no float64 rounding)
	if err := dec.Decode(&cfg); err != nil {
		panic(err)
	}
	for _, f := range []struct {
		fork, l1 string
		at       uint64
	}{
		{"canyonTime", "shanghaiTime", opCanyonAt}, {"ecotoneTime", "cancunTime", opEcotoneAt}, {"fjordTime", "", opFjordAt},
		{"graniteTime", "", opGraniteAt}, {"holoceneTime", "", opHoloceneAt}, {"isthmusTime", "pragueTime", opIsthmusAt},
		{"jovianTime", "", opJovianAt},
	} {
		if v, ok := cfg[f.fork].(json.Number); ok && v.String() != "" && mustUint(v) <= s.t0 {
			continue // active at genesis: kept
		}
		cfg[f.fork] = s.t0 + f.at
		if f.l1 != "" {
			cfg[f.l1] = s.t0 + f.at
		}
	}
	delete(cfg, "karstTime")
	delete(cfg, "osakaTime")
	delete(cfg, "deltaTime")
	var alloc map[string]json.RawMessage
	if err := json.Unmarshal(s.base["alloc"], &alloc); err != nil {
		panic(err)
	}
	add := func(a common.Address, acc map[string]any) {
		if _, ok := alloc[strings.ToLower(a.Hex()[2:])]; ok {
			panic(fmt.Sprintf("the genesis already holds %s", a))
		}
		j, _ := json.Marshal(acc)
		alloc[strings.ToLower(a.Hex()[2:])] = j
	}
	code := func(c []byte) map[string]any {
		return map[string]any{"balance": "0x0", "code": hexutil.Bytes(c).String(), "nonce": "0x1"}
	}
	add(logContract, code(logCode()))
	add(revertContract, code(revertCode()))
	add(loadContract, code(loadCode()))
	for _, k := range s.senders {
		add(crypto.PubkeyToAddress(k.PublicKey), map[string]any{"balance": "0x3635c9adc5dea00000"}) // 1000 ETH
	}
	g := map[string]any{}
	for k, v := range s.base {
		g[k] = v
	}
	g["config"], g["alloc"] = cfg, alloc
	out, err := json.MarshalIndent(g, "", " ")
	if err != nil {
		panic(err)
	}
	return out
}

func mustUint(n json.Number) uint64 {
	v, err := strconv.ParseUint(n.String(), 10, 64)
	if err != nil {
		panic(err)
	}
	return v
}

// opConfig is chain/op's view of the same genesis.
func (s *opDiffSpec) opConfig(t *testing.T) *op.Config {
	var g struct {
		Config json.RawMessage `json:"config"`
	}
	if err := json.Unmarshal(s.genesisJSON(), &g); err != nil {
		t.Fatal(err)
	}
	cfg, err := op.ParseConfig(g.Config)
	if err != nil || cfg == nil {
		t.Fatalf("op.ParseConfig: %v", err)
	}
	return cfg
}

// engineClient calls op-geth's authenticated engine API.
type engineClient struct {
	url    string
	secret []byte
}

func (e *engineClient) token() string {
	enc := base64.RawURLEncoding
	head := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	claims := enc.EncodeToString([]byte(fmt.Sprintf(`{"iat":%d}`, time.Now().Unix())))
	mac := hmac.New(sha256.New, e.secret)
	mac.Write([]byte(head + "." + claims))
	return head + "." + claims + "." + enc.EncodeToString(mac.Sum(nil))
}

func (e *engineClient) call(method string, result any, params ...any) error {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+e.token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if r.Error != nil {
		return fmt.Errorf("%s: %d %s", method, r.Error.Code, r.Error.Message)
	}
	if result == nil {
		return nil
	}
	return json.Unmarshal(r.Result, result)
}

// opGeth is a running op-geth.
type opGeth struct {
	bin, dir, rpc string
	chainID       uint64
	engine        *engineClient
	p             *process
}

func (g *opGeth) start(t *testing.T, jwtFile string) {
	t.Helper()
	httpAddr, authAddr := freePort(t), freePort(t)
	hh, hp, _ := strings.Cut(httpAddr, ":")
	ah, ap, _ := strings.Cut(authAddr, ":")
	g.p = startProcess(t, g.bin, "--datadir", g.dir, "--networkid", fmt.Sprint(g.chainID),
		"--nodiscover", "--maxpeers", "0", "--port", "0", "--ipcdisable",
		"--syncmode", "full", "--gcmode", "archive", "--state.scheme", "hash",
		"--http", "--http.addr", hh, "--http.port", hp, "--http.api", "eth,net,web3,debug,txpool",
		"--authrpc.addr", ah, "--authrpc.port", ap, "--authrpc.jwtsecret", jwtFile,
		"--rollup.disabletxpoolgossip",
		// The chain id is OP Sepolia's: by default op-geth replaces the
		// stored chain config of a chain its superchain registry knows
		// with the registry's, undoing the re-timed forks.
		"--rollup.superchain-upgrades=false",
		"--txpool.accountslots", "4096", "--txpool.globalslots", "20000",
		"--txpool.accountqueue", "4096", "--txpool.globalqueue", "20000",
		"--verbosity", "3")
	g.rpc = "http://" + httpAddr
	g.engine.url = "http://" + authAddr
	waitRPC(t, g.rpc, g.p)
}

// stop interrupts op-geth and waits for it to flush and exit.
func (g *opGeth) stop(t *testing.T) {
	t.Helper()
	g.p.cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- g.p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("op-geth did not stop:\n%s", tail(g.p.out.String(), 4000))
	}
}

// opDriver builds the chain through the engine API and the tx pool.
type opDriver struct {
	t       *testing.T
	s       *opDiffSpec
	cfg     *op.Config
	g       *opGeth
	signer  types.Signer
	nonces  map[string]uint64
	authN   uint64
	head    common.Hash
	genesis common.Hash
	headT   uint64
	logIdx  uint64
	sent    []common.Hash // pool transactions sent
	// upgrades are the network-upgrade deposits built into the chain.
	upgrades []common.Hash
}

func (d *opDriver) l1Info(n uint64, t, prevTime uint64) []byte {
	ver := op.L1InfoVersionAt(d.cfg, t, prevTime)
	info := &op.L1Info{
		Version:        ver,
		Number:         1000 + n/3,
		Time:           d.s.t0 - 600 + 12*(n/3),
		BaseFee:        big.NewInt(7_000_000_000 + int64(n)*13_000_000),
		BlockHash:      crypto.Keccak256Hash([]byte("l1"), new(big.Int).SetUint64(n/3).Bytes()),
		SequenceNumber: n % 3,
		BatcherHash:    common.HexToHash("0x0000000000000000000000008f23bb38f531600e5d8fddaaec41f13fab46e98c"),
	}
	// Zero-valued SystemConfig parameters (issue 37) in every fourth
	// block: every L1 fee scalar 0 (Bedrock's overhead and scalar; from
	// Ecotone both scalars, the L1 blob base fee staying non-zero as on
	// L1, 1 wei in every eighth block) and no operator fee; the block after
	// such a block has an operator fee constant without a scalar.
	// From Jovian every other L1-info deposit has daFootprintGasScalar 0
	// (the default, 400, applies).
	zero := n%4 == 3
	switch ver {
	case op.L1InfoBedrock:
		info.L1FeeOverhead, info.L1FeeScalar = big.NewInt(188), big.NewInt(684_000)
		if zero {
			info.L1FeeOverhead, info.L1FeeScalar = new(big.Int), new(big.Int)
		}
	default:
		info.BaseFeeScalar, info.BlobBaseFeeScalar = 1368+uint32(n), 810_949
		info.BlobBaseFee = big.NewInt(300_000_000 + int64(n))
		if zero {
			info.BaseFeeScalar, info.BlobBaseFeeScalar = 0, 0
		}
		if n%8 == 7 {
			// The smallest L1 blob base fee (EIP-4844's minimum, and what
			// op-node gives for an L1 block without blob fields). A zero
			// one, which op-node never sends, would make op-geth charge
			// the Bedrock formula (its first-Ecotone-block test on
			// storage) while its receipts show the Ecotone fields of the
			// calldata.
			info.BlobBaseFee = big.NewInt(1)
		}
	}
	if ver >= op.L1InfoIsthmus {
		info.OperatorFeeScalar, info.OperatorFeeConstant = 2000+uint32(n), 5_000_000_000+n
		switch n % 4 {
		case 3:
			info.OperatorFeeScalar, info.OperatorFeeConstant = 0, 0
		case 0:
			info.OperatorFeeScalar = 0
		}
	}
	if ver == op.L1InfoJovian && n%2 == 1 {
		info.DAFootprintGasScalar = 100
	}
	data, err := info.Marshal()
	if err != nil {
		d.t.Fatal(err)
	}
	dep := chaintypes.NewDeposit(chaintypes.DepositFields{
		SourceHash: op.L1InfoDepositSourceHash(info.BlockHash, info.SequenceNumber),
		From:       op.L1InfoDepositor, To: &op.L1BlockAddr, Gas: 1_000_000, Data: data,
	})
	raw, err := dep.MarshalBinary()
	if err != nil {
		d.t.Fatal(err)
	}
	return raw
}

// userDeposits are the user deposits of block n (at an epoch's first block):
// a mint with a transfer, a failing one (value above balance, keeps its
// mint), a contract creation and a call that logs.
func (d *opDriver) userDeposits(n uint64) [][]byte {
	l1 := crypto.Keccak256Hash([]byte("l1"), new(big.Int).SetUint64(n/3).Bytes())
	mk := func(f chaintypes.DepositFields) []byte {
		f.SourceHash = op.UserDepositSourceHash(l1, d.logIdx)
		d.logIdx++
		raw, err := chaintypes.NewDeposit(f).MarshalBinary()
		if err != nil {
			d.t.Fatal(err)
		}
		return raw
	}
	eth := func(x int64) *big.Int { return new(big.Int).Mul(big.NewInt(x), big.NewInt(params.Ether)) }
	recipient := common.HexToAddress("0x00000000000000000000000000000000000de9")
	arg := common.BigToHash(new(big.Int).SetUint64(n)).Bytes()
	return [][]byte{
		mk(chaintypes.DepositFields{From: common.HexToAddress("0x00000000000000000000000000000000000d01"), To: &recipient,
			Mint: eth(10), Value: eth(1), Gas: 100_000}),
		mk(chaintypes.DepositFields{From: common.HexToAddress("0x00000000000000000000000000000000000d02"), To: &recipient,
			Mint: big.NewInt(1000), Value: eth(1_000_000), Gas: 90_000}),
		mk(chaintypes.DepositFields{From: common.HexToAddress("0x00000000000000000000000000000000000d03"),
			Mint: eth(1), Value: big.NewInt(5), Gas: 300_000, Data: initCode(logCode())}),
		mk(chaintypes.DepositFields{From: common.HexToAddress("0x00000000000000000000000000000000000d04"), To: &logContract,
			Gas: 80_000, Data: arg}),
	}
}

// send signs tx data for sender name and puts it in op-geth's pool.
func (d *opDriver) send(name string, inner types.TxData) {
	d.t.Helper()
	tx, err := types.SignNewTx(d.s.senders[name], d.signer, inner)
	if err != nil {
		d.t.Fatal(err)
	}
	raw, _ := tx.MarshalBinary()
	var h common.Hash
	if err := rpcCall(d.g.rpc, "eth_sendRawTransaction", &h, hexutil.Bytes(raw)); err != nil {
		d.t.Fatalf("send %s tx: %v", name, err)
	}
	d.nonces[name]++
	d.sent = append(d.sent, h)
}

// sendMix sends one transaction of every type op-geth accepts at time t
// (EIP-7702 once the head is Isthmus), contract calls with logs, a reverting call, a
// contract creation and a P256VERIFY call.
func (d *opDriver) sendMix(n, t uint64) {
	cid := new(big.Int).SetUint64(d.s.chainID)
	tip, cap := big.NewInt(params.GWei), big.NewInt(50*params.GWei)
	arg := common.BigToHash(new(big.Int).SetUint64(n + 1)).Bytes()
	to := logContract
	d.send("legacy", &types.LegacyTx{Nonce: d.nonces["legacy"], GasPrice: cap, Gas: 21_000,
		To: &common.Address{0xbe, byte(n)}, Value: big.NewInt(int64(n) + 1)})
	d.send("legacy", &types.LegacyTx{Nonce: d.nonces["legacy"], GasPrice: cap, Gas: 100_000, To: &to, Data: arg})
	d.send("accesslist", &types.AccessListTx{ChainID: cid, Nonce: d.nonces["accesslist"], GasPrice: cap, Gas: 100_000,
		To: &to, Data: append(arg, 0xaa, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1),
		AccessList: types.AccessList{{Address: logContract, StorageKeys: []common.Hash{{}}}}})
	d.send("dynamic", &types.DynamicFeeTx{ChainID: cid, Nonce: d.nonces["dynamic"], GasTipCap: tip, GasFeeCap: cap,
		Gas: 100_000, To: &to, Data: arg})
	rc := revertContract
	d.send("dynamic", &types.DynamicFeeTx{ChainID: cid, Nonce: d.nonces["dynamic"], GasTipCap: tip, GasFeeCap: cap,
		Gas: 60_000, To: &rc})
	d.send("dynamic", &types.DynamicFeeTx{ChainID: cid, Nonce: d.nonces["dynamic"], GasTipCap: tip, GasFeeCap: cap,
		Gas: 200_000, Data: initCode(logCode())})
	// A withdrawal through the real L2ToL1MessagePasser: its storage root
	// is the header's withdrawalsRoot from Isthmus (and op-geth refuses
	// its own Isthmus payload on an empty one).
	mp := op.L2ToL1MessagePasser
	wd := append(crypto.Keccak256([]byte("initiateWithdrawal(address,uint256,bytes)"))[:4],
		common.LeftPadBytes([]byte{0xbe, byte(n)}, 32)...)
	wd = append(wd, common.LeftPadBytes(big.NewInt(100_000).Bytes(), 32)...)
	wd = append(wd, common.LeftPadBytes([]byte{0x60}, 32)...)
	wd = append(wd, make([]byte, 32)...)
	d.send("dynamic", &types.DynamicFeeTx{ChainID: cid, Nonce: d.nonces["dynamic"], GasTipCap: tip, GasFeeCap: cap,
		Gas: 200_000, To: &mp, Value: big.NewInt(params.GWei + int64(n)), Data: wd})
	p256 := common.BytesToAddress([]byte{0x01, 0x00})
	d.send("dynamic", &types.DynamicFeeTx{ChainID: cid, Nonce: d.nonces["dynamic"], GasTipCap: tip, GasFeeCap: cap,
		Gas: 60_000, To: &p256, Data: bytes.Repeat([]byte{0x11}, 160)})
	if d.cfg.IsIsthmus(d.headT) { // op-geth's pool takes type 4 once its head is Isthmus
		auth, err := types.SignSetCode(d.s.auth, types.SetCodeAuthorization{
			ChainID: *uint256.NewInt(d.s.chainID), Address: logContract, Nonce: d.authN})
		if err != nil {
			d.t.Fatal(err)
		}
		d.authN++
		authority := crypto.PubkeyToAddress(d.s.auth.PublicKey)
		d.send("setcode", &types.SetCodeTx{ChainID: uint256.NewInt(d.s.chainID), Nonce: d.nonces["setcode"],
			GasTipCap: uint256.MustFromBig(tip), GasFeeCap: uint256.MustFromBig(cap), Gas: 150_000,
			To: authority, Data: arg, AuthList: []types.SetCodeAuthorization{auth}})
	}
}

// sendLoad sends opLoadTxs storage-writing calls (fresh slots) for block n.
func (d *opDriver) sendLoad(n uint64) {
	cid := new(big.Int).SetUint64(d.s.chainID)
	for _, tx := range loadTxs(d.s.senders["load"], d.signer, cid, d.nonces["load"], n, opLoadTxs) {
		raw, _ := tx.MarshalBinary()
		var h common.Hash
		if err := rpcCall(d.g.rpc, "eth_sendRawTransaction", &h, hexutil.Bytes(raw)); err != nil {
			d.t.Fatalf("send load tx: %v", err)
		}
		d.sent = append(d.sent, h)
	}
	d.nonces["load"] += opLoadTxs
}

// loadTxs are count calls of the load contract, each writing a fresh slot.
func loadTxs(key *ecdsa.PrivateKey, signer types.Signer, chainID *big.Int, nonce, n uint64, count int) []*types.Transaction {
	out := make([]*types.Transaction, count)
	to := loadContract
	for i := range count {
		data := append(common.BigToHash(new(big.Int).SetUint64(n<<20|uint64(i))).Bytes(),
			common.BigToHash(new(big.Int).SetUint64(n*1_000_003+uint64(i)+1)).Bytes()...)
		tx, err := types.SignNewTx(key, signer, &types.DynamicFeeTx{ChainID: chainID, Nonce: nonce + uint64(i),
			GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(50 * params.GWei), Gas: 60_000, To: &to, Data: data})
		if err != nil {
			panic(err)
		}
		out[i] = tx
	}
	return out
}

// buildBlock runs one op-node round for block n at time t: forkchoice
// update with the payload attributes, getPayload, newPayload, forkchoice
// update to make it head.
//
// The block's transactions are op-node's: the L1-info deposit, the user
// deposits, then the network-upgrade deposits of the forks the block
// activates (chain/devnet ActivationDeposits); a block with upgrade
// deposits takes no pool transactions (noTxPool), as the specs' activation
// blocks do.
func (d *opDriver) buildBlock(n, t uint64, deposits [][]byte, wait time.Duration) {
	d.t.Helper()
	txs := []hexutil.Bytes{d.l1Info(n, t, d.headT)}
	for _, dep := range deposits {
		txs = append(txs, dep)
	}
	upgrades := devnet.ActivationDeposits(d.cfg, d.headT, t)
	for _, dep := range upgrades {
		raw, err := dep.MarshalBinary()
		if err != nil {
			d.t.Fatal(err)
		}
		txs = append(txs, raw)
		d.upgrades = append(d.upgrades, dep.Hash())
	}
	gl := hexutil.Uint64(opGasLimit)
	attrs := map[string]any{
		"timestamp":             hexutil.Uint64(t),
		"prevRandao":            crypto.Keccak256Hash([]byte("randao"), new(big.Int).SetUint64(n).Bytes()),
		"suggestedFeeRecipient": op.SequencerFeeVault,
		"transactions":          txs,
		"noTxPool":              len(upgrades) > 0,
		"gasLimit":              &gl,
	}
	if d.cfg.IsCanyon(t) {
		attrs["withdrawals"] = []any{}
	}
	ecotone, isthmus := d.cfg.IsEcotone(t), d.cfg.IsIsthmus(t)
	if ecotone {
		attrs["parentBeaconBlockRoot"] = crypto.Keccak256Hash([]byte("beacon"), new(big.Int).SetUint64(n).Bytes())
	}
	if d.cfg.IsHolocene(t) {
		// Denominator ‖ elasticity; alternate between the chain's constants
		// (zero) and explicit ones.
		p := make([]byte, 8)
		if n%2 == 0 {
			copy(p, []byte{0, 0, 0, 100, 0, 0, 0, 4})
		}
		attrs["eip1559Params"] = hexutil.Bytes(p)
	}
	if d.cfg.IsJovian(t) {
		// Rotate a minimum above the base fee (it binds), one below and
		// none (0).
		attrs["minBaseFee"] = []uint64{0, 100_000_000, 1_000_000_000}[n%3]
	}
	fcu, get, newp := "engine_forkchoiceUpdatedV2", "engine_getPayloadV2", "engine_newPayloadV2"
	if ecotone {
		fcu, get, newp = "engine_forkchoiceUpdatedV3", "engine_getPayloadV3", "engine_newPayloadV3"
	}
	if isthmus {
		get, newp = "engine_getPayloadV4", "engine_newPayloadV4"
	}
	state := map[string]any{"headBlockHash": d.head, "safeBlockHash": d.head, "finalizedBlockHash": d.genesis}
	var res struct {
		PayloadStatus struct {
			Status string `json:"status"`
			Error  string `json:"validationError"`
		} `json:"payloadStatus"`
		PayloadID *hexutil.Bytes `json:"payloadId"`
	}
	if err := d.g.engine.call(fcu, &res, state, attrs); err != nil || res.PayloadID == nil {
		d.t.Fatalf("block %d: %s: %v %+v\n%s", n, fcu, err, res, tail(d.g.p.out.String(), 4000))
	}
	time.Sleep(wait) // let the builder fill the block from the pool
	var env struct {
		ExecutionPayload json.RawMessage `json:"executionPayload"`
	}
	if err := d.g.engine.call(get, &env, res.PayloadID); err != nil {
		d.t.Fatalf("block %d: %s: %v", n, get, err)
	}
	var payload struct {
		BlockHash common.Hash     `json:"blockHash"`
		Txs       []hexutil.Bytes `json:"transactions"`
	}
	if err := json.Unmarshal(env.ExecutionPayload, &payload); err != nil {
		d.t.Fatal(err)
	}
	args := []any{env.ExecutionPayload}
	if ecotone {
		args = append(args, []common.Hash{}, attrs["parentBeaconBlockRoot"])
	}
	if isthmus {
		args = append(args, []hexutil.Bytes{})
	}
	var st struct {
		Status string `json:"status"`
		Error  string `json:"validationError"`
	}
	if err := d.g.engine.call(newp, &st, args...); err != nil || st.Status != "VALID" {
		d.t.Fatalf("block %d: %s: %v %+v\npayload %s\n%s", n, newp, err, st, env.ExecutionPayload, tail(d.g.p.out.String(), 4000))
	}
	state["headBlockHash"], state["safeBlockHash"] = payload.BlockHash, payload.BlockHash
	if err := d.g.engine.call(fcu, &res, state, nil); err != nil || res.PayloadStatus.Status != "VALID" {
		d.t.Fatalf("block %d: %s (head): %v %+v", n, fcu, err, res)
	}
	d.head, d.headT = payload.BlockHash, t
}

// checkUpgrades checks on op-geth's chain that the upgrades happened as the
// specs intend (else the differential would compare a chain whose
// upgrades failed): every upgrade deposit succeeded; the proxies point at
// the last fork's implementations, which hold tipnode's code; the
// GasPriceOracle has every fork flag set; the EIP-4788 and EIP-2935
// contracts hold the EIPs' code; the create2Deployer appeared in the block
// at exactly canyonTime.
func (d *opDriver) checkUpgrades() {
	d.t.Helper()
	if len(d.upgrades) == 0 {
		d.t.Fatal("the chain holds no upgrade deposits")
	}
	for _, h := range d.upgrades {
		var r struct {
			Status  hexutil.Uint64  `json:"status"`
			GasUsed hexutil.Uint64  `json:"gasUsed"`
			Block   hexutil.Uint64  `json:"blockNumber"`
			Created *common.Address `json:"contractAddress"`
		}
		if err := rpcCall(d.g.rpc, "eth_getTransactionReceipt", &r, h); err != nil || r.Status != 1 {
			d.t.Fatalf("upgrade deposit %s: status %d (%v)", h, r.Status, err)
		}
	}
	at := func(method string, args ...any) string {
		var v string
		if err := rpcCall(d.g.rpc, method, &v, args...); err != nil {
			d.t.Fatalf("%s %v: %v", method, args, err)
		}
		return v
	}
	impl := func(proxy common.Address) common.Address {
		return common.HexToAddress(at("eth_getStorageAt", proxy, eip1967Impl, "latest"))
	}
	jovian, _ := devnet.UpgradeTxs("jovian")
	isthmus, _ := devnet.UpgradeTxs("isthmus")
	for _, w := range []struct {
		proxy, impl common.Address
		code        []byte
	}{
		{op.L1BlockAddr, jovian[0].Deployed(), devnet.L1BlockCode},
		{devnet.GasPriceOracleAddr, jovian[2].Deployed(), devnet.GasPriceOracleCode},
		{op.OperatorFeeVault, isthmus[2].Deployed(), devnet.OperatorFeeVaultCode},
	} {
		if got := impl(w.proxy); got != w.impl {
			d.t.Fatalf("proxy %s points at %s, want %s", w.proxy, got, w.impl)
		}
		if got := at("eth_getCode", w.impl, "latest"); got != hexutil.Encode(w.code) {
			d.t.Fatalf("implementation %s holds other code", w.impl)
		}
	}
	if got := at("eth_getStorageAt", devnet.GasPriceOracleAddr, common.Hash{}, "latest"); common.HexToHash(got) != devnet.GasPriceOracleFlags(true, true, true, true) {
		d.t.Fatalf("GasPriceOracle flags %s", got)
	}
	for a, code := range map[common.Address][]byte{params.BeaconRootsAddress: params.BeaconRootsCode, params.HistoryStorageAddress: params.HistoryStorageCode} {
		if got := at("eth_getCode", a, "latest"); got != hexutil.Encode(code) {
			d.t.Fatalf("%s holds %s", a, got)
		}
	}
	if *d.cfg.CanyonTime <= d.s.t0 {
		return // Canyon at genesis: the alloc has the create2Deployer
	}
	canyon := hexutil.Uint64(opCanyonAt / opDiffBlockTime)
	if at("eth_getCode", op.Create2DeployerAddr, canyon-1) != "0x" || at("eth_getCode", op.Create2DeployerAddr, canyon) != hexutil.Encode(op.Create2DeployerCode) {
		d.t.Fatalf("the create2Deployer is not set in block %d, the block at canyonTime", canyon)
	}
}

// poolPending is the number of pending transactions in op-geth's pool.
func (d *opDriver) poolPending() uint64 {
	var st struct {
		Pending hexutil.Uint64 `json:"pending"`
		Queued  hexutil.Uint64 `json:"queued"`
	}
	if err := rpcCall(d.g.rpc, "txpool_status", &st); err != nil {
		d.t.Fatal(err)
	}
	return uint64(st.Pending + st.Queued)
}

// drive builds the whole chain and returns its head number.
func (d *opDriver) drive() uint64 {
	n := uint64(0)
	next := func() (uint64, uint64) { n++; return n, d.s.t0 + opDiffBlockTime*n }
	// Fork phase: every block has its L1-info deposit, some user deposits,
	// and the pool a mix of transactions (but for the
	// activation blocks with upgrade deposits, which op-geth builds without
	// pool transactions).
	for n < opForkBlocks {
		bn, t := n+1, d.s.t0+opDiffBlockTime*(n+1)
		if len(devnet.ActivationDeposits(d.cfg, d.headT, t)) == 0 {
			d.sendMix(bn, t)
		}
		// User deposits: at every third block, and in the Ecotone and
		// Jovian activation blocks (before their upgrade deposits; the
		// Fjord and Isthmus activation blocks have none).
		var deps [][]byte
		if bn%3 == 0 || t == d.s.t0+opEcotoneAt || t == d.s.t0+opJovianAt {
			deps = d.userDeposits(bn)
		}
		bn, t = next()
		d.buildBlock(bn, t, deps, 300*time.Millisecond)
	}
	// Load phase.
	for range opLoadBlocks {
		d.sendLoad(n + 1)
		bn, t := next()
		d.buildBlock(bn, t, nil, 1500*time.Millisecond)
	}
	// Drain the pool.
	for i := 0; d.poolPending() > 0; i++ {
		if i == 20 {
			d.t.Fatalf("op-geth's pool still holds %d transactions", d.poolPending())
		}
		bn, t := next()
		d.buildBlock(bn, t, nil, 1500*time.Millisecond)
	}
	return n
}

// readTipnodeImport runs `tipnode import` and returns the figures of its
// "import done" log line.
func runTipnodeImport(t *testing.T, bin, dir, file string) (mgas float64, wall time.Duration) {
	t.Helper()
	start := time.Now()
	out, err := exec.Command(bin, "import", "--datadir", dir, "--log.format", "json", file).CombinedOutput()
	wall = time.Since(start)
	if err != nil {
		t.Fatalf("tipnode import %s: %v\n%s", file, err, tail(string(out), 4000))
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var line struct {
			Message string  `json:"message"`
			Mgas    float64 `json:"Mgas/s"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Message == "import done" {
			return line.Mgas, wall
		}
	}
	t.Fatalf("tipnode import printed no \"import done\" line:\n%s", out)
	return 0, 0
}

func runCmd(t *testing.T, bin string, args ...string) {
	t.Helper()
	if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, tail(string(out), 4000))
	}
}

// TestOPGethDifferential is the differential oracle against op-geth; see the
// comment at the top of this file. It runs only when TIPNODE_OPGETH names an
// op-geth binary (`make op-geth-diff`). Each chain of opDiffChains is a
// subtest; the import throughput is measured on the first.
func TestOPGethDifferential(t *testing.T) {
	opgeth := os.Getenv("TIPNODE_OPGETH")
	if opgeth == "" {
		t.Skip("TIPNODE_OPGETH names no op-geth binary; `make op-geth-diff` builds op-geth v1.101702.3 and runs this test")
	}
	bin := filepath.Join(t.TempDir(), "tipnode")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	if keep := os.Getenv("TIPNODE_OPGETH_DIR"); keep != "" {
		// The genesis files, the chains' RLP files and the data
		// directories stay there (to re-time or profile an import).
		dir = keep
	}
	files := map[string]string{}
	for _, c := range optest.Chains(t) {
		files[c.Name] = c.Path
	}
	var runs []*opDiffRun
	for _, name := range opDiffChains {
		t.Run(name, func(t *testing.T) {
			if files[name] == "" {
				t.Fatalf("no %s genesis in ../shared/op/chains", name)
			}
			runs = append(runs, runOPDiffChain(t, opgeth, bin, filepath.Join(dir, name), newOPDiffSpec(t, files[name])))
		})
	}
	var heights uint64
	var answers, mismatches int
	for _, r := range runs {
		heights += r.head + 1
		answers += r.c.answers
		mismatches += r.c.mismatches
	}
	t.Logf("%d chains, %d heights against op-geth through import and follow: %d answers, %d mismatches", len(runs), heights, answers, mismatches)
	if len(runs) == 0 || t.Failed() {
		return
	}
	opDiffThroughput(t, bin, runs[0])
}

// opDiffChains are the real genesis files the differential starts from: OP
// Sepolia and Zora (Bedrock-era allocs: every fork from Canyon re-timed,
// all four forks' upgrade deposits), World Chain (Ecotone at genesis: its
// real Ecotone L1Block and GasPriceOracle until the Fjord, Isthmus and
// Jovian upgrades) and Unichain (Granite at genesis: the real Fjord
// GasPriceOracle, FastLZ and all, until Isthmus).
var opDiffChains = []string{"op-sepolia", "zora-mainnet", "worldchain-mainnet", "unichain-mainnet"}

// opDiffRun is one chain's run: its files and the comparison.
type opDiffRun struct {
	dir, genesisFile, rlpFile, forkFile, loadFile string
	head                                          uint64
	c                                             *opComparer
	opMgas                                        float64
	opWall                                        time.Duration
}

// runOPDiffChain builds spec's chain with op-geth in dir and compares
// tipnode with it through import and follow.
func runOPDiffChain(t *testing.T, opgeth, bin, dir string, spec *opDiffSpec) *opDiffRun {
	// op-geth's export with a block range appends to an existing file: a
	// kept directory starts again.
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	genesisFile, jwtFile := filepath.Join(dir, "genesis.json"), filepath.Join(dir, "jwt.hex")
	if err := os.WriteFile(genesisFile, spec.genesisJSON(), 0o644); err != nil {
		t.Fatal(err)
	}
	secret := crypto.Keccak256([]byte("jwt"))
	if err := os.WriteFile(jwtFile, []byte(hexutil.Encode(secret)), 0o600); err != nil {
		t.Fatal(err)
	}
	g := &opGeth{bin: opgeth, dir: filepath.Join(dir, "op-geth"), chainID: spec.chainID, engine: &engineClient{secret: secret}}
	runCmd(t, opgeth, "init", "--datadir", g.dir, "--state.scheme", "hash", genesisFile)
	g.start(t, jwtFile)

	cfg := spec.opConfig(t)
	d := &opDriver{t: t, s: spec, cfg: cfg, g: g, signer: types.LatestSignerForChainID(new(big.Int).SetUint64(spec.chainID)),
		nonces: map[string]uint64{}, headT: spec.t0}
	d.genesis = blockHash(t, g.rpc, 0)
	d.head = d.genesis
	buildStart := time.Now()
	head := d.drive()
	t.Logf("op-geth built %d blocks (%d pool transactions, %d upgrade deposits) in %s", head, len(d.sent), len(d.upgrades),
		time.Since(buildStart).Round(time.Millisecond))
	d.checkUpgrades()

	// Export, then serve op-geth's chain again for the comparisons.
	g.stop(t)
	rlpFile := filepath.Join(dir, "op-chain.rlp")
	runCmd(t, opgeth, "export", "--datadir", g.dir, rlpFile)
	// The same chain in two parts: the fork phase and the load phase (the
	// throughput comparison with L1 times the load phase alone).
	forkFile, loadFile := filepath.Join(dir, "op-fork.rlp"), filepath.Join(dir, "op-load.rlp")
	runCmd(t, opgeth, "export", "--datadir", g.dir, forkFile, "0", fmt.Sprint(opForkBlocks))
	runCmd(t, opgeth, "export", "--datadir", g.dir, loadFile, fmt.Sprint(opForkBlocks+1), fmt.Sprint(head))
	g.start(t, jwtFile)
	if got := blockNumber(t, g.rpc); got != head {
		t.Fatalf("op-geth restarted at block %d, built %d", got, head)
	}

	// (a) import of op-geth's export.
	impDir := filepath.Join(dir, "import")
	runCmd(t, bin, "init", "--datadir", impDir, "--genesis", genesisFile)
	opMgas, opWall := runTipnodeImport(t, bin, impDir, rlpFile)
	impAddr := freePort(t)
	imp := startProcess(t, bin, "run", "--datadir", impDir, "--http.addr", impAddr, "--log.level", "warn")
	waitRPC(t, "http://"+impAddr, imp)

	// (b) follow op-geth.
	folDir := filepath.Join(dir, "follow")
	runCmd(t, bin, "init", "--datadir", folDir, "--genesis", genesisFile)
	folAddr := freePort(t)
	fol := startProcess(t, bin, "run", "--datadir", folDir, "--http.addr", folAddr, "--follow.rpc", g.rpc,
		"--follow.poll", "100ms", "--log.level", "warn")
	waitRPC(t, "http://"+folAddr, fol)
	waitFollowed(t, "http://"+folAddr, head, blockHash(t, g.rpc, head), fol)

	c := &opComparer{t: t, ref: g.rpc, head: head, spec: spec}
	c.collect()
	for _, node := range []struct{ name, url string }{{"import", "http://" + impAddr}, {"follow", "http://" + folAddr}} {
		c.compare(node.name, node.url)
		c.compareHead(node.name, node.url)
	}
	c.report()
	t.Logf("compared %d heights, %d transactions, %d accounts x %d slots against op-geth through import and follow: %d answers, %d mismatches",
		head+1, c.txCount, len(c.accounts), c.slotCount(), c.answers, c.mismatches)
	return &opDiffRun{dir: dir, genesisFile: genesisFile, rlpFile: rlpFile, forkFile: forkFile, loadFile: loadFile,
		head: head, c: c, opMgas: opMgas, opWall: opWall}
}

// opDiffThroughput measures the import throughput, three alternating rounds
// into fresh data directories (the machine's noise falls on all): the whole
// OP chain of r; its load phase alone (imported on top of its fork phase);
// an L1 chain of the same calls and about the load phase's gas.
func opDiffThroughput(t *testing.T, bin string, r *opDiffRun) {
	dir, c, head := r.dir, r.c, r.head
	var loadGas uint64
	for h := uint64(opForkBlocks + 1); h <= head; h++ {
		loadGas += c.gas[h]
	}
	l1Gas, l1Blocks := l1Chain(t, dir, loadGas)
	var opRuns, loadRuns, l1Runs []float64
	opRuns = append(opRuns, r.opMgas)
	fresh := func(name, genesis string) string {
		d := filepath.Join(dir, name)
		os.RemoveAll(d)
		runCmd(t, bin, "init", "--datadir", d, "--genesis", genesis)
		return d
	}
	for round := range 3 {
		if round > 0 {
			d := fresh("t-op", r.genesisFile)
			m, _ := runTipnodeImport(t, bin, d, r.rlpFile)
			opRuns = append(opRuns, m)
		}
		d := fresh("t-load", r.genesisFile)
		runTipnodeImport(t, bin, d, r.forkFile)
		m, _ := runTipnodeImport(t, bin, d, r.loadFile)
		loadRuns = append(loadRuns, m)
		d = fresh("t-l1", filepath.Join(dir, "l1-genesis.json"))
		m, _ = runTipnodeImport(t, bin, d, filepath.Join(dir, "l1-chain.rlp"))
		l1Runs = append(l1Runs, m)
	}
	for _, d := range []string{"t-op", "t-load", "t-l1"} {
		os.RemoveAll(filepath.Join(dir, d))
	}
	median := func(v []float64) float64 {
		v = slices.Clone(v)
		slices.Sort(v)
		return v[len(v)/2]
	}
	t.Logf("import throughput (tipnode import, Mgas/s, 3 alternating rounds):\n"+
		"  OP chain, whole (op-geth export, %d blocks, %.1f Mgas; first import's process %s): %.1f %.1f %.1f, median %.1f\n"+
		"  OP chain, load phase (%d blocks, %.1f Mgas): %.1f %.1f %.1f, median %.1f\n"+
		"  L1 chain, the same calls (%d blocks, %.1f Mgas): %.1f %.1f %.1f, median %.1f",
		head, float64(c.gasUsed)/1e6, r.opWall.Round(time.Millisecond), opRuns[0], opRuns[1], opRuns[2], median(opRuns),
		head-opForkBlocks, float64(loadGas)/1e6, loadRuns[0], loadRuns[1], loadRuns[2], median(loadRuns),
		l1Blocks, float64(l1Gas)/1e6, l1Runs[0], l1Runs[1], l1Runs[2], median(l1Runs))
}
