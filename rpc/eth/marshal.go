package eth

// JSON encoding of blocks, headers, transactions and receipts, field for
// field as go-ethereum's RPC presents them (the execution-apis fixtures are
// recorded on go-ethereum), so wallets and libraries see the same shapes.

import (
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/consensus/misc/eip4844"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/chain/op"
	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// marshalHeader encodes a header: the base fields always, fork fields only
// when the header carries them.
func marshalHeader(h *types.Header) map[string]any {
	m := map[string]any{
		"number":           (*hexutil.Big)(h.Number),
		"hash":             h.Hash(),
		"parentHash":       h.ParentHash,
		"nonce":            h.Nonce,
		"mixHash":          h.MixDigest,
		"sha3Uncles":       h.UncleHash,
		"logsBloom":        h.Bloom,
		"stateRoot":        h.Root,
		"miner":            h.Coinbase,
		"difficulty":       (*hexutil.Big)(h.Difficulty),
		"extraData":        hexutil.Bytes(h.Extra),
		"gasLimit":         hexutil.Uint64(h.GasLimit),
		"gasUsed":          hexutil.Uint64(h.GasUsed),
		"timestamp":        hexutil.Uint64(h.Time),
		"transactionsRoot": h.TxHash,
		"receiptsRoot":     h.ReceiptHash,
	}
	if h.BaseFee != nil {
		m["baseFeePerGas"] = (*hexutil.Big)(h.BaseFee)
	}
	if h.WithdrawalsHash != nil {
		m["withdrawalsRoot"] = *h.WithdrawalsHash
	}
	if h.BlobGasUsed != nil {
		m["blobGasUsed"] = hexutil.Uint64(*h.BlobGasUsed)
	}
	if h.ExcessBlobGas != nil {
		m["excessBlobGas"] = hexutil.Uint64(*h.ExcessBlobGas)
	}
	if h.ParentBeaconRoot != nil {
		m["parentBeaconBlockRoot"] = *h.ParentBeaconRoot
	}
	if h.RequestsHash != nil {
		m["requestsHash"] = *h.RequestsHash
	}
	if h.BlockAccessListHash != nil {
		m["blockAccessListHash"] = *h.BlockAccessListHash
	}
	if h.SlotNumber != nil {
		m["slotNumber"] = hexutil.Uint64(*h.SlotNumber)
	}
	return m
}

// marshalBlock encodes a block with its size, uncle hashes, withdrawals
// (when the block has them) and its transactions: hashes, or full objects
// when fullTx. inclTx false omits "transactions" (uncle blocks). rs are the
// block's receipts when it holds deposits (their nonce and receipt version,
// as op-geth shows them in full transaction objects), else nil.
func marshalBlock(b *chaintypes.Block, inclTx, fullTx bool, config *params.ChainConfig, rs chaintypes.Receipts) map[string]any {
	m := marshalHeader(b.Header())
	m["size"] = hexutil.Uint64(b.Size())
	if inclTx {
		txs := b.Transactions()
		out := make([]any, len(txs))
		for i, tx := range txs {
			if fullTx {
				out[i] = newRPCTransaction(tx, blockLocation(b, uint64(i)), b.BaseFee(), config).withReceiptAt(rs, i)
			} else {
				out[i] = tx.Hash()
			}
		}
		m["transactions"] = out
	}
	uncles := b.Uncles()
	hashes := make([]common.Hash, len(uncles))
	for i, u := range uncles {
		hashes[i] = u.Hash()
	}
	m["uncles"] = hashes
	if w := b.Withdrawals(); w != nil {
		m["withdrawals"] = w
	}
	return m
}

// marshalPendingBlock encodes the pending block like go-ethereum: hash,
// nonce and miner are null because the block is not sealed. rs are its
// receipts (deposit nonces and versions, as in marshalBlock), or nil.
func marshalPendingBlock(b *chaintypes.Block, fullTx bool, config *params.ChainConfig, rs chaintypes.Receipts) map[string]any {
	m := marshalHeader(b.Header())
	m["size"] = hexutil.Uint64(b.Size())
	txs := b.Transactions()
	out := make([]any, len(txs))
	for i, tx := range txs {
		if fullTx {
			out[i] = newRPCTransaction(tx, pendingLocation(b.Header(), uint64(i)), b.BaseFee(), config).withReceiptAt(rs, i)
		} else {
			out[i] = tx.Hash()
		}
	}
	m["transactions"] = out
	m["uncles"] = []common.Hash{}
	if w := b.Withdrawals(); w != nil {
		m["withdrawals"] = w
	}
	for _, k := range []string{"hash", "nonce", "miner"} {
		m[k] = nil
	}
	return m
}

// txLocation places a transaction in a block. Hash is nil for the pending
// block (not sealed yet).
type txLocation struct {
	Hash   *common.Hash
	Number uint64
	Time   uint64
	Index  uint64
}

// pendingLocation is where a pre-confirmed transaction is: the pending
// block's number and timestamp, its index there, and the zero block hash
// (the block is not sealed). eth_getTransactionByHash, the by-index
// getters, full transactions of the pending block and the receipt all
// show this one answer, and logs carry the same zero hash.
func pendingLocation(h *types.Header, index uint64) *txLocation {
	return &txLocation{Hash: &common.Hash{}, Number: h.Number.Uint64(), Time: h.Time, Index: index}
}

func blockLocation(b *chaintypes.Block, index uint64) *txLocation {
	h := b.Hash()
	return &txLocation{Hash: &h, Number: b.NumberU64(), Time: b.Time(), Index: index}
}

// rpcTransaction is the JSON form of a transaction. Optional members are
// omitted by type exactly like go-ethereum's RPCTransaction.
type rpcTransaction struct {
	BlockHash            *common.Hash                 `json:"blockHash"`
	BlockNumber          *hexutil.Big                 `json:"blockNumber"`
	BlockTimestamp       *hexutil.Uint64              `json:"blockTimestamp"`
	From                 common.Address               `json:"from"`
	Gas                  hexutil.Uint64               `json:"gas"`
	GasPrice             *hexutil.Big                 `json:"gasPrice"`
	MaxFeePerGas         *hexutil.Big                 `json:"maxFeePerGas,omitempty"`
	MaxPriorityFeePerGas *hexutil.Big                 `json:"maxPriorityFeePerGas,omitempty"`
	MaxFeePerBlobGas     *hexutil.Big                 `json:"maxFeePerBlobGas,omitempty"`
	Hash                 common.Hash                  `json:"hash"`
	Input                hexutil.Bytes                `json:"input"`
	Nonce                hexutil.Uint64               `json:"nonce"`
	To                   *common.Address              `json:"to"`
	TransactionIndex     *hexutil.Uint64              `json:"transactionIndex"`
	Value                *hexutil.Big                 `json:"value"`
	Type                 hexutil.Uint64               `json:"type"`
	AccessList           *types.AccessList            `json:"accessList,omitempty"`
	ChainID              *hexutil.Big                 `json:"chainId,omitempty"`
	BlobVersionedHashes  []common.Hash                `json:"blobVersionedHashes,omitempty"`
	AuthorizationList    []types.SetCodeAuthorization `json:"authorizationList,omitempty"`
	V                    *hexutil.Big                 `json:"v"`
	R                    *hexutil.Big                 `json:"r"`
	S                    *hexutil.Big                 `json:"s"`
	YParity              *hexutil.Uint64              `json:"yParity,omitempty"`

	// OP Stack deposits (type 0x7e) only.
	SourceHash            *common.Hash    `json:"sourceHash,omitempty"`
	Mint                  *hexutil.Big    `json:"mint,omitempty"`
	IsSystemTx            *bool           `json:"isSystemTx,omitempty"`
	DepositReceiptVersion *hexutil.Uint64 `json:"depositReceiptVersion,omitempty"`
}

// newRPCTransaction builds the JSON form of tx. loc is nil for a
// transaction outside any block; baseFee is the including block's base fee
// (gasPrice of a dynamic-fee transaction in a block is its effective price).
func newRPCTransaction(t chaintypes.Tx, loc *txLocation, baseFee *big.Int, config *params.ChainConfig) *rpcTransaction {
	tx, ok := t.(*types.Transaction)
	if !ok {
		return newRPCDeposit(t.(*chaintypes.Deposit), loc)
	}
	var signer types.Signer
	if loc != nil {
		signer = types.MakeSigner(config, new(big.Int).SetUint64(loc.Number), loc.Time)
	} else {
		signer = types.LatestSigner(config)
	}
	from := txSender(signer, tx)
	v, r, s := tx.RawSignatureValues()
	out := &rpcTransaction{
		From:     from,
		Gas:      hexutil.Uint64(tx.Gas()),
		GasPrice: (*hexutil.Big)(tx.GasPrice()),
		Hash:     tx.Hash(),
		Input:    hexutil.Bytes(tx.Data()),
		Nonce:    hexutil.Uint64(tx.Nonce()),
		To:       tx.To(),
		Value:    (*hexutil.Big)(tx.Value()),
		Type:     hexutil.Uint64(tx.Type()),
		V:        (*hexutil.Big)(v),
		R:        (*hexutil.Big)(r),
		S:        (*hexutil.Big)(s),
	}
	if loc != nil {
		out.BlockHash = loc.Hash
		out.BlockNumber = (*hexutil.Big)(new(big.Int).SetUint64(loc.Number))
		t, i := hexutil.Uint64(loc.Time), hexutil.Uint64(loc.Index)
		out.BlockTimestamp = &t
		out.TransactionIndex = &i
	}
	if tx.Type() == types.LegacyTxType {
		// A legacy transaction shows its chain id only when EIP-155 protected.
		if id := tx.ChainId(); id.Sign() != 0 {
			out.ChainID = (*hexutil.Big)(id)
		}
		return out
	}
	al := tx.AccessList()
	yParity := hexutil.Uint64(v.Sign())
	out.AccessList = &al
	out.ChainID = (*hexutil.Big)(tx.ChainId())
	out.YParity = &yParity
	if tx.Type() == types.AccessListTxType {
		return out
	}
	// Dynamic-fee kinds: 1559, blob, set-code.
	out.MaxFeePerGas = (*hexutil.Big)(tx.GasFeeCap())
	out.MaxPriorityFeePerGas = (*hexutil.Big)(tx.GasTipCap())
	if baseFee != nil && loc != nil && loc.Hash != nil {
		out.GasPrice = (*hexutil.Big)(effectivePrice(tx, baseFee))
	} else {
		out.GasPrice = (*hexutil.Big)(tx.GasFeeCap())
	}
	switch tx.Type() {
	case types.BlobTxType:
		out.MaxFeePerBlobGas = (*hexutil.Big)(tx.BlobGasFeeCap())
		out.BlobVersionedHashes = tx.BlobHashes()
	case types.SetCodeTxType:
		out.AuthorizationList = tx.SetCodeAuthorizations()
	}
	return out
}

// newRPCDeposit is the JSON form of a deposit as OP Stack nodes serve it:
// its deposit fields, gasPrice and signature values zero. (The nonce and
// depositReceiptVersion come from its receipt: see withDepositReceipt.)
func newRPCDeposit(d *chaintypes.Deposit, loc *txLocation) *rpcTransaction {
	zero := (*hexutil.Big)(new(big.Int))
	src := d.SourceHash()
	out := &rpcTransaction{
		From:       d.From(),
		Gas:        hexutil.Uint64(d.Gas()),
		GasPrice:   zero,
		Hash:       d.Hash(),
		Input:      hexutil.Bytes(d.Data()),
		To:         d.To(),
		Value:      (*hexutil.Big)(d.Value()),
		Type:       hexutil.Uint64(chaintypes.DepositTxType),
		V:          zero,
		R:          zero,
		S:          zero,
		SourceHash: &src,
	}
	// Always present, "0x0" when nothing is minted, as op-geth serves it
	// (a nil and a zero mint have the same encoding).
	out.Mint = (*hexutil.Big)(d.MintValue())
	if d.IsSystemTx() {
		sys := true
		out.IsSystemTx = &sys
	}
	if loc != nil {
		out.BlockHash = loc.Hash
		out.BlockNumber = (*hexutil.Big)(new(big.Int).SetUint64(loc.Number))
		t, i := hexutil.Uint64(loc.Time), hexutil.Uint64(loc.Index)
		out.BlockTimestamp = &t
		out.TransactionIndex = &i
	}
	return out
}

// withReceiptAt is withDepositReceipt with receipt i of rs (t unchanged
// when rs lacks it).
func (t *rpcTransaction) withReceiptAt(rs chaintypes.Receipts, i int) *rpcTransaction {
	if i < len(rs) {
		return t.withDepositReceipt(rs[i])
	}
	return t
}

// withDepositReceipt sets a deposit's nonce and receipt version from its
// receipt (nothing for other transactions or receipts without them).
func (t *rpcTransaction) withDepositReceipt(r *chaintypes.Receipt) *rpcTransaction {
	if t.SourceHash == nil || r == nil || r.OP == nil || r.OP.DepositNonce == nil {
		return t
	}
	t.Nonce = hexutil.Uint64(*r.OP.DepositNonce)
	if v := r.OP.DepositReceiptVersion; v != nil {
		rv := hexutil.Uint64(*v)
		t.DepositReceiptVersion = &rv
	}
	return t
}

// txFrom is the sender of a block's transaction: a deposit's from, else
// txSender.
func txFrom(signer types.Signer, tx chaintypes.Tx) common.Address {
	if d, ok := tx.(*chaintypes.Deposit); ok {
		return d.From()
	}
	return txSender(signer, tx.(*types.Transaction))
}

// txSender is the sender of tx: the impersonated sender of a dev chain's
// impersonated transaction (pending.ImpersonatedSender), else recovered
// from the signature (zero if it does not recover).
func txSender(signer types.Signer, tx *types.Transaction) common.Address {
	if from, ok := pending.ImpersonatedSender(tx); ok {
		return from
	}
	from, _ := types.Sender(signer, tx)
	return from
}

// effectivePrice is min(tip + baseFee, feeCap).
func effectivePrice(tx *types.Transaction, baseFee *big.Int) *big.Int {
	p := new(big.Int).Add(tx.GasTipCap(), baseFee)
	if tx.GasFeeCapIntCmp(p) < 0 {
		return tx.GasFeeCap()
	}
	return p
}

// marshalReceipt encodes a receipt whose derived fields are set (see
// deriveReceipts). tx is its transaction, signer recovers the sender.
func marshalReceipt(r *chaintypes.Receipt, tx chaintypes.Tx, signer types.Signer) map[string]any {
	from := txFrom(signer, tx)
	var number uint64
	if r.BlockNumber != nil {
		number = r.BlockNumber.Uint64()
	}
	logs := r.Logs
	if logs == nil {
		logs = []*types.Log{}
	}
	m := map[string]any{
		"blockHash":         r.BlockHash,
		"blockNumber":       hexutil.Uint64(number),
		"transactionHash":   tx.Hash(),
		"transactionIndex":  hexutil.Uint64(r.TransactionIndex),
		"from":              from,
		"to":                tx.To(),
		"gasUsed":           hexutil.Uint64(r.GasUsed),
		"cumulativeGasUsed": hexutil.Uint64(r.CumulativeGasUsed),
		"contractAddress":   nil,
		"logs":              logs,
		"logsBloom":         r.Bloom,
		"type":              hexutil.Uint(tx.Type()),
		"effectiveGasPrice": (*hexutil.Big)(r.EffectiveGasPrice),
	}
	if len(r.PostState) > 0 {
		m["root"] = hexutil.Bytes(r.PostState)
	} else {
		m["status"] = hexutil.Uint(r.Status)
	}
	if tx.Type() == types.BlobTxType {
		m["blobGasUsed"] = hexutil.Uint64(r.BlobGasUsed)
		m["blobGasPrice"] = (*hexutil.Big)(r.BlobGasPrice)
	}
	if r.ContractAddress != (common.Address{}) {
		m["contractAddress"] = r.ContractAddress
	}
	if r.OP != nil {
		marshalOPReceipt(m, r.OP, r.BlobGasUsed)
	}
	return m
}

// marshalOPReceipt adds an OP Stack receipt's fields as op-geth and op-reth
// serve them (l1FeeScalar as a decimal string).
func marshalOPReceipt(m map[string]any, o *chaintypes.OPReceipt, blobGasUsed uint64) {
	big := func(k string, v *big.Int) {
		if v != nil {
			m[k] = (*hexutil.Big)(v)
		}
	}
	u64 := func(k string, v *uint64) {
		if v != nil {
			m[k] = hexutil.Uint64(*v)
		}
	}
	u64("depositNonce", o.DepositNonce)
	u64("depositReceiptVersion", o.DepositReceiptVersion)
	big("l1GasPrice", o.L1GasPrice)
	big("l1GasUsed", o.L1GasUsed)
	big("l1Fee", o.L1Fee)
	if o.L1FeeScalar != nil {
		m["l1FeeScalar"] = op.FeeScalarText(o.L1FeeScalar)
	}
	u64("l1BaseFeeScalar", o.L1BaseFeeScalar)
	big("l1BlobBaseFee", o.L1BlobBaseFee)
	u64("l1BlobBaseFeeScalar", o.L1BlobBaseFeeScalar)
	u64("operatorFeeScalar", o.OperatorFeeScalar)
	u64("operatorFeeConstant", o.OperatorFeeConstant)
	u64("daFootprintGasScalar", o.DAFootprintGasScalar)
	if o.DAFootprintGasScalar != nil {
		m["blobGasUsed"] = hexutil.Uint64(blobGasUsed) // Jovian: the DA footprint
	}
}

// deriveReceipts turns stored receipts into full receipts of block b (tx
// hash, gas used, effective and blob gas prices, contract address, log
// positions, bloom).
func deriveReceipts(config *params.ChainConfig, b *chaintypes.Block, rs chaintypes.Receipts) (chaintypes.Receipts, error) {
	h := b.Header()
	var blobGasPrice *big.Int
	if h.ExcessBlobGas != nil {
		blobGasPrice = eip4844.CalcBlobFee(config, h)
	}
	if err := rs.DeriveFields(config, b.Hash(), b.NumberU64(), b.Time(), b.BaseFee(), blobGasPrice, b.Transactions()); err != nil {
		return nil, err
	}
	// OP Jovian: a transaction's blobGasUsed is its DA footprint, derived
	// (as op-geth does) from the stored scalar and its encoding.
	txs := b.Transactions()
	for i, r := range rs {
		if r.OP == nil || r.OP.DAFootprintGasScalar == nil || i >= len(txs) {
			continue
		}
		enc, err := txs[i].MarshalBinary()
		if err != nil {
			return nil, err
		}
		r.BlobGasUsed = *r.OP.DAFootprintGasScalar * op.NewCostData(enc).EstimatedDASize()
	}
	return rs, nil
}
