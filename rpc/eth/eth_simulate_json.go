package eth

import (
	"encoding/hex"
	"encoding/json"
	"math/big"
	"strconv"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/store/chaintypes"
)

// JSON encoding of eth_simulateV1's result without reflection.
//
// Encoding the result through maps and encoding/json took about a fifth of
// a simulate request's CPU (map building, reflection over every field, a
// string per hex value). simResult writes the same bytes directly: each
// block is the object marshalBlock builds (a map, so its keys come out
// sorted) plus "calls", every value encoded as its go-ethereum type's
// MarshalText/MarshalJSON does. Rare members (full transaction objects,
// non-empty withdrawals, error messages) still go through encoding/json.
// The handler returns the bytes as an rpc.RawResult, so encoding/json does
// not scan them once more. TestSimulateJSONMatchesMaps compares the two
// encodings on every conformance fixture of eth_simulateV1.

// simResult is eth_simulateV1's result: one entry per simulated block.
type simResult []*simBlockResult

// simBlockResult is one simulated block: the block, its hash and header
// (the block's own copy, read without copying again), its calls and their
// senders (calls are unsigned: full transaction objects take the sender
// from the call).
type simBlockResult struct {
	block   *chaintypes.Block
	header  *types.Header
	hash    common.Hash
	calls   []simCallResult
	senders []common.Address
	fullTx  bool
	config  *params.ChainConfig
}

// encode returns the blocks as a JSON array: compact, valid JSON, sent as
// an rpc.RawResult.
func (r simResult) encode() ([]byte, error) {
	size := 2
	for _, b := range r {
		size += 2048 + 64*len(b.block.Transactions()) // header, hashes
		for i := range b.calls {
			size += 256 + 768*len(b.calls[i].Logs)
		}
	}
	buf := make([]byte, 0, size)
	buf = append(buf, '[')
	for i, b := range r {
		if i > 0 {
			buf = append(buf, ',')
		}
		var err error
		if buf, err = b.appendJSON(buf); err != nil {
			return nil, err
		}
	}
	return append(buf, ']'), nil
}

// jsonObject appends the members of one JSON object, commas included.
type jsonObject struct {
	buf []byte
	n   int
}

// key appends the separator and "k":.
func (o *jsonObject) key(k string) {
	if o.n > 0 {
		o.buf = append(o.buf, ',')
	}
	o.n++
	o.buf = append(o.buf, '"')
	o.buf = append(o.buf, k...)
	o.buf = append(o.buf, '"', ':')
}

// appendJSON appends the block object: marshalBlock's members in sorted
// key order (as encoding/json writes a map), "calls" among them.
func (r *simBlockResult) appendJSON(buf []byte) ([]byte, error) {
	h := r.header
	o := jsonObject{buf: append(buf, '{')}
	if h.BaseFee != nil {
		o.key("baseFeePerGas")
		o.buf = appendHexBig(o.buf, h.BaseFee)
	}
	if h.BlobGasUsed != nil {
		o.key("blobGasUsed")
		o.buf = appendHexUint64(o.buf, *h.BlobGasUsed)
	}
	if h.BlockAccessListHash != nil {
		o.key("blockAccessListHash")
		o.buf = appendHexBytes(o.buf, h.BlockAccessListHash[:])
	}
	o.key("calls")
	var err error
	if o.buf, err = appendSimCalls(o.buf, r.calls); err != nil {
		return nil, err
	}
	o.key("difficulty")
	o.buf = appendHexBig(o.buf, h.Difficulty)
	if h.ExcessBlobGas != nil {
		o.key("excessBlobGas")
		o.buf = appendHexUint64(o.buf, *h.ExcessBlobGas)
	}
	o.key("extraData")
	o.buf = appendHexBytes(o.buf, h.Extra)
	o.key("gasLimit")
	o.buf = appendHexUint64(o.buf, h.GasLimit)
	o.key("gasUsed")
	o.buf = appendHexUint64(o.buf, h.GasUsed)
	o.key("hash")
	o.buf = appendHexBytes(o.buf, r.hash[:])
	o.key("logsBloom")
	o.buf = appendHexBytes(o.buf, h.Bloom[:])
	o.key("miner")
	o.buf = appendHexBytes(o.buf, h.Coinbase[:])
	o.key("mixHash")
	o.buf = appendHexBytes(o.buf, h.MixDigest[:])
	o.key("nonce")
	o.buf = appendHexBytes(o.buf, h.Nonce[:])
	o.key("number")
	o.buf = appendHexBig(o.buf, h.Number)
	if h.ParentBeaconRoot != nil {
		o.key("parentBeaconBlockRoot")
		o.buf = appendHexBytes(o.buf, h.ParentBeaconRoot[:])
	}
	o.key("parentHash")
	o.buf = appendHexBytes(o.buf, h.ParentHash[:])
	o.key("receiptsRoot")
	o.buf = appendHexBytes(o.buf, h.ReceiptHash[:])
	if h.RequestsHash != nil {
		o.key("requestsHash")
		o.buf = appendHexBytes(o.buf, h.RequestsHash[:])
	}
	o.key("sha3Uncles")
	o.buf = appendHexBytes(o.buf, h.UncleHash[:])
	o.key("size")
	o.buf = appendHexUint64(o.buf, r.block.Size())
	if h.SlotNumber != nil {
		o.key("slotNumber")
		o.buf = appendHexUint64(o.buf, *h.SlotNumber)
	}
	o.key("stateRoot")
	o.buf = appendHexBytes(o.buf, h.Root[:])
	o.key("timestamp")
	o.buf = appendHexUint64(o.buf, h.Time)
	o.key("transactions")
	if o.buf, err = r.appendTransactions(o.buf); err != nil {
		return nil, err
	}
	o.key("transactionsRoot")
	o.buf = appendHexBytes(o.buf, h.TxHash[:])
	o.key("uncles")
	o.buf = append(o.buf, '[')
	for i, u := range r.block.Uncles() {
		if i > 0 {
			o.buf = append(o.buf, ',')
		}
		hash := u.Hash()
		o.buf = appendHexBytes(o.buf, hash[:])
	}
	o.buf = append(o.buf, ']')
	if w := r.block.Withdrawals(); w != nil {
		o.key("withdrawals")
		if len(w) == 0 {
			o.buf = append(o.buf, '[', ']')
		} else if o.buf, err = appendMarshal(o.buf, w); err != nil {
			return nil, err
		}
	}
	if h.WithdrawalsHash != nil {
		o.key("withdrawalsRoot")
		o.buf = appendHexBytes(o.buf, h.WithdrawalsHash[:])
	}
	return append(o.buf, '}'), nil
}

// appendTransactions appends the block's transactions: hashes, or full
// objects (sender from the call) when fullTx.
func (r *simBlockResult) appendTransactions(buf []byte) ([]byte, error) {
	buf = append(buf, '[')
	for i, tx := range r.block.Transactions() {
		if i > 0 {
			buf = append(buf, ',')
		}
		if !r.fullTx {
			hash := tx.Hash()
			buf = appendHexBytes(buf, hash[:])
			continue
		}
		rt := newRPCTransaction(tx, blockLocation(r.block, uint64(i)), r.block.BaseFee(), r.config)
		if i < len(r.senders) {
			rt.From = r.senders[i]
		}
		var err error
		if buf, err = appendMarshal(buf, rt); err != nil {
			return nil, err
		}
	}
	return append(buf, ']'), nil
}

// appendSimCalls appends the call results, members in simCallResult's
// field order.
func appendSimCalls(buf []byte, calls []simCallResult) ([]byte, error) {
	if calls == nil {
		return append(buf, "null"...), nil
	}
	buf = append(buf, '[')
	for i := range calls {
		c := &calls[i]
		if i > 0 {
			buf = append(buf, ',')
		}
		o := jsonObject{buf: append(buf, '{')}
		o.key("returnData")
		o.buf = appendHexBytes(o.buf, c.ReturnData)
		o.key("logs")
		o.buf = appendLogs(o.buf, c.Logs)
		o.key("gasUsed")
		o.buf = appendHexUint64(o.buf, uint64(c.GasUsed))
		o.key("maxUsedGas")
		o.buf = appendHexUint64(o.buf, uint64(c.MaxUsedGas))
		o.key("status")
		o.buf = appendHexUint64(o.buf, uint64(c.Status))
		if c.Error != nil {
			o.key("error")
			var err error
			if o.buf, err = appendMarshal(o.buf, c.Error); err != nil {
				return nil, err
			}
		}
		buf = append(o.buf, '}')
	}
	return append(buf, ']'), nil
}

// appendLogs appends logs as types.Log's MarshalJSON writes each.
func appendLogs(buf []byte, logs []*types.Log) []byte {
	if logs == nil {
		return append(buf, "null"...)
	}
	buf = append(buf, '[')
	for i, l := range logs {
		if i > 0 {
			buf = append(buf, ',')
		}
		if l == nil {
			buf = append(buf, "null"...)
			continue
		}
		o := jsonObject{buf: append(buf, '{')}
		o.key("address")
		o.buf = appendHexBytes(o.buf, l.Address[:])
		o.key("topics")
		if l.Topics == nil {
			o.buf = append(o.buf, "null"...)
		} else {
			o.buf = append(o.buf, '[')
			for k := range l.Topics {
				if k > 0 {
					o.buf = append(o.buf, ',')
				}
				o.buf = appendHexBytes(o.buf, l.Topics[k][:])
			}
			o.buf = append(o.buf, ']')
		}
		o.key("data")
		o.buf = appendHexBytes(o.buf, l.Data)
		o.key("blockNumber")
		o.buf = appendHexUint64(o.buf, l.BlockNumber)
		o.key("transactionHash")
		o.buf = appendHexBytes(o.buf, l.TxHash[:])
		o.key("transactionIndex")
		o.buf = appendHexUint64(o.buf, uint64(l.TxIndex))
		o.key("blockHash")
		o.buf = appendHexBytes(o.buf, l.BlockHash[:])
		o.key("blockTimestamp")
		o.buf = appendHexUint64(o.buf, l.BlockTimestamp)
		o.key("logIndex")
		o.buf = appendHexUint64(o.buf, uint64(l.Index))
		o.key("removed")
		o.buf = strconv.AppendBool(o.buf, l.Removed)
		buf = append(o.buf, '}')
	}
	return append(buf, ']')
}

// appendHexBytes appends b as hexutil.Bytes encodes it: "0x" and lower-case
// hex ("0x" for none).
func appendHexBytes(buf, b []byte) []byte {
	buf = append(buf, '"', '0', 'x')
	buf = hex.AppendEncode(buf, b)
	return append(buf, '"')
}

// appendHexUint64 appends v as hexutil.Uint64 encodes it.
func appendHexUint64(buf []byte, v uint64) []byte {
	buf = append(buf, '"', '0', 'x')
	buf = strconv.AppendUint(buf, v, 16)
	return append(buf, '"')
}

// appendHexBig appends v as a *hexutil.Big encodes it (null for nil).
func appendHexBig(buf []byte, v *big.Int) []byte {
	if v == nil {
		return append(buf, "null"...)
	}
	buf = append(buf, '"')
	if v.Sign() < 0 {
		buf = append(buf, '-')
		v = new(big.Int).Neg(v)
	}
	buf = append(buf, '0', 'x')
	buf = v.Append(buf, 16)
	return append(buf, '"')
}

// appendMarshal appends v encoded by encoding/json.
func appendMarshal(buf []byte, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(buf, b...), nil
}
