package store

import (
	"github.com/tipnode/tipnode/store/chaintypes"

	"errors"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/holiman/uint256"
	"github.com/rs/zerolog"
)

// openTest opens a fresh store in a temp dir, closed at cleanup.
func openTest(tb testing.TB) *DB {
	tb.Helper()
	cfg := DefaultConfig(tb.TempDir())
	cfg.SyncWrites = false
	cfg.CacheBytes = 32 << 20
	cfg.MemtableBytes = 8 << 20
	db, err := Open(cfg, zerolog.Nop())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := db.Close(); err != nil && !errors.Is(err, ErrClosed) {
			tb.Error(err)
		}
	})
	return db
}

// testChain builds and writes blocks on top of each other.
type testChain struct {
	tb     testing.TB
	db     *DB
	blocks []*chaintypes.Block
	nonce  uint64
}

func newTestChain(tb testing.TB, db *DB, genesisDiff *StateDiff) *testChain {
	tb.Helper()
	c := &testChain{tb: tb, db: db}
	g := chaintypes.NewBlockWithHeader(&types.Header{Number: big.NewInt(0), Difficulty: big.NewInt(1), GasLimit: 30_000_000})
	if err := db.WriteGenesis(&BlockWrite{Block: g, Diff: genesisDiff}, []byte(`{"config":{}}`), []byte(`{}`)); err != nil {
		tb.Fatal(err)
	}
	c.blocks = append(c.blocks, g)
	return c
}

// makeBlock returns the next block with ntx transactions and its receipts,
// without writing it. salt changes the block hash.
func (c *testChain) makeBlock(ntx int, salt byte) (*chaintypes.Block, chaintypes.Receipts) {
	parent := c.blocks[len(c.blocks)-1].Header()
	h := &types.Header{
		ParentHash: parent.Hash(),
		Number:     new(big.Int).Add(parent.Number, big.NewInt(1)),
		Difficulty: big.NewInt(1),
		GasLimit:   30_000_000,
		Time:       parent.Time + 12,
		Extra:      []byte{salt},
	}
	var txs []*types.Transaction
	var rcpts chaintypes.Receipts
	for i := 0; i < ntx; i++ {
		c.nonce++
		to := common.Address{0xee}
		txs = append(txs, types.NewTx(&types.LegacyTx{Nonce: c.nonce, To: &to, Gas: 21000, GasPrice: big.NewInt(1), Value: big.NewInt(int64(i))}))
		rcpts = append(rcpts, &chaintypes.Receipt{Receipt: types.Receipt{
			Status: types.ReceiptStatusSuccessful, CumulativeGasUsed: uint64(21000 * (i + 1)),
			Logs: []*types.Log{{Address: to, Topics: []common.Hash{{byte(i)}}, Data: []byte{salt}}},
		}})
	}
	withdrawals := types.Withdrawals{{Index: h.Number.Uint64(), Validator: 1, Address: common.Address{0x77}, Amount: 5}}
	b := chaintypes.NewBlockWithHeader(h).WithBody(chaintypes.Body{Transactions: chaintypes.FromEth(txs), Withdrawals: withdrawals})
	return b, rcpts
}

// add writes the next block with diff and returns it.
func (c *testChain) add(diff *StateDiff, tags ...Tag) *chaintypes.Block {
	c.tb.Helper()
	b, rcpts := c.makeBlock(int(c.head().NumberU64()%3), 0)
	c.write(b, rcpts, diff, tags...)
	return b
}

func (c *testChain) write(b *chaintypes.Block, rcpts chaintypes.Receipts, diff *StateDiff, tags ...Tag) {
	c.tb.Helper()
	if err := c.db.WriteBlock(&BlockWrite{Block: b, Receipts: rcpts, Diff: diff, Tags: tags}); err != nil {
		c.tb.Fatal(err)
	}
	c.blocks = append(c.blocks, b)
}

func (c *testChain) head() *chaintypes.Block { return c.blocks[len(c.blocks)-1] }

func addr(i int) common.Address { return common.BigToAddress(big.NewInt(int64(0x1000 + i))) }
func slot(i int) common.Hash    { return common.BigToHash(big.NewInt(int64(i))) }
func val(i int) common.Hash     { return common.BigToHash(big.NewInt(int64(i))) }

func acct(nonce, balance uint64) *Account {
	return &Account{Nonce: nonce, Balance: uint256.NewInt(balance), CodeHash: types.EmptyCodeHash}
}

// withView runs fn on a fresh view.
func withView(tb testing.TB, db *DB, fn func(v View)) {
	tb.Helper()
	v, err := db.View()
	if err != nil {
		tb.Fatal(err)
	}
	defer func() {
		if err := v.Close(); err != nil {
			tb.Error(err)
		}
	}()
	fn(v)
}

// stateAt returns a reader at h of v, failing the test on error.
func stateAt(tb testing.TB, v View, h uint64) StateReader {
	tb.Helper()
	s, err := v.StateAt(h)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// dumpState renders everything observable in the state at h: every live
// account, its storage, hasStorage, and point reads of the given entities.
func dumpState(tb testing.TB, s StateReader, addrs []common.Address, slots []common.Hash) string {
	tb.Helper()
	var sb strings.Builder
	must := func(err error) {
		if err != nil {
			tb.Fatal(err)
		}
	}
	must(s.ForEachAccount(func(a common.Address, acc *Account) error {
		fmt.Fprintf(&sb, "acct %x n=%d b=%s c=%x\n", a, acc.Nonce, acc.Balance, acc.CodeHash)
		return nil
	}))
	for _, a := range addrs {
		acc, err := s.Account(a)
		must(err)
		if acc != nil {
			fmt.Fprintf(&sb, "get %x n=%d b=%s\n", a, acc.Nonce, acc.Balance)
			code, err := s.Code(acc.CodeHash)
			must(err)
			fmt.Fprintf(&sb, "code %x\n", code)
		}
		fmt.Fprintf(&sb, "has %x %v\n", a, hasStorage(tb, s, a))
		must(s.ForEachStorage(a, func(k, v common.Hash) error {
			fmt.Fprintf(&sb, "slot %x %x %x\n", a, k, v)
			return nil
		}))
		for _, k := range slots {
			v, err := s.Storage(a, k)
			must(err)
			if v != (common.Hash{}) {
				fmt.Fprintf(&sb, "sget %x %x %x\n", a, k, v)
			}
		}
	}
	return sb.String()
}

// hasStorage reports whether addr has any non-zero slot in s: it stops
// ForEachStorage at the first slot, so it also checks that an error returned
// by the callback ends the scan and comes back wrapped.
func hasStorage(tb testing.TB, s StateReader, addr common.Address) bool {
	tb.Helper()
	errStop := errors.New("stop")
	calls := 0
	err := s.ForEachStorage(addr, func(_, _ common.Hash) error {
		calls++
		return errStop
	})
	if (err != nil && !errors.Is(err, errStop)) || calls > 1 {
		tb.Fatalf("storage scan of %s: %v after %d callbacks, want the callback's error after one", addr, err, calls)
	}
	return err != nil
}

// rawDump renders every key/value of the store.
func rawDump(tb testing.TB, db *DB) string {
	tb.Helper()
	var lines []string
	err := db.RawScan(nil, nil, func(k, v []byte) error {
		lines = append(lines, fmt.Sprintf("%x=%x", k, v))
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	sort.Strings(lines) // order is already key order; sorting documents intent
	return strings.Join(lines, "\n")
}

func diffOf(accounts map[common.Address]*Account, storage map[common.Address]map[common.Hash]common.Hash, wiped ...common.Address) *StateDiff {
	d := NewStateDiff()
	for a, acc := range accounts {
		d.Accounts[a] = acc
	}
	for a, m := range storage {
		d.Storage[a] = m
	}
	for _, a := range wiped {
		d.Wiped[a] = struct{}{}
	}
	return d
}

func bigInt(n int64) *big.Int { return big.NewInt(n) }
