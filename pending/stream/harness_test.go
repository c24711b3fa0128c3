package stream_test

import (
	"math/big"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/devnet"
	"github.com/tipnode/tipnode/store"
)

const genesisTime = 1_700_000_000

// seqNode is a dev chain with a real sequencer driven by a manual clock;
// subscribe runs before the sequencer starts, so it sees the first index 0.
type seqNode struct {
	t      *testing.T
	db     *store.DB
	w      *chain.Writer
	mgr    *pending.Manager
	pool   *pending.Pool
	seq    *pending.Sequencer
	clock  *pending.ManualClock
	cfg    pending.Config
	accs   []devnet.Account
	signer types.Signer
	chain  *big.Int
	nonces map[int]uint64
}

func newSeqNode(t *testing.T, subscribe func(*pending.Manager)) *seqNode {
	t.Helper()
	accs, err := devnet.Accounts(devnet.Mnemonic, 4)
	if err != nil {
		t.Fatal(err)
	}
	addrs := make([]common.Address, len(accs))
	for i, a := range accs {
		addrs[i] = a.Address
	}
	spec, err := devnet.Genesis(devnet.GenesisConfig{ChainID: 1337, Accounts: addrs, Timestamp: genesisTime})
	if err != nil {
		t.Fatal(err)
	}
	db, g, w := chaintest.InitStore(t, spec)
	n := &seqNode{t: t, db: db, w: w, clock: pending.NewManualClock(time.Unix(genesisTime+10, 0)), cfg: pending.DefaultConfig(),
		accs: accs, signer: types.LatestSigner(g.Config), chain: g.Config.ChainID, nonces: map[int]uint64{}}
	n.mgr = pending.NewManager(w, g.Config, n.cfg.HeaderParams(), n.clock, nil)
	if n.pool, err = pending.NewPool(pending.DefaultPoolConfig(), g.Config, n.mgr, n.clock, nil, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	if n.seq, err = pending.New(n.cfg, w, chain.NewExecutor(g.Config), n.pool, n.mgr, n.clock, nil, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	if subscribe != nil {
		subscribe(n.mgr)
	}
	if err := n.seq.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.seq.Stop(); err != nil {
			t.Error(err)
		}
	})
	return n
}

// send pools a transaction from account i (to: nil deploys data).
func (n *seqNode) send(i int, to *common.Address, gas uint64, data []byte) *types.Transaction {
	n.t.Helper()
	tx, err := types.SignNewTx(n.accs[i].Key, n.signer, &types.DynamicFeeTx{ChainID: n.chain, Nonce: n.nonces[i],
		GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(100 * params.GWei), Gas: gas, To: to, Value: big.NewInt(1), Data: data})
	if err != nil {
		n.t.Fatal(err)
	}
	if err := n.pool.Add(tx); err != nil {
		n.t.Fatal(err)
	}
	n.nonces[i]++
	return tx
}

// transfer pools a plain transfer from account i.
func (n *seqNode) transfer(i int) *types.Transaction {
	return n.send(i, &common.Address{0xbe, byte(i)}, 21_000, nil)
}

// logger pools a deployment whose constructor emits one log (topic t).
func (n *seqNode) logger(i int, topic byte) *types.Transaction {
	// PUSH1 0x2a PUSH1 0 MSTORE PUSH1 topic PUSH1 0x20 PUSH1 0 LOG1 STOP
	return n.send(i, nil, 100_000, []byte{0x60, 0x2a, 0x60, 0x00, 0x52, 0x60, topic, 0x60, 0x20, 0x60, 0x00, 0xa1, 0x00})
}

// tick advances k pre-confirmation intervals and waits for the sequencer.
func (n *seqNode) tick(k int) {
	n.t.Helper()
	for range k {
		n.clock.Advance(n.cfg.PreconfInterval)
	}
	n.seq.Sync()
	if err := n.seq.Err(); err != nil {
		n.t.Fatal(err)
	}
}

// toSeal advances to the next seal (the current block is sealed, the next
// opened).
func (n *seqNode) toSeal() {
	n.t.Helper()
	head := n.w.Head().Number()
	for n.w.Head().Number() == head {
		n.tick(1)
	}
}

// recorder collects published snapshots.
type recorder struct {
	mu    sync.Mutex
	snaps []*pending.Snapshot
}

func (r *recorder) add(s *pending.Snapshot) {
	r.mu.Lock()
	r.snaps = append(r.snaps, s)
	r.mu.Unlock()
}

func (r *recorder) all() []*pending.Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*pending.Snapshot(nil), r.snaps...)
}
