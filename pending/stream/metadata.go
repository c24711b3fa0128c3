package stream

import (
	"encoding/json"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
)

// MetaReceipt is one receipt of a message's metadata, as rollup-boost and
// op-rbuilder send it: what a replica can compare with its own execution.
// Fields the producer left out are nil (a trimmed or older producer may
// send only some of them); a log's absent topics or data read as empty.
type MetaReceipt struct {
	// Type is the transaction type (0 legacy, 1, 2, 3, 4, 0x7e deposit).
	Type uint8
	// Status is 1 (success) or 0; nil when absent.
	Status *uint64
	// CumulativeGasUsed is the block's gas used through this transaction.
	CumulativeGasUsed *uint64
	// Logs are nil when absent, empty when the receipt has none.
	Logs []MetaLog
	// DepositNonce and DepositReceiptVersion: deposits from Regolith /
	// Canyon.
	DepositNonce          *uint64
	DepositReceiptVersion *uint64
}

// MetaLog is a log of a MetaReceipt.
type MetaLog struct {
	Address common.Address `json:"address"`
	Topics  []common.Hash  `json:"topics"`
	Data    hexutil.Bytes  `json:"data"`
}

// receiptTags are op-alloy's externally tagged receipt variants (the shape
// older rollup-boost versions emit: {"Eip1559": {...}}).
var receiptTags = map[string]uint8{
	"Legacy": 0, "Eip2930": 1, "Eip1559": 2, "Eip4844": 3, "Eip7702": 4, "Deposit": 0x7e,
}

// wireReceipt is the body of a receipt in either shape.
type wireReceipt struct {
	Type                  *hexutil.Uint64 `json:"type"`
	Status                *hexutil.Uint64 `json:"status"`
	CumulativeGasUsed     *hexutil.Uint64 `json:"cumulativeGasUsed"`
	Logs                  *[]MetaLog      `json:"logs"`
	DepositNonce          *hexutil.Uint64 `json:"depositNonce"`
	DepositReceiptVersion *hexutil.Uint64 `json:"depositReceiptVersion"`
}

// ParseReceipts parses metadata.receipts: an object from transaction hash
// to receipt, the receipt in op-alloy's JSON shape, either internally
// tagged ({"type":"0x7e","status":"0x1","cumulativeGasUsed":...,"logs":[...],
// "depositNonce":...}, current producers) or externally tagged
// ({"Deposit":{"status":...}}, older rollup-boost). Absent metadata gives a
// nil map. Every failure wraps ErrMetadata.
func (m *Metadata) ParseReceipts() (map[common.Hash]*MetaReceipt, error) {
	if isNull(m.Receipts) {
		return nil, nil
	}
	var raw map[common.Hash]json.RawMessage
	if err := json.Unmarshal(m.Receipts, &raw); err != nil {
		return nil, fmt.Errorf("%w: receipts: %v", ErrMetadata, err)
	}
	out := make(map[common.Hash]*MetaReceipt, len(raw))
	for hash, body := range raw {
		r, err := parseReceipt(body)
		if err != nil {
			return nil, fmt.Errorf("%w: receipt of %s: %v", ErrMetadata, hash.Hex(), err)
		}
		out[hash] = r
	}
	return out, nil
}

func parseReceipt(body json.RawMessage) (*MetaReceipt, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(body, &keys); err != nil {
		return nil, err
	}
	var (
		w   wireReceipt
		typ uint8
	)
	if len(keys) == 1 {
		for k, inner := range keys {
			if t, ok := receiptTags[k]; ok {
				typ = t
				if err := json.Unmarshal(inner, &w); err != nil {
					return nil, fmt.Errorf("%s: %v", k, err)
				}
				return w.receipt(typ), nil
			}
		}
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, err
	}
	if w.Type == nil {
		return nil, fmt.Errorf("neither a \"type\" field nor one of the variants Legacy, Eip2930, Eip1559, Eip4844, Eip7702, Deposit")
	}
	if *w.Type > 0x7f {
		return nil, fmt.Errorf("type %d is not a transaction type", uint64(*w.Type))
	}
	return w.receipt(uint8(*w.Type)), nil
}

func u64(v *hexutil.Uint64) *uint64 {
	if v == nil {
		return nil
	}
	x := uint64(*v)
	return &x
}

func (w *wireReceipt) receipt(typ uint8) *MetaReceipt {
	r := &MetaReceipt{
		Type: typ, Status: u64(w.Status), CumulativeGasUsed: u64(w.CumulativeGasUsed),
		DepositNonce: u64(w.DepositNonce), DepositReceiptVersion: u64(w.DepositReceiptVersion),
	}
	if w.Logs != nil {
		r.Logs = *w.Logs
		if r.Logs == nil {
			r.Logs = []MetaLog{}
		}
		for i := range r.Logs { // absent topics or data read as empty
			if r.Logs[i].Topics == nil {
				r.Logs[i].Topics = []common.Hash{}
			}
			if r.Logs[i].Data == nil {
				r.Logs[i].Data = hexutil.Bytes{}
			}
		}
	}
	return r
}

// ParseBalances parses metadata.new_account_balances: an object from
// address to balance (a hex quantity). Absent metadata gives a nil map.
// Every failure wraps ErrMetadata.
func (m *Metadata) ParseBalances() (map[common.Address]*big.Int, error) {
	if isNull(m.NewAccountBalances) {
		return nil, nil
	}
	var raw map[common.Address]*hexutil.Big
	if err := json.Unmarshal(m.NewAccountBalances, &raw); err != nil {
		return nil, fmt.Errorf("%w: new_account_balances: %v", ErrMetadata, err)
	}
	out := make(map[common.Address]*big.Int, len(raw))
	for a, v := range raw {
		if v == nil {
			return nil, fmt.Errorf("%w: new_account_balances: %s is null", ErrMetadata, a.Hex())
		}
		out[a] = v.ToInt()
	}
	return out, nil
}
