package eth

import (
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/chain/devnet"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/sequencer"
)

// devPendingNode is a dev chain with a pool, a manual clock and a sequencer
// (not started), served over HTTP.
type devPendingNode struct {
	accs   []devnet.Account
	g      *chain.Genesis
	api    *API
	url    string
	pool   *sequencer.Pool
	clock  *pending.ManualClock
	mgr    *pending.Manager
	seqCfg sequencer.Config
	seq    *sequencer.Sequencer
}

func newDevPendingNode(t *testing.T, install bool) *devPendingNode {
	t.Helper()
	accs, err := devnet.Accounts(devnet.Mnemonic, 2)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := devnet.Genesis(devnet.GenesisConfig{ChainID: 1337, Accounts: []common.Address{accs[0].Address, accs[1].Address}, Timestamp: 1_700_000_000})
	if err != nil {
		t.Fatal(err)
	}
	_, g, w := chaintest.InitStore(t, spec)
	log := zerolog.New(io.Discard)
	d := &devPendingNode{accs: accs, g: g, seqCfg: sequencer.DefaultConfig()}
	d.clock = pending.NewManualClock(time.Unix(1_700_000_010, 0))
	d.mgr = pending.NewManager(w, g.Config, d.seqCfg.HeaderParams(), d.clock, nil)
	if d.pool, err = sequencer.NewPool(sequencer.DefaultPoolConfig(), g.Config, d.mgr, d.clock, nil, log); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultAPIConfig()
	cfg.Preconfirmations = true
	d.api, d.url = startAPI(t, cfg, g, d.mgr, w, d.pool)
	if d.seq, err = sequencer.New(d.seqCfg, w, d.api.Executor(), d.pool, d.mgr, d.clock, nil, log); err != nil {
		t.Fatal(err)
	}
	if install {
		d.start(t)
	}
	return d
}

// start starts the sequencer.
func (d *devPendingNode) start(t *testing.T) {
	t.Helper()
	if err := d.seq.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.seq.Stop(); err != nil {
			t.Errorf("sequencer: %v", err)
		}
	})
}

// TestPendingSealBetweenViewAndSnapshot: seals landing while requests
// resolve `pending` never make one read an older block than pending: the
// recipient of a pre-confirmed transfer shows its balance on `pending`
// before, during and after the seals (the head and the rebased snapshot
// move in one step; a read holds its head's view).
func TestPendingSealBetweenViewAndSnapshot(t *testing.T) {
	d := newDevPendingNode(t, true)
	recipient := common.HexToAddress("0x00000000000000000000000000000000000b0b02")
	tx, err := types.SignNewTx(d.accs[0].Key, types.LatestSigner(d.g.Config), &types.DynamicFeeTx{
		ChainID: d.g.Config.ChainID, Nonce: 0, GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(10 * params.GWei),
		Gas: 21_000, To: &recipient, Value: big.NewInt(params.Ether),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.pool.Add(tx); err != nil {
		t.Fatal(err)
	}
	d.clock.Advance(d.seqCfg.PreconfInterval)
	d.seq.Sync()
	if snap := d.mgr.Current(); snap == nil || len(snap.Transactions()) != 1 || snap.Anchor().Number.Uint64() != 0 {
		t.Fatal("transfer not pre-confirmed on top of genesis")
	}
	var (
		stop  atomic.Bool
		reads atomic.Int64
		wg    sync.WaitGroup
		fail  = make(chan string, 4)
	)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				var bal hexBig
				r := callRPC(t, d.url, "eth_getBalance", recipient, "pending")
				if r.Error != nil || json.Unmarshal(r.Result, &bal) != nil {
					fail <- fmt.Sprintf("eth_getBalance: %+v %s", r.Error, r.Result)
					return
				}
				if bal.ToInt().Cmp(big.NewInt(params.Ether)) != 0 {
					fail <- fmt.Sprintf("pending balance across a seal = %v, want 1 ether", bal.ToInt())
					return
				}
				reads.Add(1)
			}
		}()
	}
	for range 5 {
		// Let the readers run a few requests, then seal under them.
		for start := reads.Load(); reads.Load() < start+3 && len(fail) == 0; {
			time.Sleep(time.Millisecond)
		}
		d.clock.Advance(d.seqCfg.BlockTime)
		d.seq.Sync()
	}
	stop.Store(true)
	wg.Wait()
	select {
	case msg := <-fail:
		t.Fatal(msg)
	default:
	}
	if n := d.mgr.Current().Anchor().Number.Uint64(); n != 5 {
		t.Fatalf("anchor after the seals = %d, want 5", n)
	}
	t.Logf("%d reads across 5 seals", reads.Load())
}

// The pending block shows the transactions and receipts roots its
// pre-confirmed transactions will have, and the sealed block has them.
func TestPendingBlockRoots(t *testing.T) {
	d := newDevPendingNode(t, true)
	for nonce := uint64(0); nonce < 3; nonce++ {
		to := common.Address{0xb0, byte(nonce)}
		tx, err := types.SignNewTx(d.accs[0].Key, types.LatestSigner(d.g.Config), &types.DynamicFeeTx{
			ChainID: d.g.Config.ChainID, Nonce: nonce, GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(10 * params.GWei),
			Gas: 21_000, To: &to, Value: big.NewInt(1),
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.pool.Add(tx); err != nil {
			t.Fatal(err)
		}
	}
	d.clock.Advance(d.seqCfg.PreconfInterval)
	d.seq.Sync()
	type roots struct {
		Number       hexU64        `json:"number"`
		TxRoot       common.Hash   `json:"transactionsRoot"`
		ReceiptsRoot common.Hash   `json:"receiptsRoot"`
		Transactions []common.Hash `json:"transactions"`
	}
	var pend roots
	wantResult(t, callRPC(t, d.url, "eth_getBlockByNumber", "pending", false), &pend)
	if len(pend.Transactions) != 3 || pend.TxRoot == types.EmptyTxsHash || pend.ReceiptsRoot == types.EmptyReceiptsHash {
		t.Fatalf("pending block: %d txs, roots %s / %s", len(pend.Transactions), pend.TxRoot, pend.ReceiptsRoot)
	}
	d.clock.Advance(d.seqCfg.BlockTime)
	d.seq.Sync()
	var sealed roots
	wantResult(t, callRPC(t, d.url, "eth_getBlockByNumber", hexU64(pend.Number), false), &sealed)
	if sealed.TxRoot != pend.TxRoot || sealed.ReceiptsRoot != pend.ReceiptsRoot {
		t.Fatalf("sealed roots %s / %s, pending showed %s / %s", sealed.TxRoot, sealed.ReceiptsRoot, pend.TxRoot, pend.ReceiptsRoot)
	}
}

// TestBatchIsOneRead: every element of a JSON-RPC batch sees the same
// canonical head and the same pending snapshot, even while blocks are
// sealed under the batches (elements run concurrently): eth_blockNumber,
// `latest` and `pending` agree (pending = latest + 1, its parent is latest),
// and the pending balance of an account receiving one transfer per
// pre-confirmation never goes back between batches.
func TestBatchIsOneRead(t *testing.T) {
	d := newDevPendingNode(t, true)
	recipient := common.HexToAddress("0x00000000000000000000000000000000000b0b03")
	signer := types.LatestSigner(d.g.Config)
	nonce := uint64(0)
	transfer := func() {
		tx, err := types.SignNewTx(d.accs[0].Key, signer, &types.DynamicFeeTx{
			ChainID: d.g.Config.ChainID, Nonce: nonce, GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(10 * params.GWei),
			Gas: 21_000, To: &recipient, Value: big.NewInt(1),
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.pool.Add(tx); err != nil {
			t.Fatal(err)
		}
		nonce++
		d.clock.Advance(d.seqCfg.PreconfInterval)
		d.seq.Sync()
	}
	transfer()
	const batch = `[{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]},` +
		`{"jsonrpc":"2.0","id":2,"method":"eth_getBlockByNumber","params":["latest",false]},` +
		`{"jsonrpc":"2.0","id":3,"method":"eth_getBlockByNumber","params":["pending",false]},` +
		`{"jsonrpc":"2.0","id":4,"method":"eth_getBalance","params":["0x00000000000000000000000000000000000b0b03","pending"]},` +
		`{"jsonrpc":"2.0","id":5,"method":"eth_getBalance","params":["0x00000000000000000000000000000000000b0b03","latest"]}]`
	type block struct {
		Number     hexU64       `json:"number"`
		Hash       *common.Hash `json:"hash"` // null on the pending block
		ParentHash common.Hash  `json:"parentHash"`
	}
	var (
		stop    atomic.Bool
		batches atomic.Int64
		wg      sync.WaitGroup
		fail    = make(chan string, 4)
	)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lastPending int64 = -1
			for !stop.Load() {
				_, body := post(t, d.url, batch)
				var resps []rpcResp
				if err := json.Unmarshal(body, &resps); err != nil || len(resps) != 5 {
					fail <- fmt.Sprintf("batch: %v %s", err, body)
					return
				}
				var (
					number       hexU64
					latest, pend block
					balP, balL   hexBig
				)
				for i, dst := range []any{&number, &latest, &pend, &balP, &balL} {
					if resps[i].Error != nil || json.Unmarshal(resps[i].Result, dst) != nil {
						fail <- fmt.Sprintf("element %d: %+v %s", i, resps[i].Error, resps[i].Result)
						return
					}
				}
				switch {
				case uint64(number) != uint64(latest.Number):
					fail <- fmt.Sprintf("eth_blockNumber %d, latest block %d in one batch", number, latest.Number)
				case latest.Hash == nil || uint64(pend.Number) != uint64(latest.Number)+1 || pend.ParentHash != *latest.Hash:
					fail <- fmt.Sprintf("pending block %d (parent %s) on latest %d (%v) in one batch", pend.Number, pend.ParentHash.Hex(), latest.Number, latest.Hash)
				case balP.ToInt().Cmp(balL.ToInt()) < 0:
					fail <- fmt.Sprintf("pending balance %v below latest %v in one batch", balP.ToInt(), balL.ToInt())
				case balP.ToInt().Int64() < lastPending:
					fail <- fmt.Sprintf("pending balance went back from %d to %v", lastPending, balP.ToInt())
				default:
					lastPending = balP.ToInt().Int64()
					batches.Add(1)
					continue
				}
				return
			}
		}()
	}
	for range 6 {
		for start := batches.Load(); batches.Load() < start+3 && len(fail) == 0; {
			time.Sleep(time.Millisecond)
		}
		transfer()
		d.clock.Advance(d.seqCfg.BlockTime - d.seqCfg.PreconfInterval) // seal
		d.seq.Sync()
	}
	stop.Store(true)
	wg.Wait()
	select {
	case msg := <-fail:
		t.Fatal(msg)
	default:
	}
	t.Logf("%d consistent batches across 6 seals", batches.Load())
}
