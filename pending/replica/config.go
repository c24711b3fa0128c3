package replica

import (
	"fmt"
	"time"
)

// Config configures the driver. Data only: start from DefaultConfig, check
// with Validate.
type Config struct {
	// MaxAge is how long the stream may stay silent before `pending`
	// falls back to the canonical head (it resumes with the next valid
	// message). Default 2 s.
	MaxAge time.Duration
	// Window is how many pending blocks the driver keeps ahead of the
	// canonical head (block head+Window at most); a message for a block
	// beyond it is dropped and counted. Default 5.
	Window int
	// Queue bounds the messages waiting for the driver goroutine; the
	// stream client blocks (and its own buffers fill) beyond it. Default
	// 256.
	Queue int
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{MaxAge: 2 * time.Second, Window: 5, Queue: 256}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.MaxAge <= 0:
		return fmt.Errorf("%w: max age must be > 0", ErrConfig)
	case c.Window < 1 || c.Window > 64:
		return fmt.Errorf("%w: window %d outside 1..64", ErrConfig, c.Window)
	case c.Queue < 1:
		return fmt.Errorf("%w: queue must be >= 1", ErrConfig)
	}
	return nil
}
