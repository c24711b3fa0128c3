package store

import (
	"github.com/tipnode/tipnode/store/chaintypes"

	"bytes"
	"errors"
	"fmt"
	"math/big"

	"github.com/cockroachdb/pebble/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"
)

// PendingJournal is the durable record of the open pending block: the
// header its driver chose and the transactions pre-confirmed in it, in
// block order. Replaying the transactions on the header's parent state
// rebuilds the same pending block (same receipts).
type PendingJournal struct {
	Header *types.Header
	Txs    chaintypes.Txs
	// Overrides are the dev-chain state changes (tipnode dev's
	// anvil_setBalance & co.) in the order they were applied; each one
	// applies after the first At transactions. Empty on other nodes.
	Overrides []PendingOverride
}

// Kinds of PendingOverride.
const (
	OverrideBalance uint8 = iota + 1 // Balance
	OverrideNonce                    // Nonce
	OverrideCode                     // Code (empty: remove the code)
	OverrideStorage                  // Slot = Value
)

// PendingOverride is one dev-chain state change of the open pending block:
// applied to its state after the block's first At transactions, written
// with the block's state diff when it is sealed. Kind says which of the
// value fields applies.
type PendingOverride struct {
	At      uint64
	Kind    uint8
	Address common.Address
	Balance *big.Int
	Nonce   uint64
	Code    []byte
	Slot    common.Hash
	Value   common.Hash
}

// PendingAppend is one durable addition to the pending journal (see
// AppendPendingEntries).
type PendingAppend struct {
	// Header is the open pending block's header.
	Header *types.Header
	// Fresh replaces whatever journal there is with this block's: the
	// header is written and every earlier entry dropped. Set it with the
	// block's first journal write (and when the driver rebuilt the block).
	Fresh bool
	// FirstTx is the block index of Txs[0]: the number of transactions
	// already journaled for this block.
	FirstTx int
	Txs     chaintypes.Txs
	// FirstOverride is the sequence number of Overrides[0]: the number of
	// overrides already journaled for this block.
	FirstOverride int
	Overrides     []PendingOverride
}

// AppendPending durably records header as the open pending block and txs as
// its pre-confirmed transactions first, first+1, ... (first must be the
// number already recorded for that block). The write is fsynced whatever
// Config.SyncWrites says: a pre-confirmation is published only after it
// returns. A journal of another block number is replaced.
func (db *DB) AppendPending(header *types.Header, first int, txs chaintypes.Txs) error {
	return db.AppendPendingEntries(PendingAppend{Header: header, Fresh: first == 0, FirstTx: first, Txs: txs})
}

// AppendPendingEntries durably records a.Header as the open pending block
// (a.Fresh: replacing any journal there was) and adds a's transactions and
// overrides at the positions it names, in one fsynced batch whatever
// Config.SyncWrites says.
func (db *DB) AppendPendingEntries(a PendingAppend) error {
	header, first, txs := a.Header, a.FirstTx, a.Txs
	num := header.Number.Uint64()
	fail := func(err error) error { return fmt.Errorf("journal pending block %d: %w", num, err) }
	done, err := db.beginTypedWrite()
	if err != nil {
		return fail(err)
	}
	defer done()
	b := db.pdb.NewBatch()
	if a.Fresh {
		enc, err := rlp.EncodeToBytes(header)
		if err == nil {
			err = stageClearPending(b)
		}
		if err == nil {
			err = b.Set(pendingHdrKey(num), enc, nil)
		}
		if err != nil {
			return fail(errors.Join(err, b.Close()))
		}
	}
	for i, tx := range txs {
		enc, err := tx.MarshalBinary()
		if err == nil {
			err = b.Set(pendingTxKey(num, uint64(first+i)), enc, nil)
		}
		if err != nil {
			return fail(errors.Join(err, b.Close()))
		}
	}
	for i, o := range a.Overrides {
		enc, err := rlp.EncodeToBytes(&o)
		if err == nil {
			err = b.Set(pendingOvrKey(num, uint64(a.FirstOverride+i)), enc, nil)
		}
		if err != nil {
			return fail(errors.Join(err, b.Close()))
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fail(errors.Join(err, b.Close()))
	}
	return b.Close()
}

// stageClearPending deletes the whole pending journal in b.
func stageClearPending(b *pebble.Batch) error {
	return errors.Join(
		b.DeleteRange([]byte{prefixPendingHdr}, []byte{prefixPendingHdr + 1}, nil),
		b.DeleteRange([]byte{prefixPendingTx}, []byte{prefixPendingTx + 1}, nil),
		b.DeleteRange([]byte{prefixPendingOvr}, []byte{prefixPendingOvr + 1}, nil),
	)
}

// ClearPending deletes the pending journal (a driver that discards its
// pending block).
func (db *DB) ClearPending() error {
	done, err := db.beginTypedWrite()
	if err != nil {
		return err
	}
	defer done()
	b := db.pdb.NewBatch()
	if err := stageClearPending(b); err != nil {
		return errors.Join(err, b.Close())
	}
	return db.commit(b, "clear pending journal")
}

// ReadPending returns the pending journal, or nil when there is none.
func (db *DB) ReadPending() (*PendingJournal, error) {
	if err := db.acquire(); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixPendingHdr}, UpperBound: []byte{prefixPendingHdr + 1}})
	if err != nil {
		return nil, err
	}
	var j *PendingJournal
	for it.First(); it.Valid(); it.Next() {
		if j != nil {
			return nil, errors.Join(fmt.Errorf("%w: more than one pending header", ErrCorrupt), it.Close())
		}
		h := new(types.Header)
		if err := rlp.DecodeBytes(it.Value(), h); err != nil {
			return nil, errors.Join(fmt.Errorf("%w: pending header: %v", ErrCorrupt, err), it.Close())
		}
		j = &PendingJournal{Header: h}
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return nil, err
	}
	if j == nil {
		return nil, nil
	}
	prefix := pendingTxKey(j.Header.Number.Uint64(), 0)[:9]
	it, err = db.pdb.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, err
	}
	for it.First(); it.Valid(); it.Next() {
		want := pendingTxKey(j.Header.Number.Uint64(), uint64(len(j.Txs)))
		if !bytes.Equal(it.Key(), want) {
			return nil, errors.Join(fmt.Errorf("%w: pending transaction %d missing", ErrCorrupt, len(j.Txs)), it.Close())
		}
		tx, err := chaintypes.DecodeTx(it.Value())
		if err != nil {
			return nil, errors.Join(fmt.Errorf("%w: pending transaction %d: %v", ErrCorrupt, len(j.Txs), err), it.Close())
		}
		j.Txs = append(j.Txs, tx)
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return nil, err
	}
	prefix = pendingOvrKey(j.Header.Number.Uint64(), 0)[:9]
	it, err = db.pdb.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, err
	}
	for it.First(); it.Valid(); it.Next() {
		want := pendingOvrKey(j.Header.Number.Uint64(), uint64(len(j.Overrides)))
		if !bytes.Equal(it.Key(), want) {
			return nil, errors.Join(fmt.Errorf("%w: pending override %d missing", ErrCorrupt, len(j.Overrides)), it.Close())
		}
		var o PendingOverride
		if err := rlp.DecodeBytes(it.Value(), &o); err != nil {
			return nil, errors.Join(fmt.Errorf("%w: pending override %d: %v", ErrCorrupt, len(j.Overrides), err), it.Close())
		}
		if o.At > uint64(len(j.Txs)) || (len(j.Overrides) > 0 && o.At < j.Overrides[len(j.Overrides)-1].At) {
			return nil, errors.Join(fmt.Errorf("%w: pending override %d at transaction %d out of order", ErrCorrupt, len(j.Overrides), o.At), it.Close())
		}
		j.Overrides = append(j.Overrides, o)
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return nil, err
	}
	return j, nil
}
