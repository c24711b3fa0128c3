package store

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"
)

// PendingJournal is the durable record of the open pending block: the
// header its driver chose and the transactions pre-confirmed in it, in
// block order. Replaying the transactions on the header's parent state
// rebuilds the same pending block (same receipts).
type PendingJournal struct {
	Header *types.Header
	Txs    []*types.Transaction
}

// AppendPending durably records header as the open pending block and txs as
// its pre-confirmed transactions first, first+1, ... (first must be the
// number already recorded for that block). The write is fsynced whatever
// Config.SyncWrites says: a pre-confirmation is published only after it
// returns. A journal of another block number is replaced.
func (db *DB) AppendPending(header *types.Header, first int, txs []*types.Transaction) error {
	num := header.Number.Uint64()
	fail := func(err error) error { return fmt.Errorf("journal pending block %d: %w", num, err) }
	done, err := db.beginTypedWrite()
	if err != nil {
		return fail(err)
	}
	defer done()
	b := db.pdb.NewBatch()
	if first == 0 {
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
		tx := new(types.Transaction)
		if err := tx.UnmarshalBinary(it.Value()); err != nil {
			return nil, errors.Join(fmt.Errorf("%w: pending transaction %d: %v", ErrCorrupt, len(j.Txs), err), it.Close())
		}
		j.Txs = append(j.Txs, tx)
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return nil, err
	}
	return j, nil
}
