package chaingen

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
)

// Expect is what a successful response of a workload looks like.
type Expect int

const (
	// ExpectResult: a result; any JSON-RPC error is a failure.
	ExpectResult Expect = iota
	// ExpectRevert: an error whose message says "execution reverted";
	// a result or any other error is a failure.
	ExpectRevert
	// ExpectSimulate: an eth_simulateV1 result whose every call succeeded.
	ExpectSimulate
)

// Workload is one kind of request the benchmark sends.
type Workload struct {
	// Name is the request file's stem (Name.jsonl) and the --workloads value.
	Name string
	// Title is the table's label.
	Title string
	// WebSocket: sent over a websocket connection instead of HTTP POSTs.
	WebSocket bool
	// Batch: every line is a JSON-RPC batch (an array); every element must
	// succeed.
	Batch  bool
	Expect Expect
	// LatestOf names the `latest` counterpart of a `pending` workload (the
	// same requests at latest): the harness runs both against tipnode while
	// feeding it transactions, and reports pending / latest.
	LatestOf string
	// gen builds one request (a line, or a batch) from the sampler.
	gen func(g *sampler) any
}

// RequestPrefix starts every single (non-batch) request line; the websocket
// client replaces it to give each request its own id.
const RequestPrefix = `{"jsonrpc":"2.0","id":1,`

// BatchSize is the number of calls in one batch request.
const BatchSize = 100

// request is a JSON-RPC request; the field order makes RequestPrefix.
type request struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int    `json:"id"`
	Method  string `json:"method"`
	Params  []any  `json:"params"`
}

func req(method string, params ...any) request {
	if params == nil {
		params = []any{}
	}
	return request{JSONRPC: "2.0", ID: 1, Method: method, Params: params}
}

// callArgs are eth_call / eth_simulateV1 call arguments.
type callArgs struct {
	From  *common.Address `json:"from,omitempty"`
	To    common.Address  `json:"to"`
	Data  hexutil.Bytes   `json:"data,omitempty"`
	Value *hexutil.Big    `json:"value,omitempty"`
}

// Workloads is the benchmark's catalogue, in table order.
func Workloads() []Workload {
	return []Workload{
		{Name: "chainid", Title: "eth_chainId (floor)", gen: func(g *sampler) any { return req("eth_chainId") }},
		{Name: "blocknumber", Title: "eth_blockNumber", gen: func(g *sampler) any { return req("eth_blockNumber") }},
		{Name: "storage-hot", Title: "getStorageAt latest, hot slots", gen: func(g *sampler) any {
			return req("eth_getStorageAt", TokenAddress(0), BalanceSlot(Holder(g.r.IntN(hotHolders))), "latest")
		}},
		{Name: "storage-random", Title: "getStorageAt latest, random slots", gen: func(g *sampler) any {
			t, h := g.anyHolder()
			return req("eth_getStorageAt", TokenAddress(t), BalanceSlot(h), "latest")
		}},
		{Name: "storage-past", Title: "getStorageAt random past blocks", gen: func(g *sampler) any {
			t, h := g.genesisHolder()
			return req("eth_getStorageAt", TokenAddress(t), BalanceSlot(h), g.pastBlock())
		}},
		{Name: "storage-pending", Title: "getStorageAt pending, random slots", LatestOf: "storage-random", gen: func(g *sampler) any {
			t, h := g.anyHolder()
			return req("eth_getStorageAt", TokenAddress(t), BalanceSlot(h), "pending")
		}},
		{Name: "getproof", Title: "eth_getProof latest, token + 2 slots", gen: func(g *sampler) any {
			t, h := g.anyHolder()
			_, h2 := g.anyHolder()
			return req("eth_getProof", TokenAddress(t), []common.Hash{BalanceSlot(h), BalanceSlot(h2)}, "latest")
		}},
		{Name: "balanceof-latest", Title: "eth_call balanceOf latest", gen: func(g *sampler) any {
			t, h := g.anyHolder()
			return req("eth_call", callArgs{To: TokenAddress(t), Data: BalanceOfData(h)}, "latest")
		}},
		{Name: "balanceof-past", Title: "eth_call balanceOf past blocks", gen: func(g *sampler) any {
			t, h := g.genesisHolder()
			return req("eth_call", callArgs{To: TokenAddress(t), Data: BalanceOfData(h)}, g.pastBlock())
		}},
		{Name: "balanceof-pending", Title: "eth_call balanceOf pending", LatestOf: "balanceof-latest", gen: func(g *sampler) any {
			t, h := g.anyHolder()
			return req("eth_call", callArgs{To: TokenAddress(t), Data: BalanceOfData(h)}, "pending")
		}},
		{Name: "multicall50", Title: "eth_call multicall of 50 balanceOf", gen: func(g *sampler) any {
			calls := make([]MulticallCall, 50)
			for i := range calls {
				t, h := g.anyHolder()
				calls[i] = MulticallCall{Target: TokenAddress(t), Data: BalanceOfData(h)}
			}
			return req("eth_call", callArgs{To: MulticallAddress, Data: AggregateData(calls)}, "latest")
		}},
		{Name: "heavy", Title: "eth_call EVM-heavy (50 SLOAD, 150 mulDiv)", gen: func(g *sampler) any {
			t := g.r.IntN(g.c.Tokens)
			holders := make([]common.Address, 50)
			for i := range holders {
				holders[i] = Holder(g.r.IntN(g.c.HoldersPerToken()))
			}
			return req("eth_call", callArgs{To: TokenAddress(t), Data: HeavyData(holders)}, "latest")
		}},
		{Name: "revert", Title: "eth_call reverting with a reason", Expect: ExpectRevert, gen: func(g *sampler) any {
			return req("eth_call", callArgs{To: TokenAddress(g.r.IntN(g.c.Tokens)), Data: FailData(g.r.Uint64N(1 << 32))}, "latest")
		}},
		{Name: "simulate1", Title: "eth_simulateV1 1 block, ERC-20 + ETH, traceTransfers", Expect: ExpectSimulate, gen: func(g *sampler) any {
			return g.simulate(1, 2)
		}},
		{Name: "simulate3x3", Title: "eth_simulateV1 3 blocks x 3 calls", Expect: ExpectSimulate, gen: func(g *sampler) any {
			return g.simulate(3, 3)
		}},
		{Name: "batch100", Title: "batch of 100 eth_call balanceOf (per batch)", Batch: true, gen: func(g *sampler) any {
			batch := make([]request, BatchSize)
			for i := range batch {
				t, h := g.anyHolder()
				batch[i] = req("eth_call", callArgs{To: TokenAddress(t), Data: BalanceOfData(h)}, "latest")
				batch[i].ID = i + 1
			}
			return batch
		}},
		{Name: "ws-balanceof", Title: "websocket eth_call balanceOf latest", WebSocket: true, gen: func(g *sampler) any {
			t, h := g.anyHolder()
			return req("eth_call", callArgs{To: TokenAddress(t), Data: BalanceOfData(h)}, "latest")
		}},
	}
}

// hotHolders is the size of the hot set: the first holders of token 0.
const hotHolders = 16

// sampler draws the random parts of requests.
type sampler struct {
	c          Config
	r          *rand.Rand
	newHolders []NewHolderRef
}

// genesisHolder is a random token and one of its genesis holders.
func (g *sampler) genesisHolder() (int, common.Address) {
	return g.r.IntN(g.c.Tokens), Holder(g.r.IntN(g.c.HoldersPerToken()))
}

// anyHolder is a genesis holder, or one time in ten a holder created by a
// block (with the token it holds).
func (g *sampler) anyHolder() (int, common.Address) {
	if len(g.newHolders) > 0 && g.r.IntN(10) == 0 {
		h := g.newHolders[g.r.IntN(len(g.newHolders))]
		return h.Token, h.Holder
	}
	return g.genesisHolder()
}

// pastBlock is a random block number in [0, head], hex-encoded.
func (g *sampler) pastBlock() string {
	return hexutil.EncodeUint64(g.r.Uint64N(uint64(g.c.Blocks) + 1))
}

type stateOverride struct {
	Balance *hexutil.Big `json:"balance"`
}

type simBlock struct {
	StateOverrides map[common.Address]stateOverride `json:"stateOverrides,omitempty"`
	Calls          []callArgs                       `json:"calls"`
}

type simOpts struct {
	BlockStateCalls []simBlock `json:"blockStateCalls"`
	TraceTransfers  bool       `json:"traceTransfers"`
}

// simulate is an eth_simulateV1 request of blocks blocks: a genesis holder
// (its ether set by a state override in the first block) sends tokens and
// ether; with 3 calls a block, the third reads the recipient's balance.
func (g *sampler) simulate(blocks, calls int) request {
	t, from := g.genesisHolder()
	token := TokenAddress(t)
	amount := new(big.Int).Div(ether, big.NewInt(10))
	opts := simOpts{TraceTransfers: true}
	for b := 0; b < blocks; b++ {
		to := Holder(g.r.IntN(g.c.HoldersPerToken()))
		payee := derive("tipnode-bench payee", g.r.Uint64())
		blk := simBlock{Calls: []callArgs{
			{From: &from, To: token, Data: TransferData(to, amount)},
			{From: &from, To: payee, Value: (*hexutil.Big)(amount)},
		}}
		if calls > 2 {
			blk.Calls = append(blk.Calls, callArgs{From: &from, To: token, Data: BalanceOfData(to)})
		}
		if b == 0 {
			blk.StateOverrides = map[common.Address]stateOverride{from: {Balance: (*hexutil.Big)(new(big.Int).Mul(big.NewInt(1000), ether))}}
		}
		opts.BlockStateCalls = append(opts.BlockStateCalls, blk)
	}
	return req("eth_simulateV1", opts, "latest")
}

// RequestsFile is the path of workload name's request file under dir.
func RequestsFile(dir, name string) string { return filepath.Join(dir, name+".jsonl") }

// Lines is the number of request lines written for w.
func (c Config) Lines(w Workload) int {
	if w.Batch {
		return max(1, c.Requests/10)
	}
	return c.Requests
}

// WriteRequests writes one request file per workload into dir: c.Lines(w)
// lines, each one JSON-RPC message. A workload's file depends only on c and
// its name (each has its own PCG stream).
func WriteRequests(c Config, dir string) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	newHolders := NewHolders(c)
	for _, w := range Workloads() {
		h := fnv.New64a()
		h.Write([]byte(w.Name))
		g := &sampler{c: c, r: rand.New(rand.NewPCG(c.Seed, h.Sum64())), newHolders: newHolders}
		err := writeFile(RequestsFile(dir, w.Name), func(out io.Writer) error {
			for i := 0; i < c.Lines(w); i++ {
				line, err := json.Marshal(w.gen(g))
				if err != nil {
					return err
				}
				if _, err := out.Write(append(line, '\n')); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("workload %s: %w", w.Name, err)
		}
	}
	return nil
}
