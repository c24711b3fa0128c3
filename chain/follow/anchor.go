package follow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/trie"

	"github.com/tipnode/tipnode/store/chaintypes"
)

// AnchorHeaders is how many headers below the anchor block an anchored
// store keeps (BLOCKHASH reaches 256 blocks back).
const AnchorHeaders = 256

// Anchor is what `tipnode init --state` takes from an upstream for a store
// anchored at block N: block 0's header, header N with the (up to) 256
// before it, and block N's body and receipts when the upstream serves them
// (nil otherwise: the store's history then starts at N+1).
type Anchor struct {
	ChainID  *big.Int
	Genesis  *types.Header
	Headers  []*types.Header // ascending, linked, ending at N
	Body     *chaintypes.Body
	Receipts chaintypes.Receipts
	// NoHistory says why Body is nil (empty when it is not).
	NoHistory string
}

// FetchAnchor fetches the anchor of block n from the JSON-RPC node at url.
// An upstream that does not know block n is ErrUnknownBlock; headers that
// do not link, or a block or receipts that do not match header n, are
// ErrBadResponse.
func FetchAnchor(ctx context.Context, url string, n uint64, timeout time.Duration) (*Anchor, error) {
	up, err := dialURL(ctx, url, timeout)
	if err != nil {
		return nil, err
	}
	defer up.close()
	a := new(Anchor)
	if a.ChainID, err = up.chainID(ctx); err != nil {
		return nil, err
	}
	if a.Genesis, err = up.header(ctx, "0x0"); err != nil {
		return nil, fmt.Errorf("block 0: %w", err)
	}
	top, err := up.header(ctx, hexutil.EncodeUint64(n))
	if errors.Is(err, ErrUnknownBlock) {
		return nil, fmt.Errorf("%w: the upstream %s does not know block %d", ErrUnknownBlock, url, n)
	}
	if err != nil {
		return nil, fmt.Errorf("block %d: %w", n, err)
	}
	from := n - min(n, AnchorHeaders)
	if from == 0 {
		from = 1 // block 0 is a.Genesis
	}
	const chunk = 64
	for lo := from; lo <= n && n > 0; lo += chunk {
		hs, err := up.headers(ctx, lo, min(n, lo+chunk-1))
		if err != nil {
			return nil, err
		}
		a.Headers = append(a.Headers, hs...)
	}
	if n == 0 {
		a.Headers = []*types.Header{a.Genesis}
	}
	for i, h := range a.Headers {
		var parent *types.Header
		switch {
		case i > 0:
			parent = a.Headers[i-1]
		case h.Number.Uint64() == 1:
			parent = a.Genesis
		default:
			continue
		}
		if h.ParentHash != parent.Hash() {
			return nil, fmt.Errorf("%w: header %d does not link to header %d (the upstream moved meanwhile? try again)", ErrBadResponse, h.Number, parent.Number)
		}
	}
	if last := a.Headers[len(a.Headers)-1]; last.Hash() != top.Hash() {
		return nil, fmt.Errorf("%w: block %d changed while fetching (%s, then %s): the upstream reorganised; try again", ErrBadResponse, n, top.Hash().Hex(), last.Hash().Hex())
	}
	a.Body, a.Receipts, a.NoHistory = fetchAnchorBlock(ctx, up, top)
	return a, nil
}

// fetchAnchorBlock fetches block n's body and receipts and checks them
// against its header. A failure is not fatal (the anchor block's history
// is then not kept): why is returned.
func fetchAnchorBlock(ctx context.Context, up *upstream, top *types.Header) (*chaintypes.Body, chaintypes.Receipts, string) {
	n := top.Number.Uint64()
	blocks, err := up.blocks(ctx, n, n)
	if err != nil {
		return nil, nil, fmt.Sprintf("block %d: %v", n, err)
	}
	b := blocks[0]
	if b.Hash() != top.Hash() {
		return nil, nil, fmt.Sprintf("block %d is %s, its header %s", n, b.Hash().Hex(), top.Hash().Hex())
	}
	var raw json.RawMessage
	if err := up.call(ctx, &raw, "eth_getBlockReceipts", hexutil.EncodeUint64(n)); err != nil {
		return nil, nil, fmt.Sprintf("receipts of block %d: %v", n, err)
	}
	var rs chaintypes.Receipts
	if err := json.Unmarshal(raw, &rs); err != nil {
		return nil, nil, fmt.Sprintf("receipts of block %d: %v", n, err)
	}
	if got := types.DeriveSha(rs, trie.NewStackTrie(nil)); got != top.ReceiptHash {
		return nil, nil, fmt.Sprintf("receipts of block %d make root %s, its header says %s", n, got.Hex(), top.ReceiptHash.Hex())
	}
	return b.Body(), rs, ""
}
