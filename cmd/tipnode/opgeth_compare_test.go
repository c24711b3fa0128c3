package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/consensus/beacon"
	"github.com/ethereum/go-ethereum/consensus/ethash"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rlp"

	"github.com/tipnode/tipnode/chain/devnet"
	"github.com/tipnode/tipnode/chain/op"
)

// opComparer compares a tipnode's JSON-RPC answers with op-geth's (ref) at
// every height.
type opComparer struct {
	t          *testing.T
	ref        string
	head       uint64
	spec       *opDiffSpec
	accounts   []common.Address
	slots      map[common.Address][]common.Hash
	txs        [][]common.Hash // per height: the transactions compared
	txCount    int
	gasUsed    uint64
	gas        []uint64 // per height
	mismatches int
	answers    int // answers compared (one per method call on both nodes)
	kinds      map[string]int
}

const maxMismatchReports = 100

// eip1967Impl is the EIP-1967 implementation slot of the predeploys' proxies.
var eip1967Impl = common.HexToHash("0x360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbc")

// collect walks op-geth's chain: the transactions to compare and every
// account the chain touched (senders, recipients, created contracts, the
// predeploys, vaults and system contracts), with the storage slots to read.
func (c *opComparer) collect() {
	set := map[common.Address]bool{}
	c.slots = map[common.Address][]common.Hash{}
	add := func(a common.Address, slots ...common.Hash) {
		if !set[a] {
			set[a] = true
			c.accounts = append(c.accounts, a)
		}
		c.slots[a] = append(c.slots[a], slots...)
	}
	slot := func(i uint64) common.Hash { return common.BigToHash(new(big.Int).SetUint64(i)) }
	var l1Slots []common.Hash
	for i := range uint64(10) {
		l1Slots = append(l1Slots, slot(i))
	}
	// The predeploys behind proxies: their implementation (EIP-1967)
	// slot, which the upgrade deposits set.
	add(op.L1BlockAddr, append(l1Slots, eip1967Impl)...)
	add(devnet.GasPriceOracleAddr, slot(0), eip1967Impl)
	add(op.OperatorFeeVault, slot(0), eip1967Impl)
	add(op.L2ToL1MessagePasser, slot(0), slot(1), eip1967Impl)
	for _, a := range []common.Address{op.SequencerFeeVault, op.BaseFeeVault, op.L1FeeVault,
		op.L1InfoDepositor, params.BeaconRootsAddress, params.HistoryStorageAddress, op.Create2DeployerAddr,
		revertContract, common.Address{}} {
		add(a)
	}
	add(logContract, slot(0))
	add(crypto.PubkeyToAddress(c.spec.auth.PublicKey), slot(0))
	for _, k := range c.spec.senders {
		add(crypto.PubkeyToAddress(k.PublicKey))
	}
	// A few of the load phase's fresh slots.
	add(loadContract, slot(uint64(opForkBlocks+1)<<20), slot(uint64(opForkBlocks+1)<<20|opLoadTxs-1),
		slot(uint64(opForkBlocks+opLoadBlocks)<<20|7))
	c.txs = make([][]common.Hash, c.head+1)
	for h := uint64(0); h <= c.head; h++ {
		var b struct {
			GasUsed hexutil.Uint64 `json:"gasUsed"`
			Txs     []common.Hash  `json:"transactions"`
		}
		if err := rpcCall(c.ref, "eth_getBlockByNumber", &b, hexutil.Uint64(h), false); err != nil {
			c.t.Fatalf("op-geth block %d: %v", h, err)
		}
		c.gasUsed += uint64(b.GasUsed)
		c.gas = append(c.gas, uint64(b.GasUsed))
		var rs []struct {
			From            common.Address  `json:"from"`
			To              *common.Address `json:"to"`
			ContractAddress *common.Address `json:"contractAddress"`
		}
		if err := rpcCall(c.ref, "eth_getBlockReceipts", &rs, hexutil.Uint64(h)); err != nil {
			c.t.Fatalf("op-geth receipts %d: %v", h, err)
		}
		for _, r := range rs {
			add(r.From)
			if r.To != nil {
				add(*r.To)
			}
			if r.ContractAddress != nil {
				add(*r.ContractAddress, slot(0))
			}
		}
		// Every transaction of a small block; the first and last three of
		// a load block.
		txs := b.Txs
		if len(txs) > 50 {
			txs = append(append([]common.Hash{}, txs[:3]...), txs[len(txs)-3:]...)
		}
		c.txs[h] = txs
		c.txCount += len(txs)
	}
}

func (c *opComparer) slotCount() int {
	n := 0
	for _, s := range c.slots {
		n += len(s)
	}
	return n
}

// mismatch records one difference under its kind (e.g. "import receipt
// field blobGasUsed"): the first three of each kind are reported in full,
// the rest counted (report).
func (c *opComparer) mismatch(kind, format string, args ...any) {
	c.t.Helper()
	c.mismatches++
	if c.kinds == nil {
		c.kinds = map[string]int{}
	}
	c.kinds[kind]++
	if c.kinds[kind] <= 3 && c.mismatches <= maxMismatchReports {
		c.t.Errorf(format, args...)
	}
}

// report summarises the mismatches by kind.
func (c *opComparer) report() {
	kinds := make([]string, 0, len(c.kinds))
	for k := range c.kinds {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		c.t.Errorf("%d mismatches: %s", c.kinds[k], k)
	}
}

// get calls method on both nodes and returns the raw answers.
func (c *opComparer) get(url, method string, params ...any) (ref, got json.RawMessage, err error) {
	if err = rpcCall(c.ref, method, &ref, params...); err != nil {
		return nil, nil, fmt.Errorf("op-geth: %w", err)
	}
	if err = rpcCall(url, method, &got, params...); err != nil {
		return nil, nil, fmt.Errorf("tipnode: %w", err)
	}
	c.answers++
	return ref, got, nil
}

// diffObjects reports every field that differs between two JSON objects
// (a field only one side has is a difference).
func diffObjects(ref, got json.RawMessage) []string {
	var a, b map[string]any
	if err := json.Unmarshal(ref, &a); err != nil {
		return []string{fmt.Sprintf("op-geth answer is not an object: %s", ref)}
	}
	if err := json.Unmarshal(got, &b); err != nil {
		return []string{fmt.Sprintf("tipnode answer is not an object: %s", got)}
	}
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var out []string
	for k := range keys {
		av, aok := a[k]
		bv, bok := b[k]
		if aok && bok && reflect.DeepEqual(av, bv) {
			continue
		}
		show := func(v any, ok bool) string {
			if !ok {
				return "(absent)"
			}
			j, _ := json.Marshal(v)
			return string(j)
		}
		out = append(out, fmt.Sprintf("%s: op-geth %s, tipnode %s", k, show(av, aok), show(bv, bok)))
	}
	sort.Strings(out)
	return out
}

// compare checks one tipnode against op-geth at every height.
func (c *opComparer) compare(name, url string) {
	c.t.Helper()
	for h := uint64(0); h <= c.head; h++ {
		num := hexutil.Uint64(h)
		ref, got, err := c.get(url, "eth_getBlockByNumber", num, false)
		if err != nil {
			c.mismatch(name+" block error", "%s: block %d: %v", name, h, err)
			continue
		}
		for _, d := range diffObjects(ref, got) {
			c.mismatch(name+" block field "+field(d), "%s: block %d: %s", name, h, d)
		}
		ref, got, err = c.get(url, "eth_getBlockReceipts", num)
		if err != nil {
			c.mismatch(name+" receipts error", "%s: receipts of block %d: %v", name, h, err)
			continue
		}
		var rr, gr []json.RawMessage
		json.Unmarshal(ref, &rr)
		json.Unmarshal(got, &gr)
		if len(rr) != len(gr) {
			c.mismatch(name+" receipt count", "%s: block %d: %d receipts, op-geth %d", name, h, len(gr), len(rr))
		}
		for i := range min(len(rr), len(gr)) {
			for _, d := range diffObjects(rr[i], gr[i]) {
				c.mismatch(name+" receipt field "+field(d), "%s: block %d receipt %d: %s", name, h, i, d)
			}
		}
		for _, tx := range c.txs[h] {
			ref, got, err := c.get(url, "eth_getTransactionByHash", tx)
			if err != nil {
				c.mismatch(name+" tx error", "%s: block %d tx %s: %v", name, h, tx, err)
				continue
			}
			for _, d := range diffObjects(ref, got) {
				c.mismatch(name+" tx field "+field(d), "%s: block %d tx %s: %s", name, h, tx, d)
			}
		}
		for _, a := range c.accounts {
			for _, m := range []string{"eth_getBalance", "eth_getTransactionCount", "eth_getCode"} {
				ref, got, err := c.get(url, m, a, num)
				if err != nil {
					c.mismatch(name+" "+m+" error", "%s: block %d %s %s: %v", name, h, m, a, err)
				} else if string(ref) != string(got) {
					c.mismatch(name+" "+m, "%s: block %d %s %s: op-geth %s, tipnode %s", name, h, m, a, short(ref), short(got))
				}
			}
			for _, s := range c.slots[a] {
				ref, got, err := c.get(url, "eth_getStorageAt", a, s, num)
				if err != nil {
					c.mismatch(name+" eth_getStorageAt error", "%s: block %d eth_getStorageAt %s %s: %v", name, h, a, s, err)
				} else if string(ref) != string(got) {
					c.mismatch(name+" eth_getStorageAt", "%s: block %d eth_getStorageAt %s %s: op-geth %s, tipnode %s", name, h, a, s, ref, got)
				}
			}
		}
		c.compareCalls(name, url, num)
	}
}

// opDiffCalls are the eth_calls compared at every height: the getters of
// the GasPriceOracle and L1Block predeploys (the real Bedrock contracts,
// then tipnode's after the upgrade deposits, through the real proxies),
// the fee estimates wallets make, and the create2Deployer (from Canyon).
var opDiffCalls = func() []struct {
	name string
	to   common.Address
	data []byte
} {
	sel := func(sig string) []byte { return crypto.Keccak256([]byte(sig))[:4] }
	word := func(v uint64) []byte { return common.BigToHash(new(big.Int).SetUint64(v)).Bytes() }
	bytesArg := func(b []byte) []byte {
		out := append(word(32), word(uint64(len(b)))...)
		return append(out, common.RightPadBytes(b, (len(b)+31)/32*32)...)
	}
	tx := append([]byte{0x02, 0xf8, 0x70}, bytes.Repeat([]byte{0x11, 0, 0x22}, 40)...)
	var out []struct {
		name string
		to   common.Address
		data []byte
	}
	add := func(name string, to common.Address, data []byte) {
		out = append(out, struct {
			name string
			to   common.Address
			data []byte
		}{name, to, data})
	}
	gpo := devnet.GasPriceOracleAddr
	for _, g := range []string{"gasPrice()", "baseFee()", "l1BaseFee()", "blobBaseFee()", "baseFeeScalar()", "blobBaseFeeScalar()",
		"overhead()", "scalar()", "decimals()", "isEcotone()", "isFjord()", "isIsthmus()", "isJovian()", "version()"} {
		add("GasPriceOracle."+g, gpo, sel(g))
	}
	add("GasPriceOracle.getL1Fee", gpo, append(sel("getL1Fee(bytes)"), bytesArg(tx)...))
	add("GasPriceOracle.getL1GasUsed", gpo, append(sel("getL1GasUsed(bytes)"), bytesArg(tx)...))
	add("GasPriceOracle.getL1FeeUpperBound", gpo, append(sel("getL1FeeUpperBound(uint256)"), word(150)...))
	add("GasPriceOracle.getOperatorFee", gpo, append(sel("getOperatorFee(uint256)"), word(50_000)...))
	for _, g := range []string{"number()", "timestamp()", "basefee()", "hash()", "sequenceNumber()", "batcherHash()",
		"l1FeeOverhead()", "l1FeeScalar()", "blobBaseFee()", "baseFeeScalar()", "blobBaseFeeScalar()",
		"operatorFeeScalar()", "operatorFeeConstant()", "daFootprintGasScalar()", "version()"} {
		add("L1Block."+g, op.L1BlockAddr, sel(g))
	}
	add("create2Deployer.computeAddress", op.Create2DeployerAddr,
		append(append(sel("computeAddress(bytes32,bytes32)"), word(7)...), crypto.Keccak256(logCode())...))
	return out
}()

// compareCalls compares the eth_calls of opDiffCalls at height num: the
// result, or the error (sameCallError) on both. The error code is not
// compared: op-geth reports every revert with code 3, tipnode with -32000
// (rpc.CodeCallReverted, its documented choice).
func (c *opComparer) compareCalls(name, url string, num hexutil.Uint64) {
	c.t.Helper()
	for _, call := range opDiffCalls {
		args := map[string]any{"to": call.to, "data": hexutil.Bytes(call.data)}
		ref, refErr, err := rawCall(c.ref, "eth_call", args, num)
		if err != nil {
			c.t.Fatalf("op-geth eth_call: %v", err)
		}
		got, gotErr, err := rawCall(url, "eth_call", args, num)
		if err != nil {
			c.t.Fatalf("%s eth_call: %v", name, err)
		}
		c.answers++
		switch {
		case (refErr == nil) != (gotErr == nil):
			c.mismatch(name+" eth_call "+call.name, "%s: block %d eth_call %s: op-geth %s %+v, tipnode %s %+v",
				name, num, call.name, short(ref), refErr, short(got), gotErr)
		case refErr != nil && !sameCallError(refErr, gotErr):
			c.mismatch(name+" eth_call "+call.name+" error", "%s: block %d eth_call %s: op-geth %+v, tipnode %+v",
				name, num, call.name, refErr, gotErr)
		case string(ref) != string(got):
			c.mismatch(name+" eth_call "+call.name, "%s: block %d eth_call %s: op-geth %s, tipnode %s",
				name, num, call.name, short(ref), short(got))
		}
	}
}

// sameCallError: a revert on both with the same revert data (tipnode's
// message is exactly "execution reverted", op-geth appends a decoded
// Error(string) reason: rpc.ErrReverted's documented choice), or the same
// message and data otherwise.
func sameCallError(ref, got *rpcError) bool {
	const reverted = "execution reverted"
	if strings.HasPrefix(ref.Message, reverted) && got.Message == reverted {
		return string(ref.Data) == string(got.Data)
	}
	return ref.Message == got.Message && string(ref.Data) == string(got.Data)
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// rawCall calls method and returns its result or its error object; err is
// a transport failure.
func rawCall(url, method string, params ...any) (json.RawMessage, *rpcError, error) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, nil, err
	}
	return r.Result, r.Error, nil
}

// compareHead checks the chain-level answers at the common head: the chain
// id, eth_config (forks, fork ids, blob schedule, precompiles, system
// contracts) and the fee methods (suggested tip and gas price, the fee
// history of the last blocks with reward percentiles).
func (c *opComparer) compareHead(name, url string) {
	c.t.Helper()
	for _, q := range []struct {
		method string
		params []any
	}{
		{"eth_chainId", nil}, {"eth_config", nil}, {"eth_maxPriorityFeePerGas", nil}, {"eth_gasPrice", nil},
		{"eth_feeHistory", []any{hexutil.Uint64(8), hexutil.Uint64(c.head), []float64{10, 50, 90}}},
	} {
		ref, got, err := c.get(url, q.method, q.params...)
		if err != nil && q.method == "eth_config" && strings.Contains(err.Error(), "op-geth: ") && strings.Contains(err.Error(), "crashed") {
			// op-geth v1.101702.3 panics in eth_config on an OP chain
			// past Ecotone (ChainConfig.BlobConfig dereferences the nil
			// blob schedule of an OP chain; op-geth issue 685): no
			// reference answer. tipnode's is checked against the preset
			// by TestOPRealChainForkSchedule.
			c.t.Logf("%s: eth_config: op-geth has no answer (%v); not compared", name, err)
			continue
		}
		if err != nil {
			c.mismatch(name+" "+q.method+" error", "%s: %s: %v", name, q.method, err)
			continue
		}
		if len(ref) > 0 && ref[0] == '{' {
			for _, d := range diffObjects(ref, got) {
				c.mismatch(name+" "+q.method+" field "+field(d), "%s: %s: %s", name, q.method, d)
			}
		} else if string(ref) != string(got) {
			c.mismatch(name+" "+q.method, "%s: %s: op-geth %s, tipnode %s", name, q.method, short(ref), short(got))
		}
	}
}

// field is the field name of a diffObjects line.
func field(d string) string {
	f, _, _ := strings.Cut(d, ":")
	return f
}

func short(b []byte) string {
	s := string(b)
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// l1Chain writes an L1 (Prague) genesis and chain of load-contract blocks
// (the OP chain's load phase) with at least gas gas to dir's l1-genesis.json
// and l1-chain.rlp; it returns the chain's gas and block count.
func l1Chain(t *testing.T, dir string, gas uint64) (uint64, int) {
	t.Helper()
	cfg := *params.MergedTestChainConfig
	cfg.ChainID, cfg.OsakaTime = big.NewInt(1337), nil
	key := opKey("load")
	gspec := &core.Genesis{
		Config: &cfg, GasLimit: opGasLimit, BaseFee: big.NewInt(params.InitialBaseFee), Difficulty: common.Big0,
		Timestamp: 1_700_000_000,
		Alloc: types.GenesisAlloc{
			crypto.PubkeyToAddress(key.PublicKey): {Balance: new(big.Int).Mul(big.NewInt(1000), big.NewInt(params.Ether))},
			loadContract:                          {Code: loadCode(), Nonce: 1, Balance: new(big.Int)},
			params.BeaconRootsAddress:             {Code: params.BeaconRootsCode, Nonce: 1, Balance: new(big.Int)},
			params.HistoryStorageAddress:          {Code: params.HistoryStorageCode, Nonce: 1, Balance: new(big.Int)},
			params.WithdrawalQueueAddress:         {Code: params.WithdrawalQueueCode, Nonce: 1, Balance: new(big.Int)},
			params.ConsolidationQueueAddress:      {Code: params.ConsolidationQueueCode, Nonce: 1, Balance: new(big.Int)},
		},
	}
	signer := types.LatestSignerForChainID(cfg.ChainID)
	n := int(gas/(opLoadTxs*40_000)) + 2 // upper bound; trimmed below
	_, blocks, _ := core.GenerateChainWithGenesis(gspec, beacon.New(ethash.NewFaker()), n, func(i int, b *core.BlockGen) {
		for _, tx := range loadTxs(key, signer, cfg.ChainID, uint64(i*opLoadTxs), uint64(i+1), opLoadTxs) {
			b.AddTx(tx)
		}
	})
	var total uint64
	f, err := os.Create(filepath.Join(dir, "l1-chain.rlp"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	count := 0
	for _, b := range blocks {
		if total >= gas {
			break
		}
		if err := rlp.Encode(f, b); err != nil {
			t.Fatal(err)
		}
		total += b.GasUsed()
		count++
	}
	if total < gas {
		t.Fatalf("the L1 chain has %d gas, want %d", total, gas)
	}
	spec, err := json.Marshal(gspec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "l1-genesis.json"), spec, 0o644); err != nil {
		t.Fatal(err)
	}
	return total, count
}
