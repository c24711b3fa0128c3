package chain

import (
	"fmt"
	"io"
	"time"

	"github.com/ethereum/go-ethereum/rlp"

	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// ExportStats summarises an export.
type ExportStats struct {
	Blocks   uint64
	Bytes    int64
	Last     uint64
	Duration time.Duration
}

// ExportRLP writes the canonical blocks from..to of view to w, one after
// the other, each as its RLP encoding: the format `geth export` writes and
// `geth import` / ImportRLP read, each block what debug_getRawBlock
// answers. from must be at least the store's history anchor (a store
// initialised from a state dump has no older bodies) and to at most the
// view's latest block. progress, when not nil, is called at most every
// interval.
func ExportRLP(view store.View, from, to uint64, w io.Writer, interval time.Duration, progress func(ExportStats)) (ExportStats, error) {
	var stats ExportStats
	latest, err := view.Tag(store.TagLatest)
	if err != nil {
		return stats, err
	}
	if to > latest {
		return stats, fmt.Errorf("export to block %d: the store's latest block is %d", to, latest)
	}
	if from > to {
		return stats, fmt.Errorf("export from block %d to %d: empty range", from, to)
	}
	if a := view.Anchor(); from < a.History {
		return stats, fmt.Errorf("export from block %d: the store holds blocks from %d (initialised from a state dump)", from, a.History)
	}
	start, last := time.Now(), time.Now()
	headers := ViewHeaders{View: view}
	for n := from; n <= to; n++ {
		h, err := headers.HeaderByNumber(n)
		if err != nil {
			return stats, fmt.Errorf("export block %d: %w", n, err)
		}
		body, err := view.Body(n, h.Hash())
		if err != nil {
			return stats, fmt.Errorf("export block %d: %w", n, err)
		}
		enc, err := rlp.EncodeToBytes(chaintypes.NewBlockWithHeader(h).WithBody(*body))
		if err != nil {
			return stats, fmt.Errorf("export block %d: %w", n, err)
		}
		if _, err := w.Write(enc); err != nil {
			return stats, fmt.Errorf("export block %d: %w", n, err)
		}
		stats.Blocks++
		stats.Bytes += int64(len(enc))
		stats.Last = n
		if progress != nil && time.Since(last) >= interval {
			last = time.Now()
			stats.Duration = time.Since(start)
			progress(stats)
		}
	}
	stats.Duration = time.Since(start)
	return stats, nil
}
