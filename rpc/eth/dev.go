package eth

// The dev chain's methods (`tipnode dev` only: RegisterDev; on other nodes
// they do not exist, "method not found"), under the names anvil and Hardhat
// give them, with anvil's parameter and result shapes:
//
//	anvil_setBalance / hardhat_setBalance          [address, wei]             null
//	anvil_setCode / hardhat_setCode                [address, code]            null
//	anvil_setNonce / hardhat_setNonce              [address, nonce]           null
//	anvil_setStorageAt / hardhat_setStorageAt      [address, slot, value]     true
//	anvil_mine / hardhat_mine                      [blocks?, interval?]       null
//	evm_mine                                       [timestamp? | {timestamp?, blocks?}]  "0x0"
//	evm_increaseTime                               [seconds]                  total offset (seconds, a number)
//	evm_setNextBlockTimestamp                      [timestamp]                null
//	anvil_impersonateAccount / hardhat_…           [address]                  null
//	anvil_stopImpersonatingAccount / hardhat_…     [address]                  null
//	anvil_autoImpersonateAccount                   [bool]                     null
//	evm_snapshot                                   []                         id (hex quantity)
//	evm_revert                                     [id]                       true / false (unknown id)
//	evm_setAutomine / anvil_setAutomine            [bool]                     null
//	anvil_getAutomine / hardhat_getAutomine        []                         bool
//	evm_setIntervalMining / anvil_setIntervalMining [seconds]                 null (0: manual mining)
//	anvil_reset                                    [] or [{}]                 null (forking refused)
//	tipnode_sendDeposit (OP chains)                [{from, to?, mint?, value?, gas?, data?}]  deposit hash
//
// Numbers may be hex quantities, JSON integers or decimal strings (as anvil
// takes them). The semantics are sequencer.Sequencer's (pending/sequencer/dev.go):
// state changes land in the pending block at once and in latest at its
// seal; impersonated senders send with eth_sendTransaction, their
// transaction executed at once into the pending block.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/sequencer"
	"github.com/tipnode/tipnode/rpc"
	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// MaxMineBlocks bounds the blocks one anvil_mine / hardhat_mine seals.
const MaxMineBlocks = 10_000

// DevChain is the dev chain's control (*sequencer.Sequencer with
// Config.Dev).
type DevChain interface {
	Override(o store.PendingOverride) error
	SendImpersonated(tx *types.Transaction) (*chaintypes.Receipt, error)
	Mine(ctx context.Context, n, interval uint64) (uint64, error)
	MineAt(ctx context.Context, ts uint64) error
	IncreaseTime(d time.Duration) (time.Duration, error)
	SetNextBlockTimestamp(ts uint64) error
	Snapshot() (uint64, error)
	Revert(id uint64) (bool, error)
	SetAutomine(on bool) error
	Automine() bool
	SetIntervalMining(d time.Duration) error
	Reset() error
	SendDeposit(f chaintypes.DepositFields) (*chaintypes.Deposit, uint64, error)
}

// impersonation is the set of impersonated accounts (in memory: a restart
// forgets it).
type impersonation struct {
	mu    sync.Mutex
	addrs map[common.Address]struct{}
	auto  bool
}

func (im *impersonation) has(a common.Address) bool {
	im.mu.Lock()
	defer im.mu.Unlock()
	_, ok := im.addrs[a]
	return ok || im.auto
}

// RegisterDev installs the dev chain's methods, served by d.
func (a *API) RegisterDev(s *rpc.Server, d DevChain) {
	a.dev = d
	a.imp = &impersonation{addrs: make(map[common.Address]struct{})}
	a.modules.add("anvil", "hardhat", "evm")
	for _, m := range []struct {
		names []string
		fn    rpc.Handler
	}{
		{[]string{"anvil_setBalance", "hardhat_setBalance"}, a.devSetBalance},
		{[]string{"anvil_setCode", "hardhat_setCode"}, a.devSetCode},
		{[]string{"anvil_setNonce", "hardhat_setNonce"}, a.devSetNonce},
		{[]string{"anvil_setStorageAt", "hardhat_setStorageAt"}, a.devSetStorageAt},
		{[]string{"anvil_mine", "hardhat_mine"}, a.devMine},
		{[]string{"evm_mine"}, a.evmMine},
		{[]string{"evm_increaseTime"}, a.evmIncreaseTime},
		{[]string{"evm_setNextBlockTimestamp"}, a.evmSetNextBlockTimestamp},
		{[]string{"anvil_impersonateAccount", "hardhat_impersonateAccount"}, a.devImpersonate},
		{[]string{"anvil_stopImpersonatingAccount", "hardhat_stopImpersonatingAccount"}, a.devStopImpersonating},
		{[]string{"anvil_autoImpersonateAccount"}, a.devAutoImpersonate},
		{[]string{"evm_snapshot"}, a.evmSnapshot},
		{[]string{"evm_revert"}, a.evmRevert},
		{[]string{"evm_setAutomine", "anvil_setAutomine"}, a.devSetAutomine},
		{[]string{"anvil_getAutomine", "hardhat_getAutomine"}, a.devGetAutomine},
		{[]string{"evm_setIntervalMining", "anvil_setIntervalMining"}, a.devSetIntervalMining},
		{[]string{"anvil_reset"}, a.devReset},
		{[]string{"tipnode_sendDeposit"}, a.devSendDeposit},
	} {
		for _, n := range m.names {
			s.Register(n, m.fn)
		}
	}
}

// devNum is a non-negative integer given as a hex quantity, a JSON integer
// or a decimal string.
type devNum struct{ big.Int }

func (n *devNum) UnmarshalJSON(b []byte) error {
	s := string(b)
	if strings.HasPrefix(s, `"`) {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		switch {
		case strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X"):
			if len(s) == 2 || len(s) > 66 {
				return fmt.Errorf("hex number %q: want 0x and 1 to 64 hex digits", s)
			}
			if _, ok := n.SetString(s[2:], 16); !ok {
				return fmt.Errorf("invalid hex number %q", s)
			}
			return nil
		case s == "" || len(s) > 78:
			return fmt.Errorf("number %q: want a hex quantity or up to 78 decimal digits", s)
		}
	}
	if len(s) > 78 {
		return fmt.Errorf("number of %d digits is too large", len(s))
	}
	if _, ok := n.SetString(s, 10); !ok {
		return fmt.Errorf("invalid number %s: want a hex quantity, a JSON integer or a decimal string", string(b))
	}
	if n.Sign() < 0 {
		return fmt.Errorf("negative number %s", s)
	}
	return nil
}

// decodeNum decodes argument i as a number of at most bits bits.
func decodeNum(p rpc.Params, i int, name string, bits int) (*big.Int, error) {
	var n devNum
	if err := p.Decode(i, name, &n); err != nil {
		return nil, err
	}
	if n.BitLen() > bits {
		return nil, p.ArgError(i, name, "%v does not fit in %d bits", &n.Int, bits)
	}
	return &n.Int, nil
}

// optionalNum is decodeNum of an optional argument (nil when absent).
func optionalNum(p rpc.Params, i int, name string, bits int) (*big.Int, error) {
	if !p.Present(i) {
		return nil, nil
	}
	return decodeNum(p, i, name, bits)
}

// devError gives the sequencer's refusals their codes: a dev request that
// cannot be done as asked (a timestamp not after the latest block, an
// invalid override) is -32602 with the reason; a stopped sequencer -32000.
func devError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sequencer.ErrDev), errors.Is(err, pending.ErrOverride):
		return rpc.ErrInvalidParams("%s", err.Error())
	default:
		return rpc.ErrServer(err.Error())
	}
}

func (a *API) override(p rpc.Params, o store.PendingOverride) (any, error) {
	if err := a.dev.Override(o); err != nil {
		return nil, devError(err)
	}
	return nil, nil
}

// addrArgs checks that there are at most n arguments and decodes the
// first, an address.
func addrArgs(p rpc.Params, n int) (common.Address, error) {
	var addr common.Address
	if err := p.AtMost(n); err != nil {
		return addr, err
	}
	err := p.Decode(0, "address", &addr)
	return addr, err
}

func (a *API) devSetBalance(_ context.Context, p rpc.Params) (any, error) {
	addr, err := addrArgs(p, 2)
	if err != nil {
		return nil, err
	}
	v, err := decodeNum(p, 1, "balance", 256)
	if err != nil {
		return nil, err
	}
	return a.override(p, store.PendingOverride{Kind: store.OverrideBalance, Address: addr, Balance: v})
}

func (a *API) devSetNonce(_ context.Context, p rpc.Params) (any, error) {
	addr, err := addrArgs(p, 2)
	if err != nil {
		return nil, err
	}
	v, err := decodeNum(p, 1, "nonce", 64)
	if err != nil {
		return nil, err
	}
	return a.override(p, store.PendingOverride{Kind: store.OverrideNonce, Address: addr, Nonce: v.Uint64()})
}

func (a *API) devSetCode(_ context.Context, p rpc.Params) (any, error) {
	addr, err := addrArgs(p, 2)
	if err != nil {
		return nil, err
	}
	var code hexutil.Bytes
	if err := p.Decode(1, "code", &code); err != nil {
		return nil, err
	}
	return a.override(p, store.PendingOverride{Kind: store.OverrideCode, Address: addr, Code: code})
}

// devSetStorageAt: the slot a number (or 32-byte hex), the value 32 bytes
// of hex (a shorter quantity is left-padded).
func (a *API) devSetStorageAt(_ context.Context, p rpc.Params) (any, error) {
	addr, err := addrArgs(p, 3)
	if err != nil {
		return nil, err
	}
	slot, err := decodeNum(p, 1, "slot", 256)
	if err != nil {
		return nil, err
	}
	val, err := decodeNum(p, 2, "value", 256)
	if err != nil {
		return nil, err
	}
	if _, err := a.override(p, store.PendingOverride{Kind: store.OverrideStorage, Address: addr,
		Slot: common.BigToHash(slot), Value: common.BigToHash(val)}); err != nil {
		return nil, err
	}
	return true, nil
}

func (a *API) devMine(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(2); err != nil {
		return nil, err
	}
	blocks, err := optionalNum(p, 0, "blocks", 64)
	if err != nil {
		return nil, err
	}
	interval, err := optionalNum(p, 1, "interval", 32)
	if err != nil {
		return nil, err
	}
	n := uint64(1)
	if blocks != nil {
		n = blocks.Uint64()
	}
	if n == 0 || n > MaxMineBlocks {
		return nil, p.ArgError(0, "blocks", "%d blocks: want 1 to %d", n, MaxMineBlocks)
	}
	var iv uint64
	if interval != nil {
		iv = interval.Uint64()
	}
	if _, err := a.dev.Mine(ctx, n, iv); err != nil {
		return nil, devError(err)
	}
	return nil, nil
}

// evmMine: no argument, a timestamp, or {timestamp?, blocks?} (ganache's
// options object, which anvil also takes).
func (a *API) evmMine(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(1); err != nil {
		return nil, err
	}
	var (
		ts     *big.Int
		blocks = uint64(1)
	)
	if raw := p.Raw(0); p.Present(0) && strings.HasPrefix(strings.TrimSpace(string(raw)), "{") {
		var opts struct {
			Timestamp *devNum `json:"timestamp"`
			Blocks    *devNum `json:"blocks"`
		}
		if err := p.Decode(0, "options", &opts); err != nil {
			return nil, err
		}
		if opts.Timestamp != nil {
			ts = &opts.Timestamp.Int
		}
		if opts.Blocks != nil {
			if opts.Blocks.BitLen() > 64 || opts.Blocks.Uint64() == 0 || opts.Blocks.Uint64() > MaxMineBlocks {
				return nil, p.ArgError(0, "options", "blocks %v: want 1 to %d", &opts.Blocks.Int, MaxMineBlocks)
			}
			blocks = opts.Blocks.Uint64()
		}
	} else {
		var err error
		if ts, err = optionalNum(p, 0, "timestamp", 63); err != nil {
			return nil, err
		}
	}
	if ts != nil {
		if ts.BitLen() > 63 {
			return nil, p.ArgError(0, "timestamp", "%v is too large", ts)
		}
		if err := a.dev.MineAt(ctx, ts.Uint64()); err != nil {
			return nil, devError(err)
		}
		blocks--
	}
	if blocks > 0 {
		if _, err := a.dev.Mine(ctx, blocks, 0); err != nil {
			return nil, devError(err)
		}
	}
	return "0x0", nil
}

// maxTimeJump bounds evm_increaseTime (about 10,000 years), so that the
// clock offset cannot overflow.
const maxTimeJump = 10_000 * 365 * 24 * 3600

func (a *API) evmIncreaseTime(_ context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(1); err != nil {
		return nil, err
	}
	secs, err := decodeNum(p, 0, "seconds", 63)
	if err != nil {
		return nil, err
	}
	if secs.Uint64() > maxTimeJump {
		return nil, p.ArgError(0, "seconds", "%v seconds is more than %d", secs, maxTimeJump)
	}
	total, err := a.dev.IncreaseTime(time.Duration(secs.Uint64()) * time.Second)
	if err != nil {
		return nil, devError(err)
	}
	return int64(total / time.Second), nil
}

func (a *API) evmSetNextBlockTimestamp(_ context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(1); err != nil {
		return nil, err
	}
	ts, err := decodeNum(p, 0, "timestamp", 40) // year 36812
	if err != nil {
		return nil, err
	}
	if err := a.dev.SetNextBlockTimestamp(ts.Uint64()); err != nil {
		return nil, devError(err)
	}
	return nil, nil
}

func (a *API) devImpersonate(_ context.Context, p rpc.Params) (any, error) {
	addr, err := addrArgs(p, 1)
	if err != nil {
		return nil, err
	}
	a.imp.mu.Lock()
	a.imp.addrs[addr] = struct{}{}
	a.imp.mu.Unlock()
	return nil, nil
}

func (a *API) devStopImpersonating(_ context.Context, p rpc.Params) (any, error) {
	addr, err := addrArgs(p, 1)
	if err != nil {
		return nil, err
	}
	a.imp.mu.Lock()
	delete(a.imp.addrs, addr)
	a.imp.mu.Unlock()
	return nil, nil
}

func (a *API) devAutoImpersonate(_ context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(1); err != nil {
		return nil, err
	}
	var on bool
	if err := p.Decode(0, "enabled", &on); err != nil {
		return nil, err
	}
	a.imp.mu.Lock()
	a.imp.auto = on
	a.imp.mu.Unlock()
	return nil, nil
}

func (a *API) evmSnapshot(_ context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(0); err != nil {
		return nil, err
	}
	id, err := a.dev.Snapshot()
	if err != nil {
		return nil, devError(err)
	}
	return hexutil.Uint64(id), nil
}

func (a *API) evmRevert(_ context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(1); err != nil {
		return nil, err
	}
	id, err := decodeNum(p, 0, "snapshot id", 64)
	if err != nil {
		return nil, err
	}
	ok, err := a.dev.Revert(id.Uint64())
	if err != nil {
		return nil, devError(err)
	}
	return ok, nil
}

// sendImpersonated is eth_sendTransaction from an impersonated account
// that is not one of the node's: the transaction is filled in like any
// (fillTransaction), given the marker signature of pending.Impersonate and
// executed at once into the pending block. handled is false when the
// sender is not impersonated (or is a dev account, which signs normally).
func (a *API) sendImpersonated(ctx context.Context, p rpc.Params) (hash common.Hash, handled bool, err error) {
	if a.dev == nil || p.Len() != 1 {
		return common.Hash{}, false, nil
	}
	var args CallArgs
	if err := p.Decode(0, "transaction", &args); err != nil || args.From == nil {
		return common.Hash{}, false, nil // signTransaction reports it
	}
	if _, own := a.accounts[*args.From]; own || !a.imp.has(*args.From) {
		return common.Hash{}, false, nil
	}
	inner, err := a.fillTransaction(ctx, args)
	if err != nil {
		return common.Hash{}, true, err
	}
	tx, err := pending.Impersonate(types.LatestSigner(a.exec.Config()), types.NewTx(inner), *args.From)
	if err != nil {
		return common.Hash{}, true, err
	}
	if _, err := a.dev.SendImpersonated(tx); err != nil {
		if errors.Is(err, sequencer.ErrDev) {
			return common.Hash{}, true, rpc.ErrServer(strings.TrimPrefix(err.Error(), sequencer.ErrDev.Error()+": "))
		}
		return common.Hash{}, true, rpc.ErrServer(err.Error())
	}
	return tx.Hash(), true, nil
}

func (a *API) devSetAutomine(_ context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(1); err != nil {
		return nil, err
	}
	var on bool
	if err := p.Decode(0, "enabled", &on); err != nil {
		return nil, err
	}
	if err := a.dev.SetAutomine(on); err != nil {
		return nil, devError(err)
	}
	return nil, nil
}

func (a *API) devGetAutomine(_ context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(0); err != nil {
		return nil, err
	}
	return a.dev.Automine(), nil
}

// maxMiningInterval bounds evm_setIntervalMining (one day).
const maxMiningInterval = 24 * time.Hour

// devSetIntervalMining: seconds, as anvil (Hardhat takes milliseconds).
func (a *API) devSetIntervalMining(_ context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(1); err != nil {
		return nil, err
	}
	secs, err := decodeNum(p, 0, "interval", 32)
	if err != nil {
		return nil, err
	}
	d := time.Duration(secs.Uint64()) * time.Second
	if d > maxMiningInterval {
		return nil, p.ArgError(0, "interval", "%d seconds: at most %d", secs.Uint64(), int(maxMiningInterval/time.Second))
	}
	if err := a.dev.SetIntervalMining(d); err != nil {
		return nil, devError(err)
	}
	return nil, nil
}

// devReset: anvil_reset without forking options (tipnode does not fork).
func (a *API) devReset(_ context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(1); err != nil {
		return nil, err
	}
	if p.Present(0) {
		var opts map[string]json.RawMessage
		if err := p.Decode(0, "options", &opts); err != nil {
			return nil, err
		}
		if len(opts) > 0 {
			return nil, p.ArgError(0, "options", "forking options are not supported: anvil_reset takes no options on tipnode dev (it resets to genesis, or a fork to its fork block; start tipnode dev --fork URL@BLOCK for another fork)")
		}
	}
	if err := a.dev.Reset(); err != nil {
		return nil, devError(err)
	}
	return nil, nil
}

// DefaultDepositGas is the gas limit of a tipnode_sendDeposit deposit that
// names none.
const DefaultDepositGas = 1_000_000

// depositArgs are tipnode_sendDeposit's parameters: an L1→L2 deposit as
// the OptimismPortal's depositTransaction makes it (to absent: a contract
// creation; mint: ether credited to from on L2 before the call).
type depositArgs struct {
	From  *common.Address `json:"from"`
	To    *common.Address `json:"to"`
	Mint  *hexutil.Big    `json:"mint"`
	Value *hexutil.Big    `json:"value"`
	Gas   *hexutil.Uint64 `json:"gas"`
	Data  *hexutil.Bytes  `json:"data"`
	Input *hexutil.Bytes  `json:"input"`
}

// devSendDeposit is tipnode_sendDeposit: it injects an L1→L2 deposit into
// the pending block's deposits (or the next block's, when the pending one
// already holds sequenced transactions) and returns its hash; its receipt
// is readable once it is pre-confirmed.
func (a *API) devSendDeposit(_ context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(1); err != nil {
		return nil, err
	}
	var args depositArgs
	if err := p.Decode(0, "deposit", &args); err != nil {
		return nil, err
	}
	if args.From == nil {
		return nil, p.ArgError(0, "deposit", "from is required")
	}
	f := chaintypes.DepositFields{From: *args.From, To: args.To, Gas: DefaultDepositGas}
	if args.Mint != nil {
		f.Mint = args.Mint.ToInt()
	}
	if args.Value != nil {
		f.Value = args.Value.ToInt()
	}
	if args.Gas != nil {
		f.Gas = uint64(*args.Gas)
	}
	switch {
	case args.Data != nil && args.Input != nil && string(*args.Data) != string(*args.Input):
		return nil, p.ArgError(0, "deposit", "data and input differ")
	case args.Input != nil:
		f.Data = *args.Input
	case args.Data != nil:
		f.Data = *args.Data
	}
	dep, _, err := a.dev.SendDeposit(f)
	if err != nil {
		return nil, devError(err)
	}
	return dep.Hash(), nil
}
