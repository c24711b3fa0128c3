package eth

// Fee methods: eth_gasPrice, eth_maxPriorityFeePerGas, eth_feeHistory,
// eth_blobBaseFee, eth_baseFee.
//
// Suggested tip (eth_maxPriorityFeePerGas; eth_gasPrice adds the latest base
// fee to it): the 60th percentile of the effective tips paid in the last 20
// blocks, taking at most the 3 lowest tips of each block and ignoring tips
// under 2 wei (dust that would drag the estimate to zero), capped at 500
// gwei. With no sample it is 1 gwei. It is cached per head block. These are
// go-ethereum's default oracle parameters; unlike go-ethereum, transactions
// sent by the block's fee recipient are not excluded (that would cost a
// signature recovery per transaction).

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/common/math"
	"github.com/ethereum/go-ethereum/consensus/misc/eip4844"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/rpc"
	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// registerFees installs the fee methods.
func (a *API) registerFees(s *rpc.Server) {
	s.Register("eth_gasPrice", a.ethGasPrice)
	s.Register("eth_maxPriorityFeePerGas", a.ethMaxPriorityFeePerGas)
	s.Register("eth_feeHistory", a.ethFeeHistory)
	s.Register("eth_blobBaseFee", a.ethBlobBaseFee)
	s.Register("eth_baseFee", a.ethBaseFee)
}

// Tip oracle parameters (see the file comment).
const (
	tipOracleBlocks     = 20
	tipOraclePerBlock   = 3
	tipOraclePercentile = 60
	tipOracleIgnore     = 2 // wei
	maxRewardPercentile = 100
)

var (
	tipOracleDefault = big.NewInt(params.GWei)
	tipOracleMax     = new(big.Int).Mul(big.NewInt(500), big.NewInt(params.GWei))
)

// latestHeader opens a read and returns its head header and view (close
// the view: it ends the read).
func (a *API) latestHeader(ctx context.Context) (*types.Header, store.View, error) {
	r, err := a.open(ctx)
	if err != nil {
		return nil, nil, err
	}
	return r.Head.Header(), r.View, nil
}

// headHeader returns the head header (from memory).
func (a *API) headHeader(ctx context.Context) (*types.Header, error) {
	h, err := a.head(ctx)
	if err != nil {
		return nil, err
	}
	return h.Header(), nil
}

func (a *API) ethGasPrice(ctx context.Context, p rpc.Params) (any, error) {
	return a.suggestedFee(ctx, p, true)
}

func (a *API) ethMaxPriorityFeePerGas(ctx context.Context, p rpc.Params) (any, error) {
	return a.suggestedFee(ctx, p, false)
}

// suggestedFee is the suggested tip at the head, plus the head's base fee
// when withBaseFee (eth_gasPrice).
func (a *API) suggestedFee(ctx context.Context, p rpc.Params, withBaseFee bool) (any, error) {
	if err := p.AtMost(0); err != nil {
		return nil, err
	}
	h, view, err := a.latestHeader(ctx)
	if err != nil {
		return nil, err
	}
	defer view.Close()
	tip, err := a.suggestTip(view, h)
	if err != nil {
		return nil, err
	}
	if withBaseFee && h.BaseFee != nil {
		tip.Add(tip, h.BaseFee)
	}
	return (*hexutil.Big)(tip), nil
}

// gasPriceCache holds the suggested tip computed at one head. Its zero value
// is ready to use.
type gasPriceCache struct {
	mu   sync.Mutex
	head common.Hash // hash of the head the cached tip was computed at
	tip  []byte      // cached suggested tip (big-endian), nil when unset
}

// get returns a fresh copy of the tip cached for head, if any.
func (c *gasPriceCache) get(head common.Hash) (*big.Int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tip == nil || c.head != head {
		return nil, false
	}
	return new(big.Int).SetBytes(c.tip), true
}

// put caches tip as the suggestion at head.
func (c *gasPriceCache) put(head common.Hash, tip *big.Int) {
	c.mu.Lock()
	c.head, c.tip = head, tip.Bytes()
	c.mu.Unlock()
}

// suggestTip returns a fresh copy of the suggested tip at head h.
func (a *API) suggestTip(view store.View, h *types.Header) (*big.Int, error) {
	hash := h.Hash()
	if v, ok := a.gasPrice.get(hash); ok {
		return v, nil
	}

	if a.genesis.OP != nil {
		tip, err := opSuggestTip(view, h)
		if err != nil {
			return nil, err
		}
		a.gasPrice.put(hash, tip)
		return new(big.Int).Set(tip), nil
	}
	var samples []*big.Int
	head := h.Number.Uint64()
	// An anchored store (or a fork) has no bodies below its history
	// anchor: the samples start there.
	first := view.Anchor().History
	for i := uint64(0); i < tipOracleBlocks && i <= head && head-i >= first; i++ {
		n := head - i
		bh, err := view.CanonicalHash(n)
		if err != nil {
			return nil, err
		}
		hdr, err := view.Header(n, bh)
		if err != nil {
			return nil, err
		}
		body, err := view.Body(n, bh)
		if err != nil {
			return nil, err
		}
		var tips []*big.Int
		for _, tx := range body.Transactions {
			t, ok := tx.(*types.Transaction) // a deposit pays no tip: not a sample
			if !ok {
				continue
			}
			tip, err := t.EffectiveGasTip(hdr.BaseFee)
			if err != nil || tip.Cmp(big.NewInt(tipOracleIgnore)) < 0 {
				continue
			}
			tips = append(tips, tip)
		}
		slices.SortFunc(tips, func(x, y *big.Int) int { return x.Cmp(y) })
		if len(tips) > tipOraclePerBlock {
			tips = tips[:tipOraclePerBlock]
		}
		samples = append(samples, tips...)
	}
	tip := new(big.Int).Set(tipOracleDefault)
	if len(samples) > 0 {
		slices.SortFunc(samples, func(x, y *big.Int) int { return x.Cmp(y) })
		tip.Set(samples[(len(samples)-1)*tipOraclePercentile/100])
	}
	if tip.Cmp(tipOracleMax) > 0 {
		tip.Set(tipOracleMax)
	}
	a.gasPrice.put(hash, tip)
	return tip, nil
}

// opMinSuggestedTip is op-geth's default minimum tip suggestion on an OP
// chain (its --gpo.minsuggestedpriorityfee): 0.001 gwei.
var opMinSuggestedTip = big.NewInt(1_000_000)

// opSuggestTip is the tip op-geth suggests on an OP chain
// (eth/gasprice, SuggestOptimismPriorityFee), not the L1 percentile
// oracle: the minimum (0.001 gwei) unless the head block is nearly full
// (its gas used plus its largest transaction's gas used exceed its gas
// limit), then the larger of the minimum and 110% of the median effective
// tip of its transactions (deposits count, with tip 0), at most 500 gwei.
func opSuggestTip(view store.View, h *types.Header) (*big.Int, error) {
	tip := new(big.Int).Set(opMinSuggestedTip)
	n, hash := h.Number.Uint64(), h.Hash()
	if n < view.Anchor().History {
		return tip, nil
	}
	receipts, err := view.Receipts(n, hash)
	if err != nil {
		return nil, err
	}
	// Stored receipts keep the cumulative gas used: each transaction's is
	// the difference.
	var largest, prev uint64
	for _, r := range receipts {
		largest = max(largest, r.CumulativeGasUsed-prev)
		prev = r.CumulativeGasUsed
	}
	if largest > h.GasLimit || h.GasUsed+largest <= h.GasLimit {
		return tip, nil
	}
	body, err := view.Body(n, hash)
	if err != nil {
		return nil, err
	}
	if len(body.Transactions) == 0 {
		return tip, nil
	}
	tips := make([]*big.Int, 0, len(body.Transactions))
	for _, tx := range body.Transactions {
		t := new(big.Int)
		if st, ok := tx.(*types.Transaction); ok {
			if et, err := st.EffectiveGasTip(h.BaseFee); err == nil {
				t = et
			}
		}
		tips = append(tips, t)
	}
	slices.SortFunc(tips, func(x, y *big.Int) int { return x.Cmp(y) })
	median := tips[len(tips)/2]
	if s := new(big.Int).Add(median, new(big.Int).Quo(median, big.NewInt(10))); s.Cmp(tip) > 0 {
		tip = s
	}
	if tip.Cmp(tipOracleMax) > 0 {
		tip.Set(tipOracleMax)
	}
	return tip, nil
}

// ethBlobBaseFee is the blob base fee of the latest block (null before
// Cancun).
func (a *API) ethBlobBaseFee(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(0); err != nil {
		return nil, err
	}
	h, err := a.headHeader(ctx)
	if err != nil {
		return nil, err
	}
	if h.ExcessBlobGas == nil {
		return nil, nil
	}
	return (*hexutil.Big)(eip4844.CalcBlobFee(a.genesis.Config, h)), nil
}

// ethBaseFee is the base fee of the next block (null before London).
func (a *API) ethBaseFee(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(0); err != nil {
		return nil, err
	}
	h, err := a.headHeader(ctx)
	if err != nil {
		return nil, err
	}
	next := new(big.Int).Add(h.Number, common.Big1)
	if !a.genesis.Config.IsLondon(next) {
		return nil, nil
	}
	return (*hexutil.Big)(a.exec.NextBaseFee(h, h.Time+1)), nil
}

// feeHistoryResult is eth_feeHistory's answer.
type feeHistoryResult struct {
	OldestBlock      *hexutil.Big     `json:"oldestBlock"`
	Reward           [][]*hexutil.Big `json:"reward,omitempty"`
	BaseFee          []*hexutil.Big   `json:"baseFeePerGas,omitempty"`
	GasUsedRatio     []float64        `json:"gasUsedRatio"`
	BlobBaseFee      []*hexutil.Big   `json:"baseFeePerBlobGas,omitempty"`
	BlobGasUsedRatio []float64        `json:"blobGasUsedRatio,omitempty"`
}

// ethFeeHistory(blockCount, newestBlock, rewardPercentiles?). blockCount is
// capped at FeeHistoryMaxBlocks and at the blocks available; "pending"
// ends at the pending block (its pre-confirmed transactions so far, and on
// a replica the pending parents under it), or at latest without one. Rewards: for each percentile, the effective tip of the
// transaction at which the cumulative gas used (transactions sorted by tip)
// reaches that percentile of the block's gas used; all zero for an empty
// block.
func (a *API) ethFeeHistory(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(3); err != nil {
		return nil, err
	}
	var count math.HexOrDecimal64
	if err := p.Decode(0, "blockCount", &count); err != nil {
		return nil, err
	}
	sel, err := decodeRequiredSelector(p, 1, "newestBlock")
	if err != nil {
		return nil, err
	}
	var percentiles []float64
	if _, err := p.DecodeOptional(2, "rewardPercentiles", &percentiles); err != nil {
		return nil, err
	}
	if len(percentiles) > maxRewardPercentile {
		return nil, p.ArgError(2, "rewardPercentiles", "%v: over the query limit %d", errInvalidPercentile, maxRewardPercentile)
	}
	for i, pc := range percentiles {
		if pc < 0 || pc > 100 {
			return nil, p.ArgError(2, "rewardPercentiles", "%v: %f", errInvalidPercentile, pc)
		}
		if i > 0 && pc <= percentiles[i-1] {
			return nil, p.ArgError(2, "rewardPercentiles", "%v: #%d:%f >= #%d:%f", errInvalidPercentile, i-1, percentiles[i-1], i, pc)
		}
	}
	res, err := a.Resolve(ctx, sel)
	if err != nil {
		return nil, err
	}
	defer res.Close()
	// The pending block and its pending parents, by number.
	var pendingAt map[uint64]*pending.Snapshot
	for s := res.Pending; s != nil; s = s.Parent() {
		if pendingAt == nil {
			pendingAt = make(map[uint64]*pending.Snapshot)
		}
		pendingAt[s.Number()] = s
	}
	newest := res.Header.Number.Uint64()
	blocks := uint64(count)
	if blocks > a.cfg.FeeHistoryMaxBlocks {
		blocks = a.cfg.FeeHistoryMaxBlocks
	}
	if blocks > newest+1 {
		blocks = newest + 1
	}
	out := &feeHistoryResult{OldestBlock: (*hexutil.Big)(new(big.Int)), GasUsedRatio: []float64{}}
	if blocks == 0 {
		return out, nil
	}
	oldest := newest + 1 - blocks
	out.OldestBlock = (*hexutil.Big)(new(big.Int).SetUint64(oldest))
	cfg := a.genesis.Config
	out.BaseFee = make([]*hexutil.Big, 0, blocks+1)
	out.BlobBaseFee = make([]*hexutil.Big, 0, blocks+1)
	out.GasUsedRatio = make([]float64, 0, blocks)
	out.BlobGasUsedRatio = make([]float64, 0, blocks)
	if len(percentiles) > 0 {
		out.Reward = make([][]*hexutil.Big, 0, blocks)
	}
	for n := oldest; n <= newest; n++ {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		snap := pendingAt[n]
		var h *types.Header
		if snap != nil {
			h = snap.ExecHeader()
		} else {
			hash, err := res.View.CanonicalHash(n)
			if err != nil {
				return nil, fmt.Errorf("fee history block %d: %w", n, err)
			}
			if h, err = res.View.Header(n, hash); err != nil {
				return nil, fmt.Errorf("fee history block %d: %w", n, err)
			}
		}
		out.BaseFee = append(out.BaseFee, (*hexutil.Big)(bigOrZero(h.BaseFee)))
		blobFee := new(big.Int)
		if h.ExcessBlobGas != nil {
			blobFee = eip4844.CalcBlobFee(cfg, h)
		}
		out.BlobBaseFee = append(out.BlobBaseFee, (*hexutil.Big)(blobFee))
		out.GasUsedRatio = append(out.GasUsedRatio, float64(h.GasUsed)/float64(h.GasLimit))
		blobRatio := 0.0
		if h.BlobGasUsed != nil {
			if max := a.exec.MaxBlobGasPerBlock(h.Time); max != 0 {
				blobRatio = float64(*h.BlobGasUsed) / float64(max)
			}
		}
		out.BlobGasUsedRatio = append(out.BlobGasUsedRatio, blobRatio)
		if len(percentiles) > 0 {
			var (
				row []*hexutil.Big
				err error
			)
			if snap != nil {
				row = rewardsOf(h, snap.Transactions(), func(i int) uint64 { return snap.Receipts()[i].CumulativeGasUsed }, percentiles)
			} else if row, err = a.blockRewards(res.View, h, percentiles); err != nil {
				return nil, err
			}
			out.Reward = append(out.Reward, row)
		}
		if n == newest {
			// The block after newest: next base fee and next blob base fee.
			nextBase := new(big.Int)
			if fee := a.exec.NextBaseFee(h, h.Time+1); fee != nil {
				nextBase = fee
			}
			out.BaseFee = append(out.BaseFee, (*hexutil.Big)(nextBase))
			nextBlob := new(big.Int)
			if h.ExcessBlobGas != nil {
				excess := a.exec.NextExcessBlobGas(h, h.Time)
				nextBlob = eip4844.CalcBlobFee(cfg, &types.Header{Number: h.Number, Time: h.Time, ExcessBlobGas: &excess})
			}
			out.BlobBaseFee = append(out.BlobBaseFee, (*hexutil.Big)(nextBlob))
		}
	}
	return out, nil
}

func bigOrZero(v *big.Int) *big.Int {
	if v == nil {
		return new(big.Int)
	}
	return v
}

// blockRewards computes one reward row of eth_feeHistory.
func (a *API) blockRewards(view store.View, h *types.Header, percentiles []float64) ([]*hexutil.Big, error) {
	n, hash := h.Number.Uint64(), h.Hash()
	body, err := view.Body(n, hash)
	if err != nil {
		return nil, fmt.Errorf("fee history body %d: %w", n, err)
	}
	if len(body.Transactions) == 0 {
		return rewardsOf(h, nil, nil, percentiles), nil
	}
	stored, err := view.Receipts(n, hash)
	if err != nil {
		return nil, fmt.Errorf("fee history receipts %d: %w", n, err)
	}
	if len(stored) != len(body.Transactions) {
		return nil, fmt.Errorf("fee history block %d: %d receipts for %d transactions", n, len(stored), len(body.Transactions))
	}
	return rewardsOf(h, body.Transactions, func(i int) uint64 { return stored[i].CumulativeGasUsed }, percentiles), nil
}

// rewardsOf computes one reward row of eth_feeHistory for the block of
// header h with transactions txs, cumGas(i) being transaction i's
// cumulative gas used.
func rewardsOf(h *types.Header, txs chaintypes.Txs, cumGas func(int) uint64, percentiles []float64) []*hexutil.Big {
	row := make([]*hexutil.Big, len(percentiles))
	if len(txs) == 0 {
		for i := range row {
			row[i] = (*hexutil.Big)(new(big.Int))
		}
		return row
	}
	type gasTip struct {
		gas uint64
		tip *big.Int
	}
	sorted := make([]gasTip, len(txs))
	prev := uint64(0)
	for i, tx := range txs {
		var tip *big.Int
		if t, ok := tx.(*types.Transaction); ok { // a deposit's tip is 0
			tip, _ = t.EffectiveGasTip(h.BaseFee)
		}
		if tip == nil || tip.Sign() < 0 {
			tip = new(big.Int)
		}
		c := cumGas(i)
		sorted[i] = gasTip{gas: c - prev, tip: tip}
		prev = c
	}
	slices.SortStableFunc(sorted, func(x, y gasTip) int { return x.tip.Cmp(y.tip) })
	idx, sum := 0, sorted[0].gas
	for i, pc := range percentiles {
		threshold := uint64(float64(h.GasUsed) * pc / 100)
		for sum < threshold && idx < len(sorted)-1 {
			idx++
			sum += sorted[idx].gas
		}
		row[i] = (*hexutil.Big)(sorted[idx].tip)
	}
	return row
}
