package chain

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tipnode/tipnode/chain/op"
	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// The block producer's seam: what a local producer (pending's Sequencer)
// asks of the chain's rules when it builds blocks itself, so that the
// producer stays chain-agnostic. On an L1 chain these methods change
// nothing; on an OP chain they apply the OP rules:
//   - PrepareHeader: the OP base fee (op.CalcBaseFee), the Holocene/Jovian
//     extraData (op.ExtraDataFromAttributes), blobGasUsed 0 and
//     excessBlobGas 0 (the DA footprint is set as transactions run);
//   - OpeningTxs: the L1-info deposit every OP block opens with, built from
//     the producer's synthetic L1 (op.SyntheticL1) and the L1 origin the
//     parent's L1Block predeploy holds;
//   - SealHeader: from Isthmus the withdrawals root is the
//     L2ToL1MessagePasser's storage root, computed from the block's state;
//   - ExtraTxCost: the L1 data fee and operator fee a transaction must be
//     able to pay beyond gas * price + value (a pool refuses it otherwise).

// ProducerConfig is what a local block producer chooses that the chain's
// rules turn into block content beyond its header template. An L1 chain
// ignores it. Start from DefaultProducerConfig.
type ProducerConfig struct {
	// L1 is the synthetic L1 chain an OP chain's blocks build on (the
	// L1-info deposit's fee parameters and origin).
	L1 op.SyntheticL1
	// MinBaseFee is the Jovian minimum base fee (wei) each OP header's
	// extraData carries for its child. Default 0.
	MinBaseFee uint64
	// EIP1559Denominator and EIP1559Elasticity are the Holocene
	// eip1559Params each OP header's extraData carries for its child.
	// Both zero (the default): the chain's constants. An OP fork (tipnode
	// dev --fork) continues its upstream head's.
	EIP1559Denominator, EIP1559Elasticity uint32
}

// DefaultProducerConfig returns the documented defaults.
func DefaultProducerConfig() ProducerConfig {
	return ProducerConfig{L1: op.DefaultSyntheticL1()}
}

// Validate checks the configuration.
func (c ProducerConfig) Validate() error {
	if (c.EIP1559Denominator == 0) != (c.EIP1559Elasticity == 0) {
		return fmt.Errorf("%w: EIP-1559 denominator %d and elasticity %d: both zero (the chain's constants) or both set", op.ErrConfig, c.EIP1559Denominator, c.EIP1559Elasticity)
	}
	return c.L1.Validate()
}

// PrepareHeader completes tmpl, the header template of the block after
// parent that a local producer chose (number, time, coinbase, gas limit,
// prev-randao, parent beacon root set as on L1), with what the chain's
// rules fix differently from L1. Nothing changes on an L1 chain.
func (e *Executor) PrepareHeader(tmpl, parent *types.Header, c ProducerConfig) error {
	if e.op == nil {
		return nil
	}
	cfg, t := e.op.cfg, tmpl.Time
	fee, err := op.CalcBaseFee(cfg, parent, t)
	if err != nil {
		return err
	}
	tmpl.BaseFee = fee
	var params []byte
	if cfg.IsHolocene(t) {
		params = make([]byte, 8) // zero: the chain's constants
		binary.BigEndian.PutUint32(params[0:4], c.EIP1559Denominator)
		binary.BigEndian.PutUint32(params[4:8], c.EIP1559Elasticity)
	}
	var minBaseFee *uint64
	if cfg.IsJovian(t) {
		minBaseFee = &c.MinBaseFee
	}
	if tmpl.Extra, err = op.ExtraDataFromAttributes(cfg, t, params, minBaseFee); err != nil {
		return err
	}
	tmpl.BlobGasUsed, tmpl.ExcessBlobGas = op.BlobGasFields(cfg, t, 0)
	return nil
}

// OpeningTxs returns the transactions the block with header h opens with
// before any other (OP: the L1-info deposit), given its parent's header and
// post-state. None on an L1 chain.
func (e *Executor) OpeningTxs(h, parent *types.Header, parentState Backend, c ProducerConfig) (chaintypes.Txs, error) {
	if e.op == nil {
		return nil, nil
	}
	var readErr error
	read := func(slot common.Hash) common.Hash {
		v, err := parentState.Storage(op.L1BlockAddr, slot)
		if err != nil && readErr == nil {
			readErr = err
		}
		return v
	}
	prev := op.ReadOrigin(read)
	if readErr != nil {
		return nil, fmt.Errorf("%w: L1Block predeploy: %v", ErrStateRead, readErr)
	}
	origin := c.L1.NextOrigin(prev, h.Time)
	info := c.L1.Info(origin, op.L1InfoVersionAt(e.op.cfg, h.Time, parent.Time))
	data, err := info.Marshal()
	if err != nil {
		return nil, err
	}
	to := op.L1BlockAddr
	dep := chaintypes.NewDeposit(chaintypes.DepositFields{
		SourceHash: op.L1InfoDepositSourceHash(origin.Hash, origin.SequenceNumber),
		From:       op.L1InfoDepositor, To: &to, Gas: op.SystemTxGas,
		IsSystemTx: op.SystemTxAllowed(e.op.cfg, h.Time), Data: data,
	})
	return chaintypes.Txs{dep}, nil
}

// AcceptsSequencedTxs reports whether the block with header h on parent
// may hold transactions other than its opening ones. An OP fork's
// activation block (the fork active at h's time and not at its parent's)
// holds deposits only, as OP sequencers build it (the Jovian one must:
// its DA footprint cannot count other transactions). Always true on L1.
func (e *Executor) AcceptsSequencedTxs(h, parent *types.Header) bool {
	return e.op == nil || e.op.cfg.Fork(h.Time) == e.op.cfg.Fork(parent.Time)
}

// IsOpeningTx reports whether tx is one OpeningTxs makes (OP: the L1-info
// deposit), which a producer rebuilds rather than replays when it re-times
// a block.
func (e *Executor) IsOpeningTx(tx chaintypes.Tx) bool {
	d, ok := tx.(*chaintypes.Deposit)
	return ok && e.op != nil && d.From() == op.L1InfoDepositor && d.To() != nil && *d.To() == op.L1BlockAddr
}

// SealHeader sets the header fields of h known only once its block has run
// on state (after BlockProcessor.Finish): its state root, the root of upd
// (the block's state trie update, asked with TrieWatch(h)); and from
// Isthmus, an OP block's withdrawals root, the L2ToL1MessagePasser's
// storage root, from upd. A nil upd (a store that keeps no trie) leaves
// the state root zero and computes the withdrawals root from the message
// passer's whole storage, which then needs a state whose backend can
// enumerate storage (StorageIterator); on a fork (ForFork) it is zero too.
func (e *Executor) SealHeader(h *types.Header, state *StateDB, upd *store.TrieUpdate) error {
	if upd != nil {
		h.Root = upd.Root
	}
	if e.op == nil || !e.op.cfg.IsIsthmus(h.Time) {
		return nil
	}
	if e.forked && upd == nil {
		h.WithdrawalsHash = new(common.Hash)
		return nil
	}
	if upd != nil {
		root, ok := upd.StorageRoot(op.L2ToL1MessagePasser)
		if !ok {
			return fmt.Errorf("withdrawals root of block %d: the trie update does not watch the message passer", h.Number)
		}
		h.WithdrawalsHash = &root
		return nil
	}
	root, err := state.StorageRoot(op.L2ToL1MessagePasser)
	if err != nil {
		return fmt.Errorf("withdrawals root of block %d: %w", h.Number, err)
	}
	h.WithdrawalsHash = &root
	return nil
}

// ExtraTxCost is what tx must be able to pay beyond gas limit * fee cap +
// value in the block with header h whose state (after its deposits) state
// reads: on an OP chain the L1 data fee and the operator fee for its whole
// gas limit; zero on an L1 chain.
func (e *Executor) ExtraTxCost(tx *types.Transaction, h *types.Header, state Backend) (*big.Int, error) {
	if e.op == nil {
		return new(big.Int), nil
	}
	if tx.Type() == types.BlobTxType {
		return nil, errors.New("blob transactions do not exist on OP Stack chains")
	}
	var readErr error
	fp := op.ReadFeeParams(e.op.cfg, h.Time, func(slot common.Hash) common.Hash {
		v, err := state.Storage(op.L1BlockAddr, slot)
		if err != nil && readErr == nil {
			readErr = err
		}
		return v
	})
	if readErr != nil {
		return nil, fmt.Errorf("%w: L1Block predeploy: %v", ErrStateRead, readErr)
	}
	enc, err := tx.MarshalBinary()
	if err != nil {
		return nil, err
	}
	l1Fee, _ := fp.L1Cost(op.NewCostData(enc))
	return l1Fee.Add(l1Fee, fp.OperatorFee(tx.Gas())), nil
}

// StorageIterator is a Backend that can enumerate one account's storage
// (the store's state readers and pending snapshots over them).
type StorageIterator interface {
	ForEachStorage(addr common.Address, fn func(slot, value common.Hash) error) error
}

// StorageRoot is addr's storage root in the state so far (the backend plus
// every finalised change). Its cost is proportional to addr's storage. The
// backend must be a StorageIterator (ErrNoStateRoot otherwise).
func (s *StateDB) StorageRoot(addr common.Address) (common.Hash, error) {
	base, ok := s.backend.(StorageIterator)
	if !ok {
		return common.Hash{}, fmt.Errorf("%w: backend cannot enumerate storage", ErrNoStateRoot)
	}
	root, err := storageRoot(overlayBackend{s: s, base: iterOnly{base}}, addr)
	if err != nil {
		return common.Hash{}, err
	}
	if err := s.Error(); err != nil {
		return common.Hash{}, fmt.Errorf("%w: %v", ErrStateRead, err)
	}
	return root, nil
}

// iterOnly adapts a StorageIterator to IterableBackend for overlayBackend
// (only ForEachStorage is called).
type iterOnly struct{ StorageIterator }

func (iterOnly) Account(common.Address) (*store.Account, error) {
	panic("iterOnly enumerates storage only")
}
func (iterOnly) Storage(common.Address, common.Hash) (common.Hash, error) {
	panic("iterOnly enumerates storage only")
}
func (iterOnly) Code(common.Hash) ([]byte, error) { panic("iterOnly enumerates storage only") }
func (iterOnly) ForEachAccount(func(common.Address, *store.Account) error) error {
	panic("iterOnly enumerates storage only")
}
