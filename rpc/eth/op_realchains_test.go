package eth

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"math/big"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/op"
	"github.com/tipnode/tipnode/chain/op/optest"
	"github.com/tipnode/tipnode/chain/op/preset"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/pendingtest"
	"github.com/tipnode/tipnode/pending/sequencer"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// presetNumbers are the numbers of a preset's chain config, read from its
// JSON as op-geth's config holds them (not through tipnode's op.Config):
// the test's oracle.
type presetNumbers struct {
	chainID                       uint64
	times                         map[string]uint64 // every "...Time" member
	blocks                        []uint64          // every "...Block" member
	elasticity, denom, denomCanyn uint64
}

func readPresetNumbers(t *testing.T, raw json.RawMessage) presetNumbers {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	n := presetNumbers{times: map[string]uint64{}}
	u := func(r json.RawMessage) uint64 {
		var v uint64
		if err := json.Unmarshal(r, &v); err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		return v
	}
	for k, v := range m {
		switch {
		case k == "chainId":
			n.chainID = u(v)
		case strings.HasSuffix(k, "Time"):
			n.times[k] = u(v)
		case strings.HasSuffix(k, "Block"):
			n.blocks = append(n.blocks, u(v))
		case k == "optimism":
			var o struct{ EIP1559Elasticity, EIP1559Denominator, EIP1559DenominatorCanyon uint64 }
			if err := json.Unmarshal(v, &o); err != nil {
				t.Fatal(err)
			}
			n.elasticity, n.denom, n.denomCanyn = o.EIP1559Elasticity, o.EIP1559Denominator, o.EIP1559DenominatorCanyon
		}
	}
	return n
}

func (n presetNumbers) active(fork string, t uint64) bool {
	ft, ok := n.times[fork+"Time"]
	return ok && ft <= t
}

// headerJSON is what the test reads of a block.
type headerJSON struct {
	Number      hexutil.Uint64  `json:"number"`
	Hash        common.Hash     `json:"hash"`
	Timestamp   hexutil.Uint64  `json:"timestamp"`
	GasLimit    hexutil.Uint64  `json:"gasLimit"`
	GasUsed     hexutil.Uint64  `json:"gasUsed"`
	BaseFee     *hexutil.Big    `json:"baseFeePerGas"`
	ExtraData   hexutil.Bytes   `json:"extraData"`
	BlobGasUsed *hexutil.Uint64 `json:"blobGasUsed"`
	Excess      *hexutil.Uint64 `json:"excessBlobGas"`
	Txs         []struct {
		Type hexutil.Uint64 `json:"type"`
	} `json:"transactions"`
}

// wantBaseFee is the OP base fee of a child at time t of parent, from the
// preset's numbers and the specification: EIP-1559 with the config's
// elasticity and denominator (the Canyon one from Canyon, at the child's
// time); from Holocene (at the parent's time) the parameters in the
// parent's extraData; from Jovian the parent's DA footprint
// (blobGasUsed) when larger than its gas used, and its minBaseFee as the
// floor (specs/protocol/holocene/exec-engine.md "Dynamic EIP-1559
// Parameters", specs/protocol/jovian/exec-engine.md "Minimum Base Fee",
// "DA footprint block limit").
func wantBaseFee(n presetNumbers, parent headerJSON, t uint64) *big.Int {
	den, el := n.denom, n.elasticity
	if n.active("canyon", t) {
		den = n.denomCanyn
	}
	used := uint64(parent.GasUsed)
	var floor uint64
	if n.active("holocene", uint64(parent.Timestamp)) {
		den = uint64(binary.BigEndian.Uint32(parent.ExtraData[1:5]))
		el = uint64(binary.BigEndian.Uint32(parent.ExtraData[5:9]))
		if n.active("jovian", uint64(parent.Timestamp)) {
			floor = binary.BigEndian.Uint64(parent.ExtraData[9:17])
			if parent.BlobGasUsed != nil && uint64(*parent.BlobGasUsed) > used {
				used = uint64(*parent.BlobGasUsed)
			}
		}
	}
	fee := new(big.Int).Set(parent.BaseFee.ToInt())
	target := uint64(parent.GasLimit) / el
	switch {
	case used > target:
		d := new(big.Int).Mul(fee, new(big.Int).SetUint64(used-target))
		d.Quo(d, new(big.Int).SetUint64(target)).Quo(d, new(big.Int).SetUint64(den))
		fee.Add(fee, bigMax(d, big.NewInt(1)))
	case used < target:
		d := new(big.Int).Mul(fee, new(big.Int).SetUint64(target-used))
		d.Quo(d, new(big.Int).SetUint64(target)).Quo(d, new(big.Int).SetUint64(den))
		fee.Sub(fee, d)
	}
	return bigMax(fee, new(big.Int).SetUint64(floor))
}

func bigMax(a, b *big.Int) *big.Int {
	if a.Cmp(b) < 0 {
		return b
	}
	return a
}

// wantForkHash is eth_config's forkId as op-geth computes it (EIP-2124):
// the genesis hash, then every "...Block" of the chain config but 0, then
// every "...Time" after genesis and at most t, each once, in order.
func wantForkHash(n presetNumbers, genesis common.Hash, genesisTime, t uint64) hexutil.Bytes {
	blocks := slices.Clone(n.blocks)
	var times []uint64
	for _, v := range n.times {
		times = append(times, v)
	}
	slices.Sort(blocks)
	slices.Sort(times)
	sum := crc32.ChecksumIEEE(genesis[:])
	for _, b := range slices.Compact(blocks) {
		if b != 0 {
			sum = crc32.Update(sum, crc32.IEEETable, binary.BigEndian.AppendUint64(nil, b))
		}
	}
	for _, v := range slices.Compact(times) {
		if v > genesisTime && v <= t {
			sum = crc32.Update(sum, crc32.IEEETable, binary.BigEndian.AppendUint64(nil, v))
		}
	}
	return binary.BigEndian.AppendUint32(nil, sum)
}

// TestOPRealChainForkSchedule: each real OP chain of ../shared/op/chains
// that starts at genesis (op-geth's dumpgenesis: the real alloc and
// predeploys) runs under its --chain preset through every fork of its
// schedule after genesis: blocks just before, at and just after each
// activation, with a user transaction wherever the sequencer may take one
// (not in a fork's activation block). After each block eth_chainId,
// eth_config (current and next fork, fork id, no blob schedule),
// eth_maxPriorityFeePerGas, eth_gasPrice, eth_feeHistory and the header's
// base fee and extraData are checked against the preset's numbers:
// EIP-1559 elasticity, the pre-Canyon and Canyon denominators, Holocene's
// extraData parameters (the sequencer's zero eip1559Params: the chain's
// constants), Jovian's minBaseFee (set to 2 gwei here, above the decayed
// base fee, so the floor applies).
//
// Not covered: the network-upgrade deposits op-node inserts at Ecotone,
// Fjord, Isthmus and Jovian activation. Without them the predeploys stay
// at their genesis versions: an L1-info deposit in a format the genesis
// L1Block lacks (setL1BlockValuesEcotone on a Bedrock L1Block,
// ...Isthmus, ...Jovian) reverts, so the L1 fee parameters stay those the
// last accepted call stored, the GasPriceOracle is not switched to the
// Ecotone/Fjord formulas, and the operator fee and EIP-2935 history
// contract are not deployed/upgraded; the L1 fee and receipts after those
// forks are not checked against real contracts here.
func TestOPRealChainForkSchedule(t *testing.T) {
	for _, c := range optest.Chains(t) {
		if c.GenesisHash == (common.Hash{}) {
			continue // OP Mainnet: history before Bedrock, no genesis to run (TestInitRealOPChains)
		}
		t.Run(c.Name, func(t *testing.T) { runRealChainSchedule(t, c) })
	}
}

func runRealChainSchedule(t *testing.T, c optest.Chain) {
	spec, err := os.ReadFile(c.Path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := preset.Lookup(c.Name)
	if err != nil {
		t.Fatalf("no preset for %s: %v", c.Name, err)
	}
	var file struct {
		Config    json.RawMessage `json:"config"`
		Timestamp hexutil.Uint64  `json:"timestamp"`
	}
	if err := json.Unmarshal(spec, &file); err != nil {
		t.Fatal(err)
	}
	if err := p.CheckConfig(file.Config); err != nil {
		t.Fatalf("the genesis file's config is not preset %s's: %v", p.Name, err)
	}
	if p.Start.Hash != c.GenesisHash {
		t.Fatalf("preset %s genesis %s, op-geth's %s", p.Name, p.Start.Hash, c.GenesisHash)
	}
	n := readPresetNumbers(t, p.Config)
	genesisTime := uint64(file.Timestamp)

	const minBaseFee = 2 * params.GWei
	accs := pendingtest.Accounts(t, 1)
	pc := chain.DefaultProducerConfig()
	pc.MinBaseFee = minBaseFee
	cfg := sequencer.DefaultConfig()
	cfg.Dev, cfg.Chain, cfg.Coinbase = true, &pc, op.SequencerFeeVault
	h := pendingtest.New(t, pendingtest.Options{Accounts: accs, Spec: spec, Config: &cfg,
		Clock: pending.NewManualClock(time.Unix(int64(genesisTime)+1, 0))})
	if got := h.Genesis.Block.Hash(); got != c.GenesisHash {
		t.Fatalf("genesis %s, op-geth's %s", got, c.GenesisHash)
	}
	_, url := startAPI(t, DefaultAPIConfig(), h.Genesis, h.Mgr, h.Writer, h.Pool)

	// The L1 forks eth_config reports: those the config sets, and Osaka at
	// Karst (op-reth's mapping; op-geth v1.101702.3 has no Karst rules).
	l1Forks := map[string]uint64{}
	for _, f := range []string{"shanghai", "cancun", "prague", "osaka"} {
		if v, ok := n.times[f+"Time"]; ok {
			l1Forks[f] = v
		}
	}
	if v, ok := n.times["karstTime"]; ok {
		l1Forks["osaka"] = v
	}
	var l1Times []uint64
	for _, v := range l1Forks {
		l1Times = append(l1Times, v)
	}
	slices.Sort(l1Times)

	// The timestamps: one second before, at, and one after each fork
	// activation after genesis.
	var forkTimes []uint64
	for _, v := range n.times {
		if v > genesisTime+2 {
			forkTimes = append(forkTimes, v)
		}
	}
	slices.Sort(forkTimes)
	forkTimes = slices.Compact(forkTimes)
	stamps := []uint64{genesisTime + 2}
	for _, f := range forkTimes {
		for _, ts := range []uint64{f - 1, f, f + 1} {
			if ts > stamps[len(stamps)-1] {
				stamps = append(stamps, ts)
			}
		}
	}

	// Funds for the user transactions: a deposit minting 1 ether, sent on.
	if _, _, err := h.Seq.SendDeposit(chaintypes.DepositFields{From: common.Address{0xd0}, To: &accs[0].Address,
		Mint: big.NewInt(params.Ether), Value: big.NewInt(params.Ether), Gas: 100_000}); err != nil {
		t.Fatal(err)
	}
	block := func(tag any) headerJSON {
		t.Helper()
		var hj headerJSON
		wantResult(t, callRPC(t, url, "eth_getBlockByNumber", tag, true), &hj)
		return hj
	}
	parent := block("0x0")
	ctx := context.Background()
	userTxs, jovianSeen := 0, false
	for i, ts := range stamps {
		if i > 0 {
			h.Transfer(0)
		}
		if err := h.Seq.MineAt(ctx, ts); err != nil {
			t.Fatalf("block at %d: %v", ts, err)
		}
		head := block("latest")
		if uint64(head.Timestamp) != ts || uint64(head.Number) != uint64(parent.Number)+1 {
			t.Fatalf("head %d at %d, want %d at %d", head.Number, head.Timestamp, parent.Number+1, ts)
		}
		what := func(s string) string {
			return s + " of block " + head.Number.String() + " at " + head.Timestamp.String()
		}
		userTxs += len(head.Txs) - countDeposits(head)

		// Header: base fee and extraData from the preset's numbers.
		if want := wantBaseFee(n, parent, ts); head.BaseFee.ToInt().Cmp(want) != 0 {
			t.Fatalf("%s: %v, want %v", what("base fee"), head.BaseFee, want)
		}
		var wantExtra []byte
		switch {
		case n.active("jovian", ts):
			wantExtra = binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32([]byte{1},
				uint32(n.denomCanyn)), uint32(n.elasticity)), minBaseFee)
			jovianSeen = true
		case n.active("holocene", ts):
			wantExtra = binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32([]byte{0}, uint32(n.denomCanyn)), uint32(n.elasticity))
		}
		if !bytes.Equal(head.ExtraData, wantExtra) {
			t.Fatalf("%s: %x, want %x", what("extraData"), head.ExtraData, wantExtra)
		}
		if ecotone := n.active("ecotone", ts); (head.Excess != nil) != ecotone || (head.BlobGasUsed != nil) != ecotone ||
			ecotone && *head.Excess != 0 || ecotone && !n.active("jovian", ts) && *head.BlobGasUsed != 0 {
			t.Fatalf("%s: blobGasUsed %v excessBlobGas %v, Ecotone %v", what("blob gas fields"), head.BlobGasUsed, head.Excess, ecotone)
		}

		// eth_chainId.
		var id hexutil.Uint64
		wantResult(t, callRPC(t, url, "eth_chainId"), &id)
		if uint64(id) != p.ChainID() || uint64(id) != n.chainID {
			t.Fatalf("eth_chainId %d, preset %d", id, p.ChainID())
		}

		// eth_config: the L1 fork in force and the next one.
		var conf struct {
			Current, Next, Last *struct {
				ActivationTime uint64          `json:"activationTime"`
				BlobSchedule   json.RawMessage `json:"blobSchedule"`
				ChainID        *hexutil.Big    `json:"chainId"`
				ForkID         hexutil.Bytes   `json:"forkId"`
			}
		}
		wantResult(t, callRPC(t, url, "eth_config"), &conf)
		var cur, next *uint64
		for _, v := range l1Times {
			if v <= ts {
				cur = &v
			} else if next == nil {
				next = &v
			}
		}
		// (Before Shanghai/Canyon the current fork, London or Paris, has
		// no timestamp: current is null, in op-geth as in go-ethereum.)
		act := func(v uint64) uint64 {
			if v <= genesisTime {
				return 0
			}
			return v
		}
		for name, pair := range map[string]struct {
			got *struct {
				ActivationTime uint64          `json:"activationTime"`
				BlobSchedule   json.RawMessage `json:"blobSchedule"`
				ChainID        *hexutil.Big    `json:"chainId"`
				ForkID         hexutil.Bytes   `json:"forkId"`
			}
			at *uint64
		}{"current": {conf.Current, cur}, "next": {conf.Next, next}} {
			if (pair.got == nil) != (pair.at == nil) {
				t.Fatalf("%s: %s %+v, want a fork at %v", what("eth_config"), name, pair.got, pair.at)
			}
			if pair.got == nil {
				continue
			}
			if uint64(pair.got.ActivationTime) != act(*pair.at) {
				t.Fatalf("%s: %s activationTime %d, want %d", what("eth_config"), name, pair.got.ActivationTime, act(*pair.at))
			}
			if pair.got.ChainID.ToInt().Uint64() != p.ChainID() {
				t.Fatalf("%s: %s chainId %v", what("eth_config"), name, pair.got.ChainID)
			}
			if want := wantForkHash(n, c.GenesisHash, genesisTime, *pair.at); !bytes.Equal(pair.got.ForkID, want) {
				t.Fatalf("%s: %s forkId %x, op-geth's %x", what("eth_config"), name, pair.got.ForkID, want)
			}
			if s := string(pair.got.BlobSchedule); s != "" && s != "null" {
				t.Fatalf("%s: %s blobSchedule %s, an OP chain has none", what("eth_config"), name, s)
			}
		}

		// Fee suggestions: op-geth's OP oracle (0.001 gwei below a
		// nearly full block) on the head's base fee.
		var tip, price hexutil.Big
		wantResult(t, callRPC(t, url, "eth_maxPriorityFeePerGas"), &tip)
		wantResult(t, callRPC(t, url, "eth_gasPrice"), &price)
		if tip.ToInt().Cmp(big.NewInt(1_000_000)) != 0 {
			t.Fatalf("%s: %v, op-geth suggests 0.001 gwei", what("eth_maxPriorityFeePerGas"), &tip)
		}
		if want := new(big.Int).Add(big.NewInt(1_000_000), head.BaseFee.ToInt()); price.ToInt().Cmp(want) != 0 {
			t.Fatalf("%s: %v, want %v", what("eth_gasPrice"), &price, want)
		}

		// eth_feeHistory: the two blocks' base fees, then the next
		// block's (at head time + 1).
		var fh struct {
			Oldest  hexutil.Uint64 `json:"oldestBlock"`
			BaseFee []*hexutil.Big `json:"baseFeePerGas"`
		}
		wantResult(t, callRPC(t, url, "eth_feeHistory", "0x2", "latest", []float64{}), &fh)
		wantFees := []*big.Int{parent.BaseFee.ToInt(), head.BaseFee.ToInt(), wantBaseFee(n, head, ts+1)}
		if len(fh.BaseFee) != 3 || uint64(fh.Oldest) != uint64(parent.Number) {
			t.Fatalf("%s: %+v", what("eth_feeHistory"), fh)
		}
		for j, w := range wantFees {
			if fh.BaseFee[j].ToInt().Cmp(w) != 0 {
				t.Fatalf("%s: baseFeePerGas[%d] %v, want %v", what("eth_feeHistory"), j, fh.BaseFee[j], w)
			}
		}
		parent = head
	}
	if userTxs == 0 {
		t.Fatal("no user transaction was sealed")
	}
	if n.times["jovianTime"] > genesisTime && !jovianSeen {
		t.Fatal("no Jovian block")
	}
	if last := parent.BaseFee.ToInt(); n.times["jovianTime"] > genesisTime && last.Cmp(big.NewInt(minBaseFee)) < 0 {
		t.Fatalf("base fee %v under Jovian's minBaseFee %d", last, uint64(minBaseFee))
	}
	t.Logf("%s (chain %d): %d blocks over %d fork times, %d user transactions", p.Name, p.ChainID(), len(stamps), len(forkTimes), userTxs)
}

// countDeposits counts the deposits of a block.
func countDeposits(head headerJSON) int {
	n := 0
	for _, tx := range head.Txs {
		if uint64(tx.Type) == chaintypes.DepositTxType {
			n++
		}
	}
	return n
}
