package replica

import (
	"bytes"
	"fmt"

	"github.com/ethereum/go-ethereum/common"

	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/pending/stream"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// crossCheck compares what a message's metadata claims (rollup-boost and
// op-rbuilder send the receipts of its transactions and the balances of
// the accounts they touched) with the replica's own execution of it, snap
// being the snapshot just published for it and the builder's state the
// state after it. It runs after the snapshot is published (it never delays
// a read) and serves nothing: every disagreement is counted
// (tipnode_replica_metadata_mismatches_total by field) and logged; the
// replica keeps serving its own execution, which the message's receipts
// root and gas used verified.
func (d *Driver) crossCheck(e *entry, snap *pending.Snapshot, m *stream.Metadata) {
	if m == nil || (m.Receipts == nil && m.NewAccountBalances == nil) {
		return
	}
	d.metrics.metadataChecked()
	log := d.log.With().Uint64("block", e.number).Uint64("index", e.index).Logger()
	receipts, err := m.ParseReceipts()
	if err != nil {
		d.metrics.metadataMismatch("malformed")
		log.Warn().Err(err).Msg("pre-confirmation metadata does not parse (ignored)")
		return
	}
	for hash, mr := range receipts {
		_, r, _, ok := snap.Transaction(hash)
		if !ok {
			d.metrics.metadataMismatch("receipt_unknown")
			log.Warn().Str("tx", hash.Hex()).Msg("metadata holds a receipt for a transaction the block does not have")
			continue
		}
		if field, detail := compareReceipt(mr, r); field != "" {
			d.metrics.metadataMismatch(field)
			log.Warn().Str("tx", hash.Hex()).Str("field", field).Str("detail", detail).
				Msg("metadata receipt differs from the replica's execution (the replica's is served)")
		}
	}
	balances, err := m.ParseBalances()
	if err != nil {
		d.metrics.metadataMismatch("malformed")
		log.Warn().Err(err).Msg("pre-confirmation metadata does not parse (ignored)")
		return
	}
	for addr, want := range balances {
		got, err := d.b.Balance(addr)
		if err != nil {
			log.Warn().Err(err).Msg("cross-checking balances: state read failed")
			return
		}
		if got.ToBig().Cmp(want) != 0 {
			d.metrics.metadataMismatch("balance")
			log.Warn().Str("account", addr.Hex()).Stringer("metadata", want).Stringer("replica", got).
				Msg("metadata balance differs from the replica's execution (the replica's is served)")
		}
	}
}

// compareReceipt returns the first field (metric label) where the
// metadata's receipt differs from ours, and the values; fields the
// metadata left out are not compared.
func compareReceipt(mr *stream.MetaReceipt, r *chaintypes.Receipt) (field, detail string) {
	differ := func(f string, want, got any) (string, string) {
		return f, fmt.Sprintf("metadata %v, replica %v", want, got)
	}
	switch {
	case mr.Type != r.Type:
		return differ("type", mr.Type, r.Type)
	case mr.Status != nil && *mr.Status != r.Status:
		return differ("status", *mr.Status, r.Status)
	case mr.CumulativeGasUsed != nil && *mr.CumulativeGasUsed != r.CumulativeGasUsed:
		return differ("cumulative_gas_used", *mr.CumulativeGasUsed, r.CumulativeGasUsed)
	}
	var nonce, version *uint64
	if r.OP != nil {
		nonce, version = r.OP.DepositNonce, r.OP.DepositReceiptVersion
	}
	if mr.DepositNonce != nil && (nonce == nil || *nonce != *mr.DepositNonce) {
		return differ("deposit_nonce", *mr.DepositNonce, ptrString(nonce))
	}
	if mr.DepositReceiptVersion != nil && (version == nil || *version != *mr.DepositReceiptVersion) {
		return differ("deposit_receipt_version", *mr.DepositReceiptVersion, ptrString(version))
	}
	if mr.Logs == nil {
		return "", ""
	}
	if len(mr.Logs) != len(r.Logs) {
		return differ("logs", fmt.Sprintf("%d logs", len(mr.Logs)), fmt.Sprintf("%d logs", len(r.Logs)))
	}
	for i, ml := range mr.Logs {
		l := r.Logs[i]
		if ml.Address != l.Address || !bytes.Equal(ml.Data, l.Data) || !equalTopics(ml.Topics, l.Topics) {
			return differ("logs", fmt.Sprintf("log %d %s", i, ml.Address.Hex()), fmt.Sprintf("log %d %s", i, l.Address.Hex()))
		}
	}
	return "", ""
}

func equalTopics(a, b []common.Hash) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func ptrString(p *uint64) string {
	if p == nil {
		return "absent"
	}
	return fmt.Sprint(*p)
}
