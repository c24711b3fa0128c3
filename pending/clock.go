package pending

import (
	"time"

	"github.com/tipnode/tipnode/chain"
)

// The pool's and the sequencer's time source is chain.Clock (one clock
// abstraction for every background loop of the node). These aliases keep
// the names pending has always exported.
type (
	// Clock is chain.Clock. Production code uses SystemClock; tests use
	// ManualClock and never sleep.
	Clock = chain.Clock
	// Ticker is chain.Ticker.
	Ticker = chain.Ticker
	// SystemClock is chain.SystemClock, the wall clock.
	SystemClock = chain.SystemClock
	// ManualClock is chain.ManualClock, driven by Advance: its tickers hand
	// every due tick to the receiver before Advance goes on (use
	// Sequencer.Sync to wait until the loop has finished handling them).
	ManualClock = chain.ManualClock
)

// NewManualClock returns a manual clock reading start (chain.NewManualClock).
func NewManualClock(start time.Time) *ManualClock { return chain.NewManualClock(start) }
