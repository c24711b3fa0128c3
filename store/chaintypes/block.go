package chaintypes

import (
	"io"
	"math/big"
	"slices"
	"sync/atomic"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/ethereum/go-ethereum/trie"
)

// Body is a block's content besides its header: types.Body with []Tx.
// Its RLP encoding is types.Body's.
type Body struct {
	Transactions Txs
	Uncles       []*types.Header
	Withdrawals  []*types.Withdrawal `rlp:"optional"`
}

// BodyFromEth returns b's content as a Body (the same values, no copy).
func BodyFromEth(b *types.Body) *Body {
	if b == nil {
		return &Body{}
	}
	return &Body{Transactions: FromEth(b.Transactions), Uncles: b.Uncles, Withdrawals: b.Withdrawals}
}

// Block is types.Block holding []Tx. It is immutable: the header is copied
// in and out, the hash and size are cached.
type Block struct {
	header       *types.Header
	transactions Txs
	uncles       []*types.Header
	withdrawals  types.Withdrawals

	hash atomic.Pointer[common.Hash]
	size atomic.Uint64
}

// extblock is the block's RLP layout (go-ethereum's).
type extblock struct {
	Header      *types.Header
	Txs         Txs
	Uncles      []*types.Header
	Withdrawals []*types.Withdrawal `rlp:"optional"`
}

// NewBlockWithHeader returns a block with header h (copied) and no body.
func NewBlockWithHeader(h *types.Header) *Block {
	return &Block{header: types.CopyHeader(h)}
}

// NewBlock returns a block of header (copied) and body, with the header's
// transactions root, receipts root, bloom, uncle hash and withdrawals root
// computed from body and receipts, as types.NewBlock does. hasher derives
// the roots (nil: a fresh trie.StackTrie).
func NewBlock(header *types.Header, body *Body, receipts Receipts, hasher types.ListHasher) *Block {
	return newBlock(header, body, receipts, hasher, nil)
}

// Roots are a block's transactions and receipts roots, derived by the
// caller (NewBlockWithRoots).
type Roots struct {
	Tx, Receipts common.Hash
}

// NewBlockWithRoots is NewBlock with the transactions and receipts roots
// given instead of derived: they must be types.DeriveSha's over
// body.Transactions and receipts (a pending block's, derived
// incrementally while it was built). Empty lists get the empty roots
// whatever roots says, as in NewBlock.
func NewBlockWithRoots(header *types.Header, body *Body, receipts Receipts, roots Roots) *Block {
	return newBlock(header, body, receipts, nil, &roots)
}

// newBlock is NewBlock, with the roots of roots when it is not nil;
// hasher (nil: a fresh trie.StackTrie, made when needed) derives the
// others.
func newBlock(header *types.Header, body *Body, receipts Receipts, hasher types.ListHasher, roots *Roots) *Block {
	if body == nil {
		body = &Body{}
	}
	b := NewBlockWithHeader(header)
	derive := func(list types.DerivableList) common.Hash {
		if hasher == nil {
			hasher = trie.NewStackTrie(nil)
		}
		return types.DeriveSha(list, hasher)
	}
	if len(body.Transactions) == 0 {
		b.header.TxHash = types.EmptyTxsHash
	} else {
		if roots != nil {
			b.header.TxHash = roots.Tx
		} else {
			b.header.TxHash = derive(body.Transactions)
		}
		b.transactions = slices.Clone(body.Transactions)
	}
	if len(receipts) == 0 {
		b.header.ReceiptHash = types.EmptyReceiptsHash
	} else {
		if roots != nil {
			b.header.ReceiptHash = roots.Receipts
		} else {
			b.header.ReceiptHash = derive(receipts)
		}
		b.header.Bloom = receipts.Bloom()
	}
	if len(body.Uncles) == 0 {
		b.header.UncleHash = types.EmptyUncleHash
	} else {
		b.header.UncleHash = types.CalcUncleHash(body.Uncles)
		b.uncles = make([]*types.Header, len(body.Uncles))
		for i, u := range body.Uncles {
			b.uncles[i] = types.CopyHeader(u)
		}
	}
	switch {
	case body.Withdrawals == nil:
		b.header.WithdrawalsHash = nil
	case len(body.Withdrawals) == 0:
		b.header.WithdrawalsHash = &types.EmptyWithdrawalsHash
		b.withdrawals = types.Withdrawals{}
	default:
		h := derive(types.Withdrawals(body.Withdrawals))
		b.header.WithdrawalsHash = &h
		b.withdrawals = slices.Clone(body.Withdrawals)
	}
	return b
}

// FromEthBlock returns go-ethereum's block b as a Block (its body's values
// shared, the header copied).
func FromEthBlock(b *types.Block) *Block {
	return NewBlockWithHeader(b.Header()).WithBody(*BodyFromEth(b.Body()))
}

// WithBody returns a copy of b with body's content (not copied) and b's
// header.
func (b *Block) WithBody(body Body) *Block {
	return &Block{header: b.header, transactions: body.Transactions, uncles: body.Uncles, withdrawals: body.Withdrawals}
}

// WithSeal returns a copy of b with header h (copied) and b's body.
func (b *Block) WithSeal(h *types.Header) *Block {
	return &Block{header: types.CopyHeader(h), transactions: b.transactions, uncles: b.uncles, withdrawals: b.withdrawals}
}

// Eth returns the block as a go-ethereum block, and false when it holds a
// deposit.
func (b *Block) Eth() (*types.Block, bool) {
	txs, ok := b.transactions.Eth()
	if !ok {
		return nil, false
	}
	return types.NewBlockWithHeader(b.header).WithBody(types.Body{Transactions: txs, Uncles: b.uncles, Withdrawals: b.withdrawals}), true
}

// DecodeRLP decodes a block from go-ethereum's block RLP layout.
func (b *Block) DecodeRLP(s *rlp.Stream) error {
	var eb extblock
	_, size, _ := s.Kind()
	if err := s.Decode(&eb); err != nil {
		return err
	}
	b.header, b.transactions, b.uncles, b.withdrawals = eb.Header, eb.Txs, eb.Uncles, eb.Withdrawals
	b.size.Store(rlp.ListSize(size))
	return nil
}

// EncodeRLP encodes the block in go-ethereum's block RLP layout.
func (b *Block) EncodeRLP(w io.Writer) error {
	return rlp.Encode(w, &extblock{Header: b.header, Txs: b.transactions, Uncles: b.uncles, Withdrawals: b.withdrawals})
}

// Body returns the block's content (not a copy).
func (b *Block) Body() *Body {
	return &Body{Transactions: b.transactions, Uncles: b.uncles, Withdrawals: b.withdrawals}
}

// EthBody returns the body go-ethereum's consensus engine reads (uncles and
// withdrawals; transactions only when there is no deposit).
func (b *Block) EthBody() *types.Body {
	txs, _ := b.transactions.Eth()
	return &types.Body{Transactions: txs, Uncles: b.uncles, Withdrawals: b.withdrawals}
}

// Header returns a copy of the header.
func (b *Block) Header() *types.Header { return types.CopyHeader(b.header) }

// Transactions returns the transactions (not a copy).
func (b *Block) Transactions() Txs { return b.transactions }

// Transaction returns the transaction with the given hash, or nil.
func (b *Block) Transaction(hash common.Hash) Tx {
	for _, tx := range b.transactions {
		if tx.Hash() == hash {
			return tx
		}
	}
	return nil
}

// Uncles returns the uncle headers (not copies).
func (b *Block) Uncles() []*types.Header { return b.uncles }

// Withdrawals returns the withdrawals (not a copy; nil before Shanghai).
func (b *Block) Withdrawals() types.Withdrawals { return b.withdrawals }

func (b *Block) Number() *big.Int         { return new(big.Int).Set(b.header.Number) }
func (b *Block) NumberU64() uint64        { return b.header.Number.Uint64() }
func (b *Block) GasLimit() uint64         { return b.header.GasLimit }
func (b *Block) GasUsed() uint64          { return b.header.GasUsed }
func (b *Block) Time() uint64             { return b.header.Time }
func (b *Block) Coinbase() common.Address { return b.header.Coinbase }
func (b *Block) Root() common.Hash        { return b.header.Root }
func (b *Block) ParentHash() common.Hash  { return b.header.ParentHash }
func (b *Block) TxHash() common.Hash      { return b.header.TxHash }
func (b *Block) ReceiptHash() common.Hash { return b.header.ReceiptHash }
func (b *Block) Bloom() types.Bloom       { return b.header.Bloom }
func (b *Block) Extra() []byte            { return common.CopyBytes(b.header.Extra) }

// BaseFee returns a copy of the base fee (nil before London).
func (b *Block) BaseFee() *big.Int {
	if b.header.BaseFee == nil {
		return nil
	}
	return new(big.Int).Set(b.header.BaseFee)
}

// ExcessBlobGas returns a copy of the header's excess blob gas (nil before Cancun).
func (b *Block) ExcessBlobGas() *uint64 {
	if b.header.ExcessBlobGas == nil {
		return nil
	}
	v := *b.header.ExcessBlobGas
	return &v
}

// BlobGasUsed returns a copy of the header's blob gas used (nil before Cancun).
func (b *Block) BlobGasUsed() *uint64 {
	if b.header.BlobGasUsed == nil {
		return nil
	}
	v := *b.header.BlobGasUsed
	return &v
}

// Hash is the header's hash, computed once.
func (b *Block) Hash() common.Hash {
	if h := b.hash.Load(); h != nil {
		return *h
	}
	h := b.header.Hash()
	b.hash.Store(&h)
	return h
}

// Size is the length of the block's RLP encoding, computed once.
func (b *Block) Size() uint64 {
	if s := b.size.Load(); s > 0 {
		return s
	}
	var c writeCounter
	rlp.Encode(&c, b)
	b.size.Store(uint64(c))
	return uint64(c)
}

type writeCounter uint64

func (c *writeCounter) Write(p []byte) (int, error) {
	*c += writeCounter(len(p))
	return len(p), nil
}

// FromEthBlocks converts go-ethereum blocks with FromEthBlock.
func FromEthBlocks(bs []*types.Block) []*Block {
	out := make([]*Block, len(bs))
	for i, b := range bs {
		out[i] = FromEthBlock(b)
	}
	return out
}
